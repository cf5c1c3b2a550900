use jiff::Timestamp;
use tau_protocol::{ApprovalId, CallCard, DecidedBy, SessionId, Tier};

use super::*;
use crate::error::StateError;
use crate::handles::Approvals;
use crate::test_stores::TestStore;
use pretty_assertions::assert_eq;
use rusqlite::params;
use serde_json::json;

fn open(dir: &TestStore) -> Approvals {
    dir.open().approvals()
}

fn id(text: &str) -> ApprovalId {
    ApprovalId::parse(text).unwrap()
}

fn row(name: &str, created: i64) -> ApprovalRow {
    NewApproval {
        id: id(name),
        session: SessionId::parse("web-1").unwrap(),
        call_id: "t1".into(),
        tool: "lights".into(),
        tier: Tier::Physical,
        effect: "switches lights".into(),
        arguments: json!({"room": "kitchen", "a": [2, 1]}),
        channel: "web".into(),
        created_at: Timestamp::from_second(created).unwrap(),
        deadline: Timestamp::from_second(created + 1800).unwrap(),
        card: CallCard::default(),
    }
    .into_row()
}

#[test]
fn canonical_arguments_sort_keys_at_every_depth_and_hash_them() {
    let (text, hash) = canonical_arguments(&json!({"b": {"y": 1, "x": 2}, "a": "é"}));
    assert_eq!(text, r#"{"a":"é","b":{"x":2,"y":1}}"#);
    assert_eq!(
        hash,
        "a88fe9c97e53b951a59cb2d20144f73e0e27319322a85ff3a56a926fdadc5f16"
    );
    let (_, same) = canonical_arguments(&json!({"a": "é", "b": {"x": 2, "y": 1}}));
    assert_eq!(hash, same, "key order does not change the hash");
    let (_, other) = canonical_arguments(&json!({"a": "é", "b": {"x": 2, "y": 2}}));
    assert_ne!(hash, other);
}

#[test]
fn a_row_reads_back_exactly_as_it_was_written() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        let mut written = row("ap_1", 10);
        written.created_at = "2026-12-02T21:44:52.123456789Z".parse().unwrap();
        store.create_approval(&written).unwrap();
        assert_eq!(store.approval(&id("ap_1")).unwrap(), Some(written));
        assert_eq!(store.approval(&id("ap_2")).unwrap(), None);
        assert!(
            matches!(
                store.create_approval(&row("ap_1", 11)),
                Err(StateError::ApprovalExists(taken)) if taken == id("ap_1")
            ),
            "ids are never reused"
        );
    }
}

#[test]
fn a_card_is_stored_whole_with_its_question() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        let mut written = row("ap_1", 10);
        written.card.headline = Some("switch ON · Kitchen light (kitchen)".into());
        written.card.push(
            tau_protocol::CardNote::warning("file", "setup.sh (8 bytes)").with_detail("echo hi\n"),
        );
        store.create_approval(&written).unwrap();
        let read = store.approval(&id("ap_1")).unwrap().unwrap();
        assert_eq!(read.question().card, written.card);
        assert_eq!(read, written);
    }
}

#[test]
fn the_first_answer_wins_and_repeats_change_nothing() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        store.create_approval(&row("ap_1", 10)).unwrap();
        let person = DecidedBy::person("web");
        let at = Timestamp::from_second(20).unwrap();
        let Answered::Decided(decided) = store
            .decide_approval(&id("ap_1"), ApprovalState::Approved, &person, at)
            .unwrap()
        else {
            panic!("the first answer decides");
        };
        assert_eq!(
            (
                decided.state,
                decided.decided_by.clone(),
                decided.decided_at
            ),
            (ApprovalState::Approved, Some(person.clone()), Some(at))
        );
        for (to, by) in [
            (ApprovalState::Approved, person.clone()),
            (ApprovalState::Rejected, person.clone()),
            (ApprovalState::Expired, DecidedBy::Timeout),
        ] {
            let later = Timestamp::from_second(30).unwrap();
            assert_eq!(
                store.decide_approval(&id("ap_1"), to, &by, later).unwrap(),
                Answered::AlreadyDecided(decided.clone())
            );
        }
        assert_eq!(
            store
                .decide_approval(&id("ap_9"), ApprovalState::Approved, &person, at)
                .unwrap(),
            Answered::NotFound
        );
        assert!(matches!(
            store.decide_approval(&id("ap_1"), ApprovalState::Pending, &person, at),
            Err(StateError::DecidedAsPending)
        ));
    }
}

