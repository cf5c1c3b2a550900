//! `tau serve` with `[telegram]`, end to end: the real binary, a `replay:` model and the
//! npm `telegram-test-api` Bot API emulator. Only an owner's press in the conversation's
//! own chat approves; a question survives a restart of tau and its button still works,
//! once.

use crate::common;

use std::path::PathBuf;

use common::serve::Serve;
use common::*;
use serde_json::{Value, json};
use tau_test_support::telegram::{BotMessage, Emulator};

const TOKEN: &str = "123456:TEST-token_x";
const OWNER: i64 = 4242;
const STRANGER: i64 = 666;

/// tau's zone in these tests: times on Telegram are shown in it, named (`JST`, +09).
const ZONE: &str = "Asia/Tokyo";

fn telegram_config(tau: &Tau, emulator: &Emulator) -> PathBuf {
    tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\nedit_interval_ms = 50\n[tools.clock]\nzone = \"{ZONE}\"\n",
        emulator.url
    ))
}

/// The time `text` shows after `before` (`2026-12-03 17:02:19 JST`), read in tau's zone.
fn shown_time(text: &str, before: &str) -> jiff::Timestamp {
    let (_, after) = text
        .rsplit_once(before)
        .unwrap_or_else(|| panic!("no {before:?} in {text}"));
    let shown = after
        .get(..23)
        .unwrap_or_else(|| panic!("no time in {text}"));
    let (civil, zone) = shown.split_at(19);
    assert_eq!(zone, " JST", "{text}");
    let civil: jiff::civil::DateTime = civil.parse().unwrap();
    civil.in_tz(ZONE).unwrap().timestamp()
}

fn serve(tau: &Tau, model: &str, config: &std::path::Path) -> Serve {
    tau.serve_env(model, config, &[("TAU_TELEGRAM_TOKEN", TOKEN)])
}

/// The emulator, a home and `tau serve` with `script` as its model and Telegram on; `None`
/// (after saying why) when the emulator is missing.
fn started(script: &Value) -> Option<(Emulator, Tau, Serve)> {
    let emulator = Emulator::start(TOKEN)?;
    let tau = Tau::new();
    let model = tau.replay(script);
    let serve = serve(&tau, &model, &telegram_config(&tau, &emulator));
    Some((emulator, tau, serve))
}

/// The message that asks `approval`, once it shows buttons.
fn question(emulator: &Emulator) -> (BotMessage, String) {
    emulator.wait("a question with buttons", |messages| {
        messages.iter().find_map(|m| {
            let id = m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:"))?;
            Some((m.clone(), id.to_owned()))
        })
    })
}

/// The message of `asked` once it has lost its buttons (its question closed).
fn closed(emulator: &Emulator, asked: &BotMessage) -> BotMessage {
    emulator.wait("the question closed", |messages| {
        messages
            .iter()
            .find(|m| m.id == asked.id && m.buttons.is_empty())
            .cloned()
    })
}

fn tool_calls(tau: &Tau) -> Vec<Value> {
    tau.audit()
        .into_iter()
        .filter(|l| l["type"] == "tool_call")
        .collect()
}

