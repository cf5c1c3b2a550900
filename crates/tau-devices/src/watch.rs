//! Keeps the discovery configs of pinned devices up to date while tau runs: a config
//! published later (a rename, a new command topic) is recorded at once, so the next card
//! of that device shows the mismatch. What is recorded never changes the pinned device.

use std::future::Future;
use std::sync::Arc;

use jiff::Timestamp;
use tau_tools::MqttBroker;

use crate::registry::{Origin, Registry};
use crate::store::DeviceStore;

/// The discovery topics of the registry's pinned devices.
pub fn pinned_topics(registry: &Registry) -> Vec<String> {
    let mut topics: Vec<String> = registry
        .devices()
        .filter_map(|r| match &r.origin {
            Origin::Pinned { discovery_topic } => Some(discovery_topic.clone()),
            Origin::Config | Origin::Added => None,
        })
        .collect();
    topics.sort();
    topics.dedup();
    topics
}

/// Records every config published at `topics` until `stop` resolves.
pub async fn watch_discovery(
    broker: MqttBroker,
    topics: Vec<String>,
    store: Arc<DeviceStore>,
    stop: impl Future<Output = ()> + Send,
) {
    if topics.is_empty() {
        return;
    }
    broker
        .watch(
            &topics,
            |message| {
                let payload = String::from_utf8_lossy(&message.payload);
                if let Err(error) = store.record_discovery(&message.topic, &payload, Timestamp::now()) {
                    tracing::warn!(topic = %message.topic, %error, "cannot record a discovery config");
                } else {
                    tracing::info!(topic = %message.topic, "discovery config recorded");
                }
            },
            stop,
        )
        .await;
}

/// The discovery watch of the pinned devices, running while this is held: dropping it
/// stops the watch.
pub struct DiscoveryWatch(tokio_util::sync::CancellationToken);

impl Drop for DiscoveryWatch {
    fn drop(&mut self) {
        self.0.cancel();
    }
}

/// Starts recording what discovery says about `registry`'s pinned devices (on a task of
/// its own, over `broker`); `None` when none is pinned.
pub fn start_discovery_watch(
    registry: &Registry,
    broker: MqttBroker,
    store: Arc<DeviceStore>,
) -> Option<DiscoveryWatch> {
    let topics = pinned_topics(registry);
    if topics.is_empty() {
        return None;
    }
    let stop = tokio_util::sync::CancellationToken::new();
    let stopped = stop.clone();
    tokio::spawn(async move {
        watch_discovery(broker, topics, store, stopped.cancelled_owned()).await;
    });
    Some(DiscoveryWatch(stop))
}
