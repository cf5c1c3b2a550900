//! `mqtt_publish`: one QoS 1 message to the configured broker, acknowledged or reported as
//! failed. A connection is opened per call: a broker that went away is a clear error on the
//! call that needed it, not a stale connection found later.

use std::fmt;
use std::time::Duration;

use async_trait::async_trait;
use rumqttc::{AsyncClient, ConnectReturnCode, ConnectionError, Event, MqttOptions, Packet, QoS};
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::{TauToolSpec, Tier};
use tokio::sync::Mutex;

use crate::args;
use crate::config::{MqttConfig, ToolsConfigError};

/// Larger payloads are not device commands; brokers often refuse them anyway.
pub(crate) const MAX_PAYLOAD_BYTES: usize = 256 * 1024;
const MAX_TOPIC_BYTES: usize = 65_535;
/// Connecting, publishing and the PUBACK together.
const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);

/// A password read from the environment; never printed.
#[derive(Clone)]
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Where messages go and who sends them.
#[derive(Debug, Clone)]
pub(crate) struct Broker {
    host: String,
    port: u16,
    client_id: String,
    username: Option<String>,
    password: Option<Secret>,
}

impl Broker {
    /// Reads the password now, so a missing variable stops startup instead of a publish.
    pub(crate) fn from_config(
        config: &MqttConfig,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Self, ToolsConfigError> {
        let password = match &config.password_env {
            Some(var) => match env(var) {
                Some(value) => Some(Secret(value)),
                None => return Err(ToolsConfigError::MissingPassword { var: var.clone() }),
            },
            None => None,
        };
        if password.is_some() && config.username.is_none() {
            return Err(ToolsConfigError::Invalid {
                key: "tools.mqtt.username".into(),
                message: "must be set when password_env is set: MQTT sends no password alone"
                    .into(),
            });
        }
        Ok(Self {
            host: config.host.clone(),
            port: config.port,
            client_id: config.client_id.clone(),
            username: config.username.clone(),
            password,
        })
    }

    /// `host:port`, with an IPv6 address in brackets.
    fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    fn options(&self) -> MqttOptions {
        let mut options = MqttOptions::new(&self.client_id, &self.host, self.port);
        options
            .set_clean_session(true)
            .set_keep_alive(Duration::from_secs(30))
            .set_max_packet_size(
                MAX_PAYLOAD_BYTES + MAX_TOPIC_BYTES + 16,
                MAX_PAYLOAD_BYTES + MAX_TOPIC_BYTES + 16,
            );
        if let Some(username) = &self.username {
            let password = self
                .password
                .as_ref()
                .map_or("", |secret| secret.0.as_str());
            options.set_credentials(username, password);
        }
        options
    }
}

/// Connection options for another client of the `[tools.mqtt]` broker (the routines' MQTT
/// triggers): the same host, port and credentials under a client id of its own, so the
/// two clients never drop each other.
pub fn broker_options(
    config: &MqttConfig,
    env: &dyn Fn(&str) -> Option<String>,
    client_id: &str,
) -> Result<MqttOptions, ToolsConfigError> {
    let mut broker = Broker::from_config(config, env)?;
    broker.client_id = client_id.to_owned();
    Ok(broker.options())
}

pub(crate) struct MqttPublish {
    spec: ToolSpec,
    broker: Broker,
    /// One publish at a time: two connections with one client id would drop each other.
    sending: Mutex<()>,
    timeout: Duration,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MqttPublishArgs {
    topic: String,
    payload: String,
    #[serde(default)]
    retain: bool,
}

impl MqttPublish {
    pub(crate) fn new(broker: Broker) -> Self {
        let spec = TauToolSpec::new(
            "mqtt_publish",
            "Publishes one message (QoS 1) to the home's MQTT broker and waits for the broker to acknowledge it. \
             Devices listening on the topic may act on it.",
            Tier::Physical,
            format!(
                "publishes an MQTT message to the broker at {} — this can switch real devices",
                broker.address()
            ),
        )
        .input_schema(json!({
            "type": "object",
            "properties": {
                "topic": {
                    "type": "string",
                    "description": "The exact topic, e.g. 'home/kitchen/light/set'; no wildcards.",
                },
                "payload": {
                    "type": "string",
                    "description": "The message, e.g. 'ON' or '{\"state\":\"ON\"}'.",
                },
                "retain": {
                    "type": "boolean",
                    "description": "Whether the broker keeps the message for later subscribers (default false).",
                },
            },
            "required": ["topic", "payload"],
            "additionalProperties": false,
        }))
        .build();
        Self {
            spec,
            broker,
            sending: Mutex::new(()),
            timeout: PUBLISH_TIMEOUT,
        }
    }

