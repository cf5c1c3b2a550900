//! `tau chat` end to end: the real binary, a replay model, piped stdin.

use crate::common;

use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const EFFECT: &str = "runs a shell command in the workspace — code the agent wrote";
const REFUSAL: &str =
    "The user did not approve this action: run_command. Do not perform it; tell the user briefly.";

/// Takes the grant offer off a terminal question's audit line and checks it is the one for
/// exactly that call: the hashes of its arguments and card, 24 hours.
fn take_grant_offer(event: &mut Value) {
    let offer = event
        .as_object_mut()
        .and_then(|e| e.remove("grant"))
        .expect("the terminal's question offers a grant");
    assert_eq!(
        offer["arguments_sha256"],
        json!(tau_state::canonical_arguments(&event["arguments"]).1)
    );
    assert_eq!(
        offer["card_sha256"],
        json!(tau_state::canonical_arguments(&event["card"]).1)
    );
    assert_eq!(offer["schema_sha256"].as_str().map(str::len), Some(64));
    assert_eq!(offer["hours"], json!(24));
}

#[test]
fn a_refused_tier_2_call_leaves_no_trace_but_its_events() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch proof.txt"})),
        answer("OK, I did not run it.")
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "make a file\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    insta::assert_snapshot!(run.stdout);
    assert!(!tau.workspace().join("proof.txt").exists());
    let mut events = tau.audit_events();
    take_grant_offer(&mut events[0]);
    assert_eq!(
        events,
        vec![
            json!({"type": "approval_requested", "approval_id": "ap_1", "tool": "run_command", "tier": 2, "effect": EFFECT, "call_id": "t1", "arguments": {"command": "touch proof.txt"}, "channel": "terminal", "card": {"notes": [{"level": "info", "label": "sandbox", "text": "writes: workspace only · network: none"}]}}),
            json!({"type": "approval", "approval_id": "ap_1", "tool": "run_command", "tier": 2, "tool_use_id": "t1", "arguments": {"command": "touch proof.txt"}, "decision": "rejected", "decided_by": {"kind": "person", "channel": "terminal"}, "approver": "terminal", "channel": "terminal"}),
            json!({"type": "tool_call", "tool": "run_command", "tier": 2, "tool_use_id": "t1", "arguments": {"command": "touch proof.txt"}, "status": "refused", "approval": "rejected", "decided_by": {"kind": "person", "channel": "terminal"}, "approval_id": "ap_1", "result_summary": REFUSAL}),
            json!({"type": "turn_end", "stop_reason": "end_turn", "model_calls": 2, "input_tokens": 0, "output_tokens": 0}),
        ]
    );
    let messages = tau.session_json("s1");
    assert_eq!(
        messages[2],
        json!({"role": "user", "content": [{"toolResult": {"toolUseId": "t1", "status": "error", "content": [{"text": REFUSAL}]}}]})
    );
}

#[test]
fn an_approved_tier_2_call_runs() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo made > proof.txt"})
        ),
        answer("Done.")
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "make a file\n  YES \n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("proof.txt")).unwrap(),
        "made\n"
    );
    let events = tau.audit_events();
    assert_eq!(
        (
            events[2]["status"].as_str(),
            events[2]["approval"].as_str(),
            &events[2]["decided_by"]
        ),
        (
            Some("success"),
            Some("approved"),
            &json!({"kind": "person", "channel": "terminal"})
        )
    );
}

#[test]
fn an_unknown_tool_gets_the_exact_text() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "open_door", &json!({})),
        answer("I cannot do that.")
    ]));
    let run = tau.run(
        &["--model", &model, "chat", "--session", "s1"],
        "open the door\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        tau.session_json("s1")[2]["content"][0]["toolResult"]["content"][0]["text"],
        json!("Tool 'open_door' is not registered; it was not run.")
    );
    assert!(
        run.stdout.contains("  ✗ open_door unknown tool, not run\n"),
        "{}",
        run.stdout
    );
    assert_eq!(
        (
            &tau.audit_events()[1]["status"],
            &tau.audit_events()[1]["decided_by"]
        ),
        (&json!("unknown_tool"), &json!({"kind": "policy"}))
    );
}