fn wait_for<T>(what: &str, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The state of a stored question, read from `state.db` itself.
fn state_of(tau: &Tau, id: &str) -> String {
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    db.query_row("SELECT state FROM approvals WHERE id = ?1", [id], |row| {
        row.get(0)
    })
    .unwrap()
}

/// The deadline and decision time of a stored question, from `state.db` itself.
fn times_of(tau: &Tau, id: &str) -> (jiff::Timestamp, jiff::Timestamp) {
    let db = rusqlite::Connection::open(tau.home().join("state.db")).unwrap();
    let (deadline, decided_at): (String, String) = db
        .query_row(
            "SELECT deadline, decided_at FROM approvals WHERE id = ?1",
            [id],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )
        .unwrap();
    (deadline.parse().unwrap(), decided_at.parse().unwrap())
}

fn run_command(text: &str) -> Value {
    tool_call(
        "t1",
        "run_command",
        &json!({"command": format!("echo {text} >> out.txt")}),
    )
}

#[test]
fn the_owner_approves_on_telegram_and_the_command_runs_once() {
    let Some((emulator, tau, serve)) = started(&json!([run_command("hi"), answer("Done: hi.")]))
    else {
        return;
    };
    assert!(
        serve.banner.iter().any(|l| l.contains("Telegram")),
        "{:?}",
        serve.banner
    );

    emulator.write(OWNER, OWNER, "write hi");
    let (asked, id) = question(&emulator);
    assert_eq!(asked.chat, OWNER);
    assert!(asked.text.contains("run_command"), "{}", asked.text);
    assert!(
        asked.text.contains("echo hi &gt;&gt; out.txt"),
        "{}",
        asked.text
    );
    assert!(
        !tau.workspace().join("out.txt").exists(),
        "nothing runs before the answer"
    );
    // TauBar lists the question among what waits, as Telegram's; it cannot answer it.
    let every = serve.get("/api/approvals?state=pending&channel=all").json();
    assert_eq!(
        every
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].clone(), r["channel"].clone()))
            .collect::<Vec<_>>(),
        vec![(json!(id), json!("telegram"))]
    );
    let webs_own = serve.get("/api/approvals?state=pending").json();
    assert_eq!(webs_own, json!([]));
    let answered_on_web = serve.approve(&id);
    assert_eq!(answered_on_web.status, 404, "{answered_on_web:?}");
    // A question on TauBar too: /pending lists both, each with where it is answered.
    let web = serve.new_session();
    serve.ask(&web, "write hi from the web");
    emulator.write(OWNER, OWNER, "/pending");
    let pending = emulator.wait("the pending list", |m| {
        m.iter()
            .find(|m| m.text.starts_with("Waiting for your answer"))
            .cloned()
    });
    assert_eq!(
        pending.text,
        "Waiting for your answer (2):\n\
         • run_command (tier 2): its buttons are on its message in this chat\n\
         • run_command (tier 2): answer it on TauBar"
    );

    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    // The shell makes the file before it writes the line: wait for the line.
    let out = wait_for("out.txt", || {
        std::fs::read_to_string(tau.workspace().join("out.txt"))
            .ok()
            .filter(|text| text.ends_with('\n'))
    });
    assert_eq!(out, "hi\n");
    emulator.wait("the answer", |m| {
        m.iter().find(|m| m.text.contains("Done: hi.")).cloned()
    });
    let closed = closed(&emulator, &asked);
    assert!(
        closed.text.ends_with(" JST</b>")
            && closed
                .text
                .contains(&format!("<b>✅ Approved by U{OWNER} at ")),
        "{}",
        closed.text
    );
    assert_eq!(state_of(&tau, &id), "approved");
    // The times are tau's zone's: the deadline and the decision as state.db keeps them.
    let (deadline, decided_at) = times_of(&tau, &id);
    assert_eq!(
        shown_time(&asked.text, "open until ").as_second(),
        deadline.as_second(),
        "{}",
        asked.text
    );
    assert_eq!(
        shown_time(&closed.text, " at ").as_second(),
        decided_at.as_second(),
        "{}",
        closed.text
    );

    // A second press of the same button changes nothing and runs nothing.
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    std::thread::sleep(std::time::Duration::from_millis(500));
    let calls = tool_calls(&tau);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["approval"], "approved");
    assert_eq!(calls[0]["approval_id"], json!(id));
    assert_eq!(
        calls[0]["decided_by"],
        json!({"kind": "person", "channel": "telegram", "user": OWNER.to_string()})
    );
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap(),
        "hi\n"
    );
    serve.kill_hard();
}

#[test]
fn strangers_never_reach_the_model_and_their_presses_change_nothing() {
    let Some((emulator, tau, serve)) =
        started(&json!([run_command("stranger"), answer("Not run.")]))
    else {
        return;
    };

    // A stranger in their own chat: nothing reaches the model, nothing is said.
    emulator.write(STRANGER, STRANGER, "run rm -rf ~ for me");
    std::thread::sleep(std::time::Duration::from_millis(800));
    assert!(
        emulator.bot_messages().is_empty(),
        "{:#?}",
        emulator.bot_messages()
    );
    assert!(
        serve
            .get("/api/approvals")
            .json()
            .as_array()
            .unwrap()
            .is_empty()
    );

    emulator.write(OWNER, OWNER, "write something");
    let (asked, id) = question(&emulator);
    // A stranger presses the owner's button (as in a group), then a forged button, then
    // the owner's button from the stranger's own chat.
    emulator.press(OWNER, STRANGER, &format!("v1:a:{id}"));
    emulator.press(OWNER, OWNER, "v1:a:ap_00000000000000000000000000000000");
    emulator.press(STRANGER, STRANGER, &format!("v1:a:{id}"));
    let refused = wait_for("three refused presses in the audit log", || {
        let lines: Vec<Value> = tau
            .audit()
            .into_iter()
            .filter(|l| l["type"] == "answer_refused")
            .collect();
        (lines.len() == 3).then_some(lines)
    });
    let reasons: Vec<(&Value, &Value)> =
        refused.iter().map(|l| (&l["user"], &l["reason"])).collect();
    assert_eq!(
        reasons,
        [
            (&json!(STRANGER.to_string()), &json!("not an owner")),
            (&json!(OWNER.to_string()), &json!("button data not tau's")),
            (&json!(STRANGER.to_string()), &json!("not an owner")),
        ]
    );
    assert_eq!(state_of(&tau, &id), "pending");
    assert!(!tau.workspace().join("out.txt").exists());

    // The owner says no: nothing runs, and the audit says who.
    emulator.press(OWNER, OWNER, &format!("v1:r:{id}"));
    emulator.wait("the refusal answered", |m| {
        m.iter().find(|m| m.text.contains("Not run.")).cloned()
    });
    let closed = closed(&emulator, &asked);
    assert!(
        closed.text.contains("<b>❌ Rejected by U4242 at "),
        "{}",
        closed.text
    );
    assert_eq!(state_of(&tau, &id), "rejected");
    let calls = tool_calls(&tau);
    assert_eq!(calls.len(), 1, "{:#?}", tau.audit());
    assert_eq!(calls[0]["status"], "refused");
    assert_eq!(
        calls[0]["decided_by"],
        json!({"kind": "person", "channel": "telegram", "user": OWNER.to_string()})
    );
    assert!(!tau.workspace().join("out.txt").exists());
    serve.kill_hard();
}

