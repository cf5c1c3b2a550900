//! The sandbox around an approved `run_command`, attacked through the real binary. Each
//! rule has its positive control: the same probe succeeds with `sandbox = "off"` and fails
//! with it on. Every probe runs as root and as an unprivileged user where the tests run
//! as root.

use crate::common;

use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::os::unix::net::UnixListener;
use std::time::{Duration, Instant};

use common::sandbox::{Probe, User, Without, users};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn writes_stay_in_the_workspace() {
    for user in users() {
        for sandbox in [false, true] {
            let probe = Probe::new(user, sandbox, "");
            let outside = probe.outside();
            let target = outside.join("written.txt");
            let command = format!(
                "echo inside > inside.txt; echo outside > {}; t=$(mktemp) && echo tmp > $t && cat $t && rm $t",
                target.display()
            );
            let (_, outcome) = probe.run(&json!({ "command": command }));
            assert_eq!(
                std::fs::read_to_string(probe.tau.workspace().join("inside.txt")).ok(),
                Some("inside\n".to_owned()),
                "{user:?} sandbox {sandbox}: {outcome:?}"
            );
            assert_eq!(outcome.stdout(), "tmp\n", "{user:?} sandbox {sandbox}");
            assert_eq!(
                target.exists(),
                !sandbox,
                "{user:?} sandbox {sandbox}: a write outside the workspace: {outcome:?}"
            );
        }
    }
}

#[test]
fn the_keys_tau_s_files_and_tau_s_environment_are_unreadable() {
    for user in users() {
        for sandbox in [false, true] {
            let probe = Probe::new(user, sandbox, "# SECRET-IN-CONFIG\n");
            probe.plant(".ssh/id_ed25519", "SECRET-SSH-KEY\n");
            probe.plant("home/web-token", "SECRET-WEB-TOKEN\n");
            probe.plant(".bash_history", "export KEY=SECRET-HISTORY\n");
            // tau's own process, found by its arguments, holds this in its environment.
            let command = "cat ~/.ssh/id_ed25519; cat ../web-token; cat ~/tau.toml; \
                cat ~/.bash_history; ls ..; \
                for p in /proc/[0-9]*; do grep -q -- --answers-from-stdin $p/cmdline 2>/dev/null \
                && tr '\\0' '\\n' < $p/environ; done; \
                head -c 4 /etc/passwd; echo";
            let mut chat = probe.chat(&probe.script(&json!({ "command": command })));
            chat.env("TAU_PROBE_SECRET", "SECRET-IN-ENVIRONMENT");
            let mut child = probe.spawn(chat);
            use std::io::Write;
            child.stdin.take().unwrap().write_all(b"go\ny\n").unwrap();
            let status = child.wait().unwrap();
            assert!(status.success());
            let outcome = probe.outcome();
            let stdout = outcome.stdout();
            for secret in [
                "SECRET-SSH-KEY",
                "SECRET-WEB-TOKEN",
                "SECRET-IN-CONFIG",
                "SECRET-HISTORY",
                "state.db",
            ] {
                assert_eq!(
                    stdout.contains(secret),
                    !sandbox,
                    "{user:?} sandbox {sandbox}: {secret} in {outcome:?}"
                );
            }
            // tau's environment: a root command reads any process's; in the sandbox not
            // even root reads it.
            let environment = stdout.contains("SECRET-IN-ENVIRONMENT");
            if sandbox {
                assert!(!environment, "{user:?}: {outcome:?}");
            } else if user == User::Invoker && rustix::process::getuid().is_root() {
                assert!(environment, "the positive control: {outcome:?}");
            }
            // Read-only everywhere else.
            assert!(stdout.ends_with("root\n"), "{user:?} {sandbox}: {stdout:?}");
        }
    }
}