#[test]
fn the_loop_guard_fires_with_the_notice_in_turkish() {
    let tau = Tau::new();
    let config = tau.config("[agent]\nmax_turns = 1\n[ui]\nlanguage = \"tr\"\n");
    let model = tau.replay(&json!([
        tool_call("t1", "clock", &json!({})),
        answer("never sent")
    ]));
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "chat",
            "--session",
            "s1",
        ],
        "saat kaç?\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout.contains("  ! Durduruldu: bu tur 1 model çağrısı sınırına ulaştı. Devam etmek için yeni bir mesaj gönderin.\n"),
        "{}",
        run.stdout
    );
    assert_eq!(
        tau.audit_events()[1],
        json!({"type": "turn_limit", "max_turns": 1})
    );
}

#[test]
fn escaping_holds_for_esc_csi_bidi_and_zero_width_characters() {
    let tau = Tau::new();
    let sneaky =
        json!({"command": "echo \u{1b}[2J\u{1b}[1;1Hall clear \u{9b}31m \u{202e}txt.exe\u{200b}"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &sneaky),
        answer("ok")
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "go\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    for raw in ['\u{1b}', '\u{9b}', '\u{202e}', '\u{200b}'] {
        assert!(
            !run.stdout.contains(raw),
            "raw {raw:?} reached the terminal"
        );
    }
    insta::assert_snapshot!(run.stdout);
}

#[test]
fn an_answer_never_swallows_a_prompt() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "true"})),
        answer("Not run."),
        tool_call("t2", "clock", &json!({})),
        answer("It is late."),
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "run it\nno\nwhat time is it?\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let messages = tau.session_json("s1");
    let prompts: Vec<&Value> = messages
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" && m["content"][0].get("text").is_some())
        .map(|m| &m["content"][0]["text"])
        .collect();
    assert_eq!(prompts, vec![&json!("run it"), &json!("what time is it?")]);
}

#[test]
fn end_of_input_during_a_question_rejects() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &json!({"command": "touch proof.txt"})),
        answer("Not run.")
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "go\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!tau.workspace().join("proof.txt").exists());
    let events = tau.audit_events();
    assert_eq!(
        (&events[1]["decision"], &events[1]["decided_by"]),
        (&json!("rejected"), &json!({"kind": "end_of_input"})),
        "an end of input is not a person's no"
    );
    assert_eq!(events[2]["decided_by"], json!({"kind": "end_of_input"}));
}

#[test]
fn a_session_resumes_under_its_name_and_its_replay_goes_on() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("One."), answer("Two.")]));
    assert_eq!(
        tau.run(
            &["--model", &model, "chat", "--session", "kitchen"],
            "first\n"
        )
        .code,
        0
    );
    // A new process on the same script: the session already holds "One.".
    let run = tau.run(
        &["--model", &model, "chat", "--session", "kitchen"],
        "second\n",
    );
    assert!(
        run.stdout.starts_with("resumed session kitchen (2)\n"),
        "{}",
        run.stdout
    );
    assert_eq!(
        tau.session_json("kitchen"),
        json!([
            {"role": "user", "content": [{"text": "first"}]},
            {"role": "assistant", "content": [{"text": "One."}]},
            {"role": "user", "content": [{"text": "second"}]},
            {"role": "assistant", "content": [{"text": "Two."}]},
        ])
    );
    // Another session starts the same script from its beginning.
    let run = tau.run(&["--model", &model, "chat", "--session", "hall"], "hi\n");
    assert!(run.stdout.contains("One."), "{}", run.stdout);
    let list = tau.run(&["sessions", "list"], "");
    assert!(list.stdout.contains("kitchen"), "{}", list.stdout);
    let deleted = tau.run(&["sessions", "delete", "kitchen"], "");
    assert_eq!(
        (deleted.code, deleted.stdout.as_str()),
        (0, "deleted session kitchen\n")
    );
    assert_eq!(tau.run(&["sessions", "show", "kitchen"], "").code, 2);
}

