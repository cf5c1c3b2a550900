//! Several hubs on one store, on both stores: a lease is one hub's at a time, a start
//! closes only the cut-off calls of hubs that are gone, never a call a live hub runs, and
//! a question's turn is the asking hub's while it lives, then one claimer's.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use jiff::Timestamp;
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_protocol::{ApprovalId, CallCard, DecidedBy, SessionId, Tier};
use tau_state::{ApprovalState, NewApproval, StateDb, hub_lease};
use tau_test_support::Postgres;

const LIVE: Duration = Duration::from_secs(60);

/// Two hubs' connections to one store, and what keeps it alive.
struct Shared {
    a: StateDb,
    b: StateDb,
    _keep: Box<dyn std::any::Any>,
}

fn sqlite() -> Shared {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    Shared {
        a: StateDb::open(&path).unwrap().for_hub("a"),
        b: StateDb::open(&path).unwrap().for_hub("b"),
        _keep: Box::new(dir),
    }
}

fn postgres() -> Shared {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    Shared {
        a: StateDb::connect(&url).unwrap().for_hub("a"),
        b: StateDb::connect(&url).unwrap().for_hub("b"),
        _keep: Box::new(server),
    }
}

/// Stores call `n`'s question, approves it and lets it through on `hub`.
fn dispatch(hub: &StateDb, n: u32) -> ApprovalId {
    let id = ask(hub, n);
    approve(hub, &id);
    assert!(
        hub.approvals()
            .consume_approval(&id, Timestamp::now())
            .unwrap()
    );
    id
}

/// A person's yes to question `id`, taken on `hub`.
fn approve(hub: &StateDb, id: &ApprovalId) {
    hub.approvals()
        .decide_approval(
            id,
            ApprovalState::Approved,
            &DecidedBy::person("web"),
            Timestamp::now(),
        )
        .unwrap();
}

/// Stores call `n`'s question on `hub`, pending.
fn ask(hub: &StateDb, n: u32) -> ApprovalId {
    let id = ApprovalId::parse(&format!("ap_{n}")).unwrap();
    let now = Timestamp::now();
    let row = NewApproval {
        id: id.clone(),
        session: SessionId::parse(&format!("s{n}")).unwrap(),
        call_id: format!("t{n}"),
        tool: "run_command".into(),
        tier: Tier::Physical,
        effect: "runs a command".into(),
        arguments: json!({"command": "echo made"}),
        channel: "web".into(),
        created_at: now,
        deadline: now + jiff::SignedDuration::from_secs(600),
        card: CallCard::default(),
    }
    .into_row();
    hub.approvals().create_approval(&row).unwrap();
    id
}

fn cut_off(hub: &StateDb) -> Vec<String> {
    hub.approvals()
        .dispatched_without_outcome()
        .unwrap()
        .into_iter()
        .map(|row| row.id.to_string())
        .collect()
}

fn a_live_hub_s_running_call_is_left_to_it(store: &Shared) {
    let leases = store.a.leases();
    assert!(leases.claim(&hub_lease("a"), "a", LIVE).unwrap());
    assert!(store.b.leases().claim(&hub_lease("b"), "b", LIVE).unwrap());
    dispatch(&store.a, 1);
    dispatch(&store.b, 2);
    assert_eq!(cut_off(&store.a), ["ap_1"], "a's own, not b's: b is alive");
    assert_eq!(cut_off(&store.b), ["ap_2"]);
    let unsettled = |hub: &StateDb| -> Vec<String> {
        hub.approvals()
            .unsettled_approvals()
            .unwrap()
            .into_iter()
            .map(|row| row.id.to_string())
            .collect()
    };
    assert_eq!(
        unsettled(&store.a),
        ["ap_1"],
        "b runs its turn: a resumes none of it"
    );
    // a is gone: its lease runs out, and its call is anyone's to close, once.
    assert!(leases.claim(&hub_lease("a"), "a", Duration::ZERO).unwrap());
    assert_eq!(cut_off(&store.b), ["ap_1", "ap_2"]);
    let at = Timestamp::now();
    let id = ApprovalId::parse("ap_1").unwrap();
    assert!(
        store
            .b
            .approvals()
            .close_effect_uncertain(&id, at)
            .unwrap()
            .is_some()
    );
    assert!(
        store
            .a
            .approvals()
            .close_effect_uncertain(&id, at)
            .unwrap()
            .is_none()
    );
}

