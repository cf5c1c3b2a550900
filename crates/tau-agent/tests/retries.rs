//! Model calls made again: throttling with backoff, a context window overflow answered by
//! trimming old turns, and retries an after-model-call hook asks for.

#![cfg(test)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{assistant, drain, results, tool_use};
use pretty_assertions::assert_eq;
use serde_json::json;
use tau_agent::{
    AfterModelCallEvent, Agent, AgentError, AgentResult, AgentStop, EventSink, HookOrder,
    HookRegistry, Message, ModelError, RetryPolicy, ScriptedModel, SyncHook, ToolResult, TurnEvent,
    Usage,
};

fn policy(max_attempts: u32) -> RetryPolicy {
    RetryPolicy {
        max_attempts,
        initial_delay: Duration::from_secs(4),
        max_delay: Duration::from_secs(240),
    }
}

fn answer_events(first: &str, second: &str) -> Vec<TurnEvent> {
    vec![
        TurnEvent::TextDelta { text: first.into() },
        TurnEvent::TextDelta {
            text: second.into(),
        },
        TurnEvent::Stop {
            reason: AgentStop::EndTurn,
            usage: Usage::default(),
        },
    ]
}

#[tokio::test(start_paused = true)]
async fn throttled_calls_retry_with_backoff_and_a_throttled_event_per_retry() {
    let model = ScriptedModel::from_json(
        r#"[
            {"error": {"type": "throttled"}},
            {"error": {"type": "throttled", "retryAfterMs": 1500}},
            {"role": "assistant", "content": [{"text": "here"}]}
        ]"#,
    )
    .unwrap()
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .retry(policy(3))
        .build()
        .await
        .unwrap();
    let (sink, mut events) = EventSink::channel();
    let started = tokio::time::Instant::now();

    let result = agent.invoke("hi", Some(&sink)).await.unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::EndTurn,
            message: Some(Message::assistant_text("here")),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![],
        }
    );
    let mut expected = vec![
        // The first wait is the initial delay; the provider's retry-after wins the second.
        TurnEvent::Throttled {
            attempt: 1,
            delay: Duration::from_secs(4),
        },
        TurnEvent::Throttled {
            attempt: 2,
            delay: Duration::from_millis(1500),
        },
    ];
    expected.extend(answer_events("he", "re"));
    assert_eq!(drain(&mut events), expected);
    // The loop really waited, on tokio's paused clock.
    assert_eq!(started.elapsed(), Duration::from_millis(5500));
    assert_eq!(
        model
            .requests()
            .into_iter()
            .map(|r| r.messages)
            .collect::<Vec<_>>(),
        vec![vec![Message::user_text("hi")]; 3]
    );
}

#[tokio::test(start_paused = true)]
async fn throttling_that_outlasts_the_attempts_is_an_error() {
    let model = ScriptedModel::from_json(
        r#"[
            {"error": {"type": "throttled"}},
            {"error": {"type": "throttled"}},
            {"error": {"type": "throttled"}},
            {"role": "assistant", "content": [{"text": "too late"}]}
        ]"#,
    )
    .unwrap();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .retry(policy(3))
        .build()
        .await
        .unwrap();
    let (sink, mut events) = EventSink::channel();

    let error = agent.invoke("hi", Some(&sink)).await.unwrap_err();

    let AgentError::Model(error) = error else {
        panic!("expected a model error, got {error:?}")
    };
    assert_eq!(
        error,
        ModelError::Throttled {
            retry_after: None,
            message: "scripted throttling".into()
        }
    );
    assert_eq!(
        drain(&mut events),
        [
            TurnEvent::Throttled {
                attempt: 1,
                delay: Duration::from_secs(4),
            },
            TurnEvent::Throttled {
                attempt: 2,
                delay: Duration::from_secs(8),
            },
        ]
    );
    assert_eq!(model.remaining(), 1);
    assert_eq!(agent.messages(), [Message::user_text("hi")]);
}

fn earlier_turns() -> Vec<Message> {
    vec![
        Message::user_text("one"),
        assistant(vec![tool_use("a", "clock", json!({}))]),
        results(vec![ToolResult::success_text("a", "noon")]),
        Message::assistant_text("It is noon."),
        Message::user_text("two"),
        assistant(vec![tool_use("b", "clock", json!({}))]),
        results(vec![ToolResult::success_text("b", "one o'clock")]),
        Message::assistant_text("It is one."),
    ]
}

