use super::*;
use pretty_assertions::assert_eq;

fn read(text: &str) -> DeviceDef {
    #[derive(Deserialize)]
    struct File {
        devices: Vec<DeviceDef>,
    }
    let file: File = toml::from_str(text).unwrap();
    file.devices.into_iter().next().unwrap()
}

const KITCHEN: &str = r#"
[[devices]]
name = "kitchen-light"
label = "Kitchen light"
room = "kitchen"
kind = "light"
command_topic = "home/kitchen/light/set"
state_topic = "home/kitchen/light/state"
actions = { on = "ON", off = "OFF" }
"#;

#[test]
fn the_issue_example_reads_and_checks() {
    let def = read(KITCHEN);
    let device = def.check().unwrap();
    assert_eq!(
        device,
        Device {
            name: "kitchen-light".into(),
            label: "Kitchen light".into(),
            room: Some("kitchen".into()),
            kind: DeviceKind::Light,
            command_topic: Some("home/kitchen/light/set".into()),
            state_topic: Some("home/kitchen/light/state".into()),
            actions: [
                (ActionName::On, ActionPayload::Fixed("ON".into())),
                (ActionName::Off, ActionPayload::Fixed("OFF".into())),
            ]
            .into(),
            retain: false,
            lock_class: false,
            def,
        }
    );
}

#[test]
fn a_range_reads_with_its_unit_step_and_template() {
    let def = read(
        r#"
[[devices]]
name = "living-heater"
label = "Living room heater"
kind = "climate"
command_topic = "home/living/heater/set"
actions = { set = { min = 5, max = 30, step = 0.5, unit = "°C", payload = "{\"target\": {value}}" }, off = "OFF" }
"#,
    );
    let device = def.check().unwrap();
    assert_eq!(
        device.actions.get(&ActionName::Set),
        Some(&ActionPayload::Number(Range {
            min: 5.0,
            max: 30.0,
            step: Some(0.5),
            unit: Some("°C".into()),
            template: "{\"target\": {value}}".into(),
        }))
    );
    assert!(!device.lock_class);
}

#[test]
fn lock_class_comes_from_the_kind_unless_overridden() {
    let garage = |extra: &str| {
        read(&format!(
            r#"
[[devices]]
name = "garage-door"
label = "Garage door"
kind = "garage"
command_topic = "home/garage/door/set"
actions = {{ open = "OPEN", close = "CLOSE" }}
{extra}
"#
        ))
        .check()
        .unwrap()
        .lock_class
    };
    assert!(garage(""));
    assert!(!garage("high_risk = false"));
    assert!(garage("high_risk = true"));
}