fn a_question_s_turn_is_the_asking_hub_s_while_it_lives(store: &Shared) {
    let leases = store.a.leases();
    assert!(leases.claim(&hub_lease("a"), "a", LIVE).unwrap());
    assert!(store.b.leases().claim(&hub_lease("b"), "b", LIVE).unwrap());
    let id = ask(&store.a, 3);
    // b takes the answer: a, alive, holds the turn.
    approve(&store.b, &id);
    let unsettled = |hub: &StateDb| -> Vec<String> {
        hub.approvals()
            .unsettled_approvals()
            .unwrap()
            .into_iter()
            .map(|row| row.id.to_string())
            .collect()
    };
    let held = |hub: &StateDb| hub.approvals().turn_held_elsewhere(&id).unwrap();
    assert_eq!((held(&store.a), held(&store.b)), (false, true));
    assert_eq!(unsettled(&store.b), Vec::<String>::new(), "a resumes it");
    assert_eq!(unsettled(&store.a), ["ap_3"]);
    assert!(!store.b.approvals().claim_turn(&id).unwrap(), "a is alive");
    assert!(store.a.approvals().claim_turn(&id).unwrap(), "a's own");
    // a is gone: b claims the turn, once; a back later finds it b's.
    assert!(leases.claim(&hub_lease("a"), "a", Duration::ZERO).unwrap());
    assert_eq!(unsettled(&store.b), ["ap_3"]);
    assert!(store.b.approvals().claim_turn(&id).unwrap());
    assert!(!store.a.approvals().claim_turn(&id).unwrap(), "b's now");
    assert_eq!(held(&store.a), true);
}

fn a_lease_is_one_hub_s(store: &Shared) {
    let (a, b) = (store.a.leases(), store.b.leases());
    assert!(a.claim("telegram:42", "a", LIVE).unwrap());
    assert!(!b.claim("telegram:42", "b", LIVE).unwrap());
    assert!(a.claim("telegram:42", "a", LIVE).unwrap(), "renewed");
    a.release("telegram:42", "a").unwrap();
    assert!(b.claim("telegram:42", "b", LIVE).unwrap());
    assert_eq!(
        a.leases()
            .unwrap()
            .iter()
            .map(|l| (l.name.as_str(), l.holder.as_str()))
            .collect::<Vec<_>>(),
        [("telegram:42", "b")]
    );
}

#[test]
fn postgres_many_claims_at_once_give_one_holder() {
    let server = Postgres::start().unwrap();
    let url = server.fresh_database().unwrap();
    let hubs: Vec<StateDb> = (0..4).map(|_| StateDb::connect(&url).unwrap()).collect();
    let won: usize = std::thread::scope(|scope| {
        let claims: Vec<_> = hubs
            .iter()
            .enumerate()
            .map(|(n, hub)| {
                scope.spawn(move || {
                    hub.leases()
                        .claim("routine:lamp", &format!("h{n}"), LIVE)
                        .unwrap()
                })
            })
            .collect();
        claims
            .into_iter()
            .map(|c| usize::from(c.join().unwrap()))
            .sum()
    });
    assert_eq!(won, 1);
}

fn a_scheduled_tick_is_claimed_once(store: &Shared) {
    let due = Timestamp::from_second(1_800_000_000).unwrap();
    let later = due + jiff::SignedDuration::from_secs(60);
    let (a, b) = (store.a.routines(), store.b.routines());
    assert!(a.claim_scheduled_tick("lamp", due).unwrap());
    assert!(!b.claim_scheduled_tick("lamp", due).unwrap(), "a runs it");
    assert!(
        !a.claim_scheduled_tick("lamp", due).unwrap(),
        "once, even for a"
    );
    assert!(
        b.claim_scheduled_tick("lamp", later).unwrap(),
        "the next is anyone's"
    );
    assert!(
        !a.claim_scheduled_tick("lamp", due).unwrap(),
        "never an older one"
    );
    assert!(
        a.claim_scheduled_tick("heater", due).unwrap(),
        "a lease per routine"
    );
}

