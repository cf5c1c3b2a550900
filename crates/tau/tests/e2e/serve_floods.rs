//! Floods cost bounded space: what outsiders can repeat at will (MQTT messages on a
//! routine's topic, webhook calls with a wrong secret, a stranger's presses of an old
//! Telegram button) is recorded once per sender and window, with a count; a topic of 60 KB
//! reaches the audit log capped, with its length; a day's log stops at its cap and only
//! the newest files are kept. Against the real `tau serve`, a real Mosquitto broker and the Telegram emulator.

use crate::common;

use std::time::{Duration, Instant};

use common::serve::request;
use common::{Tau, answer, tool_call};
use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use serde_json::{Value, json};
use tau_test_support::Mosquitto;
use tau_test_support::telegram::Emulator;

const SECRET: &str = "a-doorbell-secret-long-enough";

fn wait_for<T>(what: &str, limit: Duration, mut check: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = check() {
            return value;
        }
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The audit lines of `kind`.
fn lines(tau: &Tau, kind: &str) -> Vec<Value> {
    tau.audit()
        .into_iter()
        .filter(|l| l["type"] == kind)
        .collect()
}

/// How many events these lines stand for: 1 each, or their `count`.
fn stood_for(lines: &[Value]) -> u64 {
    lines.iter().map(|l| l["count"].as_u64().unwrap_or(1)).sum()
}

/// Publishes `messages` (topic, payload) at QoS 1 and waits until the broker has them all.
fn publish(port: u16, messages: Vec<(String, &'static str)>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let mut options = MqttOptions::new("flood", "127.0.0.1", port);
        options.set_max_packet_size(128 * 1024, 128 * 1024);
        options.set_inflight(100);
        let (client, mut events) = AsyncClient::new(options, 256);
        let total = messages.len();
        let sender = tokio::spawn(async move {
            for (topic, payload) in messages {
                client
                    .publish(topic, QoS::AtLeastOnce, false, payload)
                    .await
                    .unwrap();
            }
            client
        });
        let mut acked = 0;
        while acked < total {
            match tokio::time::timeout(Duration::from_secs(30), events.poll()).await {
                Ok(Ok(Event::Incoming(Packet::PubAck(_)))) => acked += 1,
                Ok(Ok(_)) => {}
                Ok(Err(error)) => panic!("the flood lost the broker: {error}"),
                Err(_) => panic!("the broker acknowledged {acked} of {total}"),
            }
        }
        let client = sender.await.unwrap();
        let _ = client.disconnect().await;
    });
}