#[test]
fn a_question_survives_a_kill_and_its_button_works_after_the_restart() {
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let model = tau.replay(&json!([run_command("later"), answer("Done later.")]));
    let config = telegram_config(&tau, &emulator);
    let first = serve(&tau, &model, &config);
    emulator.write(OWNER, OWNER, "write later");
    let (asked, id) = question(&emulator);
    // Killed once the turn has ended paused (its state saved), not in between.
    wait_for("the turn paused", || {
        tau.audit()
            .iter()
            .any(|l| l["type"] == "turn_end" && l["stop_reason"] == "interrupt")
            .then_some(())
    });
    // ... and once the channel stored which message shows the question: a kill before that
    // store shows the question again after the restart, in a new message.
    wait_for("the question's message stored", || {
        let db = rusqlite::Connection::open(tau.home().join("state.db")).ok()?;
        let shown: i64 = db
            .query_row(
                "SELECT message_id FROM telegram_questions WHERE approval_id = ?1",
                [&id],
                |row| row.get(0),
            )
            .ok()?;
        (shown == asked.id).then_some(())
    });
    first.kill_hard();

    let second = serve(&tau, &model, &config);
    assert!(
        second
            .banner
            .iter()
            .any(|l| l.contains("1 question still waits")),
        "{:?}",
        second.banner
    );
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    // The shell makes the file before it writes the line: wait for the line.
    let out = wait_for("out.txt", || {
        std::fs::read_to_string(tau.workspace().join("out.txt"))
            .ok()
            .filter(|text| text.ends_with('\n'))
    });
    assert_eq!(out, "later\n");
    emulator.wait("the answer", |m| {
        m.iter().find(|m| m.text.contains("Done later.")).cloned()
    });
    let closed = closed(&emulator, &asked);
    assert!(
        closed.text.contains("✅ Approved by U4242"),
        "{}",
        closed.text
    );
    // The owner's message was handled before the kill: the restart does not hand it to the
    // model again (the replay script has nothing more to give; a second turn would fail).
    std::thread::sleep(std::time::Duration::from_millis(500));
    let turns = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "turn_end")
        .count();
    let calls = tool_calls(&tau);
    assert_eq!(calls.len(), 1, "{calls:#?}");
    assert_eq!(calls[0]["approval"], "approved");
    assert!(
        tau.audit().iter().all(|l| l["type"] != "error"),
        "{:#?}",
        tau.audit()
    );
    assert!(turns >= 1);
    second.kill_hard();
}

#[test]
fn a_telegram_section_without_its_token_or_owners_stops_tau_serve_with_a_config_error() {
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let config = tau.serve_config("[telegram]\nowners = [4242]\n");
    let run = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "serve",
        ],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("TAU_TELEGRAM_TOKEN"), "{}", run.stderr);
    assert!(!run.stderr.contains(TOKEN));
    // `tau config check` says the same before anything is started.
    let check = tau.run(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "config",
            "check",
        ],
        "",
    );
    assert_eq!(check.code, 2, "{}", check.stderr);
    assert!(
        check.stderr.contains("TAU_TELEGRAM_TOKEN"),
        "{}",
        check.stderr
    );
    let check = tau.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "config",
            "check",
        ],
        &[("TAU_TELEGRAM_TOKEN", TOKEN)],
        "",
    );
    assert_eq!(check.code, 0, "{}", check.stderr);
    assert!(!check.stdout.contains(TOKEN), "{}", check.stdout);

    let config = tau.serve_config("[telegram]\nowners = [\"alice\"]\n");
    let run = tau.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "--model",
            &model,
            "serve",
        ],
        &[("TAU_TELEGRAM_TOKEN", TOKEN)],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("not usernames"), "{}", run.stderr);
}

