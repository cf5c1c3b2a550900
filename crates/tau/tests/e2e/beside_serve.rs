//! Every other tau command run beside a running `tau serve` on the same home: none of them
//! may take the hub's `state.db` from under it. SQLite's locks belong to the process; a
//! second descriptor opened and closed on the file (in any process of tau) once let a
//! command checkpoint and unlink the hub's write-ahead log, so the hub wrote into deleted
//! files and lost what it wrote: a yes given afterwards was pending again after a restart
//! and ran twice. Here the hub's descriptors are read from `/proc`.

use crate::common;

use common::{Tau, answer, state_descriptors, tool_call};
use pretty_assertions::assert_eq;
use serde_json::json;

#[test]
fn commands_beside_serve_leave_its_state_files_in_place_and_a_yes_runs_once() {
    let tau = Tau::new();
    let model = tau.make_proof();
    let config = tau.serve_config("");
    let config = config.to_str().unwrap();
    let serve = tau.serve(&model, std::path::Path::new(config));
    let pid = serve.child.id();
    let home = tau.home();
    let one_connection = ["state.db", "state.db-shm", "state.db-wal"]
        .map(|file| home.join(file).to_string_lossy().into_owned())
        .to_vec();
    assert_eq!(state_descriptors(pid), one_connection);

    let session = serve.new_session();
    let row = serve.ask(&session, "make a file");
    let chat_model = tau.replay(&json!([answer("Hello from the terminal.")]));
    let commands: Vec<Vec<&str>> = vec![
        vec!["sessions", "list"],
        vec!["sessions", "show", &session],
        vec!["approvals"],
        vec!["audit", "verify"],
        vec!["routines", "list"],
        vec!["--config", config, "serve", "--print-token"],
        vec!["--config", config, "tools"],
        vec!["--model", &chat_model, "chat", "--session", "beside"],
        vec!["sessions", "show", "beside"],
    ];
    for args in &commands {
        let run = tau.run(args, "hi\n");
        assert_eq!(run.code, 0, "{args:?}: {}", run.stderr);
        assert_eq!(state_descriptors(pid), one_connection, "after {args:?}");
    }

    // The hub still writes into the file every process reads: the answer, the call, the
    // model's reply.
    let id = row["id"].as_str().unwrap();
    let approved = serve.approve(id);
    assert_eq!(approved.status, 200, "{approved:?}");
    serve.until_answered(&session, "Done.");
    let listed = tau.run(&["sessions", "list"], "");
    assert!(listed.stdout.contains(&session), "{}", listed.stdout);
    assert_eq!(state_descriptors(pid), one_connection);
    serve.kill_hard();

    // Killed without a word: what it wrote is there, the yes is used, nothing runs again.
    let serve = tau.serve(&model, std::path::Path::new(config));
    assert_eq!(serve.get("/api/approvals?state=pending").json(), json!([]));
    let rows = serve.get("/api/approvals").json();
    assert_eq!(rows[0]["state"], json!("approved"));
    assert!(rows[0]["consumed_at"].is_string(), "{rows}");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(tau.proof().as_deref(), Some("made\n"), "ran once");
    let verified = tau.run(&["audit", "verify"], "");
    assert_eq!(verified.code, 0, "{}", verified.stdout);
    assert!(
        verified.stdout.starts_with("audit log intact"),
        "{}",
        verified.stdout
    );
    drop(serve);
}

#[test]
fn a_session_written_beside_serve_is_read_back_whole() {
    let tau = Tau::new();
    let config = tau.serve_config("");
    let serve = tau.serve(&tau.make_proof(), &config);
    let chat_model = tau.replay(&json!([
        tool_call("t1", "clock", &json!({})),
        answer("It is late.")
    ]));
    let run = tau.run(
        &["--model", &chat_model, "chat", "--session", "beside"],
        "what time is it?\n",
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let stored = tau.session_json("beside");
    assert_eq!(stored.as_array().map(Vec::len), Some(4), "{stored}");
    drop(serve);
    // Read once the hub is gone too: nothing was left in a log only the hub could see.
    assert_eq!(tau.session_json("beside"), stored);
}
