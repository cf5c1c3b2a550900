//! A grant of a command pins what the command runs, through the real `tau serve`: a grant
//! for `python3 -m job`, `make -s` or `npm run test` covers the call only while the
//! workspace's files are what the granted calls left them. The model rewriting `job.py`,
//! the `Makefile` or `package.json` with a tier-1 `write_file` gets the same call asked
//! again, its card saying which file changed; what a granted call writes itself does not.

use crate::common;

use common::serve::Serve;
use common::{Tau, answer, tool_call};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

/// A command, the file it runs and that file rewritten by the model.
struct Case {
    command: &'static str,
    file: &'static str,
    before: &'static str,
    after: &'static str,
    /// Other files the workspace holds first.
    beside: &'static [(&'static str, &'static str)],
}

const JOB: Case = Case {
    command: "python3 -m job >> out.txt",
    file: "job.py",
    before: "print('v1')\n",
    after: "print('rewritten')\n",
    beside: &[],
};

const MAKEFILE: Case = Case {
    command: "make -s >> out.txt",
    file: "Makefile",
    before: "all:\n\t@echo v1\n",
    after: "all:\n\t@echo rewritten\n",
    beside: &[],
};

const PACKAGE_JSON: Case = Case {
    command: "npm run -s test >> out.txt",
    file: "package.json",
    before: r#"{"name": "p", "version": "1.0.0", "scripts": {"test": "echo v1"}}"#,
    after: r#"{"name": "p", "version": "1.0.0", "scripts": {"test": "echo rewritten"}}"#,
    beside: &[],
};

fn out(tau: &Tau) -> String {
    std::fs::read_to_string(tau.workspace().join("out.txt")).unwrap_or_default()
}

/// Approves the question `row` with "allow again" and waits for the turn's `answer`.
fn approve_with_grant(serve: &Serve, session: &str, row: &Value, answer: &str) {
    let id = row["id"].as_str().unwrap();
    let approved = serve.answer(
        id,
        &json!({"decision": "approve", "grant": {"scope": "conversation"}}),
    );
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(session, answer);
}

fn send(serve: &Serve, session: &str, text: &str) {
    let body = json!({ "text": text }).to_string();
    let sent = serve.post(&format!("/api/sessions/{session}/messages"), &body);
    assert_eq!(sent.status, 202, "{sent:?}");
}

