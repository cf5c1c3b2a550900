//! A routine's question under `tau serve`, killed with SIGKILL at each step of its
//! approval, then started again. It takes a paused turn's own path, so it stops at the
//! same failpoints (only test builds have them): nothing runs without a yes, no call runs
//! a second time, one cut off before its result was recorded is closed as
//! `effect_uncertain` (said at start, one audit line), the routine goes on asking anew,
//! and the audit log verifies.

use crate::common;

use common::Tau;
use common::serve::Serve;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};

const UNCERTAIN_BANNER: &str = "tau serve: 1 approved call was running when tau stopped: it may or may not have run, and is not run again";

/// The lines the routine's command wrote so far.
fn tocks(tau: &Tau) -> usize {
    std::fs::read_to_string(tau.workspace().join("tick.txt"))
        .map(|text| text.lines().count())
        .unwrap_or(0)
}

/// The first question waiting on the web other than `not`.
fn waiting(serve: &Serve, not: Option<&str>) -> Value {
    serve.until(|serve| {
        let rows = serve.get("/api/approvals?state=pending").json();
        rows.as_array()
            .unwrap()
            .iter()
            .find(|row| not.is_none_or(|id| row["id"] != id))
            .cloned()
    })
}

/// `tick` (edited behind its approval, so asked on the web) under a `tau serve` that
/// stops dead at `failpoint`; answered yes when `approve`, killed there.
fn stopped_at(tau: &Tau, model: &str, failpoint: &str, approve: bool) -> Option<String> {
    let config = tau.serve_config("");
    let serve = tau.serve_at_failpoint(model, &config, failpoint);
    let id = approve.then(|| {
        let row = waiting(&serve, None);
        let id = row["id"].as_str().unwrap().to_owned();
        let approved = serve.approve(&id);
        assert_eq!(approved.status, 200, "{approved:?}");
        id
    });
    serve.until(|_| tau.at_failpoint(failpoint));
    serve.kill_hard();
    assert!(
        tau.audit().iter().all(|l| l["type"] != "effect_uncertain"),
        "nothing is closed before the restart"
    );
    id
}

/// Killed after the question was stored and before it was shown: nobody saw it, the next
/// start cancels it, and nothing ran.
#[test]
fn a_routine_s_question_stored_and_never_shown_is_cancelled_at_the_next_start() {
    let tau = Tau::new();
    tau.routine_edited_behind_its_approval("web");
    let model = tau.replay(&json!([common::answer("unused")]));
    stopped_at(&tau, &model, "asked", false);
    // The routine's question (the yes that made the routine was given at the terminal).
    let stored: Vec<_> = tau_state::StateDb::open(&tau.home().join("state.db"))
        .unwrap()
        .approvals()
        .all_approvals(None)
        .unwrap()
        .into_iter()
        .filter(|row| row.channel == "web")
        .collect();
    assert_eq!(stored.len(), 1, "{stored:#?}");
    let first = stored[0].id.to_string();

    let serve = tau.serve(&model, &tau.serve_config(""));
    assert!(
        serve
            .banner
            .iter()
            .any(|l| l.contains("1 question cancelled")),
        "{:?}",
        serve.banner
    );
    // The routine goes on: its next run asks again, under a new id.
    let next = waiting(&serve, Some(&first));
    serve.kill_hard();
    assert_ne!(next["id"], json!(first));
    assert_eq!(tocks(&tau), 0, "nothing ran without a yes");
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

/// Killed at `failpoint` after the yes: `ran` is how many times the command ran by then,
/// `uncertain` whether its result was still unrecorded. The next start never runs it
/// again.
fn cut_off_after_the_yes(failpoint: &str, ran: usize, uncertain: bool) {
    let tau = Tau::new();
    tau.routine_edited_behind_its_approval("web");
    let model = tau.replay(&json!([common::answer("unused")]));
    let id = stopped_at(&tau, &model, failpoint, true).unwrap();
    assert_eq!(tocks(&tau), ran);

    let serve = tau.serve(&model, &tau.serve_config(""));
    assert_eq!(
        serve.banner.iter().any(|l| l == UNCERTAIN_BANNER),
        uncertain,
        "{:?}",
        serve.banner
    );
    let approved = serve.get("/api/approvals?state=approved").json();
    let outcome = if uncertain {
        "effect_uncertain"
    } else {
        "finished"
    };
    assert_eq!(
        (&approved[0]["id"], &approved[0]["outcome"]),
        (&json!(id), &json!(outcome)),
        "{approved}"
    );
    // The routine goes on and asks anew; the call let through is not asked or run again.
    let next = waiting(&serve, Some(&id));
    serve.kill_hard();
    assert_ne!(next["id"], json!(id));
    assert_eq!(tocks(&tau), ran, "never run a second time");
    let closed: Vec<Value> = tau
        .audit()
        .into_iter()
        .filter(|l| l["type"] == "effect_uncertain")
        .collect();
    assert_eq!(closed.len(), usize::from(uncertain), "{closed:#?}");
    if uncertain {
        assert_eq!(
            (
                &closed[0]["approval_id"],
                &closed[0]["tool"],
                &closed[0]["channel"]
            ),
            (&json!(id), &json!("run_command"), &json!("web"))
        );
    }
    let verify = tau.run(&["audit", "verify"], "");
    assert_eq!(verify.code, 0, "{}{}", verify.stdout, verify.stderr);
}

#[test]
fn a_routine_s_call_let_through_and_killed_before_it_started_is_never_run() {
    cut_off_after_the_yes("dispatched", 0, true);
}

#[test]
fn a_routine_s_call_killed_after_it_ran_and_before_its_result_was_recorded_is_never_run_again() {
    cut_off_after_the_yes("ran", 1, true);
}

#[test]
fn a_routine_s_call_killed_after_its_result_was_recorded_is_never_run_again() {
    cut_off_after_the_yes("finished", 1, false);
}
