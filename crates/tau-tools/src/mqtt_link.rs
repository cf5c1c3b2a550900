//! The home's MQTT broker as tau reaches it: `[tools.mqtt]`'s address and credentials, one
//! acknowledged QoS 1 publish, and a short read of what the broker retains. A connection is
//! opened per call: a broker that went away is a clear error on the call that needed it,
//! not a stale connection found later. `mqtt_publish`, the device tools and the routines'
//! MQTT triggers all reach the broker through here.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rumqttc::{
    AsyncClient, ConnectReturnCode, ConnectionError, Event, MqttOptions, Packet, QoS,
    SubscribeFilter,
};
use tau_agent::ToolError;
use tokio::sync::Mutex;

use crate::config::{MAX_CLIENT_ID_BYTES, MqttConfig, ToolsConfigError};

/// Larger payloads are not device commands; brokers often refuse them anyway.
pub(crate) const MAX_PAYLOAD_BYTES: usize = 256 * 1024;
const MAX_TOPIC_BYTES: usize = 65_535;
/// Connecting, publishing and the PUBACK together.
pub(crate) const PUBLISH_TIMEOUT: Duration = Duration::from_secs(10);
/// The most messages one read of retained messages keeps.
const MAX_RETAINED: usize = 2_000;

/// A password read from the environment; never printed.
#[derive(Clone)]
struct Secret(String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[redacted]")
    }
}

/// Where messages go and who sends them. Clones share one publish at a time: two
/// connections with one client id would drop each other.
#[derive(Clone)]
pub struct MqttBroker {
    host: String,
    port: u16,
    client_id: String,
    username: Option<String>,
    password: Option<Secret>,
    sending: Arc<Mutex<()>>,
}

impl fmt::Debug for MqttBroker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MqttBroker")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("client_id", &self.client_id)
            .field("username", &self.username)
            .field("password", &self.password)
            .finish()
    }
}

/// One message a read of the broker found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MqttMessage {
    pub topic: String,
    pub payload: Vec<u8>,
    /// True when the broker kept it from before the read began.
    pub retained: bool,
}

