//! The demo's lamp: a tiny MQTT 3.1.1 endpoint on 127.0.0.1 that accepts a connection,
//! acknowledges publishes and says what the lamp did. Just enough for `mqtt_publish` to
//! do real network work in the demo; the tests use a real Mosquitto broker.

use bytes::BytesMut;
use rumqttc::{ConnAck, ConnectReturnCode, Packet, PubAck, QoS};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

const MAX_PACKET: usize = 64 * 1024;

pub(crate) struct Lamp {
    port: u16,
    task: JoinHandle<()>,
}

impl Lamp {
    pub(crate) fn port(&self) -> u16 {
        self.port
    }

    pub(crate) fn stop(self) {
        self.task.abort();
    }
}

pub(crate) async fn start() -> std::io::Result<Lamp> {
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    Ok(Lamp { port, task })
}

async fn serve(mut stream: TcpStream) {
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
        let reply = match packet {
            Packet::Connect(_) => Some(Packet::ConnAck(ConnAck::new(
                ConnectReturnCode::Success,
                false,
            ))),
            Packet::Publish(publish) => {
                let payload = String::from_utf8_lossy(&publish.payload);
                let state = match payload.trim().to_ascii_lowercase().as_str() {
                    "on" | "1" | "true" => "ON".to_owned(),
                    "off" | "0" | "false" => "OFF".to_owned(),
                    other => format!("set to {other:?}"),
                };
                let topic = tau_terminal::escape_for_terminal(&publish.topic);
                crate::print(&format!(
                    "  [demo lamp] {topic} is now {}\n",
                    tau_terminal::escape_for_terminal(&state)
                ));
                (publish.qos != QoS::AtMostOnce).then(|| Packet::PubAck(PubAck::new(publish.pkid)))
            }
            Packet::PingReq => Some(Packet::PingResp),
            Packet::Disconnect => return,
            _ => None,
        };
        if let Some(reply) = reply {
            let mut out = BytesMut::new();
            if reply.write(&mut out, MAX_PACKET).is_err() || stream.write_all(&out).await.is_err() {
                return;
            }
        }
    }
}