#[tokio::test]
async fn context_overflow_trims_old_turns_without_orphaning_a_tool_pair() {
    let model = ScriptedModel::from_json(
        r#"[
            {"error": {"type": "context_window_overflow"}},
            {"role": "assistant", "content": [{"text": "three"}]}
        ]"#,
    )
    .unwrap()
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .messages(earlier_turns())
        .build()
        .await
        .unwrap();
    let (sink, mut events) = EventSink::channel();

    agent.invoke("and now?", Some(&sink)).await.unwrap();

    let mut first_request = earlier_turns();
    first_request.push(Message::user_text("and now?"));
    // Dropping one message would leave the tool use `a` without its result, and dropping
    // three would leave its result alone: the cut moves on to the next plain user message.
    let retried_request = first_request[4..].to_vec();
    let asked: Vec<_> = model.requests().into_iter().map(|r| r.messages).collect();
    assert_eq!(asked, vec![first_request, retried_request.clone()]);
    let mut history = retried_request;
    history.push(Message::assistant_text("three"));
    assert_eq!(agent.messages(), history);
    assert_eq!(agent.state().removed_count, 4);
    let mut expected = vec![TurnEvent::ContextReduced { removed: 4 }];
    expected.extend(answer_events("th", "ree"));
    assert_eq!(drain(&mut events), expected);
}

#[tokio::test]
async fn context_overflow_that_cannot_be_trimmed_is_an_error() {
    let model =
        ScriptedModel::from_json(r#"[{"error": {"type": "context_window_overflow"}}]"#).unwrap();
    let mut agent = Agent::builder(Arc::new(model)).build().await.unwrap();

    let error = agent
        .invoke("a very long question", None)
        .await
        .unwrap_err();

    let AgentError::Model(error) = error else {
        panic!("expected a model error, got {error:?}")
    };
    assert_eq!(
        error,
        ModelError::ContextWindowOverflow {
            message: "scripted context window overflow".into()
        }
    );
    assert_eq!(
        agent.messages(),
        [Message::user_text("a very long question")]
    );
}

#[tokio::test]
async fn after_model_call_may_ask_for_a_retry_and_the_first_answer_is_discarded() {
    let mut hooks = HookRegistry::new();
    let asked = Arc::new(Mutex::new(false));
    hooks
        .add(
            "retry-once",
            HookOrder::DEFAULT,
            SyncHook(move |event: &mut AfterModelCallEvent| {
                let mut asked = asked.lock().unwrap();
                if !*asked {
                    *asked = true;
                    event.request_retry();
                }
                Ok(())
            }),
        )
        .unwrap();
    let model = ScriptedModel::new([
        Message::assistant_text("a first draft"),
        Message::assistant_text("the answer"),
    ])
    .recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .hooks(hooks)
        .build()
        .await
        .unwrap();

    let result = agent.invoke("question", None).await.unwrap();

    assert_eq!(
        result,
        AgentResult {
            stop_reason: AgentStop::EndTurn,
            message: Some(Message::assistant_text("the answer")),
            usage: Usage::default(),
            model_calls: 1,
            interrupts: vec![],
        }
    );
    assert_eq!(
        agent.messages(),
        [
            Message::user_text("question"),
            Message::assistant_text("the answer")
        ]
    );
    let asked_with: Vec<_> = model.requests().into_iter().map(|r| r.messages).collect();
    assert_eq!(
        asked_with,
        vec![
            vec![Message::user_text("question")],
            vec![Message::user_text("question")]
        ]
    );
}

#[tokio::test]
async fn after_model_call_retries_are_bounded_by_the_retry_policy() {
    let mut hooks = HookRegistry::new();
    hooks
        .add(
            "never-satisfied",
            HookOrder::DEFAULT,
            SyncHook(|event: &mut AfterModelCallEvent| {
                event.request_retry();
                Ok(())
            }),
        )
        .unwrap();
    let model = ScriptedModel::new(vec![Message::assistant_text("again?"); 5]).recording();
    let mut agent = Agent::builder(Arc::new(model.clone()))
        .hooks(hooks)
        .retry(RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        })
        .build()
        .await
        .unwrap();

    let error = agent.invoke("question", None).await.unwrap_err();

    assert_eq!(
        error.to_string(),
        "after-model-call hooks asked for a retry on every one of the 3 attempts"
    );
    assert_eq!(model.requests().len(), 3);
    assert_eq!(agent.messages(), [Message::user_text("question")]);
}
