use super::*;
use jiff::Timestamp;
use pretty_assertions::assert_eq;

const GARAGE_TOPIC: &str = "homeassistant/cover/garage/config";
const GARAGE: &str = r#"{"name": "Garage door", "device_class": "garage",
    "cmd_t": "~/set", "stat_t": "~/state", "~": "home/garage/door",
    "uniq_id": "garage-01", "dev": {"name": "Garage opener", "sa": "garage"}}"#;

fn seen(topic: &str, payload: &str) -> SeenConfig {
    SeenConfig {
        topic: topic.into(),
        payload: payload.into(),
        since: Timestamp::UNIX_EPOCH,
        seen_at: Timestamp::UNIX_EPOCH,
    }
}

fn named(mut proposals: Vec<Proposal>) -> Vec<Proposal> {
    name_proposals(&mut proposals, &BTreeSet::new());
    proposals
}

#[test]
fn a_garage_config_becomes_a_lock_class_garage_proposal() {
    let proposal = named(vec![propose(GARAGE_TOPIC, GARAGE)]).remove(0);
    let def = proposal.def.unwrap();
    assert_eq!(
        def,
        DeviceDef {
            name: "garage-door".into(),
            label: "Garage door".into(),
            room: Some("garage".into()),
            kind: DeviceKind::Garage,
            command_topic: Some("home/garage/door/set".into()),
            state_topic: Some("home/garage/door/state".into()),
            actions: [
                ("close".to_owned(), ActionDef::Payload("CLOSE".into())),
                ("open".to_owned(), ActionDef::Payload("OPEN".into())),
                ("stop".to_owned(), ActionDef::Payload("STOP".into())),
            ]
            .into(),
            retain: false,
            high_risk: None,
            approvers: Vec::new(),
        }
    );
    assert!(def.check().unwrap().lock_class);
}

#[test]
fn every_component_tau_knows_is_read() {
    let cases = [
        (
            "homeassistant/light/node1/kitchen/config",
            r#"{"name":"Kitchen light","command_topic":"k/set","payload_on":"1","payload_off":"0"}"#,
        ),
        (
            "homeassistant/light/hall/config",
            r#"{"name":"Hall","schema":"json","command_topic":"h/set"}"#,
        ),
        (
            "homeassistant/switch/pump/config",
            r#"{"name":"Pump","command_topic":"p/set"}"#,
        ),
        (
            "homeassistant/lock/front/config",
            r#"{"name":"Front door","command_topic":"f/set","payload_open":"OPEN"}"#,
        ),
        (
            "homeassistant/climate/living/config",
            r#"{"name":"Living","temperature_command_topic":"l/temp/set","min_temp":10,"max_temp":25,"temp_step":1,"temperature_unit":"F"}"#,
        ),
        (
            "homeassistant/valve/water/config",
            r#"{"name":"Water main","command_topic":"w/set"}"#,
        ),
        (
            "homeassistant/sensor/hall/config",
            r#"{"name":"Hall temp","state_topic":"h/temp"}"#,
        ),
        (
            "homeassistant/camera/door/config",
            r#"{"name":"Door cam","topic":"c"}"#,
        ),
        (
            "homeassistant/switch/nocmd/config",
            r#"{"name":"No command"}"#,
        ),
        (
            "homeassistant/switch/noname/config",
            r#"{"command_topic":"x"}"#,
        ),
        ("homeassistant/switch/array/config", r#"[1,2]"#),
        (
            "homeassistant/switch/config",
            r#"{"name":"Short topic","command_topic":"x"}"#,
        ),
    ];
    let proposals = named(cases.iter().map(|(t, p)| propose(t, p)).collect());
    let shown: Vec<String> = proposals
        .iter()
        .map(|p| match &p.def {
            Ok(def) => format!("{} -> {}", p.topic, serde_json::to_string(def).unwrap()),
            Err(problem) => format!("{} -> refused: {problem}", p.topic),
        })
        .collect();
    insta::assert_snapshot!(shown.join("\n"));
}

#[test]
fn names_are_unique_against_the_registry_and_each_other() {
    let mut proposals = vec![
        propose("homeassistant/cover/a/config", GARAGE),
        propose("homeassistant/cover/b/config", GARAGE),
        propose(
            "homeassistant/switch/c/config",
            r#"{"name":"Yes","command_topic":"y"}"#,
        ),
        propose(
            "homeassistant/switch/d/config",
            r#"{"name":"☃","command_topic":"z"}"#,
        ),
    ];
    name_proposals(&mut proposals, &BTreeSet::from(["garage-door".to_owned()]));
    let names: Vec<_> = proposals
        .iter()
        .map(|p| p.def.as_ref().unwrap().name.as_str())
        .collect();
    assert_eq!(
        names,
        ["garage-door-2", "garage-door-3", "device-yes", "device"]
    );
}

#[test]
fn a_later_rename_is_a_mismatch_never_a_change() {
    let pinned = named(vec![propose(GARAGE_TOPIC, GARAGE)])
        .remove(0)
        .def
        .unwrap();
    assert_eq!(
        mismatch(&pinned, Some(&seen(GARAGE_TOPIC, GARAGE))),
        Vec::<String>::new()
    );
    let renamed = GARAGE
        .replace("Garage door", "kitchen light")
        .replace("\"sa\": \"garage\"", "\"sa\": \"kitchen\"")
        .replace("~/set", "home/kitchen/light/set");
    assert_eq!(
        mismatch(&pinned, Some(&seen(GARAGE_TOPIC, &renamed))),
        vec![
            "name \"kitchen light\" (pinned: \"Garage door\")".to_owned(),
            "room \"kitchen\" (pinned: \"garage\")".to_owned(),
            "command topic \"home/kitchen/light/set\" (pinned: \"home/garage/door/set\")"
                .to_owned(),
        ]
    );
    assert_eq!(
        mismatch(&pinned, None),
        vec!["its discovery config was removed from the broker".to_owned()]
    );
    assert_eq!(
        mismatch(&pinned, Some(&seen(GARAGE_TOPIC, "not json"))),
        vec!["its discovery config no longer reads: the config is not a JSON object".to_owned()]
    );
}

#[test]
fn a_hostile_label_is_quoted_in_the_mismatch_and_refused_as_a_device() {
    let pinned = named(vec![propose(GARAGE_TOPIC, GARAGE)])
        .remove(0)
        .def
        .unwrap();
    let hostile = GARAGE.replace("Garage door", "switch OFF · Kitchen light\\u202e\\n");
    let lines = mismatch(&pinned, Some(&seen(GARAGE_TOPIC, &hostile)));
    assert_eq!(
        lines[0],
        "name \"switch OFF · Kitchen light\\u{202e}\\n\" (pinned: \"Garage door\")"
    );
    let proposal = named(vec![propose(GARAGE_TOPIC, &hostile)]).remove(0);
    let error = proposal.def.unwrap().check().unwrap_err();
    assert_eq!(error.key, "label");
}
