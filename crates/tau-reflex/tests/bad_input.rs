//! Every routine that could not run is refused when it is loaded, with one error naming
//! the routine and the key; `create_routine` refuses the same, and more.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing,
    clippy::needless_pass_by_value
)]

mod common;

use std::sync::Arc;

use common::{FakeHost, Lamp, Rig, catalog, def};
use jiff::Timestamp;
use jiff::tz::TimeZone;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use tau_agent::{SharedTool, ToolContext, ToolError};
use tau_reflex::{RoutineToolsParts, SystemClock, routine_tools};

fn rig() -> Rig {
    let lamp = Arc::new(Lamp::new(Arc::new(SystemClock)));
    let mut rig = Rig::new(catalog(lamp), Arc::new(SystemClock), FakeHost::new());
    rig.env = vec![
        ("SHORT".into(), "tiny".into()),
        ("GOOD".into(), "long-enough-secret-1234".into()),
    ];
    rig
}

fn lamp(extra: Value) -> Value {
    let mut value =
        json!({"name": "porch", "every": "10m", "tool": "lamp", "arguments": {"state": "on"}});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            value.as_object_mut().unwrap().remove(k);
        } else {
            value[k] = v.clone();
        }
    }
    value
}

#[test]
fn a_routine_that_cannot_run_is_a_config_error_naming_it_and_the_key() {
    let cases = [
        (
            lamp(json!({"tool": "lampp"})),
            "routines.porch.tool: there is no tool named 'lampp' (see `tau tools`)",
        ),
        (
            lamp(json!({"every": null, "cron": "0 25 * * *"})),
            "routines.porch.cron: '0 25 * * *' is not a cron pattern: ",
        ),
        (
            lamp(json!({"every": null, "cron": "0 0 31 2 *"})),
            "routines.porch.cron: '0 0 31 2 *' never fires",
        ),
        (
            lamp(json!({"arguments": {"state": "dim"}})),
            "routines.porch.arguments.state: must be one of [\"on\",\"off\"], got \"dim\"",
        ),
        (
            lamp(json!({"arguments": {}})),
            "routines.porch.arguments.state: is required by the tool and missing",
        ),
        (
            lamp(json!({"arguments": {"state": "on", "colour": "red"}})),
            "routines.porch.arguments.colour: the tool takes no such argument (it takes state)",
        ),
        (
            lamp(json!({"every": "often"})),
            "routines.porch.every: 'often' is not a period; write it like \"30s\", \"10m\", \"1h30m\" or \"2d\"",
        ),
        (
            lamp(json!({"every": null, "at": "tomorrow"})),
            "routines.porch.at: 'tomorrow' is not a date and time; write it like \"2026-12-24T18:00\"",
        ),
        (
            lamp(json!({"every": null, "mqtt": "home/#/door"})),
            "routines.porch.mqtt: 'home/#/door' is not a topic filter: '+' stands for one whole level and '#' only for the whole last one",
        ),
        (
            lamp(json!({"every": null, "mqtt": "home/door"})),
            "routines.porch.mqtt: cannot be reached: no MQTT broker is configured ([tools.mqtt])",
        ),
        (
            lamp(json!({"every": null, "webhook": {"secret_env": "GOOD"}})),
            "routines.porch.webhook: cannot be reached: webhooks are served by `tau serve` on its HTTP listener",
        ),
        (
            lamp(json!({"ask": "web"})),
            "routines.porch.ask: the web channel is not set up here, so nobody could be asked",
        ),
        (
            lamp(json!({"ask": "email"})),
            "routines.porch.ask: must be \"web\" or \"telegram\", got \"email\"",
        ),
        (
            lamp(json!({"cron": "0 7 * * *"})),
            "routines.porch.cron: a routine has one trigger, and every is already set",
        ),
        (
            lamp(json!({"every": null})),
            "routines.porch.trigger: is missing: set one of every, cron, at, mqtt, webhook",
        ),
        (
            lamp(json!({"tool": null, "arguments": null})),
            "routines.porch.action: is missing: set tool (with arguments) or prompt",
        ),
        (
            lamp(json!({"prompt": "hello"})),
            "routines.porch.prompt: a routine has one action, and tool is already set",
        ),
        (
            lamp(json!({"tool": null, "prompt": "hello"})),
            "routines.porch.arguments: belong to a tool; this routine has a prompt",
        ),
        (
            lamp(json!({"tool": null, "arguments": null, "prompt": " "})),
            "routines.porch.prompt: must hold 1 to 4000 characters",
        ),
        (
            lamp(json!({"payload": "on"})),
            "routines.porch.payload: only an mqtt or webhook trigger matches a payload",
        ),
        (
            lamp(json!({"tool": "create_routine"})),
            "routines.porch.tool: a routine cannot call 'create_routine'; routines are set up by a person",
        ),
        (
            lamp(json!({"name": "Porch Light"})),
            "routines.name: \"Porch Light\" is not a routine name: 1 to 48 of a-z, 0-9, '-' and '_', starting with a letter or digit",
        ),
    ];
    let rig = rig();
    for (value, expected) in cases {
        let error = rig
            .engine(vec![def(value.clone())])
            .err()
            .expect("refused")
            .to_string();
        assert!(
            error.starts_with(expected),
            "{value}\n got: {error}\nwant: {expected}"
        );
    }
}

