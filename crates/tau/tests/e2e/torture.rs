//! A minute of everything at once on one home. `tau serve` runs web turns (a tier-0 call
//! and a tier-2 call approved over the API, in two conversations at a time) and an
//! every-1s routine, while a loop runs every other command against the same home: `tau
//! sessions list/show/delete`, `tau routines list/enable/disable/run`, `tau chat` in a
//! session of its own, `tau mcp` calls, `tau approvals`, `tau grants list`, `tau audit
//! verify`, `tau serve --print-token`. Meanwhile every tau process's descriptors are read
//! from `/proc`: none may point at a deleted `state.db`, `-wal` or `-shm` (a process
//! writing into an unlinked file loses what it writes). Afterwards the file is whole
//! (`PRAGMA integrity_check`), the log verifies, and every turn, every approved call and
//! every routine run is there exactly once, in `audit.jsonl` and in `state.db` alike.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use common::serve::Api;
use common::{Tau, answer, state_descriptors, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// How long everything runs at once. The whole test takes about 5 s more: the hub's
/// start, the last turns finishing, the routine let finish, the checks.
const RUN_FOR: Duration = Duration::from_secs(60);

/// Web conversations going at the same time, each one turn after another.
const WEB_THREADS: usize = 2;

/// Turns in each web conversation before the next one starts.
const TURNS: usize = 3;

/// How often the descriptors of every tau process are read.
const SAMPLE_EVERY: Duration = Duration::from_millis(25);

/// An every-1s routine with a tier-2 command (its exemption lets it run unasked) that
/// appends a line per run to `tick.txt`.
const CONFIG: &str = "[[routines]]\nname = \"tick\"\nevery = \"1s\"\ntool = \"run_command\"\narguments = { command = \"echo tick >> tick.txt\" }\n";

/// Messages a web turn stores: the prompt, the clock call and its result, the command
/// and its result, the answer.
const WEB_TURN_MESSAGES: usize = 6;

/// Messages a chat turn stores: the prompt, the clock call and its result, the answer.
const CHAT_TURN_MESSAGES: usize = 4;

/// The hub's script: each turn calls the clock (tier 0), then a command (tier 2) that
/// appends a line of its own to `ran.txt`, then answers. Every conversation plays it
/// from where its own history stands.
fn web_script() -> Value {
    let mut entries = Vec::new();
    for n in 1..=TURNS {
        entries.push(tool_call(&format!("clock-{n}"), "clock", &json!({})));
        entries.push(tool_call(
            &format!("run-{n}"),
            "run_command",
            &json!({"command": format!("echo turn-{n} $(date +%s.%N) >> ran.txt")}),
        ));
        entries.push(answer(&format!("Done {n}.")));
    }
    Value::Array(entries)
}

/// What one web thread did: each conversation and how many turns it finished.
struct WebDone {
    sessions: Vec<(String, usize)>,
    slowest_turn: Duration,
}

/// Conversations of `TURNS` turns each until `until`; each tier-2 call is approved once
/// over the API.
fn web_turns(api: &Api, until: Instant, answered: &Mutex<Vec<String>>) -> WebDone {
    let mut done = WebDone {
        sessions: Vec::new(),
        slowest_turn: Duration::ZERO,
    };
    while Instant::now() < until {
        let session = api.new_session();
        done.sessions.push((session.clone(), 0));
        for n in 1..=TURNS {
            let turn = Instant::now();
            let row = api.ask(&session, &format!("turn {n}"));
            assert_eq!(
                (&row["tool"], &row["call_id"]),
                (&json!("run_command"), &json!(format!("run-{n}"))),
                "{row}"
            );
            let id = row["id"].as_str().unwrap();
            let approved = api.approve(id);
            assert_eq!(approved.status, 200, "{approved:?}");
            api.until_answered(&session, &format!("Done {n}."));
            done.slowest_turn = done.slowest_turn.max(turn.elapsed());
            done.sessions.last_mut().unwrap().1 = n;
            // Shown by `tau sessions show` from its first answer on: a conversation
            // nobody wrote in yet has no stored session.
            if n == 1 {
                answered.lock().unwrap().push(session.clone());
            }
        }
    }
    done
}

/// What the loop of other commands did.
#[derive(Default)]
struct CommandsDone {
    rounds: usize,
    /// Each `tau chat` session, and whether it was deleted afterwards.
    chats: Vec<(String, bool)>,
    mcp_clock_calls: usize,
    manual_runs: usize,
}

/// Every other command, round after round, until `until`.
fn other_commands(
    tau: &Tau,
    config: &Path,
    token: &str,
    until: Instant,
    web_sessions: &Mutex<Vec<String>>,
) -> CommandsDone {
    let config = config.to_str().unwrap();
    // The chat's script lives in a file of its own: the hub's is read at its start and
    // stays as it is.
    let chat_script = tau.dir.path().join("chat-replay.json");
    std::fs::write(
        &chat_script,
        json!([tool_call("c1", "clock", &json!({})), answer("It is late.")]).to_string(),
    )
    .unwrap();
    let chat_model = format!("replay:{}", chat_script.display());
    let mcp_input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "torture", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "clock", "arguments": {}}}),
    ]
    .iter()
    .map(|line| format!("{line}\n"))
    .collect::<String>();

    let mut done = CommandsDone::default();
    let run = |args: &[&str], stdin: &str| {
        let mut all = vec!["--config", config];
        all.extend_from_slice(args);
        let run = tau.run(&all, stdin);
        assert_eq!(run.code, 0, "{args:?}: {}{}", run.stdout, run.stderr);
        run
    };
    while Instant::now() < until {
        let round = done.rounds;
        run(&["sessions", "list"], "");
        let shown = web_sessions.lock().unwrap().last().cloned();
        if let Some(session) = shown {
            run(&["sessions", "show", &session], "");
        }
        run(&["routines", "disable", "tick"], "");

        let chat = format!("chat-{round}");
        let said = run(
            &["--model", &chat_model, "chat", "--session", &chat],
            "what time is it?\n",
        );
        assert!(said.stdout.contains("It is late."), "{}", said.stdout);
        let stored = run(&["sessions", "show", &chat, "--json"], "");
        let stored: Value = serde_json::from_str(&stored.stdout).unwrap();
        assert_eq!(stored.as_array().map(Vec::len), Some(CHAT_TURN_MESSAGES));
        // Every other chat is deleted: the rest are checked in `state.db` at the end.
        let delete = round % 2 == 1;
        if delete {
            run(&["sessions", "delete", &chat], "");
        }
        done.chats.push((chat, delete));

        let listed = run(&["routines", "list"], "");
        assert!(listed.stdout.contains("tick"), "{}", listed.stdout);
        run(&["routines", "enable", "tick"], "");
        run(&["routines", "run", "tick"], "");
        done.manual_runs += 1;

        let served = run(&["mcp"], &mcp_input);
        let replies: BTreeMap<u64, Value> = served
            .stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .map(|reply| (reply["id"].as_u64().unwrap(), reply))
            .collect();
        assert_eq!(replies.len(), 3, "{}", served.stdout);
        assert_eq!(
            replies[&3]["result"]["isError"],
            json!(false),
            "{}",
            served.stdout
        );
        done.mcp_clock_calls += 1;

        run(&["approvals"], "");
        run(&["grants", "list"], "");
        let verified = run(&["audit", "verify"], "");
        assert!(
            verified.stdout.starts_with("audit log intact"),
            "{}",
            verified.stdout
        );
        let printed = run(&["serve", "--print-token"], "");
        assert_eq!(printed.stdout.trim(), token);
        done.rounds += 1;
    }
    done
}