#[test]
fn only_an_approved_row_is_consumed_and_only_once() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        store.create_approval(&row("ap_1", 10)).unwrap();
        store.create_approval(&row("ap_2", 11)).unwrap();
        let at = Timestamp::from_second(20).unwrap();
        assert!(!store.consume_approval(&id("ap_1"), at).unwrap(), "pending");
        let person = DecidedBy::person("web");
        store
            .decide_approval(&id("ap_2"), ApprovalState::Rejected, &person, at)
            .unwrap();
        assert!(
            !store.consume_approval(&id("ap_2"), at).unwrap(),
            "rejected"
        );
        store
            .decide_approval(&id("ap_1"), ApprovalState::Approved, &person, at)
            .unwrap();
        assert!(store.consume_approval(&id("ap_1"), at).unwrap());
        assert!(!store.consume_approval(&id("ap_1"), at).unwrap());
        assert_eq!(
            store.approval(&id("ap_1")).unwrap().unwrap().consumed_at,
            Some(at)
        );
    }
}

#[test]
fn a_dispatched_call_gets_one_outcome_and_only_after_it_was_dispatched() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        for name in ["ap_1", "ap_2", "ap_3"] {
            store.create_approval(&row(name, 10)).unwrap();
        }
        let at = Timestamp::from_second(20).unwrap();
        assert!(!store.finish_approval(&id("ap_1"), at).unwrap(), "pending");
        assert_eq!(
            store.close_effect_uncertain(&id("ap_1"), at).unwrap(),
            None,
            "never dispatched: its effect is certain (none)"
        );
        let person = DecidedBy::person("web");
        for name in ["ap_1", "ap_2", "ap_3"] {
            store
                .decide_approval(&id(name), ApprovalState::Approved, &person, at)
                .unwrap();
        }
        assert!(store.dispatched_without_outcome().unwrap().is_empty());
        store.consume_approval(&id("ap_1"), at).unwrap();
        store.consume_approval(&id("ap_2"), at).unwrap();
        let open_ids = |store: &Approvals| {
            store
                .dispatched_without_outcome()
                .unwrap()
                .into_iter()
                .map(|r| r.id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(open_ids(&store), ["ap_1", "ap_2"]);
        assert!(store.finish_approval(&id("ap_1"), at).unwrap());
        let later = Timestamp::from_second(30).unwrap();
        let closed = store.close_effect_uncertain(&id("ap_2"), later).unwrap();
        assert_eq!(
            closed.map(|r| (r.outcome, r.outcome_at)),
            Some((Some(CallOutcome::EffectUncertain), Some(later)))
        );
        assert!(open_ids(&store).is_empty());
        // An outcome is set once: neither can replace the other, nor repeat.
        assert!(!store.finish_approval(&id("ap_2"), later).unwrap());
        assert!(!store.finish_approval(&id("ap_1"), later).unwrap());
        assert_eq!(
            store.close_effect_uncertain(&id("ap_1"), later).unwrap(),
            None
        );
        assert_eq!(
            store.close_effect_uncertain(&id("ap_2"), later).unwrap(),
            None
        );
        assert_eq!(
            store.approval(&id("ap_1")).unwrap().unwrap().outcome,
            Some(CallOutcome::Finished)
        );
        store
            .db()
            .write(|tx| {
                tx.execute(
                    "UPDATE approvals SET outcome = 'ran' WHERE id = 'ap_1'",
                    params![],
                )?;
                Ok(())
            })
            .unwrap();
        assert!(
            store.approval(&id("ap_1")).is_err(),
            "an unknown outcome is an error"
        );
    }
}

#[test]
fn lists_and_settling() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        store.create_approval(&row("ap_b", 12)).unwrap();
        store.create_approval(&row("ap_a", 11)).unwrap();
        store.create_approval(&row("ap_c", 13)).unwrap();
        let at = Timestamp::from_second(20).unwrap();
        store
            .decide_approval(&id("ap_c"), ApprovalState::Expired, &DecidedBy::Timeout, at)
            .unwrap();
        let ids = |rows: Vec<ApprovalRow>| {
            rows.into_iter()
                .map(|r| r.id.to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(
            ids(store.approvals(Some(ApprovalState::Pending)).unwrap()),
            ["ap_a", "ap_b"],
            "oldest first"
        );
        assert_eq!(
            ids(store.approvals(None).unwrap()),
            ["ap_a", "ap_b", "ap_c"]
        );
        assert_eq!(ids(store.unsettled_approvals().unwrap()), ["ap_c"]);
        store.mark_approval_settled(&id("ap_a")).unwrap();
        assert_eq!(
            ids(store.approvals(Some(ApprovalState::Pending)).unwrap()),
            ["ap_a", "ap_b"],
            "a pending question is never settled"
        );
        store.mark_approval_settled(&id("ap_c")).unwrap();
        assert!(store.unsettled_approvals().unwrap().is_empty());
    }
}

