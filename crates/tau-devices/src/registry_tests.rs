use super::*;
use pretty_assertions::assert_eq;
use serde_json::json;

/// The registry most tests use: a light, a garage door, a heater, a sensor.
pub(crate) fn home() -> Registry {
    let text = r#"
[[devices]]
name = "kitchen-light"
label = "Kitchen light"
room = "kitchen"
kind = "light"
command_topic = "home/kitchen/light/set"
state_topic = "home/kitchen/light/state"
actions = { on = "ON", off = "OFF", brightness = { min = 0, max = 100, unit = "%", payload = "{\"brightness\": {value}}" } }

[[devices]]
name = "garage-door"
label = "Garage door"
room = "garage"
kind = "garage"
command_topic = "home/garage/door/set"
state_topic = "home/garage/door/state"
actions = { open = "OPEN", close = "CLOSE", stop = "STOP" }

[[devices]]
name = "living-heater"
label = "Living room heater"
kind = "climate"
command_topic = "home/living/heater/set"
actions = { set = { min = 5, max = 30, step = 0.5, unit = "°C" }, off = "OFF" }

[[devices]]
name = "hall-temp"
label = "Hall temperature"
room = "hall"
kind = "sensor"
state_topic = "home/hall/temp"
"#;
    #[derive(serde::Deserialize)]
    struct File {
        devices: Vec<DeviceDef>,
    }
    let file: File = toml::from_str(text).unwrap();
    Registry::new(file.devices.into_iter().map(|d| (d, Origin::Config))).unwrap()
}

#[test]
fn a_call_resolves_to_exactly_what_is_sent() {
    let registry = home();
    let command = registry
        .resolve(&json!({"device": "kitchen-light", "action": "on"}))
        .unwrap();
    assert_eq!(
        (
            command.action,
            command.value,
            command.topic,
            command.payload.as_str(),
            command.reason
        ),
        (ActionName::On, None, "home/kitchen/light/set", "ON", None)
    );
    let command = registry
        .resolve(
            &json!({"device": "living-heater", "action": "set", "value": 22.5, "reason": "cold"}),
        )
        .unwrap();
    assert_eq!(
        (
            command.value,
            command.payload.as_str(),
            command.reason.as_deref()
        ),
        (Some(22.5), "22.5", Some("cold"))
    );
    let command = registry
        .resolve(&json!({"device": "kitchen-light", "action": "brightness", "value": 40}))
        .unwrap();
    assert_eq!(command.payload, "{\"brightness\": 40}");
}

#[test]
fn what_the_registry_cannot_send_is_refused_with_a_reason() {
    let registry = home();
    let long = "x".repeat(100);
    for (arguments, expected) in [
        (json!({"device": "oven", "action": "on"}), "there is no device named \"oven\"; the devices are: garage-door, hall-temp, kitchen-light, living-heater".to_owned()),
        (json!({"device": long, "action": "on"}), format!("there is no device named \"{}\"…; the devices are: garage-door, hall-temp, kitchen-light, living-heater", "x".repeat(64))),
        (json!({"device": "garage-door", "action": "unlock"}), "device 'garage-door' (garage) has no action \"unlock\"; its actions are: open, close, stop".to_owned()),
        (json!({"device": "garage-door", "action": "OPEN"}), "device 'garage-door' (garage) has no action \"OPEN\"; its actions are: open, close, stop".to_owned()),
        (json!({"device": "hall-temp", "action": "on"}), "device 'hall-temp' (sensor) takes no commands; read it with device_state".to_owned()),
        (json!({"device": "living-heater", "action": "set", "value": 31}), "31 is outside the range of action 'set' on device 'living-heater': a number from 5 to 30 °C in steps of 0.5".to_owned()),
        (json!({"device": "living-heater", "action": "set", "value": -1e300}), "-1e300 is outside the range of action 'set' on device 'living-heater': a number from 5 to 30 °C in steps of 0.5".to_owned()),
        (json!({"device": "living-heater", "action": "set", "value": 22.25}), "22.25 is not a step of action 'set' on device 'living-heater': a number from 5 to 30 °C in steps of 0.5".to_owned()),
        (json!({"device": "living-heater", "action": "set"}), "action 'set' of device 'living-heater' needs a value: a number from 5 to 30 °C in steps of 0.5".to_owned()),
        (json!({"device": "living-heater", "action": "set", "value": "22"}), "'value' must be a number".to_owned()),
        (json!({"device": "kitchen-light", "action": "on", "value": 1}), "action 'on' of device 'kitchen-light' takes no value".to_owned()),
        (json!({"device": "kitchen-light", "action": "on", "headline": "OPEN · Garage door"}), "unknown argument \"headline\"; device_set takes device, action, value and reason".to_owned()),
        (json!({"device": "kitchen-light", "action": "on", "reason": "r".repeat(501)}), "'reason' is 501 characters; at most 500".to_owned()),
        (json!({"action": "on"}), "'device' is missing: the name of a registered device".to_owned()),
        (json!({"device": "kitchen-light"}), "'action' is missing: what the device should do".to_owned()),
        (json!({"device": 7, "action": "on"}), "'device' must be a string".to_owned()),
        (json!(["kitchen-light", "on"]), "the arguments must be an object {device, action, value?, reason?}".to_owned()),
    ] {
        assert_eq!(registry.resolve(&arguments).unwrap_err(), expected, "{arguments}");
    }
}

#[test]
fn names_and_command_topics_are_unique() {
    let registry = home();
    let garage = registry.get("garage-door").unwrap().device.def.clone();
    let error = Registry::new([
        (garage.clone(), Origin::Config),
        (garage.clone(), Origin::Added),
    ])
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "devices.garage-door: a device named 'garage-door' is already registered (from the config)"
    );
    let twin = DeviceDef {
        name: "garage-twin".into(),
        ..garage.clone()
    };
    let error = Registry::new([(garage, Origin::Config), (twin, Origin::Added)]).unwrap_err();
    assert_eq!(
        error.to_string(),
        "devices.garage-twin.command_topic: 'home/garage/door/set' is already the command topic of 'garage-door'; one topic, one device"
    );
}

#[test]
fn a_raw_payload_is_matched_to_the_action_it_is() {
    let registry = home();
    let light = registry.by_command_topic("home/kitchen/light/set").unwrap();
    assert_eq!(
        registry.action_for_payload(light, "ON"),
        Some((ActionName::On, None))
    );
    assert_eq!(
        registry.action_for_payload(light, "{\"brightness\": 40}"),
        Some((ActionName::Brightness, Some(40.0)))
    );
    assert_eq!(
        registry.action_for_payload(light, "{\"brightness\": 400}"),
        None
    );
    assert_eq!(
        registry.action_for_payload(light, "{\"brightness\": 40.0}"),
        None
    );
    assert_eq!(registry.action_for_payload(light, "on"), None);
    assert!(
        registry
            .by_command_topic("home/kitchen/light/set/")
            .is_none()
    );
}

#[test]
fn numbers_read_as_a_person_writes_them() {
    assert_eq!(
        [22.5, 22.0, -3.0, 0.1, 0.0, 1e20, 1e-9].map(number),
        ["22.5", "22", "-3", "0.1", "0", "1e20", "1e-9"]
    );
}
