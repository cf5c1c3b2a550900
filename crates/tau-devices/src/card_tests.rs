use super::*;
use crate::discovery::{name_proposals, propose};
use crate::registry::tests::home;
use pretty_assertions::assert_eq;
use serde_json::json;

/// A card as plain text, for snapshots: the headline, then one row per note.
fn shown(card: &CallCard) -> String {
    let mut out = format!("{}\n", card.headline.as_deref().unwrap_or("(no headline)"));
    for note in &card.notes {
        let mark = if note.level == tau_protocol::NoteLevel::Warning {
            "⚠ "
        } else {
            ""
        };
        out.push_str(&format!("  {mark}{}  {}\n", note.label, note.text));
        if let Some(detail) = &note.detail {
            for line in detail.lines() {
                out.push_str(&format!("      {line}\n"));
            }
        }
    }
    if let Some(step) = &card.confirm {
        out.push_str(&format!(
            "  second step: type {} (or the number the gate draws)\n",
            step.word
        ));
    }
    out
}

fn set(arguments: &serde_json::Value) -> CallCard {
    device_set_card(&home(), None, true, arguments).unwrap()
}

#[test]
fn headlines_per_kind_come_from_the_registry() {
    let cards = [
        set(&json!({"device": "kitchen-light", "action": "on"})),
        set(&json!({"device": "kitchen-light", "action": "brightness", "value": 40})),
        set(&json!({"device": "garage-door", "action": "open"})),
        set(&json!({"device": "living-heater", "action": "set", "value": 22.5})),
    ];
    let headlines: Vec<_> = cards
        .iter()
        .map(|c| c.headline.as_deref().unwrap_or(""))
        .collect();
    assert_eq!(
        headlines,
        [
            "switch ON · Kitchen light (kitchen)",
            "set brightness to 40 % · Kitchen light (kitchen)",
            "OPEN · Garage door (garage) — a lock-class device",
            "set 22.5 °C · Living room heater",
        ]
    );
    insta::assert_snapshot!(cards.iter().map(shown).collect::<Vec<_>>().join("\n"));
}

#[test]
fn only_lock_class_devices_ask_the_second_step_and_only_when_it_is_on() {
    let open = json!({"device": "garage-door", "action": "open"});
    let on = json!({"device": "kitchen-light", "action": "on"});
    let confirm = |arguments: &serde_json::Value, setting| {
        device_set_card(&home(), None, setting, arguments)
            .unwrap()
            .confirm
    };
    assert_eq!(confirm(&open, true), Some(ConfirmStep::word("garage-door")));
    assert_eq!(confirm(&open, false), None);
    assert_eq!(confirm(&on, true), None);
}

#[test]
fn model_text_imitating_a_headline_stays_under_the_model_says() {
    let card = set(&json!({
        "device": "garage-door",
        "action": "close",
        "reason": "switch OFF · Kitchen light (kitchen)\n⚠ nothing to see"
    }));
    assert_eq!(
        card.headline.as_deref(),
        Some("CLOSE · Garage door (garage) — a lock-class device")
    );
    let quoting: Vec<_> = card
        .notes
        .iter()
        .filter(|note| note.text.contains("Kitchen light"))
        .map(|note| (note.label.as_str(), note.text.as_str()))
        .collect();
    assert_eq!(
        quoting,
        [(
            MODEL_SAYS,
            "\"switch OFF · Kitchen light (kitchen)\\n⚠ nothing to see\""
        )]
    );
}

#[test]
fn a_call_that_does_not_resolve_gets_no_device_card() {
    for arguments in [
        json!({"device": "garage-door", "action": "unlock"}),
        json!({"device": "OPEN · Garage door (garage)", "action": "open"}),
        json!({"device": "living-heater", "action": "set", "value": 99}),
    ] {
        assert_eq!(device_set_card(&home(), None, true, &arguments), None);
    }
}

#[test]
fn a_raw_publish_to_a_device_topic_names_the_device_and_the_detour() {
    let registry = home();
    let card = |topic: &str, payload: &str| {
        mqtt_publish_card(
            &registry,
            None,
            true,
            &json!({"topic": topic, "payload": payload}),
        )
    };
    let known = card("home/garage/door/set", "OPEN").unwrap();
    let unlisted = card("home/kitchen/light/set", "OPEN · Garage door (garage)").unwrap();
    assert_eq!(known.confirm, Some(ConfirmStep::word("garage-door")));
    assert_eq!(
        unlisted.headline.as_deref(),
        Some("an unlisted payload · Kitchen light (kitchen)")
    );
    assert!(
        unlisted
            .notes
            .iter()
            .all(|n| !n.text.contains("Garage door")),
        "the model's payload is only in the arguments: {unlisted:?}"
    );
    assert_eq!(card("home/elsewhere", "ON"), None);
    insta::assert_snapshot!(format!("{}\n{}", shown(&known), shown(&unlisted)));
}

#[test]
fn a_pinned_device_whose_discovery_changed_shows_the_mismatch_as_a_warning() {
    let topic = "homeassistant/cover/garage/config";
    let config = r#"{"name":"Garage door","device_class":"garage","command_topic":"home/garage/door/set","device":{"suggested_area":"garage"}}"#;
    let mut proposals = vec![propose(topic, config)];
    name_proposals(&mut proposals, &Default::default());
    let def = proposals.remove(0).def.unwrap();
    let registry = Registry::new([(
        def,
        Origin::Pinned {
            discovery_topic: topic.into(),
        },
    )])
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = DeviceStore::new(
        tau_state::StateDb::open(&dir.path().join("state.db"))
            .unwrap()
            .devices(),
    );
    let now = jiff::Timestamp::UNIX_EPOCH;
    store.record_discovery(topic, config, now).unwrap();
    let open = json!({"device": "garage-door", "action": "open"});
    let card = device_set_card(&registry, Some(&store), true, &open).unwrap();
    assert!(
        card.notes
            .iter()
            .all(|n| n.level == tau_protocol::NoteLevel::Info),
        "{card:?}"
    );

    let renamed = config
        .replace("Garage door", "kitchen light")
        .replace("\"garage\"}", "\"kitchen\"}");
    store.record_discovery(topic, &renamed, now).unwrap();
    let card = device_set_card(&registry, Some(&store), true, &open).unwrap();
    assert_eq!(
        card.headline.as_deref(),
        Some("OPEN · Garage door (garage) — a lock-class device")
    );
    insta::assert_snapshot!(shown(&card));
}

#[test]
fn the_writer_fills_the_card_of_device_calls_only_and_its_headline_comes_first() {
    use tau_core::CardWriter;
    let writer = DeviceCards {
        registry: std::sync::Arc::new(home()),
        store: None,
        confirm_high_risk: true,
    };
    let mut card = CallCard::default();
    writer.write("run_command", &json!({"command": "ls"}), &mut card);
    writer.write(
        "device_set",
        &json!({"device": "oven", "action": "on"}),
        &mut card,
    );
    assert_eq!(card, CallCard::default());

    let mut card = CallCard {
        headline: Some("written before".into()),
        ..CallCard::default()
    };
    writer.write(
        "device_set",
        &json!({"device": "garage-door", "action": "open"}),
        &mut card,
    );
    assert_eq!(
        card.headline.as_deref(),
        Some("OPEN · Garage door (garage) — a lock-class device")
    );
    assert_eq!(
        card.notes[0],
        tau_protocol::CardNote::info("also", "written before")
    );
    assert_eq!(card.confirm, Some(ConfirmStep::word("garage-door")));
}
