//! `tau tui` as a person drives it: the real binary in a real terminal (tmux), keys sent
//! with `send-keys`, the screen read with `capture-pane`, a `replay:` model. Needs tmux
//! (`TAU_TEST_TMUX`, else `tmux`); `TAU_PEERS_REQUIRED=1` makes a missing tmux a failure.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::tmux::Terminal;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// Longer than the card's answer guard, so a key sent after it counts.
const PAST_THE_GUARD: Duration = Duration::from_millis(600);

fn command_call(command: &str) -> Value {
    tool_call(
        "t1",
        "run_command",
        &json!({"command": command, "timeout_seconds": 60}),
    )
}

/// The audit's decision about the one question, and the call's record.
fn decision_and_call(tau: &Tau) -> (Value, Value) {
    let events = tau.audit_events();
    let find = |kind: &str| {
        events
            .iter()
            .find(|e| e["type"] == kind)
            .cloned()
            .unwrap_or_else(|| panic!("no {kind} in {events:#?}"))
    };
    let approval = find("approval");
    let call = find("tool_call");
    (
        json!({"decision": approval["decision"], "decided_by": approval["decided_by"]}),
        json!({"status": call["status"], "approval": call["approval"], "decided_by": call["decided_by"]}),
    )
}

#[test]
fn a_refused_call_does_not_run_and_the_audit_says_a_person_on_the_tui_refused_it() {
    let tau = Tau::new();
    // The model thinks a while before it asks, so the `y` typed meanwhile is on its way
    // before the card exists: it must not answer it.
    let mut ask = command_call("touch ran.txt");
    ask["delayMs"] = json!(400);
    let model = tau.replay(&json!([ask, answer("Fine, I did not run it.")]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text("make a file");
    terminal.keys(&["Enter"]);
    terminal.type_text("y");
    terminal.wait_for_all(&[
        "tau asks: approval needed",
        "\"command\": \"touch ran.txt\"",
    ]);
    std::thread::sleep(PAST_THE_GUARD);
    let screen = terminal.screen();
    assert!(
        screen.contains("tau asks"),
        "the early y answered:\n{screen}"
    );
    terminal.keys(&["n"]);
    terminal.wait_for_all(&["Fine, I did not run it.", "run_command · refused · by you"]);
    assert!(
        !tau.workspace().join("ran.txt").exists(),
        "the refused command ran"
    );
    assert_eq!(
        decision_and_call(&tau),
        (
            json!({"decision": "rejected", "decided_by": {"kind": "person", "channel": "tui"}}),
            json!({"status": "refused", "approval": "rejected", "decided_by": {"kind": "person", "channel": "tui"}}),
        )
    );
    // The `y` typed before the card is still in the input line, a prompt, not an answer.
    terminal.wait_for("> y");
    terminal.keys(&["C-c"]);
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn an_approved_call_runs() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        command_call("echo hello > ran.txt"),
        answer("Done.")
    ]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.wait_for("approvals: 0");
    // tmux runs this for each bell the window rings.
    let bells = tau.dir.path().join("bells.txt");
    let hooked = terminal.run(&[
        "set-hook",
        "-t",
        "t",
        "alert-bell",
        &format!("run-shell \"echo bell >> '{}'\"", bells.display()),
    ]);
    assert!(hooked.status.success(), "{hooked:?}");
    let rung = || std::fs::read_to_string(&bells).unwrap_or_default();
    terminal.type_text("make a file");
    terminal.keys(&["Enter"]);
    terminal.wait_for("tau asks: approval needed");
    let asked = Instant::now();
    while rung() != "bell\n" {
        assert!(
            asked.elapsed() < Duration::from_secs(20),
            "no bell for the question: {:?}",
            rung()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // Narrower and back: the card stays whole inside its border, the status bar below it.
    terminal.resize(40, 12);
    let narrow = terminal.wait_for_all(&["╔ tau asks: approval needed", "╝", "approvals: 1"]);
    let lines: Vec<&str> = narrow.lines().collect();
    assert!(
        lines[0].starts_with('╔') && lines[10].starts_with('╚'),
        "{narrow}"
    );
    for line in &lines[1..10] {
        assert!(line.starts_with('║') && line.ends_with('║'), "{narrow}");
    }
    terminal.resize(80, 24);
    terminal.wait_for_all(&["  ╔ tau asks", "\"command\": \"echo hello > ran.txt\""]);
    std::thread::sleep(PAST_THE_GUARD);
    terminal.keys(&["y"]);
    terminal.wait_for_all(&["Done.", "run_command · ran · by you"]);
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("ran.txt")).unwrap(),
        "hello\n"
    );
    assert_eq!(rung(), "bell\n", "one question, one bell");
    assert_eq!(
        decision_and_call(&tau),
        (
            json!({"decision": "approved", "decided_by": {"kind": "person", "channel": "tui"}}),
            json!({"status": "success", "approval": "approved", "decided_by": {"kind": "person", "channel": "tui"}}),
        )
    );
    terminal.keys(&["C-d"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn ctrl_c_during_an_approved_command_stops_it() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        // Found by its command line: in the sandbox's PID namespace `$$` says nothing here.
        command_call("touch ready.txt; sleep 30.3141; touch late.txt"),
        answer("never read")
    ]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text("wait a while");
    terminal.keys(&["Enter"]);
    terminal.wait_for("tau asks: approval needed");
    std::thread::sleep(PAST_THE_GUARD);
    terminal.keys(&["y"]);
    terminal.wait_for("run_command · running · by you");
    let ready = tau.workspace().join("ready.txt");
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ready.exists() {
        assert!(Instant::now() < deadline, "the command never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!common::sandbox::with_marker("30.3141").is_empty());
    terminal.keys(&["C-c"]);
    terminal.wait_for_all(&["run_command · cancelled", "Cancelled.", "ready"]);
    // The command is gone long before its 30 seconds, and never reached its end.
    assert_eq!(
        common::sandbox::gone("30.3141"),
        Ok(()),
        "the command outlived the cancel"
    );
    assert!(!tau.workspace().join("late.txt").exists());
    let (_, call) = decision_and_call(&tau);
    assert_eq!(call["status"], "cancelled");
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn the_picker_lists_sessions_opens_one_with_its_history_and_holds_its_lock() {
    let tau = Tau::new();
    let first = tau.replay(&json!([answer("Hello from before.")]));
    let run = tau.run(
        &["--model", &first, "chat", "--session", "alpha"],
        "hi there\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    // One script for the whole session: a resumed session goes on after its stored reply.
    let model = tau.replay(&json!([
        answer("Hello from before."),
        answer("Welcome back.")
    ]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui"]) else {
        return;
    };
    let picker = terminal.wait_for_all(&["tau · sessions", "+ new session", "alpha", "↑↓ choose"]);
    let row = picker.lines().find(|l| l.contains("alpha")).unwrap();
    assert!(
        row.trim_end_matches('│').trim_end().ends_with(" 2"),
        "{row}"
    );
    terminal.keys(&["Down", "Enter"]);
    terminal.wait_for_all(&[
        "resumed session alpha (2)",
        "you │ hi there",
        "tau │ Hello from before.",
    ]);
    // The line chat cannot open the session the TUI holds.
    let blocked = tau.run(&["--model", &first, "chat", "--session", "alpha"], "hi\n");
    assert_eq!(blocked.code, 2, "{}", blocked.stdout);
    assert!(
        blocked.stderr.contains("already open"),
        "{}",
        blocked.stderr
    );
    // Up brings back the earlier prompt; it is sent again.
    terminal.keys(&["Up"]);
    terminal.wait_for("> hi there");
    terminal.keys(&["Enter"]);
    terminal.wait_for("Welcome back.");
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
    let messages = tau.session_json("alpha");
    assert_eq!(messages.as_array().unwrap().len(), 4);
}

#[test]
fn a_new_session_from_the_picker_and_quitting_it_with_esc() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Hi.")]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui"]) else {
        return;
    };
    terminal.wait_for("+ new session");
    terminal.keys(&["Escape"]);
    assert_eq!(terminal.exited(), 0);
    drop(terminal);
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui"]) else {
        return;
    };
    terminal.wait_for("+ new session");
    terminal.keys(&["Enter"]);
    terminal.wait_for("new session 2");
    terminal.type_text("hello");
    terminal.keys(&["Enter"]);
    terminal.wait_for("tau │ Hi.");
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn an_unanswered_card_counts_down_and_goes_when_the_question_times_out() {
    let tau = Tau::new();
    let config = tau.config("[approval]\ntimeout_seconds = 3\n");
    let model = tau.replay(&json!([
        command_call("touch ran.txt"),
        answer("It timed out.")
    ]));
    let config = config.to_str().unwrap();
    let Some(terminal) = Terminal::start(
        &tau,
        &[
            "--config",
            config,
            "--model",
            &model,
            "tui",
            "--session",
            "s1",
        ],
    ) else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text("make a file");
    terminal.keys(&["Enter"]);
    terminal.wait_for_all(&["tau asks: approval needed", "withdrawn in 0:0"]);
    let screen = terminal.wait_for_all(&[
        "It timed out.",
        "run_command · timed out · no answer in time",
        "approvals: 0",
    ]);
    assert!(!screen.contains("tau asks"), "the card stayed:\n{screen}");
    assert!(!tau.workspace().join("ran.txt").exists());
    assert_eq!(
        decision_and_call(&tau),
        (
            json!({"decision": "timeout", "decided_by": {"kind": "timeout"}}),
            json!({"status": "refused", "approval": "timeout", "decided_by": {"kind": "timeout"}}),
        )
    );
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn sigterm_and_sighup_restore_the_terminal_and_exit_128_plus_the_signal() {
    let tau = Tau::new();
    let mut slow = answer("This streams slowly.");
    slow["delayMs"] = json!(3000);
    let model = tau.replay(&json!([slow]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text("tell me");
    terminal.keys(&["Enter"]);
    terminal.wait_for("running");
    let killed = Command::new("kill")
        .args(["-TERM", &terminal.pid()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(terminal.exited(), 143);
    drop(terminal);
    // In the picker too, and SIGHUP (a closed terminal window) the same way.
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui"]) else {
        return;
    };
    terminal.wait_for("+ new session");
    let killed = Command::new("kill")
        .args(["-HUP", &terminal.pid()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert_eq!(terminal.exited(), 129);
}

#[test]
fn without_a_terminal_tau_tui_says_to_use_tau_chat() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Hi.")]));
    let run = tau.run(&["--model", &model, "tui"], "hello\n");
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("use tau chat"), "{}", run.stderr);
}

#[test]
fn the_card_escapes_odd_spaces_and_flags_lookalike_words() {
    let tau = Tau::new();
    let command = "sh setup.sh\u{a0}--dry-run; sh setup.\u{455}h; echo a\u{2003}b\u{3000}c; echo 'kırmızı ışık' привет";
    let model = tau.replay(&json!([command_call(command), answer("Not run.")]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.resize(120, 40);
    terminal.wait_for("approvals: 0");
    terminal.type_text("go");
    terminal.keys(&["Enter"]);
    let screen = terminal.wait_for_all(&[
        "tau asks: approval needed",
        r#"⚠ lookalike: command: "setup.ѕh" mixes Latin and Cyrillic: U+0455 Cyrillic,"#,
        r#"looks like "s""#,
        r#""sh setup.sh\u{a0}--dry-run; sh setup.ѕh; echo"#,
        r#"a\u{2003}b\u{3000}c; echo 'kırmızı ışık' привет""#,
    ]);
    for raw in ['\u{a0}', '\u{2003}', '\u{3000}'] {
        assert!(!screen.contains(raw), "a raw {raw:?} on:\n{screen}");
    }
    assert!(
        !screen.contains("\"kırmızı"),
        "Turkish was flagged:\n{screen}"
    );
    assert!(
        !screen.contains("\"привет\""),
        "Russian was flagged:\n{screen}"
    );
    std::thread::sleep(PAST_THE_GUARD);
    terminal.keys(&["n"]);
    terminal.wait_for("Not run.");
    // Ctrl-C at an empty prompt quits.
    terminal.keys(&["C-c"]);
    assert_eq!(terminal.exited(), 0);
}

#[test]
fn a_garage_card_ignores_a_bare_y_and_opens_with_its_name() {
    let Some(broker) = tau_test_support::Mosquitto::start("allow_anonymous true").unwrap() else {
        return;
    };
    let garage = tau_test_support::DeviceStandIn::start(
        broker.port,
        tau_test_support::StandInSpec {
            client_id: "garage-door".into(),
            command_topic: "home/garage/door/set".into(),
            state_topic: "home/garage/door/state".into(),
            initial_state: Some("CLOSED".into()),
            states: Vec::new(),
        },
    )
    .unwrap();
    let tau = Tau::new();
    let config = tau.config(&format!(
        "[tools.mqtt]\nport = {}\n\n[[devices]]\nname = \"garage-door\"\nlabel = \"Garage door\"\nroom = \"garage\"\nkind = \"garage\"\ncommand_topic = \"home/garage/door/set\"\nactions = {{ open = \"OPEN\", close = \"CLOSE\" }}\n",
        broker.port
    ));
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "device_set",
            &json!({"device": "garage-door", "action": "open"})
        ),
        answer("Done."),
    ]));
    let config = config.to_str().unwrap().to_owned();
    let Some(terminal) = Terminal::start(
        &tau,
        &[
            "--config",
            &config,
            "--model",
            &model,
            "tui",
            "--session",
            "s1",
        ],
    ) else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text("open the garage");
    terminal.keys(&["Enter"]);
    terminal.wait_for_all(&[
        "OPEN · Garage door (garage) — a lock-class device",
        "second step: type garage-door or",
    ]);
    std::thread::sleep(PAST_THE_GUARD);
    // The habit: y, Enter. Nothing opens; the card says why and stays.
    terminal.keys(&["y"]);
    terminal.keys(&["Enter"]);
    terminal.wait_for("a bare yes does not run this call");
    assert!(terminal.screen().contains("tau asks"));
    assert_eq!(garage.commands(), Vec::<String>::new());
    terminal.type_text("garage-door");
    terminal.keys(&["Enter"]);
    terminal.wait_for_all(&["Done.", "device_set · ran · by you"]);
    assert_eq!(
        garage.wait_for_commands(1, Duration::from_secs(20)),
        ["OPEN"]
    );
    assert_eq!(
        decision_and_call(&tau),
        (
            json!({"decision": "approved", "decided_by": {"kind": "person", "channel": "tui"}}),
            json!({"status": "success", "approval": "approved", "decided_by": {"kind": "person", "channel": "tui"}}),
        )
    );
    terminal.keys(&["C-d"]);
    assert_eq!(terminal.exited(), 0);
}

/// A question that waits on TauBar while the person is in `tau tui`: the status bar says
/// so (and where to look), and stops saying it once the question was answered there.
#[test]
fn the_status_bar_counts_the_questions_waiting_on_other_channels() {
    let tau = Tau::new();
    let model = tau.replay(&json!([command_call("echo hi >> out.txt"), answer("done")]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let question = serve.ask(&session, "write hi");
    let id = question["id"].as_str().unwrap().to_owned();
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.wait_for_all(&["approvals: 0", "waiting elsewhere: 1 (tau approvals)"]);
    let approved = serve.approve(&id);
    assert_eq!(approved.status, 200, "{approved:?}");
    let answered = Instant::now();
    while terminal.screen().contains("waiting elsewhere") {
        assert!(
            answered.elapsed() < Duration::from_secs(10),
            "{}",
            terminal.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(terminal.screen().contains("approvals: 0"));
}

/// The word `always` on a card that offers a grant: the call runs, and the same call
/// later in the conversation runs without a card, recorded as the grant's.
#[test]
fn always_on_the_card_grants_exactly_that_call_in_this_conversation() {
    let tau = Tau::new();
    let call = json!({"command": "echo x >> out.txt", "timeout_seconds": 60});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("Done."),
        tool_call("t2", "run_command", &call),
        answer("Again."),
        tool_call("t3", "run_command", &call),
        answer("Not run."),
    ]));
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", "s1"])
    else {
        return;
    };
    terminal.wait_for("approvals: 0");
    terminal.type_text("append x");
    terminal.keys(&["Enter"]);
    terminal.wait_for_all(&[
        "tau asks: approval needed",
        "always, Enter: allow again too",
    ]);
    std::thread::sleep(PAST_THE_GUARD);
    terminal.type_text("always");
    terminal.keys(&["Enter"]);
    terminal.wait_for("Done.");
    terminal.type_text("again");
    terminal.keys(&["Enter"]);
    terminal.wait_for("Again.");
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap(),
        "x\nx\n"
    );
    let calls: Vec<Value> = tau
        .audit_events()
        .into_iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| json!([e["tool_use_id"], e["approval"], e["decided_by"]["kind"]]))
        .collect();
    assert_eq!(
        calls,
        vec![
            json!(["t1", "approved", "person"]),
            json!(["t2", "granted", "grant"])
        ]
    );
    let listed = tau.run(&["grants", "list"], "");
    assert!(
        listed
            .stdout
            .contains("run_command (tier 2)  in “append x”"),
        "{}",
        listed.stdout
    );

    // `/grants` lists it in the transcript and `/revoke ID` ends it: no turn, no model.
    let id = listed.stdout.split_whitespace().next().unwrap().to_owned();
    terminal.type_text("/grants");
    terminal.keys(&["Enter"]);
    terminal.wait_for_all(&[
        &format!("{id}  run_command (tier 2)  in “append x”"),
        "arguments {\"command\":\"echo x >> out.txt\",\"timeout_seconds\":60}",
    ]);
    terminal.type_text(&format!("/revoke {id}"));
    terminal.keys(&["Enter"]);
    terminal.wait_for(&format!("revoked {id} (run_command after 1 use)"));
    let revoked = tau
        .audit_events()
        .into_iter()
        .find(|e| e["type"] == "grant_revoked")
        .unwrap();
    assert_eq!(
        revoked["revoked_by"],
        json!({"kind": "person", "channel": "tui"})
    );
    // The same call is asked again.
    terminal.type_text("once more");
    terminal.keys(&["Enter"]);
    terminal.wait_for("tau asks: approval needed");
    std::thread::sleep(PAST_THE_GUARD);
    terminal.keys(&["n"]);
    terminal.wait_for("Not run.");
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap(),
        "x\nx\n"
    );
    terminal.keys(&["C-d"]);
    assert_eq!(terminal.exited(), 0);
}

/// A web conversation whose question waits belongs to `tau serve` until the question
/// ends, also while no hub runs: `tau tui` refuses it, says why and what to do, and
/// gives the terminal back as it found it.
#[test]
fn a_conversation_whose_question_waits_for_tau_serve_is_refused() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);
    let Some(terminal) = Terminal::start(&tau, &["--model", &model, "tui", "--session", &session])
    else {
        return;
    };
    assert_eq!(terminal.exited(), 2);
    let screen = terminal.joined().replace('\n', "");
    let said = format!(
        "tau: session {session} is held by tau serve: its question {} (run_command) waits for an answer on TauBar until ",
        row["id"].as_str().unwrap()
    );
    assert!(screen.contains(&said), "{screen}");
    assert!(
        screen.contains("Answer it on TauBar or let it expire, then open the session again"),
        "{screen}"
    );
    assert_eq!(tau.proof(), None);
}