#[test]
fn an_mqtt_flood_while_the_routine_runs_is_one_counted_line_and_a_huge_topic_is_capped() {
    // A broker that keeps every message for a slow subscriber (its default drops past
    // 1,000 queued), so all 2,000 reach tau.
    let Some(broker) = Mosquitto::start("allow_anonymous true\nmax_queued_messages 10000").unwrap()
    else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[tools.mqtt]\nhost = \"127.0.0.1\"\nport = {}\n\n\
         [[routines]]\nname = \"hall\"\nmqtt = \"home/door/+\"\ntool = \"run_command\"\n\
         arguments = {{ command = \"sleep 8\" }}\n",
        broker.port
    ));
    let serve = tau.serve(&tau.replay(&json!([answer("unused")])), &config);
    // A message on a 60 KB topic starts the run (once the routine has subscribed); the
    // next ones find it running.
    let huge = format!("home/door/{}", "a".repeat(59_990));
    let skipped = |tau: &Tau| -> Vec<Value> {
        lines(tau, "routine_run")
            .into_iter()
            .filter(|l| l["outcome"] == "skipped")
            .collect()
    };
    wait_for("the run under way", Duration::from_secs(30), || {
        publish(broker.port, vec![(huge.clone(), "open")]);
        std::thread::sleep(Duration::from_millis(300));
        (!skipped(&tau).is_empty()).then_some(())
    });
    let before = stood_for(&skipped(&tau));
    publish(
        broker.port,
        (0..2000)
            .map(|i| (format!("home/door/{i}"), "open"))
            .collect(),
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    let runs = loop {
        let runs = skipped(&tau);
        if stood_for(&runs) >= before + 2000 {
            break runs;
        }
        if Instant::now() > deadline {
            let log = tau.log();
            let shown: Vec<String> = log.lines().map(|l| l.chars().take(160).collect()).collect();
            panic!(
                "the flood's skips were not counted: {} of {}\n{runs:#?}\n{}",
                stood_for(&runs),
                before + 2000,
                shown.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(
        runs.len() <= 6,
        "2,000 skipped triggers took {} audit lines: {runs:#?}",
        runs.len()
    );
    // The run the huge topic started names it capped, with its length.
    let ran = wait_for("the first run's end", Duration::from_secs(30), || {
        lines(&tau, "routine_run")
            .into_iter()
            .find(|l| l["outcome"] == "success")
    });
    let trigger = ran["trigger"].as_str().unwrap();
    assert!(
        trigger.starts_with("mqtt home/door/aaaa") && trigger.ends_with("… (60,000 chars)"),
        "{trigger}"
    );
    assert!(trigger.chars().count() < 260, "{trigger}");
    for line in tau.audit() {
        let text = line.to_string();
        assert!(
            text.len() < 2_000,
            "an audit line of {} bytes: {}…",
            text.len(),
            &text[..200]
        );
    }
    let audit = std::fs::metadata(tau.home().join("audit.jsonl"))
        .unwrap()
        .len();
    assert!(audit < 30_000, "the audit log grew to {audit} bytes");
    // The huge topic, where it shows at all, shows capped with its length.
    let all = std::fs::read_to_string(tau.home().join("audit.jsonl")).unwrap() + &tau.log();
    assert!(
        !all.contains(&"a".repeat(300)),
        "a long run of the topic was kept"
    );
    serve.kill_hard();
}

#[test]
fn three_thousand_wrong_secrets_are_a_few_counted_lines() {
    let tau = Tau::new();
    let config = tau.serve_config(
        "[[routines]]\nname = \"doorbell\"\nwebhook = { secret_env = \"TAU_TEST_DOORBELL\" }\ntool = \"append_note\"\narguments = { text = \"ding\" }\n",
    );
    let serve = tau.serve_env(
        &tau.replay(&json!([answer("unused")])),
        &config,
        &[("TAU_TEST_DOORBELL", SECRET)],
    );
    let host = serve.host();
    for i in 0..3000 {
        let wrong = format!("Bearer guess-{i}");
        let reply = request(
            serve.addr,
            "POST",
            "/hooks/doorbell",
            &[("Host", &host), ("Authorization", &wrong)],
            Some("ring"),
        );
        assert_eq!(reply.status, 401);
    }
    let refused = wait_for("the refusals counted", Duration::from_secs(40), || {
        let refused = lines(&tau, "webhook_refused");
        (stood_for(&refused) == 3000).then_some(refused)
    });
    assert!(
        refused.len() <= 8,
        "3,000 refusals took {} audit lines",
        refused.len()
    );
    assert!(refused.iter().all(|l| l["routine"] == "doorbell"
        && l["sender"] == "127.0.0.1"
        && l["reason"] == "wrong or missing secret"));
    let log = tau.log();
    let warned = log.lines().filter(|l| l.contains("webhook")).count();
    assert!(warned <= 8, "3,000 refusals took {warned} log lines");
    assert!(
        lines(&tau, "routine_run").is_empty(),
        "nothing ran on a wrong secret"
    );
    serve.kill_hard();
}

#[test]
fn three_hundred_presses_of_an_old_button_by_a_stranger_are_a_few_counted_lines() {
    const TOKEN: &str = "123456:TEST-token_x";
    const OWNER: i64 = 4242;
    const STRANGER: i64 = 666;
    let Some(emulator) = Emulator::start(TOKEN) else {
        return;
    };
    let tau = Tau::new();
    let config = tau.serve_config(&format!(
        "[telegram]\nowners = [{OWNER}]\napi_url = \"{}\"\npoll_timeout_seconds = 0\n\
         min_poll_interval_ms = 50\nedit_interval_ms = 50\n",
        emulator.url
    ));
    let model = tau.replay(&json!([
        tool_call(
            "t1",
            "run_command",
            &json!({"command": "echo hi >> out.txt"})
        ),
        answer("Done.")
    ]));
    let serve = tau.serve_env(&model, &config, &[("TAU_TELEGRAM_TOKEN", TOKEN)]);
    emulator.write(OWNER, OWNER, "write hi");
    let id = emulator.wait("a question with buttons", |messages| {
        messages
            .iter()
            .find_map(|m| m.buttons.iter().find_map(|b| b.strip_prefix("v1:a:")))
            .map(str::to_owned)
    });
    // The owner answers; the button is old from now on.
    emulator.press(OWNER, OWNER, &format!("v1:r:{id}"));
    emulator.wait("the answer", |m| {
        m.iter().find(|m| m.text.contains("Done.")).cloned()
    });
    for _ in 0..300 {
        emulator.press(OWNER, STRANGER, &format!("v1:a:{id}"));
    }
    let refused = wait_for("the presses counted", Duration::from_secs(60), || {
        let refused = lines(&tau, "answer_refused");
        (stood_for(&refused) == 300).then_some(refused)
    });
    assert!(
        refused.len() <= 8,
        "300 presses took {} audit lines",
        refused.len()
    );
    assert!(refused.iter().all(
        |l| l["user"].as_str() == Some(STRANGER.to_string().as_str())
            && l["reason"] == "not an owner"
    ));
    assert!(!tau.workspace().join("out.txt").exists());
    serve.kill_hard();
}

#[test]
fn the_day_s_log_stops_at_its_cap_and_only_the_newest_files_are_kept() {
    let tau = Tau::new();
    // Five earlier days' files, of which the hub keeps one beside today's.
    let logs = tau.home().join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    for day in 1..=5 {
        std::fs::write(logs.join(format!("tau.log.2020-01-0{day}")), "old\n").unwrap();
    }
    let config = tau.serve_config("[log]\nmax_file_bytes = 65536\nkeep_files = 2\n");
    let serve = tau.serve_env(
        &tau.replay(&json!([answer("unused")])),
        &config,
        &[("TAU_LOG", "debug")],
    );
    let today = logs.join(format!(
        "tau.log.{}",
        jiff::Timestamp::now().strftime("%Y-%m-%d")
    ));
    const FULL: &str = "this day's log reached [log] max_file_bytes (65536 bytes)";
    // Each request logs at DEBUG; enough of them fill the day's file.
    wait_for("a full day", Duration::from_secs(120), || {
        for _ in 0..200 {
            serve.get("/api/sessions");
        }
        std::fs::read_to_string(&today)
            .unwrap_or_default()
            .contains(FULL)
            .then_some(())
    });
    for _ in 0..600 {
        serve.get("/api/sessions");
    }
    let names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    for name in &names {
        assert_eq!(common::mode(&logs.join(name)), 0o600, "{name}");
    }
    let text = std::fs::read_to_string(&today).unwrap();
    assert_eq!(text.matches(FULL).count(), 1, "said once");
    // The write that would cross the cap is dropped; the line saying so is the last.
    let size = text.len();
    assert!(size <= 65_536 + 200, "today's file is {size} bytes");
    assert!(
        text.trim_end().ends_with("until the next day (UTC)"),
        "{}",
        &text[size - 300..]
    );
    serve.kill_hard();
}
