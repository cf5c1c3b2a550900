//! Several hubs on one PostgreSQL store, driven through the real binary: the url and its
//! password as the config gives them (never shown), `tau doctor` and `tau backup` on such a
//! store, and two `tau serve` with homes of their own sharing one database. Each test
//! starts a throwaway PostgreSQL (`tau_test_support::Postgres`); a missing installation
//! fails the test.

use crate::common;

use common::{Tau, answer};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_test_support::Postgres;

/// The report's section that starts with `title`.
fn section(report: &str, title: &str) -> Vec<String> {
    let mut lines = report.lines().skip_while(|l| !l.starts_with(title));
    let first = lines.next().into_iter();
    first
        .chain(lines.take_while(|l| l.starts_with("  ")))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_password_in_the_url_is_refused_and_never_shown() {
    let tau = Tau::new();
    let run = tau.run_env(
        &["sessions", "list"],
        &[("TAU_STATE_URL", "postgres://tau:s3cret@db.example:5432/tau")],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
    insta::assert_snapshot!(run.stderr.trim_end(), @"tau: TAU_STATE_URL: the url holds a password, and tau keeps none in a url: write it as postgres://USER@HOST:PORT/DATABASE and put the password in TAU_STATE_PASSWORD or in a file named by [state] password_file");

    let config = tau.config("[state]\nurl = \"postgresql://tau:s3cret@db.example/tau\"\n");
    let run = tau.run(
        &["--config", config.to_str().unwrap(), "sessions", "list"],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!run.stderr.contains("s3cret"), "{}", run.stderr);
    assert!(
        run.stderr.contains("state.url: the url holds a password"),
        "{}",
        run.stderr
    );
}

#[test]
fn the_password_comes_from_the_environment_or_a_file_and_is_never_shown() {
    let mut server = Postgres::start().unwrap();
    server
        .sql("CREATE ROLE hub LOGIN PASSWORD 'pw with spaces&='")
        .unwrap();
    let database = server.fresh_database().unwrap();
    let name = database.rsplit('/').next().unwrap().to_owned();
    server
        .sql(&format!("ALTER DATABASE {name} OWNER TO hub"))
        .unwrap();
    // `trust` lets anyone in; a password is asked once the server says so.
    server.require_passwords().unwrap();
    let url = format!("postgres://hub@127.0.0.1:{}/{name}", server.port());
    let tau = Tau::new();
    let listed = |env: &[(&str, &str)], config: Option<&std::path::Path>| {
        let mut args = vec![];
        if let Some(config) = config {
            args.extend(["--config", config.to_str().unwrap()]);
        }
        args.extend(["sessions", "list"]);
        let mut env = env.to_vec();
        env.push(("TAU_STATE_URL", &url));
        tau.run_env(&args, &env, "")
    };
    let refused = listed(&[], None);
    assert_ne!(
        refused.code, 0,
        "no password, no way in: {}",
        refused.stdout
    );
    let by_variable = listed(&[("TAU_STATE_PASSWORD", "pw with spaces&=")], None);
    assert_eq!(by_variable.code, 0, "{}", by_variable.stderr);
    let file = tau.dir.path().join("db-password");
    std::fs::write(&file, "pw with spaces&=\n").unwrap();
    let config = tau.config(&format!(
        "[state]\npassword_file = \"{}\"\n",
        file.display()
    ));
    let by_file = listed(&[], Some(&config));
    assert_eq!(by_file.code, 0, "{}", by_file.stderr);
    for run in [&refused, &by_variable, &by_file] {
        assert!(!run.stderr.contains("pw with"), "{}", run.stderr);
        assert!(!run.stdout.contains("pw with"), "{}", run.stdout);
    }
}

#[test]
fn the_doctor_checks_the_connection_the_schema_and_the_leases() {
    let mut server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("unused")]));
    let doctor = |tau: &Tau| {
        let run = tau.run_env(
            &["--model", &model, "doctor"],
            &[("TAU_STATE_URL", &url)],
            "",
        );
        let port = server_port(&url);
        let shown = section(&run.stdout, "store")
            .join("\n")
            .replace(&port, "<port>")
            .replace(url.rsplit('/').next().unwrap(), "<database>")
            .replace(
                &format!("step {}, ", tau_state::SCHEMA_VERSION),
                "step <latest>, ",
            );
        (run.code, shown)
    };
    let (_, shown) = doctor(&tau);
    insta::assert_snapshot!(shown, @r"
    store postgres://postgres@127.0.0.1:<port>/<database>
      ok  connection   answers
      ok  schema       step <latest>, this tau's
      ok  leases       readable: 0 held (0 by a running hub), 0 run out
    ");
    server.stop().unwrap();
    let (code, shown) = doctor(&tau);
    assert_eq!(code, 1);
    let rows: Vec<&str> = shown.lines().map(|l| l.get(..18).unwrap_or(l)).collect();
    assert_eq!(
        rows,
        [
            "store postgres://p",
            "  no  connection  ",
            "  --  schema      ",
            "  --  leases      "
        ],
        "{shown}"
    );
}