#[test]
fn a_second_chat_on_an_open_session_is_refused() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Hi.")]));
    let mut first = tau
        .command(&["--model", &model, "chat", "--session", "busy"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first chat holds the session.
    let mut line = String::new();
    let mut reader = std::io::BufReader::new(first.stdout.take().unwrap());
    std::io::BufRead::read_line(&mut reader, &mut line).unwrap();
    assert_eq!(line, "new session busy\n");
    let second = tau.run(&["--model", &model, "chat", "--session", "busy"], "hello\n");
    assert_eq!(second.code, 2);
    assert_eq!(
        second.stderr,
        "tau: session 'busy' is already open in another tau (chat or serve); close that one first\n"
    );
    drop(first.stdin.take());
    assert!(first.wait().unwrap().success());
}

#[test]
fn the_audit_log_verifies_and_reports_an_edit() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call("t1", "clock", &json!({})),
        answer("Noon.")
    ]));
    tau.run(&["--model", &model, "chat", "--session", "s1"], "time?\n");
    let verified = tau.run(&["audit", "verify"], "");
    assert_eq!(
        (verified.code, verified.stdout.as_str()),
        (0, "audit log intact: 2 lines\n")
    );
    let path = tau.home().join("audit.jsonl");
    let text = std::fs::read_to_string(&path)
        .unwrap()
        .replacen("\"clock\"", "\"lamp\"", 1);
    std::fs::write(&path, text).unwrap();
    let broken = tau.run(&["audit", "verify"], "");
    assert_eq!(
        (broken.code, broken.stdout.as_str()),
        (
            1,
            "audit log broken at line 2: it does not follow line 1: line 1 was edited\n"
        )
    );
}

#[test]
fn a_running_tool_shows_its_progress_as_plain_lines_when_not_a_terminal() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo one; sleep 0.3; echo two >&2"})
        ),
        answer("Done.")
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "go\ny\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let progress: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("  … "))
        .collect();
    assert_eq!(progress, vec!["  … one", "  … stderr: two"]);
    assert!(
        !run.stdout.contains('\u{1b}'),
        "no colour or spinner when stdout is not a terminal"
    );
}

#[test]
fn sessions_list_shows_times_in_the_configured_zone_and_names_it() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("One.")]));
    let run = tau.run(&["--model", &model, "chat", "--session", "kitchen"], "hi\n");
    assert_eq!(run.code, 0, "{}", run.stderr);
    // 2026-12-03 08:02:19 UTC, whenever the test runs.
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.execute(
        "UPDATE sessions SET updated_at = 1796284939 WHERE id = 'kitchen'",
        [],
    )
    .unwrap();
    drop(db);
    let zoned = tau.config("[tools.clock]\nzone = \"Europe/Istanbul\"\n");
    let in_config = tau.run_env(
        &["--config", zoned.to_str().unwrap(), "sessions", "list"],
        &[("TZ", "America/New_York")],
        "",
    );
    // Without `[tools.clock] zone`, the system's (TZ).
    let in_system = tau.run_env(&["sessions", "list"], &[("TZ", "America/New_York")], "");
    insta::assert_snapshot!(format!(
        "[tools.clock] zone = \"Europe/Istanbul\":\n{}\nTZ=America/New_York:\n{}",
        in_config.stdout, in_system.stdout
    ));
}

#[test]
fn a_commands_output_is_shown_as_text_its_first_lines_and_how_many_more() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "seq 1 12; printf '\\033[2Jgone\\n' >&2; exit 3"})
        ),
        answer("It counted.")
    ]));
    let run = tau.run(
        &["--model", &model, "chat", "--answers-from-stdin"],
        "count\ny\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let output: String = run
        .stdout
        .lines()
        .skip_while(|line| !line.contains("✗ run_command"))
        .take_while(|line| !line.starts_with("tau>"))
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(!output.contains('\u{1b}'), "{output}");
    insta::assert_snapshot!(output);
}