/// What the descriptor sampler saw.
#[derive(Default)]
struct Sampled {
    rounds: usize,
    /// Every tau process caught holding a `state.db` file.
    holders: BTreeSet<u32>,
    /// Every descriptor that pointed at a deleted state file, with its process.
    deleted: Vec<String>,
}

/// The tau processes working on `home`: their command line names it (`setsid` before it
/// execs tau names it too, and holds nothing).
fn tau_processes(home: &str) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            let line = String::from_utf8_lossy(&line).replace('\0', " ");
            (line.contains(home) && line.contains(env!("CARGO_BIN_EXE_tau"))).then_some((pid, line))
        })
        .collect()
}

/// Reads the descriptors of every tau process on `home` every `SAMPLE_EVERY` until
/// `stop`.
fn sample(home: &Path, stop: &AtomicBool) -> Sampled {
    let home = home.to_str().unwrap();
    let mut seen = Sampled::default();
    while !stop.load(Ordering::SeqCst) {
        for (pid, line) in tau_processes(home) {
            let held = state_descriptors(pid);
            if !held.is_empty() {
                seen.holders.insert(pid);
            }
            seen.deleted.extend(
                held.into_iter()
                    .filter(|target| target.ends_with(" (deleted)"))
                    .map(|target| format!("{pid} ({line}): {target}")),
            );
        }
        seen.rounds += 1;
        std::thread::sleep(SAMPLE_EVERY);
    }
    seen
}

