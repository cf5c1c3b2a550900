//! Grants in a real state.db: exact matching only, expiry, uses, and revokes that race
//! uses with one order.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use jiff::{SignedDuration, Timestamp};
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_protocol::{DecidedBy, Grant, GrantId, GrantScope, SessionId, Tier};
use tau_state::{GrantedCall, Revoked, StateDb, canonical_arguments};

#[path = "../src/test_stores.rs"]
mod test_stores;

const SCHEMA: &str = "5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c";
const CARD: &str = "cacacacacacacacacacacacacacacacacacacacacacacacacacacacacacacaca";

fn session(n: u32) -> SessionId {
    SessionId::parse(&format!("session-{n}")).unwrap()
}

fn at(hours: i64) -> Timestamp {
    Timestamp::UNIX_EPOCH
        .checked_add(SignedDuration::from_hours(1_000 + hours))
        .unwrap()
}

fn grant(id: &str, arguments: Value, scope: GrantScope, max_uses: Option<u32>) -> Grant {
    Grant {
        id: GrantId::parse(id).unwrap(),
        tool: "run_command".into(),
        tier: Tier::Physical,
        schema_sha256: SCHEMA.into(),
        arguments_sha256: canonical_arguments(&arguments).1,
        arguments,
        card_sha256: CARD.into(),
        workspace_sha256: None,
        scope,
        channel: "telegram".into(),
        session: session(1),
        person: Some("4242".into()),
        created_by: DecidedBy::person("telegram"),
        approval_id: Some(tau_protocol::ApprovalId::parse("ap_0123456789abcdef").unwrap()),
        created_at: at(0).to_string(),
        expires_at: at(24).to_string(),
        uses: 0,
        max_uses,
        last_used_at: None,
        revoked_at: None,
        revoked_by: None,
    }
}

/// A call as the gate would ask about it; each field can be changed by a case.
#[derive(Clone)]
struct Call {
    tool: &'static str,
    tier: Tier,
    schema: String,
    arguments: Value,
    card: String,
    channel: &'static str,
    session: SessionId,
    person: Option<&'static str>,
}

impl Call {
    fn exact() -> Self {
        Self {
            tool: "run_command",
            tier: Tier::Physical,
            schema: SCHEMA.into(),
            arguments: json!({"command": "npm run test"}),
            card: CARD.into(),
            channel: "telegram",
            session: session(1),
            person: Some("4242"),
        }
    }

    fn try_use(&self, db: &StateDb, when: Timestamp) -> Option<Grant> {
        let hash = canonical_arguments(&self.arguments).1;
        db.grants()
            .use_grant(
                &GrantedCall {
                    tool: self.tool,
                    tier: self.tier,
                    schema_sha256: &self.schema,
                    arguments_sha256: &hash,
                    card_sha256: &self.card,
                    channel: self.channel,
                    session: &self.session,
                    person: self.person,
                },
                when,
            )
            .unwrap()
    }
}

/// Every store, each with a connection open.
fn stores() -> Vec<(test_stores::TestStore, StateDb)> {
    test_stores::stores()
        .into_iter()
        .map(|store| {
            let db = store.open();
            (store, db)
        })
        .collect()
}

fn command(text: &str) -> Value {
    json!({ "command": text })
}

