//! `mqtt_publish` against a real Mosquitto broker started by each test on a free loopback
//! port (`TAU_TEST_MOSQUITTO` names the binary, else `mosquitto` on PATH or in /usr/sbin).
//! Without one the broker tests say so and return, unless `TAU_PEERS_REQUIRED=1` (set by
//! `scripts/test`): then a missing broker fails them.

// Every function in this file is test code; clippy only knows that of `#[test]` functions.
#![allow(clippy::unwrap_used, clippy::panic, clippy::print_stdout)]

use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use pretty_assertions::assert_eq;
use rumqttc::{AsyncClient, Event, EventLoop, MqttOptions, Packet, QoS};
use serde_json::json;
use tau_agent::{SharedTool, ToolContext, ToolError, ToolOutput};
use tau_tools::{MqttConfig, ToolsConfig, builtin_tools};

/// A broker that stops when dropped.
struct Mosquitto {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find_mosquitto() -> Result<PathBuf, String> {
    if let Some(binary) = std::env::var_os("TAU_TEST_MOSQUITTO") {
        let binary = PathBuf::from(binary);
        return if binary.is_file() {
            Ok(binary)
        } else {
            Err(format!("there is no `mosquitto` at {}", binary.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    // Debian installs the broker in sbin, which a non-root PATH may lack.
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("mosquitto"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            "there is no `mosquitto` binary on PATH (Debian package `mosquitto`)".to_owned()
        })
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Starts Mosquitto with `extra` config lines, or None (with the reason printed) when it is
/// not installed; a failure instead when `TAU_PEERS_REQUIRED=1`.
fn start_broker(extra: &str, files: &[(&str, &str)]) -> Option<Mosquitto> {
    let binary = match find_mosquitto() {
        Ok(binary) => binary,
        Err(reason) => {
            let required = std::env::var_os("TAU_PEERS_REQUIRED").is_some_and(|v| v == "1");
            assert!(!required, "TAU_PEERS_REQUIRED is set, but {reason}");
            println!("skipped: {reason}");
            return None;
        }
    };
    let dir = tempfile::tempdir().unwrap();
    // Run as root, Mosquitto drops to its own user before reading password files.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    for (name, content) in files {
        std::fs::write(dir.path().join(name), content).unwrap();
    }
    let port = free_port();
    let config = dir.path().join("mosquitto.conf");
    let extra = extra.replace("{dir}", &dir.path().display().to_string());
    std::fs::write(
        &config,
        format!("listener {port} 127.0.0.1\npersistence false\n{extra}\n"),
    )
    .unwrap();
    let child = Command::new(binary)
        .arg("-c")
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let broker = Mosquitto {
        child,
        port,
        _dir: dir,
    };
    for _ in 0..250 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return Some(broker);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("mosquitto did not listen on 127.0.0.1:{port} within 5 s");
}

fn tools(workspace: &Path, mqtt: MqttConfig, password: Option<&str>) -> Vec<SharedTool> {
    let config = ToolsConfig {
        workspace: workspace.to_path_buf(),
        mqtt,
        ..ToolsConfig::default()
    };
    let password = password.map(str::to_owned);
    builtin_tools(
        &config,
        &move |name| {
            (name == "TAU_TEST_MQTT_PASSWORD")
                .then(|| password.clone())
                .flatten()
        },
        tau_sandbox::Sandbox::Off,
    )
    .unwrap()
}

async fn publish(tools: &[SharedTool], input: serde_json::Value) -> Result<ToolOutput, ToolError> {
    let tool = tools
        .iter()
        .find(|tool| tool.spec().name == "mqtt_publish")
        .unwrap();
    tool.run(input, ToolContext::new("t1", "mqtt_publish", None))
        .await
}

/// A subscriber to `filter` whose subscription the broker has confirmed. The client must
/// live as long as its event loop is polled.
async fn subscriber(port: u16, id: &str, filter: &str) -> (AsyncClient, EventLoop) {
    let (client, mut events) = AsyncClient::new(MqttOptions::new(id, "127.0.0.1", port), 10);
    client.subscribe(filter, QoS::AtLeastOnce).await.unwrap();
    loop {
        match events.poll().await.unwrap() {
            Event::Incoming(Packet::SubAck(_)) => break,
            _ => continue,
        }
    }
    (client, events)
}

/// The next message delivered: topic, payload, retain flag, QoS.
async fn next_message(events: &mut EventLoop) -> (String, String, bool, QoS) {
    tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Event::Incoming(Packet::Publish(message)) = events.poll().await.unwrap() {
                let payload = String::from_utf8(message.payload.to_vec()).unwrap();
                return (message.topic, payload, message.retain, message.qos);
            }
        }
    })
    .await
    .unwrap()
}

fn port_only(port: u16) -> MqttConfig {
    MqttConfig {
        port,
        ..MqttConfig::default()
    }
}

#[tokio::test]
async fn a_published_message_arrives_exactly() {
    let Some(broker) = start_broker("allow_anonymous true", &[]) else {
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    let tools = tools(workspace.path(), port_only(broker.port), None);
    let (_live_client, mut live) = subscriber(broker.port, "tau-test-live", "home/#").await;

    let output = publish(
        &tools,
        json!({"topic": "home/kitchen/light/set", "payload": "{\"state\":\"ON\"}"}),
    )
    .await;
    assert_eq!(
        output,
        Ok(ToolOutput::text(
            "published to 'home/kitchen/light/set' (14 bytes, QoS 1, not retained); the broker acknowledged it"
        ))
    );
    assert_eq!(
        next_message(&mut live).await,
        (
            "home/kitchen/light/set".to_owned(),
            "{\"state\":\"ON\"}".to_owned(),
            false,
            QoS::AtLeastOnce
        )
    );

    let output = publish(
        &tools,
        json!({"topic": "home/hall/mode", "payload": "away", "retain": true}),
    )
    .await;
    assert_eq!(
        output,
        Ok(ToolOutput::text(
            "published to 'home/hall/mode' (4 bytes, QoS 1, retained); the broker acknowledged it"
        ))
    );
    // A subscriber that comes later is handed the retained message, flagged as such.
    let (_later_client, mut later) =
        subscriber(broker.port, "tau-test-later", "home/hall/mode").await;
    assert_eq!(
        next_message(&mut later).await,
        (
            "home/hall/mode".to_owned(),
            "away".to_owned(),
            true,
            QoS::AtLeastOnce
        )
    );
}

#[tokio::test]
async fn credentials_come_from_the_named_variable() {
    // `tau:s3cret`, hashed as `mosquitto_passwd` writes it.
    let passwords = "tau:$7$101$k1/hxF6NsN7IrQlS$EgcC6KpL421vnk8NHi3mnZC54PX1NrOQuzhZbF4h32ZiPj2tE77Zs1jSlA0GANToM6Zf46tujz+8NCnrAMao1Q==\n";
    let Some(broker) = start_broker(
        "allow_anonymous false\npassword_file {dir}/passwords",
        &[("passwords", passwords)],
    ) else {
        return;
    };
    let workspace = tempfile::tempdir().unwrap();
    let mqtt = MqttConfig {
        port: broker.port,
        username: Some("tau".into()),
        password_env: Some("TAU_TEST_MQTT_PASSWORD".into()),
        ..MqttConfig::default()
    };
    let input = json!({"topic": "home/door", "payload": "lock"});

    let right = tools(workspace.path(), mqtt.clone(), Some("s3cret"));
    assert_eq!(
        publish(&right, input.clone()).await,
        Ok(ToolOutput::text(
            "published to 'home/door' (4 bytes, QoS 1, not retained); the broker acknowledged it"
        ))
    );
    let wrong = tools(workspace.path(), mqtt, Some("guess"));
    let port = broker.port;
    assert_eq!(
        publish(&wrong, input).await,
        Err(ToolError::new(format!(
            "could not reach the MQTT broker at 127.0.0.1:{port} (the broker refused the connection: not authorized); the message was not published"
        )))
    );
}

#[tokio::test]
async fn a_broker_that_is_down_is_a_clear_error() {
    let port = free_port();
    let workspace = tempfile::tempdir().unwrap();
    let tools = tools(workspace.path(), port_only(port), None);
    let output = publish(&tools, json!({"topic": "home/light", "payload": "ON"})).await;
    assert_eq!(
        output,
        Err(ToolError::new(format!(
            "could not reach the MQTT broker at 127.0.0.1:{port} (Connection refused (os error 111)); the message was not published"
        )))
    );
}

/// Runs the ignored test `name` of this binary in a child process with `env`.
fn child(name: &str, env: &[(&str, &str)]) -> std::process::Output {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command
        .args(["--exact", name, "--ignored", "--test-threads=1"])
        .env_remove("TAU_PEERS_REQUIRED")
        .env_remove("TAU_TEST_MOSQUITTO");
    for (key, value) in env {
        command.env(key, value);
    }
    command.output().unwrap()
}

#[test]
fn a_missing_broker_fails_when_peers_are_required() {
    let missing = ("TAU_TEST_MOSQUITTO", "/nonexistent/mosquitto");
    let skipped = child("child_wants_a_broker", &[missing]);
    assert!(
        skipped.status.success(),
        "without the variable the test skips: {}",
        String::from_utf8_lossy(&skipped.stdout)
    );
    let failed = child(
        "child_wants_a_broker",
        &[missing, ("TAU_PEERS_REQUIRED", "1")],
    );
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&failed.stdout),
        String::from_utf8_lossy(&failed.stderr)
    );
    assert!(!failed.status.success(), "a missing broker passed: {said}");
    assert!(
        said.contains(
            "TAU_PEERS_REQUIRED is set, but there is no `mosquitto` at /nonexistent/mosquitto"
        ),
        "{said}"
    );
}

#[test]
#[ignore = "child process of a_missing_broker_fails_when_peers_are_required; run by it"]
fn child_wants_a_broker() {
    let _ = start_broker("allow_anonymous true", &[]);
}
