//! `/grants` on Telegram: a person sees their own grants with a Revoke button each; a
//! Revoke takes only their own grant, and every other press (a stranger's, another
//! owner's on a grant not theirs, a forged id) changes nothing and is recorded.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use pretty_assertions::assert_eq;
use serde_json::json;
use support::{
    Call, FakeBotApi, FakeHub, OWNER, STRANGER, buttons, message, press, run_channel, toasts, until,
};
use tau_protocol::{DecidedBy, Grant, GrantId, GrantScope, Tier};
use tau_telegram::PressRefusal;

const OTHER_OWNER: i64 = 77;

fn grant(n: u32, person: i64) -> Grant {
    let arguments = json!({"command": format!("npm run test {n}")});
    Grant {
        id: GrantId::parse(&format!("gr_{n:032}")).unwrap(),
        tool: "run_command".into(),
        tier: Tier::Physical,
        schema_sha256: "ab".repeat(32),
        arguments_sha256: tau_state::canonical_arguments(&arguments).1,
        arguments,
        card_sha256: "ef".repeat(32),
        workspace_sha256: None,
        scope: GrantScope::Conversation,
        channel: "telegram".into(),
        session: tau_protocol::SessionId::parse("s1").unwrap(),
        person: Some(person.to_string()),
        created_by: DecidedBy::Person {
            channel: "telegram".into(),
            user: Some(person.to_string()),
            person: None,
        },
        approval_id: None,
        created_at: jiff::Timestamp::now().to_string(),
        expires_at: (jiff::Timestamp::now() + jiff::SignedDuration::from_hours(24)).to_string(),
        uses: 0,
        max_uses: None,
        last_used_at: None,
        revoked_at: None,
        revoked_by: None,
    }
}

/// A message's callback data, row by row.
fn button_data(call: &Call) -> Vec<String> {
    buttons(call).into_iter().map(|(_, data)| data).collect()
}

#[tokio::test]
async fn grants_lists_ones_own_and_revoke_takes_only_ones_own() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let mine = grant(1, OWNER);
    let theirs = grant(2, OTHER_OWNER);
    hub.approvals.grants().create_grant(&mine).unwrap();
    hub.approvals.grants().create_grant(&theirs).unwrap();
    let mut config = api.config();
    config.owners.push(OTHER_OWNER);
    let task = run_channel(&config, &hub, events);

    // The list: the owner's own grant, with its Revoke; the other owner's is not there.
    api.push_updates(&[message(1, OWNER, OWNER, "/grants")]);
    let list = until("the list", || {
        api.calls("sendMessage").into_iter().find(|c| {
            c.body["text"]
                .as_str()
                .unwrap_or("")
                .contains("Runs without")
        })
    })
    .await;
    let text = list.body["text"].as_str().unwrap();
    assert!(text.contains("npm run test 1"), "{text}");
    assert!(!text.contains("npm run test 2"), "{text}");
    assert_eq!(button_data(&list), vec![format!("v1:v:{}", mine.id)]);

    // A stranger's press, another owner's on a grant not theirs, an approval's id on a
    // Revoke: nothing is revoked.
    api.push_updates(&[
        press(2, OWNER, STRANGER, 1, &format!("v1:v:{}", mine.id)),
        press(3, OTHER_OWNER, OTHER_OWNER, 1, &format!("v1:v:{}", mine.id)),
        press(4, OWNER, OWNER, 1, "v1:v:ap_1"),
    ]);
    assert_eq!(
        toasts(&api, 3).await,
        vec![
            json!("This question is not yours to answer."),
            json!("This grant is not yours to revoke."),
            json!("This button is not valid."),
        ]
    );
    for id in [&mine.id, &theirs.id] {
        assert_eq!(
            hub.approvals
                .grants()
                .grant(id)
                .unwrap()
                .unwrap()
                .revoked_at,
            None
        );
    }
    let reasons: Vec<PressRefusal> = hub
        .refused
        .lock()
        .unwrap()
        .iter()
        .map(|r| r.reason)
        .collect();
    assert_eq!(
        reasons,
        [
            PressRefusal::NotAnOwner,
            PressRefusal::NotYourGrant,
            PressRefusal::Forged
        ]
    );

    // The owner's Revoke: revoked, by them; a second press learns it was already.
    api.push_updates(&[press(5, OWNER, OWNER, 1, &format!("v1:v:{}", mine.id))]);
    assert_eq!(
        toasts(&api, 4).await[3],
        json!("Revoked: run_command is asked again.")
    );
    let revoked = hub.approvals.grants().grant(&mine.id).unwrap().unwrap();
    assert!(revoked.revoked_at.is_some());
    assert_eq!(
        revoked.revoked_by,
        Some(DecidedBy::Person {
            channel: "telegram".into(),
            user: Some(OWNER.to_string()),
            person: None,
        })
    );
    api.push_updates(&[press(6, OWNER, OWNER, 1, &format!("v1:v:{}", mine.id))]);
    assert_eq!(
        toasts(&api, 5).await[4],
        json!("This grant was revoked already.")
    );
    assert_eq!(
        hub.approvals
            .grants()
            .grant(&theirs.id)
            .unwrap()
            .unwrap()
            .revoked_at,
        None
    );

    // Listed again: nothing left for this owner.
    api.push_updates(&[message(7, OWNER, OWNER, "/grants")]);
    until("the empty list", || {
        api.calls("sendMessage").into_iter().find(|c| {
            c.body["text"].as_str().unwrap_or("")
                == "Nothing runs without asking: you have allowed nothing again."
        })
    })
    .await;
    task.abort();
}

#[tokio::test]
async fn approve_always_on_a_question_that_offers_no_grant_decides_nothing() {
    let api = FakeBotApi::start().await;
    let (hub, events) = FakeHub::new();
    let task = run_channel(&api.config(), &hub, events);
    let id = hub.ask("4242", json!({"command": "touch /tmp/x"})).await;
    let question = until("the question", || {
        api.calls("sendMessage").into_iter().next()
    })
    .await;
    assert!(
        button_data(&question)
            .iter()
            .all(|b| !b.starts_with("v1:g:")),
        "no grant offered, no button: {:?}",
        button_data(&question)
    );
    // A forged "Approve, allow again": the hub refuses it and the question stays open.
    api.push_updates(&[press(1, OWNER, OWNER, 101, &format!("v1:g:{id}"))]);
    let said = toasts(&api, 1).await;
    assert!(
        said[0].as_str().unwrap().contains("offers no grant"),
        "{said:?}"
    );
    assert_eq!(hub.state(&id), tau_state::ApprovalState::Pending);
    task.abort();
}