#[test]
fn a_session_s_decided_questions_are_settled_at_once_but_those_its_turn_waits_on() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        let session = SessionId::parse("web-1").unwrap();
        let at = Timestamp::from_second(20).unwrap();
        for (name, created) in [("ap_a", 11), ("ap_b", 12), ("ap_c", 13), ("ap_d", 14)] {
            store.create_approval(&row(name, created)).unwrap();
        }
        for name in ["ap_a", "ap_b", "ap_c"] {
            store
                .decide_approval(&id(name), ApprovalState::Rejected, &DecidedBy::Timeout, at)
                .unwrap();
        }
        // ap_c's turn still waits on it; ap_d is pending.
        assert_eq!(
            store
                .settle_session_approvals(&session, &[id("ap_c")])
                .unwrap(),
            2
        );
        let unsettled: Vec<String> = store
            .unsettled_approvals()
            .unwrap()
            .into_iter()
            .map(|r| r.id.to_string())
            .collect();
        assert_eq!(unsettled, ["ap_c"]);
        // Settled ones are not written again; another session's are not touched.
        assert_eq!(store.settle_session_approvals(&session, &[]).unwrap(), 1);
        assert_eq!(store.settle_session_approvals(&session, &[]).unwrap(), 0);
        let other = SessionId::parse("web-2").unwrap();
        assert_eq!(store.settle_session_approvals(&other, &[]).unwrap(), 0);
        assert_eq!(
            store.approval(&id("ap_d")).unwrap().unwrap().state,
            ApprovalState::Pending
        );
    }
}

#[test]
fn handles_on_one_file_race_to_one_winner() {
    for dir in crate::test_stores::stores() {
        dir.open()
            .approvals()
            .create_approval(&row("ap_1", 10))
            .unwrap();
        let winners: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..6)
                .map(|n| {
                    let dir = &dir;
                    scope.spawn(move || {
                        // Each its own connection, as each process has.
                        let store = dir.open();
                        let to = if n % 2 == 0 {
                            ApprovalState::Approved
                        } else {
                            ApprovalState::Rejected
                        };
                        let by = DecidedBy::person("web");
                        let answered = store
                            .approvals()
                            .decide_approval(&id("ap_1"), to, &by, Timestamp::now())
                            .unwrap();
                        usize::from(matches!(answered, Answered::Decided(_)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(winners, 1);
    }
}

#[test]
fn a_tampered_row_is_an_error_never_a_default() {
    for dir in crate::test_stores::stores() {
        let store = open(&dir);
        store.create_approval(&row("ap_1", 10)).unwrap();
        for (column, value) in [
            ("state", "'yes'"),
            ("tier", "7"),
            ("tier", "'two'"),
            ("session", "'../x'"),
            ("decided_by", "'{\"kind\":\"model\"}'"),
            ("card", "'{\"notes\":[{\"level\":\"fine\"}]}'"),
        ] {
            if dir.kind == "postgres" && value == "'two'" {
                // PostgreSQL's typed column refuses the text itself.
                continue;
            }
            store
                .db()
                .write(|tx| {
                    tx.execute(
                        &format!("UPDATE approvals SET {column} = {value} WHERE id = 'ap_1'"),
                        params![],
                    )?;
                    Ok(())
                })
                .unwrap();
            assert!(store.approval(&id("ap_1")).is_err(), "{column}");
            store
                .db()
                .write(|tx| {
                    tx.execute("DELETE FROM approvals", params![])?;
                    Ok(())
                })
                .unwrap();
            store.create_approval(&row("ap_1", 10)).unwrap();
        }
        store
            .db()
            .write(|tx| {
                tx.execute(
                    "UPDATE approvals SET state = 'yes' WHERE id = 'ap_1'",
                    params![],
                )?;
                Ok(())
            })
            .unwrap();
        assert_eq!(
            store.approval(&id("ap_1")).unwrap_err().to_string(),
            "state.db: approval 'ap_1' is unreadable: its state"
        );
    }
}