#[test]
fn only_the_exact_call_is_covered() {
    let cases: Vec<(&str, Call)> = vec![
        (
            "appended command",
            Call {
                arguments: command("npm run test && rm -rf ~"),
                ..Call::exact()
            },
        ),
        (
            "semicolon",
            Call {
                arguments: command("npm run test; rm -rf ~"),
                ..Call::exact()
            },
        ),
        (
            "newline",
            Call {
                arguments: command("npm run test\nrm -rf ~"),
                ..Call::exact()
            },
        ),
        (
            "command substitution",
            Call {
                arguments: command("npm run test $(rm -rf ~)"),
                ..Call::exact()
            },
        ),
        (
            "trailing space",
            Call {
                arguments: command("npm run test "),
                ..Call::exact()
            },
        ),
        (
            "leading space",
            Call {
                arguments: command(" npm run test"),
                ..Call::exact()
            },
        ),
        (
            "double space",
            Call {
                arguments: command("npm  run test"),
                ..Call::exact()
            },
        ),
        (
            "tab",
            Call {
                arguments: command("npm\trun test"),
                ..Call::exact()
            },
        ),
        (
            "lookalike letter (Cyrillic e)",
            Call {
                arguments: command("npm run t\u{0435}st"),
                ..Call::exact()
            },
        ),
        (
            "zero-width space",
            Call {
                arguments: command("npm run\u{200b} test"),
                ..Call::exact()
            },
        ),
        (
            "prefix only",
            Call {
                arguments: command("npm run"),
                ..Call::exact()
            },
        ),
        (
            "other case",
            Call {
                arguments: command("NPM run test"),
                ..Call::exact()
            },
        ),
        (
            "extra key",
            Call {
                arguments: json!({"command": "npm run test", "cwd": "/"}),
                ..Call::exact()
            },
        ),
        (
            "number for string",
            Call {
                arguments: json!({"command": 1}),
                ..Call::exact()
            },
        ),
        (
            "nested",
            Call {
                arguments: json!({"command": ["npm run test"]}),
                ..Call::exact()
            },
        ),
        (
            "other tool",
            Call {
                tool: "run_commands",
                ..Call::exact()
            },
        ),
        (
            "other tier",
            Call {
                tier: Tier::Write,
                ..Call::exact()
            },
        ),
        (
            "other schema",
            Call {
                schema: "0".repeat(64),
                ..Call::exact()
            },
        ),
        (
            "other card",
            Call {
                card: "1".repeat(64),
                ..Call::exact()
            },
        ),
        (
            "other channel",
            Call {
                channel: "web",
                ..Call::exact()
            },
        ),
        (
            "other conversation",
            Call {
                session: session(2),
                ..Call::exact()
            },
        ),
        (
            "other person, other conversation",
            Call {
                person: Some("4243"),
                session: session(2),
                ..Call::exact()
            },
        ),
    ];
    for (_dir, db) in stores() {
        db.grants()
            .create_grant(&grant(
                "gr_conversation",
                command("npm run test"),
                GrantScope::Conversation,
                None,
            ))
            .unwrap();
        for (name, call) in &cases {
            assert_eq!(call.try_use(&db, at(1)), None, "{name}");
        }
        let used = Call::exact()
            .try_use(&db, at(1))
            .expect("the exact call is covered");
        assert_eq!(used.uses, 1);
        assert_eq!(used.last_used_at, Some(at(1).to_string()));
        // Key order is no difference: the canonical JSON is the same.
        let reordered = Call {
            arguments: serde_json::from_str(r#"{"command":"npm run test"}"#).unwrap(),
            ..Call::exact()
        };
        assert_eq!(reordered.try_use(&db, at(1)).unwrap().uses, 2);
    }
}

#[test]
fn a_channel_grant_covers_the_person_s_other_conversations_and_nobody_else() {
    for (_dir, db) in stores() {
        db.grants()
            .create_grant(&grant(
                "gr_channel",
                command("npm run test"),
                GrantScope::Channel,
                None,
            ))
            .unwrap();
        let elsewhere = Call {
            session: session(7),
            ..Call::exact()
        };
        assert!(elsewhere.try_use(&db, at(1)).is_some());
        for (name, call) in [
            (
                "another person",
                Call {
                    person: Some("4243"),
                    ..elsewhere.clone()
                },
            ),
            (
                "nobody named",
                Call {
                    person: None,
                    ..elsewhere.clone()
                },
            ),
            (
                "another channel",
                Call {
                    channel: "web",
                    ..elsewhere.clone()
                },
            ),
        ] {
            assert_eq!(call.try_use(&db, at(1)), None, "{name}");
        }
    }
}

#[test]
fn a_grant_ends_at_its_expiry_and_after_its_uses() {
    for (_dir, db) in stores() {
        db.grants()
            .create_grant(&grant(
                "gr_twice",
                command("npm run test"),
                GrantScope::Conversation,
                Some(2),
            ))
            .unwrap();
        assert_eq!(Call::exact().try_use(&db, at(1)).unwrap().uses, 1);
        assert_eq!(Call::exact().try_use(&db, at(2)).unwrap().uses, 2);
        assert_eq!(Call::exact().try_use(&db, at(3)), None, "used up");

        db.grants()
            .create_grant(&grant(
                "gr_day",
                command("npm run test"),
                GrantScope::Conversation,
                None,
            ))
            .unwrap();
        assert!(Call::exact().try_use(&db, at(23)).is_some());
        assert_eq!(
            Call::exact().try_use(&db, at(24)),
            None,
            "expired at its hour"
        );
        let live: Vec<_> = db
            .grants()
            .grants(Some(at(2)))
            .unwrap()
            .into_iter()
            .map(|g| g.id.to_string())
            .collect();
        assert_eq!(live, vec!["gr_day"], "the used-up grant is not live");
        assert_eq!(db.grants().grants(None).unwrap().len(), 2);
    }
}

#[test]
fn a_revoked_grant_covers_nothing_and_a_revoke_happens_once() {
    for (_dir, db) in stores() {
        let id = GrantId::parse("gr_revoked").unwrap();
        db.grants()
            .create_grant(&grant(
                id.as_str(),
                command("npm run test"),
                GrantScope::Conversation,
                None,
            ))
            .unwrap();
        assert!(Call::exact().try_use(&db, at(1)).is_some());
        let by = DecidedBy::person("cli");
        let Revoked::Revoked(revoked) = db.grants().revoke_grant(&id, &by, at(2)).unwrap() else {
            panic!("the first revoke revokes");
        };
        assert_eq!(
            (revoked.uses, revoked.revoked_by.clone()),
            (1, Some(by.clone()))
        );
        assert_eq!(Call::exact().try_use(&db, at(3)), None);
        assert_eq!(
            db.grants()
                .revoke_grant(&id, &DecidedBy::person("web"), at(4))
                .unwrap(),
            Revoked::AlreadyRevoked(revoked)
        );
        assert_eq!(
            db.grants()
                .revoke_grant(&GrantId::parse("gr_none").unwrap(), &by, at(4))
                .unwrap(),
            Revoked::NotFound
        );
    }
}

#[test]
fn a_row_whose_arguments_were_changed_behind_tau_s_back_covers_nothing() {
    for dir in test_stores::stores() {
        let db = dir.open();
        db.grants()
            .create_grant(&grant(
                "gr_tampered",
                command("npm run test"),
                GrantScope::Conversation,
                None,
            ))
            .unwrap();
        // The hash still says "npm run test"; the arguments now say something else.
        test_stores::tamper(
            &dir,
            r#"UPDATE grants SET arguments = '{"command":"npm run test && rm -rf ~"}'"#,
        );
        assert_eq!(Call::exact().try_use(&db, at(1)), None);
        assert!(
            db.grants().grants(None).is_err(),
            "the list says the row does not read"
        );
    }
}

#[test]
fn arguments_that_do_not_hash_to_the_grant_s_hash_are_refused_when_stored() {
    for (_dir, db) in stores() {
        let mut wrong = grant(
            "gr_wrong",
            command("npm run test"),
            GrantScope::Conversation,
            None,
        );
        wrong.arguments = command("rm -rf ~");
        assert!(db.grants().create_grant(&wrong).is_err());
        assert!(db.grants().grants(None).unwrap().is_empty());
    }
}

/// Uses in one thread, a revoke in another, many times over: after the revoke returns no
/// use succeeds, and the number of uses the revoke saw is the number that succeeded.
#[test]
fn a_revoke_racing_uses_has_one_order() {
    for round in 0..20 {
        for dir in test_stores::stores() {
            let db = dir.open();
            let id = GrantId::parse(&format!("gr_race{round}")).unwrap();
            db.grants()
                .create_grant(&grant(
                    id.as_str(),
                    command("npm run test"),
                    GrantScope::Conversation,
                    None,
                ))
                .unwrap();
            let revoked = Arc::new(AtomicBool::new(false));
            let user = {
                // Another connection, as another process would have.
                let db = dir.open();
                let revoked = Arc::clone(&revoked);
                std::thread::spawn(move || {
                    let mut ran = 0u32;
                    let mut after_revoke = 0u32;
                    for _ in 0..200 {
                        let was_revoked = revoked.load(Ordering::SeqCst);
                        if Call::exact().try_use(&db, at(1)).is_some() {
                            ran += 1;
                            if was_revoked {
                                after_revoke += 1;
                            }
                        }
                    }
                    (ran, after_revoke)
                })
            };
            std::thread::yield_now();
            let Revoked::Revoked(row) = db
                .grants()
                .revoke_grant(&id, &DecidedBy::person("cli"), at(1))
                .unwrap()
            else {
                panic!("revoked");
            };
            revoked.store(true, Ordering::SeqCst);
            let (ran, after_revoke) = user.join().unwrap();
            assert_eq!(after_revoke, 0, "no call ran after the revoke returned");
            assert_eq!(
                row.uses, ran,
                "the revoke counted exactly the uses before it"
            );
        }
    }
}