/// The grant is made and covers the same call twice (its own output, `out.txt`, changes
/// each time); the model rewrites the file; the same call is asked again, naming it.
fn rewritten_file_asks_again(case: &Case) -> Value {
    let tau = Tau::new();
    std::fs::create_dir_all(tau.workspace()).unwrap();
    std::fs::write(tau.workspace().join(case.file), case.before).unwrap();
    for (name, content) in case.beside {
        std::fs::write(tau.workspace().join(name), content).unwrap();
    }
    let call = json!({ "command": case.command });
    let model = tau.replay(&json!([
        tool_call("t1", "run_command", &call),
        answer("first"),
        tool_call("t2", "run_command", &call),
        answer("second"),
        tool_call(
            "w1",
            "write_file",
            &json!({"path": case.file, "content": case.after})
        ),
        tool_call("t3", "run_command", &call),
        answer("third"),
    ]));
    let serve = tau.serve(&model, &tau.serve_config(""));
    let session = serve.new_session();
    let first = serve.ask(&session, "run it");
    // The words a person reads before making the grant say what it pins.
    assert!(
        first["grant_covers"]
            .as_str()
            .unwrap()
            .ends_with(tau_protocol::PINS_WORKSPACE_TEXT),
        "{first}"
    );
    approve_with_grant(&serve, &session, &first, "first");
    assert_eq!(out(&tau), "v1\n");

    // Covered: the call's own output (out.txt grew) was allowed with it.
    send(&serve, &session, "again");
    serve.until_answered(&session, "second");
    assert_eq!(out(&tau), "v1\nv1\n", "ran under the grant");
    let asked = serve.get("/api/approvals").json();
    assert_eq!(asked.as_array().unwrap().len(), 1, "no question: {asked}");

    // The model rewrites the file the command runs; the same call is asked again.
    let again = serve.ask(&session, "rewrite and run");
    assert_eq!(again["call_id"], json!("t3"));
    assert_eq!(
        std::fs::read_to_string(tau.workspace().join(case.file)).unwrap(),
        case.after
    );
    assert_eq!(out(&tau), "v1\nv1\n", "asked, not run");
    let note = again["card"]["notes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|n| n["label"] == "grant")
        .cloned()
        .unwrap_or_else(|| panic!("a grant note: {again}"));
    assert_eq!(
        note,
        json!({"level": "warning", "label": "grant",
               "text": format!("asked again: {} changed since you allowed this", case.file)})
    );
    let audit = tau.audit();
    let kinds: Vec<&str> = audit
        .iter()
        .filter_map(|l| l["type"].as_str().filter(|t| t.starts_with("grant_")))
        .collect();
    assert_eq!(
        kinds,
        vec![
            "grant_created",
            "grant_pinned",
            "grant_used",
            "grant_pinned"
        ]
    );
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
    again
}

#[test]
fn a_rewritten_job_py_is_asked_again() {
    rewritten_file_asks_again(&JOB);
}

#[test]
fn a_rewritten_makefile_is_asked_again() {
    rewritten_file_asks_again(&MAKEFILE);
}

#[test]
fn a_changed_package_json_script_is_asked_again() {
    rewritten_file_asks_again(&PACKAGE_JSON);
}

/// TauBar's card of a call asked again, as the page reads it (ids, hashes and times
/// redacted).
#[test]
fn taubar_s_card_says_why_it_asks_again() {
    let mut row = rewritten_file_asks_again(&JOB);
    for key in ["id", "session", "created_at", "deadline", "decided_at"] {
        if row.get(key).is_some() {
            row[key] = json!("[redacted]");
        }
    }
    if let Some(offer) = row.get_mut("grant_offer") {
        for key in ["schema_sha256", "arguments_sha256", "card_sha256"] {
            offer[key] = json!("[sha256]");
        }
    }
    let shown = json!({
        "card": row["card"],
        "grant_offer": row["grant_offer"],
        "grant_line": row["grant_line"],
        "grant_covers": row["grant_covers"],
        "grant_covers_channel": row["grant_covers_channel"],
    });
    insta::assert_json_snapshot!(shown);
}

/// A grant row forged while `tau serve` was stopped is reported and revoked at start; the
/// call it names is asked.
#[test]
fn tau_serve_reports_a_forged_grant_at_start_and_asks_its_call() {
    let tau = Tau::new();
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo a >> out.txt"})
        ),
        answer("first"),
        tool_call(
            "t2",
            "run_command",
            &json!({"command": "echo forged >> out.txt"})
        ),
        answer("second"),
    ]));
    let config = tau.serve_config("");
    let serve = tau.serve(&model, &config);
    let session = serve.new_session();
    let row = serve.ask(&session, "run a");
    approve_with_grant(&serve, &session, &row, "first");
    let (code, _) = serve.terminate();
    assert_eq!(code, 0);
    let db = tau_state::StateDb::open(&tau.home().join("state.db")).unwrap();
    let real = db.grants().grants(None).unwrap().remove(0);
    let arguments = json!({"command": "echo forged >> out.txt"});
    db.grants()
        .create_grant(&tau_protocol::Grant {
            id: tau_protocol::GrantId::parse("gr_forged0000000000000000000002").unwrap(),
            arguments_sha256: tau_state::canonical_arguments(&arguments).1,
            arguments,
            ..real
        })
        .unwrap();
    drop(db);

    let serve = tau.serve(&model, &config);
    let reported: Vec<&String> = serve
        .banner
        .iter()
        .filter(|l| l.contains("grant "))
        .collect();
    insta::assert_debug_snapshot!(reported);
    let asked = serve.ask(&session, "run forged");
    assert_eq!(asked["call_id"], json!("t2"));
    assert_eq!(out(&tau), "a\n");
}