/// `always` approves the call and grants exactly it: the same call again in the
/// conversation runs without a question, recorded as the grant's; another call is asked.
#[test]
fn always_grants_exactly_this_call_and_the_next_identical_one_runs_without_a_question() {
    let tau = Tau::new();
    let call = json!({"command": "echo x >> out.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        tool_call("t2", "run_command", &call),
        tool_call(
            "t3",
            "run_command",
            &json!({"command": "echo x >> out.txt "})
        ),
        answer("done"),
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "append twice\nalways\nn\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap(),
        "x\nx\n"
    );
    assert_eq!(
        run.stdout.matches("run it? [y/N]").count(),
        2,
        "{}",
        run.stdout
    );
    let events = tau.audit_events();
    let created = events
        .iter()
        .find(|e| e["type"] == "grant_created")
        .unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(
        (&created["tool"], &created["arguments"], &created["scope"]),
        (&json!("run_command"), &call, &json!("conversation"))
    );
    let calls: Vec<_> = events
        .iter()
        .filter(|e| e["type"] == "tool_call")
        .map(|e| {
            (
                e["tool_use_id"].clone(),
                e["approval"].clone(),
                e["decided_by"].clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        vec![
            (
                json!("t1"),
                json!("approved"),
                json!({"kind": "person", "channel": "terminal"})
            ),
            (
                json!("t2"),
                json!("granted"),
                json!({"kind": "grant", "id": id})
            ),
            (
                json!("t3"),
                json!("rejected"),
                json!({"kind": "person", "channel": "terminal"})
            ),
        ]
    );
    let used = events.iter().find(|e| e["type"] == "grant_used").unwrap();
    assert_eq!(
        (&used["grant_id"], &used["use_number"]),
        (&json!(id), &json!(1))
    );
    let listed = tau.run(&["grants", "list"], "");
    assert!(
        listed
            .stdout
            .starts_with(&format!("{id}  run_command (tier 2)  in “append twice”\n")),
        "{}",
        listed.stdout
    );
    assert!(
        listed.stdout.contains("· 1 use, last "),
        "{}",
        listed.stdout
    );
    // The audit log's count: two questions, one yes, one no, one call by the grant.
    let stats = tau.run(&["grants", "stats"], "");
    assert_eq!(stats.code, 0, "{}", stats.stderr);
    assert!(
        stats.stdout.starts_with(
            "tool         asked  approved  refused  by grant  median answer\n\
             run_command      2         1        1         1  "
        ),
        "{}",
        stats.stdout
    );
    assert!(
        stats
            .stdout
            .ends_with("\nno call was approved 3 times in the last 7 days\n"),
        "{}",
        stats.stdout
    );
}

/// After three yeses to exactly the same call, the fourth question suggests allowing it
/// again, measured from the audit log; tau makes no grant by itself, and a call with other
/// arguments is not suggested.
#[test]
fn the_same_call_approved_three_times_is_suggested_for_a_grant_and_never_granted_alone() {
    let tau = Tau::new();
    let call = json!({"command": "echo x >> out.txt"});
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        tool_call("t2", "run_command", &call),
        tool_call("t3", "run_command", &call),
        tool_call("t4", "run_command", &call),
        tool_call(
            "t5",
            "run_command",
            &json!({"command": "echo y >> out.txt"})
        ),
        answer("done"),
    ]));
    let run = tau.run(
        &[
            "--model",
            &model,
            "chat",
            "--answers-from-stdin",
            "--session",
            "s1",
        ],
        "append\ny\ny\ny\ny\ny\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let questions: Vec<&str> = run.stdout.split("run it? [y/N]").collect();
    assert_eq!(questions.len(), 6, "{}", run.stdout);
    let suggested = "You approved exactly this call 3 times in the last 7 days";
    for (n, question) in questions.iter().take(5).enumerate() {
        assert_eq!(
            question.contains(suggested),
            n == 3,
            "question {}: {question}",
            n + 1
        );
    }
    assert!(
        !tau.audit_events()
            .iter()
            .any(|e| e["type"] == "grant_created"),
        "no grant made"
    );
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap(),
        "x\nx\nx\nx\ny\n"
    );
}