#[test]
fn a_webhook_needs_its_secret_in_the_environment() {
    let mut rig = rig();
    rig.host = Arc::new(FakeHost {
        webhooks: true,
        ..FakeHost::new()
    });
    let hook = |var: &str| lamp(json!({"every": null, "webhook": {"secret_env": var}}));
    let error = |value| rig.engine(vec![def(value)]).err().unwrap().to_string();
    assert_eq!(
        error(hook("MISSING")),
        "routines.porch.webhook.secret_env: the environment variable 'MISSING' is not set"
    );
    assert_eq!(
        error(hook("SHORT")),
        "routines.porch.webhook.secret_env: the secret in 'SHORT' is shorter than 16 characters"
    );
    assert!(rig.engine(vec![def(hook("GOOD"))]).is_ok());
}

fn tools(rig: &Rig) -> Vec<SharedTool> {
    routine_tools(RoutineToolsParts {
        store: Arc::clone(&rig.store),
        catalog: (*rig.catalog).clone(),
        config: Vec::new(),
        zone: TimeZone::UTC,
        people: tau_core::Household::default(),
        person: None,
    })
}

async fn call(tool: &SharedTool, input: Value) -> Result<String, ToolError> {
    tool.run(
        input,
        ToolContext::new("t1", tool.spec().name.clone(), None),
    )
    .await
    .map(|out| out.content.iter().map(|c| format!("{c:?}")).collect())
}

#[tokio::test]
async fn create_routine_refuses_what_could_not_run() {
    let rig = rig();
    let create = &tools(&rig)[0];
    let past = (Timestamp::now() - jiff::SignedDuration::from_hours(1)).to_string();
    let cases = [
        (
            json!({"name": "x", "every": "1m", "tool": "lamp", "arguments": {"state": "dim"}}),
            "the routine was not registered: routines.x.arguments.state: must be one of [\"on\",\"off\"], got \"dim\"",
        ),
        (
            json!({"name": "x", "at": past, "tool": "lamp", "arguments": {"state": "on"}}),
            "is in the past; the routine would never run",
        ),
        (
            json!({"name": "x", "webhook": {"secret_env": "GOOD"}, "tool": "lamp", "arguments": {"state": "on"}}),
            "the routine was not registered: webhook: webhook routines are set up in tau.toml, where their secret is named",
        ),
        (
            json!({"name": "x", "every": "1m", "tool": "lamp", "arguments": {"state": "on"}, "enabled": false}),
            "the routine was not registered: enabled: a new routine starts enabled",
        ),
        (
            json!({"every": "1m"}),
            "the routine was not registered: name: is missing; every routine has a name",
        ),
        (
            json!({"name": "x", "every": "1m", "tool": "delete_routine", "arguments": {"name": "y"}}),
            "a routine cannot call 'delete_routine'",
        ),
    ];
    for (input, expected) in cases {
        let error = call(create, input.clone()).await.unwrap_err().message;
        assert!(
            error.contains(expected),
            "{input}\n got: {error}\nwant: {expected}"
        );
    }
    assert!(
        rig.store.stored().unwrap().is_empty(),
        "nothing refused was stored"
    );
}

#[tokio::test]
async fn routines_from_a_conversation_are_created_listed_and_deleted() {
    let rig = rig();
    let tools = tools(&rig);
    let (create, list, delete) = (&tools[0], &tools[1], &tools[2]);
    let porch = json!({"name": "porch", "cron": "0 19 * * *", "tool": "lamp", "arguments": {"state": "on"}});
    let created = call(create, porch.clone()).await.unwrap();
    assert!(
        created.contains(
            "routine 'porch' registered: cron 0 19 * * *, calls lamp {\\\"state\\\":\\\"on\\\"}"
        ),
        "{created}"
    );
    let again = call(create, porch.clone()).await.unwrap_err().message;
    assert_eq!(
        again,
        "the routine was not registered: name: a routine named 'porch' exists; delete it first"
    );
    let stored = rig.store.get("porch").unwrap().unwrap();
    assert_eq!(
        stored.approved_hash,
        def(porch).content_hash(),
        "the approved content is what is stored"
    );
    let listed = list
        .run(json!({}), ToolContext::new("t2", "list_routines", None))
        .await
        .unwrap();
    let tau_agent::ToolResultContent::Json(listed) = &listed.content[0] else {
        panic!("json")
    };
    assert_eq!(
        listed,
        &json!([{"name": "porch", "cron": "0 19 * * *", "tool": "lamp", "arguments": {"state": "on"},
                 "enabled": true, "set_up_in": "conversation", "last_run": null}])
    );
    assert_eq!(
        call(delete, json!({"name": "porch"})).await.unwrap(),
        "Text(\"routine 'porch' deleted\")"
    );
    assert_eq!(
        call(delete, json!({"name": "porch"}))
            .await
            .unwrap_err()
            .message,
        "there is no routine named 'porch'"
    );
    let specs: Vec<(String, Value)> = tools
        .iter()
        .map(|t| {
            (
                t.spec().name.clone(),
                t.spec().annotations["tau"]["tier"].clone(),
            )
        })
        .collect();
    assert_eq!(
        specs,
        vec![
            ("create_routine".into(), json!(2)),
            ("list_routines".into(), json!(0)),
            ("delete_routine".into(), json!(1))
        ]
    );
}