/// The lines of a file in the workspace.
fn lines_of(tau: &Tau, name: &str) -> Vec<String> {
    std::fs::read_to_string(tau.workspace().join(name))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// One routine run as both records have it (the audit line's time is when it was
/// written, not when the run started, so the start is left out).
type RunKey = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<u64>,
);

fn audit_run(line: &Value) -> RunKey {
    let text = |key: &str| line[key].as_str().map(str::to_owned);
    (
        text("routine").unwrap(),
        text("trigger").unwrap(),
        text("outcome").unwrap(),
        text("detail"),
        text("tool_use_id"),
        line["duration_ms"].as_u64(),
    )
}

#[test]
fn a_minute_of_every_command_beside_a_busy_serve_keeps_state_whole_and_everything_once() {
    let begun = Instant::now();
    let tau = Tau::new();
    let config = tau.serve_config(CONFIG);
    let model = tau.replay(&web_script());
    let serve = tau.serve(&model, &config);
    let pid = serve.child.id();
    let home = tau.home();
    let one_connection: Vec<String> = ["state.db", "state.db-shm", "state.db-wal"]
        .map(|file| home.join(file).to_string_lossy().into_owned())
        .to_vec();
    assert_eq!(state_descriptors(pid), one_connection);

    let stop = AtomicBool::new(false);
    let web_sessions = Mutex::new(Vec::new());
    let until = Instant::now() + RUN_FOR;
    let api = serve.api();
    let (web, commands, sampled) = std::thread::scope(|scope| {
        let sampler = scope.spawn(|| sample(&home, &stop));
        let web: Vec<_> = (0..WEB_THREADS)
            .map(|_| scope.spawn(|| web_turns(&api, until, &web_sessions)))
            .collect();
        let commands =
            scope.spawn(|| other_commands(&tau, &config, &api.token, until, &web_sessions));
        // Results are looked at only once the sampler is stopped: a failed thread must not
        // leave the scope waiting for it forever.
        let web: Vec<_> = web
            .into_iter()
            .map(std::thread::ScopedJoinHandle::join)
            .collect();
        let commands = commands.join();
        eprintln!("torture: activity ended after {:?}", begun.elapsed());
        // The routine is switched off and allowed to finish a run it started, so the hub
        // stops with no run cut in half (its line in `tick.txt` and no record).
        let off = tau.run(
            &[
                "--config",
                config.to_str().unwrap(),
                "routines",
                "disable",
                "tick",
            ],
            "",
        );
        std::thread::sleep(Duration::from_secs(2));
        let held = state_descriptors(pid);
        stop.store(true, Ordering::SeqCst);
        let sampled = sampler.join().unwrap();
        assert_eq!(held, one_connection, "after the run");
        let web: Vec<WebDone> = web
            .into_iter()
            .map(|done| done.unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect();
        let commands = commands.unwrap_or_else(|e| std::panic::resume_unwind(e));
        assert_eq!(off.code, 0, "{}", off.stderr);
        (web, commands, sampled)
    });
    let (code, said) = serve.terminate();
    assert_eq!(code, 0, "{said:?}");

    let sessions: Vec<(String, usize)> = web.iter().flat_map(|w| w.sessions.clone()).collect();
    let turns: usize = sessions.iter().map(|(_, n)| n).sum();
    let slowest = web.iter().map(|w| w.slowest_turn).max().unwrap();
    eprintln!(
        "torture: {turns} web turns in {} conversations (slowest {slowest:?}), {} rounds of other commands, {} descriptor samples, {} tau processes caught holding state.db",
        sessions.len(),
        commands.rounds,
        sampled.rounds,
        sampled.holders.len()
    );

    // During the run: no tau process wrote into a state file unlinked under it. The
    // sampler caught commands too, not only the hub.
    assert_eq!(sampled.deleted, Vec::<String>::new());
    assert!(sampled.holders.contains(&pid), "the hub was never sampled");
    assert!(
        sampled.holders.iter().any(|&holder| holder != pid),
        "no command was caught holding state.db: {:?}",
        sampled.holders
    );
    assert!(
        turns >= 2 * WEB_THREADS && commands.rounds >= 2,
        "too little ran"
    );

    // The file is whole.
    let db = rusqlite::Connection::open_with_flags(
        home.join("state.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    let integrity: String = db
        .query_row("PRAGMA integrity_check", [], |row| row.get(0))
        .unwrap();
    assert_eq!(integrity, "ok");

    // The log is whole.
    let verified = tau.run(&["audit", "verify"], "");
    assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    assert!(
        verified.stdout.starts_with("audit log intact"),
        "{}",
        verified.stdout
    );
    let audit = tau.audit();
    // How each turn of `session` ended, by stop reason.
    let ended = |session: &str| -> BTreeMap<String, usize> {
        let mut ended = BTreeMap::new();
        for line in audit
            .iter()
            .filter(|l| l["session"] == session && l["type"] == "turn_end")
        {
            *ended
                .entry(line["stop_reason"].as_str().unwrap().to_owned())
                .or_default() += 1;
        }
        ended
    };
    let stored = |session: &str| -> usize {
        db.query_row(
            "SELECT count(*) FROM messages WHERE session_id = ?1",
            [session],
            |row| row.get(0),
        )
        .unwrap()
    };

    // Every web turn ended once, its messages are stored, its command ran once. A turn
    // that asks is paused on its question (a `turn_end` with `interrupt`: its state is
    // saved) and goes on after the yes to its own end.
    for (session, done) in &sessions {
        let expected = BTreeMap::from([
            ("end_turn".to_owned(), *done),
            ("interrupt".to_owned(), *done),
        ]);
        assert_eq!(ended(session), expected, "{session}");
        assert_eq!(stored(session), WEB_TURN_MESSAGES * done, "{session}");
        let commands_run = audit
            .iter()
            .filter(|l| {
                l["session"] == *session
                    && l["type"] == "tool_call"
                    && l["tool"] == "run_command"
                    && l["status"] == "success"
                    && l["approval"] == "approved"
            })
            .count();
        assert_eq!(commands_run, *done, "{session}");
    }
    let ran = lines_of(&tau, "ran.txt");
    assert_eq!(ran.len(), turns, "each yes ran once");
    assert_eq!(ran.iter().collect::<BTreeSet<_>>().len(), turns, "{ran:#?}");
    for n in 1..=TURNS {
        let reached = sessions.iter().filter(|(_, done)| *done >= n).count();
        let lines = ran
            .iter()
            .filter(|l| l.starts_with(&format!("turn-{n} ")))
            .count();
        assert_eq!(lines, reached, "turn {n}");
    }
    let (approved, used): (usize, usize) = db
        .query_row(
            "SELECT count(*), count(consumed_at) FROM approvals
             WHERE tool = 'run_command' AND channel = 'web' AND state = 'approved'",
            [],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    assert_eq!((approved, used), (turns, turns));
    let waiting: usize = db
        .query_row(
            "SELECT count(*) FROM approvals WHERE state = 'pending'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(waiting, 0);

    // Every chat turn ended once; the chats kept are stored whole, the deleted are gone.
    for (chat, deleted) in &commands.chats {
        let expected = BTreeMap::from([("end_turn".to_owned(), 1)]);
        assert_eq!(ended(chat), expected, "{chat}");
        let expected = if *deleted { 0 } else { CHAT_TURN_MESSAGES };
        assert_eq!(stored(chat), expected, "{chat}");
    }
    let turn_ends = audit.iter().filter(|l| l["type"] == "turn_end").count();
    assert_eq!(turn_ends, 2 * turns + commands.chats.len());

    // Every MCP call is recorded once.
    let mcp_clock = audit
        .iter()
        .filter(|l| {
            l["type"] == "tool_call"
                && l["tool"] == "clock"
                && l["session"].as_str().is_some_and(|s| s.starts_with("mcp"))
        })
        .count();
    assert_eq!(mcp_clock, commands.mcp_clock_calls);

    // Every routine run is in both records once, and ran its command once.
    let mut recorded: Vec<RunKey> = db
        .prepare(
            "SELECT routine, trigger, outcome, detail, tool_use_id, duration_ms
             FROM routine_runs ORDER BY id",
        )
        .unwrap()
        .query_map([], |row| {
            Ok((
                row.get(0)?,
                row.get(1)?,
                row.get(2)?,
                row.get(3)?,
                row.get(4)?,
                row.get::<_, Option<i64>>(5)?
                    .and_then(|d| u64::try_from(d).ok()),
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let mut logged: Vec<RunKey> = audit
        .iter()
        .filter(|l| l["type"] == "routine_run")
        .map(audit_run)
        .collect();
    recorded.sort();
    logged.sort();
    assert_eq!(logged, recorded);
    let ids: Vec<&String> = recorded.iter().filter_map(|r| r.4.as_ref()).collect();
    assert_eq!(
        ids.iter().collect::<BTreeSet<_>>().len(),
        ids.len(),
        "a run recorded twice"
    );
    // Each run's call is in the log once, under the run's id.
    for id in &ids {
        let calls = audit
            .iter()
            .filter(|l| l["type"] == "tool_call" && l["tool_use_id"] == id.as_str())
            .count();
        assert_eq!(calls, 1, "{id}");
    }
    let outcomes = recorded
        .iter()
        .fold(BTreeMap::<&str, usize>::new(), |mut by, run| {
            *by.entry(run.2.as_str()).or_default() += 1;
            by
        });
    let succeeded = outcomes.get("success").copied().unwrap_or(0);
    let failed = outcomes.get("error").copied().unwrap_or(0);
    // A switch-off cancels a run under way: it is recorded as an error whether or not
    // its `echo` got to write. Every run that succeeded wrote its line, and nothing else
    // wrote one.
    let ticks = lines_of(&tau, "tick.txt").len();
    assert!(
        (succeeded..=succeeded + failed).contains(&ticks),
        "{ticks} ticks for {outcomes:?}"
    );
    let manual = recorded.iter().filter(|r| r.1 == "manual").count();
    assert_eq!(manual, commands.manual_runs);
    let scheduled = recorded.len() - manual;
    for run in recorded.iter().filter(|r| r.2 != "success") {
        eprintln!("torture: a run that did not succeed: {run:?}");
    }
    eprintln!(
        "torture: {scheduled} scheduled and {manual} manual routine runs ({outcomes:?}); done after {:?}",
        begun.elapsed()
    );
    assert!(
        scheduled >= RUN_FOR.as_secs() as usize / 4,
        "the every-1s routine ran {scheduled} times"
    );
}
