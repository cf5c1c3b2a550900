//! The demo's lamp: a tiny MQTT 3.1.1 endpoint on 127.0.0.1 that is both the broker and the
//! lamp. It acknowledges commands on the lamp's command topic, says what the lamp did and
//! keeps its state, which it hands to whoever subscribes to the state topic (as a broker
//! hands out a retained message). Just enough for `device_set` and `device_state` to do
//! real network work in the demo; the tests use a real Mosquitto broker.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::BytesMut;
use rumqttc::{
    ConnAck, ConnectReturnCode, Packet, PubAck, Publish, QoS, SubAck, SubscribeReasonCode,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const MAX_PACKET: usize = 64 * 1024;
pub const COMMAND_TOPIC: &str = "home/living-room/lamp/set";
pub const STATE_TOPIC: &str = "home/living-room/lamp/state";

/// The running lamp; [`Lamp::stop`] ends it.
pub struct Lamp {
    port: u16,
    task: JoinHandle<()>,
}

impl Lamp {
    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn stop(self) {
        self.task.abort();
    }
}

/// The lamp as tau's registry knows it.
pub fn device() -> crate::DeviceDef {
    crate::DeviceDef {
        name: "living-room-lamp".to_owned(),
        label: "Living-room lamp".to_owned(),
        room: Some("living room".to_owned()),
        kind: crate::DeviceKind::Light,
        command_topic: Some(COMMAND_TOPIC.to_owned()),
        state_topic: Some(STATE_TOPIC.to_owned()),
        actions: [
            ("on".to_owned(), crate::ActionDef::Payload("ON".to_owned())),
            (
                "off".to_owned(),
                crate::ActionDef::Payload("OFF".to_owned()),
            ),
        ]
        .into(),
        retain: false,
        high_risk: None,
        approvers: Vec::new(),
    }
}

/// Hears what the lamp now is after each command (`ON`, `OFF`, or what else it was set
/// to, as sent: the caller escapes it for its screen).
pub type Said = Arc<dyn Fn(&str) + Send + Sync>;

/// Starts the lamp on a free port of 127.0.0.1; `said` hears each change.
pub async fn start(said: Said) -> std::io::Result<Lamp> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let state = Arc::new(Mutex::new("OFF".to_owned()));
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream, Arc::clone(&state), Arc::clone(&said)));
        }
    });
    Ok(Lamp { port, task })
}

fn replies(packet: Packet, state: &Mutex<String>, said: &Said) -> Option<Vec<Packet>> {
    let replies = match packet {
        Packet::Connect(_) => vec![Packet::ConnAck(ConnAck::new(
            ConnectReturnCode::Success,
            false,
        ))],
        Packet::Subscribe(subscribe) => {
            let mut out = vec![Packet::SubAck(SubAck::new(
                subscribe.pkid,
                subscribe
                    .filters
                    .iter()
                    .map(|_| SubscribeReasonCode::Success(QoS::AtMostOnce))
                    .collect(),
            ))];
            if subscribe.filters.iter().any(|f| f.path == STATE_TOPIC) {
                let now = state.lock().unwrap_or_else(PoisonError::into_inner).clone();
                let mut retained = Publish::new(STATE_TOPIC, QoS::AtMostOnce, now);
                retained.retain = true;
                out.push(Packet::Publish(retained));
            }
            out
        }
        Packet::Publish(publish) => {
            if publish.topic == COMMAND_TOPIC {
                let payload = String::from_utf8_lossy(&publish.payload);
                let new = match payload.trim() {
                    "ON" | "OFF" => payload.trim().to_owned(),
                    other => format!("set to {other:?}"),
                };
                said(&new);
                *state.lock().unwrap_or_else(PoisonError::into_inner) = new;
            }
            if publish.qos == QoS::AtMostOnce {
                Vec::new()
            } else {
                vec![Packet::PubAck(PubAck::new(publish.pkid))]
            }
        }
        Packet::PingReq => vec![Packet::PingResp],
        Packet::Disconnect => return None,
        _ => Vec::new(),
    };
    Some(replies)
}

async fn serve(mut stream: TcpStream, state: Arc<Mutex<String>>, said: Said) {
    let mut buffer = BytesMut::with_capacity(4096);
    loop {
        let packet = match Packet::read(&mut buffer, MAX_PACKET) {
            Ok(packet) => packet,
            Err(rumqttc::mqttbytes::Error::InsufficientBytes(_)) => {
                match stream.read_buf(&mut buffer).await {
                    Ok(0) | Err(_) => return,
                    Ok(_) => continue,
                }
            }
            Err(_) => return,
        };
        let Some(replies) = replies(packet, &state, &said) else {
            return;
        };
        for reply in replies {
            let mut out = BytesMut::new();
            if reply.write(&mut out, MAX_PACKET).is_err() || stream.write_all(&out).await.is_err() {
                return;
            }
        }
    }
}