#[test]
fn cancel_on_telegram_stops_an_approved_command_that_runs() {
    let Some((emulator, tau, serve)) = started(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo started > started.txt; sleep 6; echo late > late.txt"})
        ),
        answer("unused")
    ])) else {
        return;
    };
    emulator.write(OWNER, OWNER, "go");
    let (_, id) = question(&emulator);
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    wait_for("the command to start", || {
        tau.workspace().join("started.txt").exists().then_some(())
    });
    emulator.write(OWNER, OWNER, "/cancel");
    let call = wait_for("the call to end", || {
        tool_calls(&tau)
            .into_iter()
            .find(|l| l["tool"] == "run_command")
    });
    assert_eq!(call["status"], "cancelled", "{call}");
    std::thread::sleep(std::time::Duration::from_secs(7));
    assert!(
        !tau.workspace().join("late.txt").exists(),
        "the command was stopped with its turn"
    );
    serve.kill_hard();
}

#[test]
fn a_routine_that_asks_on_telegram_asks_the_first_owner_and_runs_on_yes() {
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let tau = Tau::new();
    tau.routine_edited_behind_its_approval("telegram");

    let model = tau.replay(&json!([answer("unused")]));
    let serve = serve(&tau, &model, &telegram_config(&tau, &emulator));
    let (asked, id) = question(&emulator);
    assert_eq!(asked.chat, OWNER);
    assert!(asked.text.contains("echo tock"), "{}", asked.text);
    assert!(
        asked.text.contains("tick · every 1s"),
        "whose question: {}",
        asked.text
    );
    // Only the owner's press, in the owner's chat, counts.
    emulator.press(OWNER, STRANGER, &format!("v1:a:{id}"));
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    // The file exists a moment before the command has written its line.
    let out = wait_for("tick.txt", || {
        std::fs::read_to_string(tau.workspace().join("tick.txt"))
            .ok()
            .filter(|text| text.ends_with('\n'))
    });
    assert!(out.starts_with("tock\n"), "{out}");
    let call = wait_for("the routine's call", || {
        tool_calls(&tau)
            .into_iter()
            .find(|l| l["session"] == "routines" && l["approval"] == "approved")
    });
    assert_eq!(
        call["decided_by"],
        json!({"kind": "person", "channel": "telegram", "user": OWNER.to_string()})
    );
    serve.kill_hard();
}

#[test]
fn the_bot_token_reaches_no_command_no_log_and_no_audit_line() {
    let Some((emulator, tau, first)) = started(&json!([
        tool_call("t1", "run_command", &json!({"command": "env > env.txt"})),
        answer("Listed.")
    ])) else {
        return;
    };
    emulator.write(OWNER, OWNER, "list the environment");
    let (_, id) = question(&emulator);
    emulator.press(OWNER, OWNER, &format!("v1:a:{id}"));
    let env = wait_for("env.txt", || {
        std::fs::read_to_string(tau.workspace().join("env.txt"))
            .ok()
            .filter(|e| !e.is_empty())
    });
    emulator.wait("the answer", |m| {
        m.iter().find(|m| m.text.contains("Listed.")).cloned()
    });
    first.kill_hard();
    assert!(!env.contains("TAU_TELEGRAM_TOKEN"), "{env}");
    assert!(!env.contains("TEST-token_x"), "{env}");

    // A Bot API that cannot be reached: the errors are logged, the token is not.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let unreachable = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let config = tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{unreachable}\"\npoll_timeout_seconds = 0\n"
    ));
    // Nothing is asked of this one's model.
    let model = tau.replay(&json!([answer("unused")]));
    let second = serve(&tau, &model, &config);
    wait_for("a logged connection error", || {
        let log = tau.log();
        log.contains("cannot reach the Bot API").then_some(())
    });
    second.kill_hard();
    let log = tau.log();
    assert!(!log.contains("TEST-token_x"), "{log}");
    let audit = std::fs::read_to_string(tau.home().join("audit.jsonl")).unwrap();
    assert!(!audit.contains("TEST-token_x"));
}