/// Both hubs let the same approved calls through at once, each as fast as it can: every
/// call is let through exactly once. (On PostgreSQL the let-through is a compare-and-set
/// of its own, without the write lock: the server's row lock is what makes it once.)
fn an_approved_call_is_let_through_once_when_two_hubs_race(store: &Shared) {
    let calls: Vec<ApprovalId> = (0..40)
        .map(|n| {
            let id = ask(&store.a, n);
            approve(&store.a, &id);
            id
        })
        .collect();
    let start = std::sync::Barrier::new(2);
    let (a, b) = std::thread::scope(|scope| {
        let race = |db: &StateDb| {
            let (start, calls) = (&start, &calls);
            let approvals = db.approvals();
            scope.spawn(move || {
                start.wait();
                calls
                    .iter()
                    .map(|id| approvals.consume_approval(id, Timestamp::now()).unwrap())
                    .collect::<Vec<bool>>()
            })
        };
        let (a, b) = (race(&store.a), race(&store.b));
        (a.join().unwrap(), b.join().unwrap())
    });
    for ((id, a), b) in calls.iter().zip(a).zip(b) {
        assert!(a != b, "{id}: a {a} and b {b}");
    }
    assert_eq!(cut_off(&store.a).len(), calls.len(), "each let through");
}

/// Both hubs append message k of one conversation at the same moment, k after k: one
/// append stands, the other is refused as out of order (never a gap, never two), and the
/// conversation ends with one message a step.
fn one_of_two_racing_appends_of_a_message_stands(store: &Shared) {
    let id = SessionId::parse("raced").unwrap();
    store.a.sessions().ensure_session(&id).unwrap();
    let start = std::sync::Barrier::new(2);
    let steps = 30;
    for k in 0..steps {
        let results = std::thread::scope(|scope| {
            let append = |db: &StateDb, who: &str| {
                let (start, id) = (&start, &id);
                let body = format!(r#"{{"role":"user","content":[{{"text":"{who} {k}"}}]}}"#);
                let sessions = db.sessions();
                scope.spawn(move || {
                    start.wait();
                    sessions.append_message(id, k, &body)
                })
            };
            let (a, b) = (append(&store.a, "a"), append(&store.b, "b"));
            [a.join().unwrap(), b.join().unwrap()]
        });
        let stood = results.iter().filter(|r| r.is_ok()).count();
        assert_eq!(stood, 1, "message {k}: {results:?}");
        let refused = results.iter().find_map(|r| r.as_ref().err()).unwrap();
        assert_eq!(
            refused.to_string(),
            format!(
                "session 'raced' expected message {} next but was given {k}",
                k + 1
            )
        );
    }
    let stored = store.b.sessions().stored_messages(&id, 0).unwrap();
    let indexes: Vec<u64> = stored.iter().map(|m| m.index).collect();
    assert_eq!(indexes, (0..steps).collect::<Vec<u64>>());
}

/// Each behaviour's test on both stores: `<behaviour>::sqlite` and `<behaviour>::postgres`.
macro_rules! on_both_stores {
    ($($behaviour:ident),* $(,)?) => {$(
        mod $behaviour {
            #[test]
            fn sqlite() {
                super::$behaviour(&super::sqlite());
            }

            #[test]
            fn postgres() {
                super::$behaviour(&super::postgres());
            }
        }
    )*};
}

on_both_stores!(
    a_live_hub_s_running_call_is_left_to_it,
    a_question_s_turn_is_the_asking_hub_s_while_it_lives,
    a_lease_is_one_hub_s,
    a_scheduled_tick_is_claimed_once,
    an_approved_call_is_let_through_once_when_two_hubs_race,
    one_of_two_racing_appends_of_a_message_stands,
);