impl MqttBroker {
    /// Reads the password now, so a missing variable stops startup instead of a publish.
    pub fn from_config(
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
            sending: Arc::default(),
        })
    }

    /// The same broker under another client id, with a publish lock of its own.
    #[must_use]
    pub fn with_client_id(&self, client_id: &str) -> Self {
        Self {
            client_id: client_id.to_owned(),
            sending: Arc::default(),
            ..self.clone()
        }
    }

    /// The same broker under `[tools.mqtt] client_id` cut to fit, then `suffix`: a client
    /// that runs beside `mqtt_publish` without dropping it.
    #[must_use]
    pub fn companion(&self, suffix: &str) -> Self {
        let room = MAX_CLIENT_ID_BYTES.saturating_sub(suffix.len());
        let mut id: String = self.client_id.chars().take(room).collect();
        id.push_str(suffix);
        self.with_client_id(&id)
    }

    /// `host:port`, with an IPv6 address in brackets.
    pub fn address(&self) -> String {
        if self.host.contains(':') {
            format!("[{}]:{}", self.host, self.port)
        } else {
            format!("{}:{}", self.host, self.port)
        }
    }

    pub fn options(&self) -> MqttOptions {
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

    /// Publishes one QoS 1 message and waits for the broker's acknowledgement, at most
    /// `timeout` in all. One publish at a time per client id.
    pub async fn publish(
        &self,
        topic: &str,
        payload: Vec<u8>,
        retain: bool,
        timeout: Duration,
    ) -> Result<(), ToolError> {
        check_topic(topic)?;
        let size = payload.len();
        if size > MAX_PAYLOAD_BYTES {
            return Err(ToolError::new(format!(
                "payload is {size} bytes; at most {MAX_PAYLOAD_BYTES} bytes are sent"
            )));
        }
        let _turn = self.sending.lock().await;
        tokio::time::timeout(timeout, self.publish_now(topic, payload, retain))
            .await
            .map_err(|_| {
                ToolError::new(format!(
                    "the MQTT broker at {} did not acknowledge the message within {} s; it may not have been published",
                    self.address(),
                    timeout.as_secs()
                ))
            })?
    }

    async fn publish_now(
        &self,
        topic: &str,
        payload: Vec<u8>,
        retain: bool,
    ) -> Result<(), ToolError> {
        let address = self.address();
        let (client, mut events) = AsyncClient::new(self.options(), 4);
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
        goodbye(&client, &mut events).await;
        Ok(())
    }

    /// Subscribes to `filters` and gathers what arrives until `enough` messages came, or
    /// none has come for `quiet` (or `limit` passed in all): the retained messages first,
    /// then whatever is published meanwhile. An unreachable broker is an error.
    pub async fn read(
        &self,
        filters: &[&str],
        quiet: Duration,
        limit: Duration,
        enough: usize,
    ) -> Result<Vec<MqttMessage>, ToolError> {
        let address = self.address();
        let gather = async {
            let (client, mut events) = AsyncClient::new(self.options(), 16);
            let subscriptions = filters
                .iter()
                .map(|filter| SubscribeFilter::new((*filter).to_owned(), QoS::AtMostOnce));
            client
                .subscribe_many(subscriptions)
                .await
                .map_err(|error| ToolError::new(format!("cannot subscribe: {error}")))?;
            let mut connected = false;
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => connected = true,
                    Ok(Event::Incoming(Packet::SubAck(_))) => break,
                    Ok(_) => {}
                    Err(error) => return Err(read_failed(&address, connected, &error)),
                }
            }
            let mut messages = Vec::new();
            while messages.len() < enough.min(MAX_RETAINED) {
                match tokio::time::timeout(quiet, events.poll()).await {
                    Err(_quiet) => break,
                    Ok(Ok(Event::Incoming(Packet::Publish(message)))) => {
                        messages.push(MqttMessage {
                            topic: message.topic,
                            payload: message.payload.to_vec(),
                            retained: message.retain,
                        });
                    }
                    Ok(Ok(_)) => {}
                    Ok(Err(error)) => return Err(read_failed(&address, true, &error)),
                }
            }
            goodbye(&client, &mut events).await;
            Ok(messages)
        };
        tokio::time::timeout(limit, gather).await.map_err(|_| {
            ToolError::new(format!(
                "the MQTT broker at {address} did not answer within {} s",
                limit.as_secs()
            ))
        })?
    }
}

impl MqttBroker {
    /// Stays subscribed to `filters` until `stop` resolves, handing every message to
    /// `deliver`: the retained ones first, then each one published later. A lost connection
    /// is retried with growing pauses (up to 30 s) and subscribed again.
    pub async fn watch(
        &self,
        filters: &[String],
        mut deliver: impl FnMut(MqttMessage) + Send,
        stop: impl std::future::Future<Output = ()> + Send,
    ) {
        let (client, mut events) = AsyncClient::new(self.options(), 64);
        let subscriptions: Vec<SubscribeFilter> = filters
            .iter()
            .map(|filter| SubscribeFilter::new(filter.clone(), QoS::AtMostOnce))
            .collect();
        let mut pause = Duration::from_secs(1);
        let run = async {
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::ConnAck(_))) => {
                        pause = Duration::from_secs(1);
                        // A clean session forgets its subscriptions: ask again each time.
                        if let Err(error) = client.subscribe_many(subscriptions.clone()).await {
                            tracing::warn!(%error, "cannot subscribe to the broker");
                        }
                    }
                    Ok(Event::Incoming(Packet::Publish(message))) => deliver(MqttMessage {
                        topic: message.topic,
                        payload: message.payload.to_vec(),
                        retained: message.retain,
                    }),
                    Ok(_) => {}
                    Err(error) => {
                        tracing::warn!(address = %self.address(), %error, "the MQTT watch lost its broker; retrying");
                        tokio::time::sleep(pause).await;
                        pause = (pause * 2).min(Duration::from_secs(30));
                    }
                }
            }
        };
        tokio::select! {
            () = stop => {}
            () = run => {}
        }
        goodbye(&client, &mut events).await;
    }
}