    async fn publish(&self, topic: &str, payload: String, retain: bool) -> Result<(), ToolError> {
        let address = self.broker.address();
        let (client, mut events) = AsyncClient::new(self.broker.options(), 4);
        client
            .publish(topic, QoS::AtLeastOnce, retain, payload)
            .await
            .map_err(|error| ToolError::new(format!("the message could not be queued: {error}")))?;
        let mut connected = false;
        loop {
            match events.poll().await {
                Ok(Event::Incoming(Packet::ConnAck(_))) => connected = true,
                Ok(Event::Incoming(Packet::PubAck(_))) => break,
                Ok(_) => {}
                Err(error) => return Err(connection_failed(&address, connected, &error)),
            }
        }
        // A polite goodbye; the message is already acknowledged, so its failure is no error.
        if client.disconnect().await.is_ok() {
            let _ = tokio::time::timeout(Duration::from_secs(1), async {
                while let Ok(event) = events.poll().await {
                    if matches!(event, Event::Outgoing(rumqttc::Outgoing::Disconnect)) {
                        break;
                    }
                }
            })
            .await;
        }
        Ok(())
    }
}

#[async_trait]
impl Tool for MqttPublish {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    async fn run(&self, input: Value, _context: ToolContext) -> Result<ToolOutput, ToolError> {
        let MqttPublishArgs {
            topic,
            payload,
            retain,
        } = args::parse("mqtt_publish", input)?;
        check_topic(&topic)?;
        let size = payload.len();
        if size > MAX_PAYLOAD_BYTES {
            return Err(ToolError::new(format!(
                "payload is {size} bytes; mqtt_publish sends at most {MAX_PAYLOAD_BYTES} bytes"
            )));
        }
        let _turn = self.sending.lock().await;
        tokio::time::timeout(self.timeout, self.publish(&topic, payload, retain))
            .await
            .map_err(|_| {
                ToolError::new(format!(
                    "the MQTT broker at {} did not acknowledge the message within {} s; it may not have been published",
                    self.broker.address(),
                    self.timeout.as_secs()
                ))
            })??;
        let kept = if retain { "retained" } else { "not retained" };
        Ok(ToolOutput::text(format!(
            "published to '{topic}' ({size} bytes, QoS 1, {kept}); the broker acknowledged it"
        )))
    }
}

/// A topic names one place to publish: no wildcards, nothing the broker reserves.
fn check_topic(topic: &str) -> Result<(), ToolError> {
    if topic.is_empty() {
        return Err(ToolError::new("topic is empty"));
    }
    if topic.contains('\0') {
        return Err(ToolError::new("topic contains a NUL byte"));
    }
    if topic.len() > MAX_TOPIC_BYTES {
        return Err(ToolError::new(format!(
            "topic is {} bytes; MQTT topics are at most {MAX_TOPIC_BYTES}",
            topic.len()
        )));
    }
    if topic.contains(['+', '#']) {
        return Err(ToolError::new(format!(
            "topic '{topic}' contains a wildcard ('+' or '#'); publish to one exact topic"
        )));
    }
    if topic.starts_with('$') {
        return Err(ToolError::new(format!(
            "topic '{topic}' starts with '$', which the broker reserves for itself"
        )));
    }
    Ok(())
}

fn connection_failed(address: &str, connected: bool, error: &ConnectionError) -> ToolError {
    let reason = match error {
        ConnectionError::ConnectionRefused(code) => format!(
            "the broker refused the connection: {}",
            refusal_reason(*code)
        ),
        ConnectionError::NetworkTimeout => "the broker did not answer in time".to_owned(),
        ConnectionError::Io(error) => error.to_string(),
        other => other.to_string(),
    };
    if connected {
        ToolError::new(format!(
            "the connection to the MQTT broker at {address} failed before it acknowledged the message ({reason}); it may not have been published"
        ))
    } else {
        ToolError::new(format!(
            "could not reach the MQTT broker at {address} ({reason}); the message was not published"
        ))
    }
}

fn refusal_reason(code: ConnectReturnCode) -> &'static str {
    match code {
        ConnectReturnCode::Success => "no reason given",
        ConnectReturnCode::RefusedProtocolVersion => "it does not speak MQTT 3.1.1",
        ConnectReturnCode::BadClientId => "it rejected the client id (tools.mqtt.client_id)",
        ConnectReturnCode::ServiceUnavailable => "it is unavailable",
        ConnectReturnCode::BadUserNamePassword => "bad user name or password",
        ConnectReturnCode::NotAuthorized => "not authorized",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn broker(port: u16) -> Broker {
        let config = MqttConfig {
            port,
            ..MqttConfig::default()
        };
        Broker::from_config(&config, &|_| None).unwrap()
    }

    async fn publish(tool: &MqttPublish, input: Value) -> Result<ToolOutput, ToolError> {
        tool.run(input, ToolContext::new("t1", "mqtt_publish", None))
            .await
    }

    #[tokio::test]
    async fn topics_and_payloads_are_checked_before_connecting() {
        // Port 9 (discard): nothing is sent, since every call is refused first.
        let tool = MqttPublish::new(broker(9));
        let long = "t".repeat(65_536);
        let big = "x".repeat(MAX_PAYLOAD_BYTES + 1);
        for (input, expected) in [
            (json!({"topic": "", "payload": "on"}), "topic is empty".to_owned()),
            (json!({"topic": "a/+/b", "payload": "on"}), "topic 'a/+/b' contains a wildcard ('+' or '#'); publish to one exact topic".to_owned()),
            (json!({"topic": "a/#", "payload": "on"}), "topic 'a/#' contains a wildcard ('+' or '#'); publish to one exact topic".to_owned()),
            (json!({"topic": "a\u{0}b", "payload": "on"}), "topic contains a NUL byte".to_owned()),
            (json!({"topic": "$SYS/x", "payload": "on"}), "topic '$SYS/x' starts with '$', which the broker reserves for itself".to_owned()),
            (json!({"topic": long, "payload": "on"}), "topic is 65536 bytes; MQTT topics are at most 65535".to_owned()),
            (json!({"topic": "a", "payload": big}), "payload is 262145 bytes; mqtt_publish sends at most 262144 bytes".to_owned()),
            (json!({"topic": "a"}), "invalid arguments for mqtt_publish: missing field `payload`".to_owned()),
            (json!({"topic": "a", "payload": "on", "retain": "yes"}), "invalid arguments for mqtt_publish: invalid type: string \"yes\", expected a boolean".to_owned()),
            (json!({"topic": "a", "payload": "on", "qos": 2}), "invalid arguments for mqtt_publish: unknown field `qos`, expected one of `topic`, `payload`, `retain`".to_owned()),
        ] {
            assert_eq!(publish(&tool, input).await, Err(ToolError::new(expected)));
        }
    }

    #[tokio::test]
    async fn a_refusing_broker_is_reported_with_its_reason() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut connect = [0u8; 64];
            let _ = socket.read(&mut connect).await.unwrap();
            // CONNACK, return code 4: bad user name or password.
            socket.write_all(&[0x20, 0x02, 0x00, 0x04]).await.unwrap();
        });
        let tool = MqttPublish::new(broker(port));
        let error = publish(&tool, json!({"topic": "home/light", "payload": "ON"})).await;
        assert_eq!(
            error,
            Err(ToolError::new(format!(
                "could not reach the MQTT broker at 127.0.0.1:{port} (the broker refused the connection: bad user name or password); the message was not published"
            )))
        );
        server.await.unwrap();
    }

    #[tokio::test]
    async fn a_silent_broker_times_out() {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let mut tool = MqttPublish::new(broker(port));
        tool.timeout = Duration::from_millis(200);
        let error = publish(&tool, json!({"topic": "home/light", "payload": "ON"})).await;
        assert_eq!(
            error,
            Err(ToolError::new(format!(
                "the MQTT broker at 127.0.0.1:{port} did not acknowledge the message within 0 s; it may not have been published"
            )))
        );
        drop(listener);
    }

    #[test]
    fn the_password_comes_from_the_named_variable_and_is_never_shown() {
        let config = MqttConfig {
            username: Some("tau".into()),
            password_env: Some("TAU_MQTT_PASSWORD".into()),
            ..MqttConfig::default()
        };
        let env = |name: &str| (name == "TAU_MQTT_PASSWORD").then(|| "hunter2".to_owned());
        let broker = Broker::from_config(&config, &env).unwrap();
        assert_eq!(
            format!("{broker:?}"),
            "Broker { host: \"127.0.0.1\", port: 1883, client_id: \"tau\", username: Some(\"tau\"), password: Some([redacted]) }"
        );
        assert_eq!(
            broker
                .options()
                .credentials()
                .map(|login| (login.username, login.password)),
            Some(("tau".to_owned(), "hunter2".to_owned()))
        );
        assert_eq!(
            Broker::from_config(&config, &|_| None)
                .unwrap_err()
                .to_string(),
            "tools.mqtt.password_env: the environment variable 'TAU_MQTT_PASSWORD' is not set; set it or remove password_env"
        );
        let no_user = MqttConfig {
            username: None,
            ..config
        };
        assert_eq!(
            Broker::from_config(&no_user, &env).unwrap_err().to_string(),
            "tools.mqtt.username: must be set when password_env is set: MQTT sends no password alone"
        );
    }

    #[test]
    fn another_client_gets_the_same_broker_under_its_own_id() {
        let config = MqttConfig {
            host: "broker.lan".into(),
            username: Some("tau".into()),
            password_env: Some("TAU_MQTT_PASSWORD".into()),
            ..MqttConfig::default()
        };
        let env = |name: &str| (name == "TAU_MQTT_PASSWORD").then(|| "hunter2".to_owned());
        let options = broker_options(&config, &env, "tau-reflex").unwrap();
        assert_eq!(options.client_id(), "tau-reflex");
        assert_eq!(options.broker_address(), ("broker.lan".to_owned(), 1883));
        assert_eq!(
            options
                .credentials()
                .map(|login| (login.username, login.password)),
            Some(("tau".to_owned(), "hunter2".to_owned()))
        );
        assert!(broker_options(&config, &|_| None, "tau-reflex").is_err());
    }

    #[test]
    fn the_effect_names_the_broker() {
        let ipv6 = MqttConfig {
            host: "::1".into(),
            ..MqttConfig::default()
        };
        let tool = MqttPublish::new(Broker::from_config(&ipv6, &|_| None).unwrap());
        assert_eq!(
            tau_core::effect_of(tool.spec()),
            Ok("publishes an MQTT message to the broker at [::1]:1883 — this can switch real devices".into())
        );
    }
}