/// Which of a TCP, a UDP and a Unix socket listener on this machine the command reached.
fn reached(probe: &Probe, network: bool) -> [bool; 3] {
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    tcp.set_nonblocking(true).unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_nonblocking(true).unwrap();
    let socket = probe.home().join("peer.sock");
    let unix = UnixListener::bind(&socket).unwrap();
    unix.set_nonblocking(true).unwrap();
    std::fs::set_permissions(&socket, std::os::unix::fs::PermissionsExt::from_mode(0o777)).unwrap();
    let command = format!(
        "bash -c 'echo tcp > /dev/tcp/127.0.0.1/{}'; bash -c 'echo udp > /dev/udp/127.0.0.1/{}'; \
         python3 -c 'import socket, sys; s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])' {}",
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
        socket.display()
    );
    let (_, outcome) = probe.run(&json!({ "command": command, "network": network }));
    let deadline = Instant::now() + Duration::from_millis(500);
    let mut seen = [false; 3];
    while Instant::now() < deadline && !seen.iter().all(|s| *s) {
        if let Ok((mut stream, _)) = tcp.accept() {
            let mut text = String::new();
            stream.set_nonblocking(false).unwrap();
            let _ = stream.read_to_string(&mut text);
            seen[0] = text == "tcp\n";
        }
        let mut buffer = [0u8; 16];
        if let Ok(n) = udp.recv(&mut buffer) {
            seen[1] = buffer.get(..n) == Some(b"udp\n".as_slice());
        }
        if unix.accept().is_ok() {
            seen[2] = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(
        outcome.status == "success",
        seen.iter().all(|s| *s),
        "{outcome:?}"
    );
    seen
}

#[test]
fn no_network_unless_the_call_asks_and_the_person_approves() {
    for user in users() {
        let off = Probe::new(user, false, "");
        assert_eq!(
            reached(&off, false),
            [true; 3],
            "{user:?} without a sandbox"
        );
        let on = Probe::new(user, true, "");
        assert_eq!(reached(&on, false), [false; 3], "{user:?} in the sandbox");
        let asked = Probe::new(user, true, "");
        assert_eq!(
            reached(&asked, true),
            [true; 3],
            "{user:?} in the sandbox with network: true"
        );
    }
}

#[test]
fn a_missing_layer_refuses_the_call_and_names_it() {
    for user in users() {
        // The positive control: without the filter it runs.
        let probe = Probe::new(user, true, "");
        let (_, outcome) = probe.run(&json!({"command": "touch proof.txt"}));
        assert_eq!(outcome.status, "success", "{user:?}: {outcome:?}");
        let probe = Probe::new(user, true, "").without(Without::Landlock);
        let (_, outcome) = probe.run(&json!({"command": "touch proof.txt"}));
        assert_eq!(
            (outcome.status.as_str(), outcome.text()),
            (
                "error",
                "Error: the command did not run: the sandbox could not be set up (Landlock (the file \
                 rules) could not be set up: this kernel has no Landlock, or something (a \
                 container's seccomp profile) hides it; it needs Linux 5.13 or newer). `tau \
                 doctor` shows what this machine has; `sandbox = \"off\"` under [tools.command] \
                 in tau.toml runs commands without a sandbox"
                    .to_owned()
            ),
            "{user:?}"
        );
        assert!(!probe.tau.workspace().join("proof.txt").exists());
    }
}

#[test]
fn without_namespaces_the_reduced_sandbox_s_other_layers_still_hold() {
    let probe = Probe::in_mode(User::Invoker, "reduced", "").without(Without::Namespaces);
    let outside = probe.outside();
    let command = format!(
        "echo $$ > pid; touch {}/x; bash -c 'echo > /dev/tcp/127.0.0.1/9'; echo done",
        outside.display()
    );
    let (_, outcome) = probe.run(&json!({ "command": command }));
    assert_eq!(outcome.stdout(), "done\n", "{outcome:?}");
    assert!(!outside.join("x").exists());
    // Not pid 1 of a namespace of its own.
    let pid = std::fs::read_to_string(probe.tau.workspace().join("pid")).unwrap();
    assert_ne!(pid.trim(), "1");
}

/// `tau doctor` with a replay model, under the probe's filter.
fn doctor(probe: &Probe) -> common::Run {
    let model = probe.script(&json!({"command": "true"}));
    let mut child = probe.spawn(probe.command(&["--model", &model, "doctor"]));
    drop(child.stdin.take());
    common::Run::from(child.wait_with_output().unwrap())
}

#[test]
fn doctor_lists_each_layer_and_says_which_is_missing() {
    let probe = Probe::new(User::Invoker, true, "");
    let run = doctor(&probe);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for row in [
        "sandbox for commands and MCP servers ([tools.command] sandbox = \"on\")\n",
        "  ok  Landlock     available: ABI ",
        "  ok  seccomp      available: filter installed\n",
        "  ok  namespaces   available: user, network and PID\n",
        "  ok  boundary     holds nothing tau trusts\n",
        "  ok  script       readable\n",
        "tau doctor: everything tau needs is there\n",
    ] {
        assert!(run.stdout.contains(row), "{row:?} in\n{}", run.stdout);
    }
    let probe = Probe::new(User::Invoker, true, "").without(Without::Landlock);
    let run = doctor(&probe);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "  no  Landlock     not available: this kernel has no Landlock, or something (a \
             container's seccomp profile) hides it; it needs Linux 5.13 or newer\n"
        ),
        "{}",
        run.stdout
    );
    // Every command would be refused (see `sandbox_reduced.rs`).
    let probe = Probe::new(User::Invoker, true, "").without(Without::Namespaces);
    let run = doctor(&probe);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stdout.contains("  no  namespaces   not available: "));
}