/// `tau sessions` names each session by its title (the first prompt's, or one a person
/// gave), leaves out the empty ones unless asked, renames and finds them.
#[test]
fn sessions_are_listed_by_title_renamed_and_found() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("Done.")]));
    for (session, prompt) in [
        ("kitchen", "dim the kitchen lights"),
        ("garden", "water the plants at 7"),
    ] {
        let run = tau.run(
            &["--model", &model, "chat", "--session", session],
            &format!("{prompt}\n"),
        );
        assert_eq!(run.code, 0, "{}", run.stderr);
    }
    // A session nobody wrote in (TauBar's New chat makes one before its first message).
    {
        let db = tau_state::StateDb::open(&tau.home().join("state.db")).unwrap();
        db.sessions()
            .ensure_session(&tau_protocol::SessionId::parse("empty").unwrap())
            .unwrap();
    }
    let title_of = |listing: &str, session: &str| {
        listing.lines().find(|l| l.starts_with(session)).map(|l| {
            l.split("  ")
                .filter(|p| !p.is_empty())
                .last()
                .unwrap_or("")
                .trim()
                .to_owned()
        })
    };
    let list = tau.run(&["sessions", "list"], "");
    assert_eq!(list.code, 0, "{}", list.stderr);
    assert!(list.stdout.starts_with("SESSION"), "{}", list.stdout);
    assert!(list.stdout.contains("TITLE"), "{}", list.stdout);
    assert_eq!(
        title_of(&list.stdout, "kitchen").as_deref(),
        Some("dim the kitchen lights")
    );
    assert_eq!(
        title_of(&list.stdout, "garden").as_deref(),
        Some("water the plants at 7")
    );
    assert!(!list.stdout.contains("\nempty "), "{}", list.stdout);
    assert!(
        list.stdout
            .ends_with("(1 empty not listed: tau sessions list --all)\n"),
        "{}",
        list.stdout
    );
    let all = tau.run(&["sessions", "list", "--all"], "");
    assert!(all.stdout.contains("\nempty "), "{}", all.stdout);

    let renamed = tau.run(
        &["sessions", "rename", "garden", "Garden\u{202e} chores"],
        "",
    );
    assert_eq!(
        (renamed.code, renamed.stdout.as_str()),
        (0, "session garden is called Garden\\u{202e} chores\n")
    );
    let list = tau.run(&["sessions", "list"], "");
    assert_eq!(
        title_of(&list.stdout, "garden").as_deref(),
        Some("Garden\\u{202e} chores")
    );
    for bad in ["   ", &"x".repeat(121)] {
        let refused = tau.run(&["sessions", "rename", "garden", bad], "");
        if bad.trim().is_empty() {
            // An empty title gives the first prompt's back.
            assert_eq!(refused.code, 0, "{}", refused.stderr);
            assert_eq!(
                refused.stdout,
                "session garden is called water the plants at 7\n"
            );
        } else {
            assert_eq!(refused.code, 2, "{}", refused.stdout);
            assert!(
                refused.stderr.contains("at most 120 characters"),
                "{}",
                refused.stderr
            );
        }
    }
    assert_eq!(tau.run(&["sessions", "rename", "nowhere", "x"], "").code, 2);

    let found = tau.run(&["sessions", "search", "PLANTS"], "");
    assert_eq!(found.code, 0, "{}", found.stderr);
    assert!(found.stdout.contains("\ngarden "), "{}", found.stdout);
    assert!(!found.stdout.contains("kitchen"), "{}", found.stdout);
    let none = tau.run(&["sessions", "search", "no such words"], "");
    assert_eq!(none.stdout, "no session holds that\n");
}
