use super::*;
use pretty_assertions::assert_eq;
use tau_sandbox::procs::parse_stat;

const ME: Me = Me {
    pid: 100,
    session: 100,
};
const ROOT: Root = Root {
    pid: 300,
    start: 5000,
};

fn process(pid: i32, ppid: i32, session: i32, start: u64) -> Proc {
    Proc {
        pid,
        ppid,
        session,
        start,
        zombie: false,
    }
}

fn pids(found: &[Proc]) -> Vec<i32> {
    found.iter().map(|p| p.pid).collect()
}

#[test]
fn a_command_is_its_session_its_descendants_and_what_tau_adopted_from_it() {
    let procs = [
        process(1, 0, 1, 0),
        process(100, 1, 100, 10),
        // An MCP server, its child in a session of its own, and a child tau spawned later.
        process(200, 100, 100, 20),
        process(201, 200, 201, 6000),
        process(500, 100, 100, 7000),
        // An orphan tau adopted before the command started.
        process(600, 100, 600, 4000),
        // The command: its shell, a child, one that left the session and was adopted by
        // tau, that one's child, and one in the session adopted by init.
        process(300, 100, 300, 5000),
        process(301, 300, 300, 5001),
        process(302, 100, 302, 5002),
        process(303, 302, 302, 5003),
        process(700, 1, 300, 5004),
        // Another running command, and an orphan of it in its session.
        process(400, 100, 400, 5100),
        process(401, 100, 400, 5101),
    ];
    let others = BTreeSet::from([Root {
        pid: 400,
        start: 5100,
    }]);
    assert_eq!(
        pids(&members(&procs, ME, ROOT, &others)),
        vec![300, 301, 302, 303, 700]
    );
    // Once the other command is gone, what it left outside tau's session counts too.
    assert_eq!(
        pids(&members(&procs, ME, ROOT, &BTreeSet::new())),
        vec![300, 301, 302, 303, 400, 401, 700]
    );
}

#[test]
fn a_recycled_shell_pid_is_not_the_shell() {
    let procs = [process(300, 100, 100, 9000)];
    assert_eq!(
        pids(&members(&procs, ME, ROOT, &BTreeSet::new())),
        Vec::<i32>::new()
    );
}

#[test]
fn stat_lines_parse_whatever_the_name_holds() {
    let line = "4242 (a) Z 1 (b) Z 100 4242 300 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 5003 1 2 3\n";
    assert_eq!(
        parse_stat(4242, line),
        Some(Proc {
            pid: 4242,
            ppid: 100,
            session: 300,
            start: 5003,
            zombie: true,
        })
    );
    assert_eq!(parse_stat(1, "1 (init) S 0"), None);
    assert_eq!(parse_stat(1, "no parenthesis"), None);
}

#[test]
fn this_process_reads_as_itself() {
    let me = Me::now();
    let own = read_stat(me.pid).unwrap();
    assert_eq!(
        (own.pid, own.session, own.zombie),
        (me.pid, me.session, false)
    );
    assert!(scan().iter().any(|p| p.pid == me.pid));
}

#[test]
fn a_session_whose_leader_is_outside_the_namespace_reads_as_zero_and_still_works() {
    // tau and the MCP server in a session `/proc` shows as 0; the command in its own.
    let me = Me {
        pid: 100,
        session: 0,
    };
    let procs = [
        process(100, 1, 0, 10),
        process(200, 100, 0, 20),
        process(300, 100, 300, 5000),
        process(301, 300, 300, 5001),
        process(302, 100, 302, 5002),
        process(500, 100, 0, 7000),
    ];
    assert_eq!(
        pids(&members(&procs, me, ROOT, &BTreeSet::new())),
        vec![300, 301, 302]
    );
}