fn server_port(url: &str) -> String {
    url.split(':')
        .nth(2)
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned()
}

#[test]
fn a_backup_of_a_shared_store_is_pg_dump_s() {
    let tau = Tau::new();
    let file = tau.dir.path().join("tau.backup");
    let run = tau.run_env(
        &["backup", file.to_str().unwrap()],
        &[("TAU_STATE_URL", "postgres://tau@db.example:5432/tau")],
        "",
    );
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(!file.exists());
    insta::assert_snapshot!(run.stderr.trim_end(), @"tau: tau backup copies a home whose store is its state.db; this one's is the PostgreSQL database postgres://tau@db.example:5432/tau: back it up with PostgreSQL's own tools (pg_dump -Fc), and keep this home's audit.jsonl and hub-id with it");
}

#[test]
fn a_question_asked_on_one_hub_is_answered_on_another_and_runs_once() {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let (one, two) = (Tau::new(), Tau::new());
    let env = [("TAU_STATE_URL", url.as_str())];
    let first = one.serve_env(&one.make_proof(), &one.serve_config(""), &env);
    let second = two.serve_env(&two.make_proof(), &two.serve_config(""), &env);
    let hub_id = std::fs::read_to_string(one.home().join("hub-id")).unwrap();
    assert!(
        first.banner.contains(&format!(
            "tau serve: store {url}, shared with other hubs; this one is hub {}",
            &hub_id[..12]
        )),
        "{:?}",
        first.banner
    );
    let session = first.new_session();
    let question = first.ask(&session, "make the proof");
    let id = question["id"].as_str().unwrap();
    let listed = second.until(|api| api.question(id));
    assert_eq!(listed["tool"], "run_command");
    let answered = second.approve(id);
    assert_eq!(answered.status, 200, "{answered:?}");
    first.until_answered(&session, "Done.");
    // Once, on the hub that asked (it holds the turn): in its workspace, let through by it.
    let made = || (one.proof(), two.proof());
    assert_eq!(made(), (Some("made\n".to_owned()), None));
    let database = url.rsplit('/').next().unwrap();
    let dispatched = server
        .sql_on(
            database,
            &format!("SELECT asked_by, dispatched_by FROM approvals WHERE id = '{id}'"),
        )
        .unwrap();
    let hub_id = hub_id.trim();
    assert_eq!(dispatched.trim(), format!("{hub_id}|{hub_id}"));
    // Both hubs say it was answered; neither runs it again.
    let again = first.approve(id);
    assert_ne!(again.status, 500, "{again:?}");
    let late = second.approve(id);
    assert_ne!(late.status, 500, "{late:?}");
    assert_eq!(made(), (Some("made\n".to_owned()), None));
    // Each hub's chain is its own, in its home, anchored by its own row of the store.
    for tau in [&one, &two] {
        let verified = tau.run_env(&["audit", "verify"], &env, "");
        assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    }
}

