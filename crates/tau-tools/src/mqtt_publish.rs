//! `mqtt_publish`: one QoS 1 message to the configured broker, acknowledged or reported as
//! failed (the broker itself is `mqtt_link.rs`'s).

use std::time::Duration;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};
use tau_agent::{Tool, ToolContext, ToolError, ToolOutput, ToolSpec};
use tau_core::TauToolSpec;
use tau_protocol::Tier;

use crate::args;
use crate::mqtt_link::{MAX_PAYLOAD_BYTES, MqttBroker, PUBLISH_TIMEOUT, check_topic};

pub(crate) struct MqttPublish {
    spec: ToolSpec,
    broker: MqttBroker,
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
    pub(crate) fn new(broker: MqttBroker) -> Self {
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
        .provenance(tau_core::provenance::ProvenanceRule::TRUSTED_EGRESS)
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
            timeout: PUBLISH_TIMEOUT,
        }
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
        self.broker
            .publish(&topic, payload.into_bytes(), retain, self.timeout)
            .await?;
        let kept = if retain { "retained" } else { "not retained" };
        Ok(ToolOutput::text(format!(
            "published to '{topic}' ({size} bytes, QoS 1, {kept}); the broker acknowledged it"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::MqttConfig;
    use pretty_assertions::assert_eq;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    fn broker(port: u16) -> MqttBroker {
        let config = MqttConfig {
            port,
            ..MqttConfig::default()
        };
        MqttBroker::from_config(&config, &|_| None).unwrap()
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
    fn the_effect_names_the_broker() {
        let ipv6 = MqttConfig {
            host: "::1".into(),
            ..MqttConfig::default()
        };
        let tool = MqttPublish::new(MqttBroker::from_config(&ipv6, &|_| None).unwrap());
        assert_eq!(
            tau_core::effect_of(tool.spec()),
            Ok("publishes an MQTT message to the broker at [::1]:1883 — this can switch real devices".into())
        );
    }
}