/// A polite goodbye; what mattered already happened, so its failure is no error.
async fn goodbye(client: &AsyncClient, events: &mut rumqttc::EventLoop) {
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
}

/// Connection options for another client of the `[tools.mqtt]` broker (the routines' MQTT
/// triggers): the same host, port and credentials under a client id of its own, so the
/// two clients never drop each other.
pub fn broker_options(
    config: &MqttConfig,
    env: &dyn Fn(&str) -> Option<String>,
    client_id: &str,
) -> Result<MqttOptions, ToolsConfigError> {
    Ok(MqttBroker::from_config(config, env)?
        .with_client_id(client_id)
        .options())
}

/// A topic names one place to publish: no wildcards, nothing the broker reserves.
pub fn check_topic(topic: &str) -> Result<(), ToolError> {
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

fn reason(error: &ConnectionError) -> String {
    match error {
        ConnectionError::ConnectionRefused(code) => format!(
            "the broker refused the connection: {}",
            refusal_reason(*code)
        ),
        ConnectionError::NetworkTimeout => "the broker did not answer in time".to_owned(),
        ConnectionError::Io(error) => error.to_string(),
        other => other.to_string(),
    }
}

fn connection_failed(address: &str, connected: bool, error: &ConnectionError) -> ToolError {
    let reason = reason(error);
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

fn read_failed(address: &str, connected: bool, error: &ConnectionError) -> ToolError {
    let reason = reason(error);
    if connected {
        ToolError::new(format!(
            "the connection to the MQTT broker at {address} failed while reading ({reason})"
        ))
    } else {
        ToolError::new(format!(
            "could not reach the MQTT broker at {address} ({reason})"
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

    #[test]
    fn the_password_comes_from_the_named_variable_and_is_never_shown() {
        let config = MqttConfig {
            username: Some("tau".into()),
            password_env: Some("TAU_MQTT_PASSWORD".into()),
            ..MqttConfig::default()
        };
        let env = |name: &str| (name == "TAU_MQTT_PASSWORD").then(|| "hunter2".to_owned());
        let broker = MqttBroker::from_config(&config, &env).unwrap();
        assert_eq!(
            format!("{broker:?}"),
            "MqttBroker { host: \"127.0.0.1\", port: 1883, client_id: \"tau\", username: Some(\"tau\"), password: Some([redacted]) }"
        );
        assert_eq!(
            broker
                .options()
                .credentials()
                .map(|login| (login.username, login.password)),
            Some(("tau".to_owned(), "hunter2".to_owned()))
        );
        assert_eq!(
            MqttBroker::from_config(&config, &|_| None)
                .unwrap_err()
                .to_string(),
            "tools.mqtt.password_env: the environment variable 'TAU_MQTT_PASSWORD' is not set; set it or remove password_env"
        );
        let no_user = MqttConfig {
            username: None,
            ..config
        };
        assert_eq!(
            MqttBroker::from_config(&no_user, &env)
                .unwrap_err()
                .to_string(),
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
    fn a_companion_client_id_fits_in_23_bytes() {
        let config = MqttConfig {
            client_id: "tau-kitchen-hub-number-9".chars().take(23).collect(),
            ..MqttConfig::default()
        };
        let broker = MqttBroker::from_config(&config, &|_| None).unwrap();
        assert_eq!(
            broker.companion("-devices").options().client_id(),
            "tau-kitchen-hub-devices"
        );
        let short = MqttBroker::from_config(&MqttConfig::default(), &|_| None).unwrap();
        assert_eq!(
            short.companion("-devices").options().client_id(),
            "tau-devices"
        );
    }
}