#[test]
fn a_lost_store_refuses_new_work_and_the_hub_recovers_when_it_returns() {
    let mut server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let tau = Tau::new();
    let model = tau.replay(&json!([answer("first"), answer("second")]));
    let serve = tau.serve_env(&model, &tau.serve_config(""), &[("TAU_STATE_URL", &url)]);
    let session = serve.new_session();
    server.stop().unwrap();
    let refused = serve.post(
        &format!("/api/sessions/{session}/messages"),
        &json!({"text": "hello"}).to_string(),
    );
    let refused_session = serve.post("/api/sessions", "");
    server.start_again().unwrap();
    let body = json!({"text": "hello again"}).to_string();
    let accepted = serve.post(&format!("/api/sessions/{session}/messages"), &body);
    assert_eq!(
        (refused.status, refused_session.status, accepted.status),
        (503, 503, 202),
        "{refused:?} {refused_session:?} {accepted:?}"
    );
    serve.until_answered(&session, "first");
}

const SECRET: &str = "a-doorbell-secret-long-enough";

#[test]
fn a_routine_runs_once_per_occurrence_across_hubs_and_a_switch_reaches_both() {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let routines = "[[routines]]\nname = \"tick\"\nevery = \"1s\"\ntool = \"append_note\"\n\
        arguments = { text = \"tick\" }\n\
        [[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\n\
        payload = \"ring\"\ntool = \"run_command\"\narguments = { command = \"echo ding\" }\n";
    let env = [
        ("TAU_STATE_URL", url.as_str()),
        ("TAU_TEST_DOORBELL", SECRET),
    ];
    let (one, two) = (Tau::new(), Tau::new());
    let model = |tau: &Tau| tau.replay(&json!([answer("unused")]));
    let first = one.serve_env(&model(&one), &one.serve_config(routines), &env);
    let second = two.serve_env(&model(&two), &two.serve_config(routines), &env);

    // Every run of `tick` is a row of the shared store: one a second, whichever hub ran
    // it. Run twice (once by each hub), the rows would come twice as fast as the seconds.
    let runs = || -> (usize, f64) {
        let rows = server
            .sql_on(
                &database,
                "SELECT started_at FROM routine_runs WHERE routine = 'tick' \
                 AND outcome != 'missed' ORDER BY id",
            )
            .unwrap();
        let times: Vec<jiff::Timestamp> = rows.lines().map(|l| l.parse().unwrap()).collect();
        let span = match (times.first(), times.last()) {
            (Some(a), Some(b)) => b.duration_since(*a).as_secs_f64(),
            _ => 0.0,
        };
        (times.len(), span)
    };
    let (count, span) = first.until(|_| Some(runs()).filter(|(count, _)| *count >= 5));
    assert!(
        (count as f64) <= span + 1.5,
        "{count} runs in {span:.1} s: an occurrence ran on both hubs"
    );
    let notes = |tau: &Tau| {
        std::fs::read_to_string(tau.workspace().join("notes.md"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert!(
        notes(&one) + notes(&two) >= 5,
        "each run wrote its note once"
    );
    // Both hubs wrote their audit lines meanwhile, each to its own chain: both verify.
    for tau in [&one, &two] {
        let verified = tau.run_env(&["audit", "verify"], &env, "");
        assert_eq!(verified.code, 0, "{}{}", verified.stdout, verified.stderr);
    }

    // `tau routines disable` on any home reaches every hub: the doorbell's webhook is gone
    // from both (404; an enabled one answers a wrong payload with 400 and runs nothing).
    let probe = |serve: &common::serve::Serve| {
        let host = serve.host();
        let bearer = format!("Bearer {SECRET}");
        common::serve::request(
            serve.addr,
            "POST",
            "/hooks/doorbell",
            &[("Host", host.as_str()), ("Authorization", bearer.as_str())],
            Some("knock"),
        )
        .status
    };
    assert_eq!((probe(&first), probe(&second)), (400, 400));
    let config = two.serve_config(routines);
    let disabled = two.run_env(
        &[
            "--config",
            config.to_str().unwrap(),
            "routines",
            "disable",
            "doorbell",
        ],
        &env,
        "",
    );
    assert_eq!(disabled.code, 0, "{}", disabled.stderr);
    first.until(|serve| (probe(serve) == 404).then_some(()));
    second.until(|serve| (probe(serve) == 404).then_some(()));
}

#[test]
fn a_question_whose_hub_is_gone_is_resumed_by_one_other_hub_once() {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let database = url.rsplit('/').next().unwrap().to_owned();
    let (one, two) = (Tau::new(), Tau::new());
    let env = [("TAU_STATE_URL", url.as_str())];
    let (model, config) = (one.make_proof(), one.serve_config(""));
    let first = one.serve_env(&model, &config, &env);
    let second = two.serve_env(&two.make_proof(), &two.serve_config(""), &env);
    let session = first.new_session();
    let id = first.ask(&session, "make the proof")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    second.until(|api| api.question(&id));
    let row = |columns: &str| {
        server
            .sql_on(
                &database,
                &format!("SELECT {columns} FROM approvals WHERE id = '{id}'"),
            )
            .unwrap()
            .trim()
            .to_owned()
    };
    let (first_hub, second_hub) = (
        std::fs::read_to_string(one.home().join("hub-id")).unwrap(),
        std::fs::read_to_string(two.home().join("hub-id")).unwrap(),
    );
    let (first_hub, second_hub) = (first_hub.trim(), second_hub.trim());

    // The first hub dies before the answer; its lease still holds, so the second hub only
    // stores the yes: the turn is the first hub's until its lease runs out.
    first.kill_hard();
    assert_eq!(second.approve(&id).status, 200);
    assert_eq!(
        row("state, asked_by, consumed_at IS NULL"),
        format!("approved|{first_hub}|t")
    );
    // Its lease runs out (it renews no more): the second hub claims the turn and runs it.
    server
        .sql_on(
            &database,
            &format!("UPDATE leases SET expires_at = 0 WHERE name = 'hub:{first_hub}'"),
        )
        .unwrap();
    second.until_answered(&session, "Done.");
    assert_eq!(
        (one.proof(), two.proof()),
        (None, Some("made\n".to_owned()))
    );
    assert_eq!(
        row("asked_by, dispatched_by"),
        format!("{second_hub}|{second_hub}")
    );
    // The first hub back finds it done: nothing runs again, on either hub.
    let first = one.serve_env(&model, &config, &env);
    let again = first.approve(&id);
    assert_ne!(again.status, 200, "{again:?}");
    second.until_answered(&session, "Done.");
    assert_eq!(
        (one.proof(), two.proof()),
        (None, Some("made\n".to_owned()))
    );
}

/// What a start says when it closed a call another tau let through and never saw return.
const CLOSED_AT_START: &str = "tau serve: 1 approved call was running when tau stopped: it may or may not have run, and is not run again";

#[test]
fn a_hub_killed_mid_call_leaves_it_uncertain_and_no_live_hub_takes_another_s_call() {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let (one, two) = (Tau::new(), Tau::new());
    let mark = one.home().join("failpoint-reached");
    let stopping = [
        ("TAU_STATE_URL", url.as_str()),
        ("TAU_FAILPOINT", "dispatched"),
        ("TAU_FAILPOINT_MARK", mark.to_str().unwrap()),
    ];
    let env = [("TAU_STATE_URL", url.as_str())];
    let (model, config) = (one.make_proof(), one.serve_config(""));
    let first = one.serve_env(&model, &config, &stopping);
    let second_config = two.serve_config("");
    let second = two.serve_env(&two.make_proof(), &second_config, &env);
    let session = first.new_session();
    let id = first.ask(&session, "make the proof")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(first.approve(&id).status, 200);
    // The first hub let the call through and stops dead there, alive: its lease holds.
    first.until(|_| one.at_failpoint("dispatched"));

    // Another hub starting now leaves the call to the hub that runs it.
    second.terminate();
    let second = two.serve_env(&two.make_proof(), &second_config, &env);
    assert!(
        !second.banner.iter().any(|l| l == CLOSED_AT_START),
        "{:?}",
        second.banner
    );

    // The first hub dies; at its next start its call is uncertain, never run again.
    first.kill_hard();
    let first = one.serve_env(&model, &config, &env);
    assert!(
        first.banner.iter().any(|l| l == CLOSED_AT_START),
        "{:?}",
        first.banner
    );
    assert_eq!((one.proof(), two.proof()), (None, None), "never run");
    let again = second.approve(&id);
    assert_ne!(
        again.status, 200,
        "a closed call takes no second yes: {again:?}"
    );
    assert_eq!((one.proof(), two.proof()), (None, None), "never run");
}

#[test]
fn two_hubs_answering_at_once_agree_on_the_first_answer() {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let (one, two) = (Tau::new(), Tau::new());
    let env = [("TAU_STATE_URL", url.as_str())];
    let first = one.serve_env(&one.make_proof(), &one.serve_config(""), &env);
    let second = two.serve_env(&two.make_proof(), &two.serve_config(""), &env);
    let session = first.new_session();
    let id = first.ask(&session, "make the proof")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    second.until(|api| api.question(&id));
    let (yes, no) = (first.api(), second.api());
    let (approved, rejected) = std::thread::scope(|scope| {
        let approving = scope.spawn(|| yes.approve(&id));
        let rejecting = scope.spawn(|| no.answer(&id, &json!({"decision": "reject"})));
        (approving.join().unwrap(), rejecting.join().unwrap())
    });
    let mut statuses = [approved.status, rejected.status];
    statuses.sort_unstable();
    assert_eq!(statuses, [200, 409], "{approved:?} {rejected:?}");
    let won = if approved.status == 200 {
        "approved"
    } else {
        "rejected"
    };
    // Both hubs list the one answer that won, and the call ran only if it was the yes.
    for api in [&yes, &no] {
        let state = api.until(|api| api.question(&id).map(|r| r["state"].clone()));
        assert_eq!(state, won);
    }
    first.until_answered(&session, "Done.");
    let made: String = [one.proof(), two.proof()].into_iter().flatten().collect();
    assert_eq!(made, if won == "approved" { "made\n" } else { "" });
}

#[test]
fn one_hub_polls_a_bot_however_many_share_the_store() {
    let Some(emulator) = tau_test_support::telegram::Emulator::start(common::serve::TELEGRAM_TOKEN)
    else {
        return;
    };
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let (one, two) = (Tau::new(), Tau::new());
    let env = [
        ("TAU_STATE_URL", url.as_str()),
        ("TAU_TELEGRAM_TOKEN", common::serve::TELEGRAM_TOKEN),
    ];
    let config = |tau: &Tau| {
        tau.serve_config(&format!(
            "[telegram]\nowners = [4242]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n",
            emulator.url
        ))
    };
    let model = |tau: &Tau| tau.replay(&json!([answer("unused")]));
    let first = one.serve_env(&model(&one), &config(&one), &env);
    let second = two.serve_env(&model(&two), &config(&two), &env);
    let polling = |serve: &common::serve::Serve| {
        serve
            .banner
            .iter()
            .any(|l| l == "tau serve: Telegram: answering the owners named in [telegram]")
    };
    assert_eq!((polling(&first), polling(&second)), (true, false));
    assert!(
        second.banner.iter().any(|l| l
            == "tau serve: Telegram: another hub sharing the store polls this bot; this one takes over if that hub stops"),
        "{:?}",
        second.banner
    );
    // The polling hub dies without giving its lease up; once the lease has run out, the
    // other hub takes the bot over while it runs, and answers the owner.
    first.kill_hard();
    let database = url.rsplit('/').next().unwrap();
    server
        .sql_on(
            database,
            "UPDATE leases SET expires_at = 0 WHERE name LIKE 'telegram:%'",
        )
        .unwrap();
    emulator.write(4242, 4242, "hello");
    emulator.wait("the other hub's answer", |messages| {
        messages
            .iter()
            .any(|m| m.chat == 4242 && m.text.contains("unused"))
            .then_some(())
    });
    let (_, said) = second.terminate();
    assert!(
        said.iter().any(|l| l
            == "tau serve: Telegram: the hub that polled this bot stopped; this one polls it now"),
        "{said:?}"
    );
    // A hub started once the poller stopped gracefully (its lease given up) polls at once.
    let again = two.serve_env(&model(&two), &config(&two), &env);
    assert!(polling(&again), "{:?}", again.banner);
}