#[test]
fn every_mistake_names_its_device_and_key() {
    let base = read(KITCHEN);
    type Change = fn(&mut DeviceDef);
    let cases: Vec<(Change, &str)> = vec![
        (
            |d| d.name = "Kitchen".into(),
            "devices.Kitchen.name: must start with a-z and hold only a-z, 0-9 and '-', got \"Kitchen\"",
        ),
        (
            |d| d.name = "yes".into(),
            "devices.yes.name: \"yes\" answers questions; a device needs a name that typing it is a deliberate step",
        ),
        (
            |d| d.name = "ab".into(),
            "devices.ab.name: must be 3 to 40 characters, got 2",
        ),
        (
            |d| d.name = "9lives".into(),
            "devices.9lives.name: must start with a-z and hold only a-z, 0-9 and '-', got \"9lives\"",
        ),
        (
            |d| d.label = "Kitchen\u{202e}thgil".into(),
            "devices.kitchen-light.label: must be 1 to 60 characters on one line, with nothing tau would have to escape, got \"Kitchen\\u{202e}thgil\"",
        ),
        (
            |d| d.label = "two\nlines".into(),
            "devices.kitchen-light.label: must be 1 to 60 characters on one line, with nothing tau would have to escape, got \"two\\nlines\"",
        ),
        (
            |d| d.label = String::new(),
            "devices.kitchen-light.label: must be 1 to 60 characters on one line, with nothing tau would have to escape, got \"\"",
        ),
        (
            |d| d.room = Some(" kitchen".into()),
            "devices.kitchen-light.room: must be 1 to 40 characters on one line, with nothing tau would have to escape, got \" kitchen\"",
        ),
        (
            |d| d.command_topic = Some("home/+/set".into()),
            "devices.kitchen-light.command_topic: topic 'home/+/set' contains a wildcard ('+' or '#'); publish to one exact topic",
        ),
        (
            |d| d.command_topic = None,
            "devices.kitchen-light.command_topic: is required: the topic the device's commands go to",
        ),
        (
            |d| d.state_topic = Some("home/#".into()),
            "devices.kitchen-light.state_topic: topic 'home/#' contains a wildcard ('+' or '#'); publish to one exact topic",
        ),
        (
            |d| {
                d.actions
                    .insert("open".into(), ActionDef::Payload("OPEN".into()));
            },
            "devices.kitchen-light.actions: \"open\" is not an action of a light; a light has on, off, brightness",
        ),
        (
            |d| {
                d.actions
                    .insert("brightness".into(), ActionDef::Payload("50".into()));
            },
            "devices.kitchen-light.actions.brightness: takes a number: write { min = ..., max = ... } (step, unit and payload are optional)",
        ),
        (
            |d| {
                d.actions.insert(
                    "on".into(),
                    ActionDef::Range(RangeDef {
                        min: 0.0,
                        max: 1.0,
                        step: None,
                        unit: None,
                        payload: "{value}".into(),
                    }),
                );
            },
            "devices.kitchen-light.actions.on: takes no number: write the payload it sends, e.g. \"ON\"",
        ),
        (
            |d| {
                d.actions.insert(
                    "brightness".into(),
                    ActionDef::Range(RangeDef {
                        min: 9.0,
                        max: 1.0,
                        step: None,
                        unit: None,
                        payload: "{value}".into(),
                    }),
                );
            },
            "devices.kitchen-light.actions.brightness: min must be below max, got 9 and 1",
        ),
        (
            |d| {
                d.actions.insert(
                    "brightness".into(),
                    ActionDef::Range(RangeDef {
                        min: 0.0,
                        max: 1.0,
                        step: Some(0.0),
                        unit: None,
                        payload: "{value}".into(),
                    }),
                );
            },
            "devices.kitchen-light.actions.brightness.step: must be above 0 and at most max - min, got 0",
        ),
        (
            |d| {
                d.actions.insert(
                    "brightness".into(),
                    ActionDef::Range(RangeDef {
                        min: 0.0,
                        max: 1.0,
                        step: None,
                        unit: None,
                        payload: "level".into(),
                    }),
                );
            },
            "devices.kitchen-light.actions.brightness.payload: must hold {value} exactly once, where the number goes",
        ),
        (
            |d| {
                d.actions
                    .insert("off".into(), ActionDef::Payload("x".repeat(5000)));
            },
            "devices.kitchen-light.actions.off: is 5000 bytes; a payload is at most 4096",
        ),
        (
            |d| d.actions.clear(),
            "devices.kitchen-light.actions: a device with a command_topic needs at least one action",
        ),
        (
            |d| {
                d.kind = DeviceKind::Sensor;
                d.actions.clear();
                d.command_topic = None;
                d.state_topic = None;
            },
            "devices.kitchen-light.state_topic: a device without actions is read from its state_topic, which is missing",
        ),
    ];
    for (change, expected) in cases {
        let mut def = base.clone();
        change(&mut def);
        assert_eq!(def.check().unwrap_err().to_string(), expected);
    }
}

#[test]
fn unknown_keys_and_bad_action_shapes_are_toml_errors() {
    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct File {
        devices: Vec<DeviceDef>,
    }
    let error = toml::from_str::<File>(&KITCHEN.replace("room =", "rooom =")).unwrap_err();
    assert!(
        error.message().starts_with("unknown field `rooom`"),
        "{error}"
    );
    let error = toml::from_str::<File>(&KITCHEN.replace("on = \"ON\"", "on = 1")).unwrap_err();
    assert_eq!(
        error.message(),
        "invalid type: integer `1`, expected a payload string or a table with min, max (step, unit, payload)"
    );
    let error = toml::from_str::<File>(
        &KITCHEN.replace("on = \"ON\"", "on = { min = 1, max = 2, colour = 3 }"),
    )
    .unwrap_err();
    assert!(
        error.message().starts_with("unknown field `colour`"),
        "{error}"
    );
    let error = toml::from_str::<File>(&KITCHEN.replace("kind = \"light\"", "kind = \"toaster\""))
        .unwrap_err();
    assert!(
        error.message().starts_with("unknown variant `toaster`"),
        "{error}"
    );
}

#[test]
fn a_sensor_has_a_state_topic_and_no_actions() {
    let sensor = DeviceDef {
        name: "hall-temp".into(),
        label: "Hall temperature".into(),
        room: None,
        kind: DeviceKind::Sensor,
        command_topic: None,
        state_topic: Some("home/hall/temp".into()),
        actions: BTreeMap::new(),
        retain: false,
        high_risk: None,
        approvers: Vec::new(),
    };
    assert!(sensor.check().unwrap().actions.is_empty());
}

#[test]
fn a_definition_round_trips_through_json() {
    let def = read(KITCHEN);
    let json = serde_json::to_string(&def).unwrap();
    assert_eq!(serde_json::from_str::<DeviceDef>(&json).unwrap(), def);
}
