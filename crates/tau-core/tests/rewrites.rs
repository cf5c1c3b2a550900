//! Property: whatever hooks below the gate do to the input, the person approves exactly
//! the arguments the tool then receives.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::sync::Arc;

use common::{House, Setup, calls, text, tool_use};
use proptest::prelude::*;
use serde_json::{Value, json};
use tau_agent::{BeforeToolCallEvent, HookError, HookOrder, HookRegistry, SyncHook};
use tau_core::{HookProvider, ScriptedApprover};
use tau_protocol::Decision;

#[derive(Debug, Clone)]
enum Rewrite {
    Set(String, i64),
    Remove(String),
    Replace(Value),
}

fn rewrite() -> impl Strategy<Value = Rewrite> {
    let key = prop::sample::select(vec!["room", "level", "colour", "x"]).prop_map(str::to_owned);
    prop_oneof![
        (key.clone(), any::<i64>()).prop_map(|(k, v)| Rewrite::Set(k, v)),
        key.prop_map(Rewrite::Remove),
        any::<u8>().prop_map(|n| Rewrite::Replace(json!({"replaced": n}))),
    ]
}

struct Hooks(Vec<(f64, Rewrite)>);

impl HookProvider for Hooks {
    fn name(&self) -> &str {
        "rewrites"
    }
    fn register_hooks(&self, registry: &mut HookRegistry) -> Result<(), HookError> {
        for (i, (order, rewrite)) in self.0.iter().cloned().enumerate() {
            registry.add(
                format!("rewrite-{i}"),
                order,
                SyncHook(move |event: &mut BeforeToolCallEvent| {
                    let input = &mut event.tool_use.input;
                    match &rewrite {
                        Rewrite::Set(key, value) => {
                            if let Some(map) = input.as_object_mut() {
                                map.insert(key.clone(), json!(value));
                            }
                        }
                        Rewrite::Remove(key) => {
                            if let Some(map) = input.as_object_mut() {
                                map.remove(key);
                            }
                        }
                        Rewrite::Replace(value) => *input = value.clone(),
                    }
                    Ok(())
                }),
            )?;
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn approved_arguments_are_the_arguments_that_run(
        hooks in prop::collection::vec((-1000.0f64..HookOrder::SDK_LAST, rewrite()), 0..6),
        room in "[a-z]{1,8}",
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (requested, received) = runtime.block_on(async {
            let house = House::new();
            let approver = ScriptedApprover::new([Decision::Approved]);
            let mut setup = Setup::new(house.catalog(), Arc::new(approver.clone()));
            setup.hooks.push(Arc::new(Hooks(hooks)));
            let mut built = setup
                .build(vec![calls(vec![tool_use("t1", "lights", json!({"room": room}))]), text("ok")])
                .await;
            built.agent.stream("go", None).await.unwrap();
            (approver.requests().into_iter().map(|r| r.arguments).collect::<Vec<_>>(), house.lights.inputs())
        });
        prop_assert_eq!(requested.len(), 1);
        prop_assert_eq!(requested, received);
    }
}
