//! A small device on a real broker, for tests: it subscribes to its command topic and
//! answers every command by publishing its new state, retained, on its state topic, as a
//! real switch or garage door does. It runs on a thread of its own, so a synchronous test
//! (one that drives the `tau` binary) can use it as well as an async one.

use std::sync::mpsc;
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};

/// How long connection errors may last while the stand-in starts before it gives up.
const START_PATIENCE: Duration = Duration::from_secs(5);

/// A running stand-in; stops when dropped.
pub struct DeviceStandIn {
    commands: Arc<Mutex<Vec<String>>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// What the stand-in is.
#[derive(Debug, Clone)]
pub struct StandInSpec {
    pub client_id: String,
    pub command_topic: String,
    pub state_topic: String,
    /// Published retained before the stand-in reports ready, if set.
    pub initial_state: Option<String>,
    /// Command payload -> the state it reports; a command not listed is reported as is.
    pub states: Vec<(String, String)>,
}

impl Drop for DeviceStandIn {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())
}

impl DeviceStandIn {
    /// Connects to the broker on 127.0.0.1:`port`, subscribes, publishes the initial state
    /// and returns once all of that was acknowledged.
    pub fn start(port: u16, spec: StandInSpec) -> Result<Self, String> {
        let commands = Arc::new(Mutex::new(Vec::new()));
        let (ready_tx, ready_rx) = mpsc::channel::<Result<(), String>>();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let seen = Arc::clone(&commands);
        let thread = std::thread::spawn(move || {
            let runtime = match runtime() {
                Ok(runtime) => runtime,
                Err(error) => {
                    let _ = ready_tx.send(Err(error));
                    return;
                }
            };
            runtime.block_on(serve(port, spec, seen, ready_tx, stop_rx));
        });
        match ready_rx.recv_timeout(Duration::from_secs(20)) {
            Ok(Ok(())) => Ok(Self {
                commands,
                stop: Some(stop_tx),
                thread: Some(thread),
            }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err("the device stand-in did not get ready within 20 s".into()),
        }
    }

    /// Every command payload received so far, in order.
    pub fn commands(&self) -> Vec<String> {
        self.commands
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Waits until `count` commands arrived (at most `limit`), and returns them all.
    pub fn wait_for_commands(&self, count: usize, limit: Duration) -> Vec<String> {
        let end = Instant::now() + limit;
        loop {
            let commands = self.commands();
            if commands.len() >= count || Instant::now() > end {
                return commands;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

async fn serve(
    port: u16,
    spec: StandInSpec,
    seen: Arc<Mutex<Vec<String>>>,
    ready: mpsc::Sender<Result<(), String>>,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) {
    let options = MqttOptions::new(&spec.client_id, "127.0.0.1", port);
    let (client, mut events) = AsyncClient::new(options, 16);
    if let Err(error) = client
        .subscribe(&spec.command_topic, QoS::AtLeastOnce)
        .await
    {
        let _ = ready.send(Err(error.to_string()));
        return;
    }
    let mut waiting_for_initial = false;
    // A broker that has just started can drop a first connection (reset while it sets
    // up): the event loop connects again on its next poll, and the subscription waits in
    // its queue. Only an error that lasts is the stand-in's failure to start.
    let mut ready_said = false;
    let mut failing_since: Option<Instant> = None;
    loop {
        let event = tokio::select! {
            _ = &mut stop => return,
            event = events.poll() => event,
        };
        match event {
            Ok(Event::Incoming(Packet::SubAck(_))) => match &spec.initial_state {
                Some(state) => {
                    waiting_for_initial = true;
                    if let Err(error) = client
                        .publish(&spec.state_topic, QoS::AtLeastOnce, true, state.clone())
                        .await
                    {
                        let _ = ready.send(Err(error.to_string()));
                        return;
                    }
                }
                None => {
                    ready_said = true;
                    let _ = ready.send(Ok(()));
                }
            },
            Ok(Event::Incoming(Packet::PubAck(_))) if waiting_for_initial => {
                waiting_for_initial = false;
                ready_said = true;
                let _ = ready.send(Ok(()));
            }
            Ok(Event::Incoming(Packet::Publish(message)))
                if message.topic == spec.command_topic =>
            {
                let command = String::from_utf8_lossy(&message.payload).into_owned();
                let state = spec
                    .states
                    .iter()
                    .find(|(from, _)| *from == command)
                    .map_or_else(|| command.clone(), |(_, to)| to.clone());
                seen.lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(command);
                let _ = client
                    .publish(&spec.state_topic, QoS::AtLeastOnce, true, state)
                    .await;
            }
            Ok(_) => failing_since = None,
            Err(error) => {
                let since = *failing_since.get_or_insert_with(Instant::now);
                if !ready_said && since.elapsed() > START_PATIENCE {
                    let _ = ready.send(Err(error.to_string()));
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}

/// Publishes one QoS 1 message to the broker on 127.0.0.1:`port` and waits for its
/// acknowledgement (a discovery config, a retained state set behind tau's back). Runs on a
/// thread of its own, so an async test may call it too.
pub fn publish(port: u16, topic: &str, payload: &str, retain: bool) -> Result<(), String> {
    let (topic, payload) = (topic.to_owned(), payload.to_owned());
    std::thread::spawn(move || publish_here(port, &topic, &payload, retain))
        .join()
        .map_err(|_| "the publishing thread panicked".to_owned())?
}

fn publish_here(port: u16, topic: &str, payload: &str, retain: bool) -> Result<(), String> {
    let runtime = runtime()?;
    runtime.block_on(async {
        let id = format!("tau-test-pub-{}", std::process::id());
        let (client, mut events) = AsyncClient::new(MqttOptions::new(id, "127.0.0.1", port), 4);
        client
            .publish(topic, QoS::AtLeastOnce, retain, payload.to_owned())
            .await
            .map_err(|e| e.to_string())?;
        tokio::time::timeout(Duration::from_secs(20), async {
            loop {
                match events.poll().await {
                    Ok(Event::Incoming(Packet::PubAck(_))) => return Ok(()),
                    Ok(_) => {}
                    Err(error) => return Err(error.to_string()),
                }
            }
        })
        .await
        .map_err(|_| "no acknowledgement within 20 s".to_owned())?
    })
}
