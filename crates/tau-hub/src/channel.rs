//! The channel registry: what a channel is to the hub.

use std::sync::Arc;

use async_trait::async_trait;
use tokio_util::sync::CancellationToken;

use crate::ChannelPort;

/// A channel stopped with an error (its listener could not bind, its API refused it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("channel '{channel}': {message}")]
pub struct ChannelError {
    pub channel: String,
    pub message: String,
}

/// How a channel the hub hosts is doing, as a page shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelStatus {
    pub name: String,
    /// Why it stopped; `None` while it runs.
    pub stopped: Option<String>,
}

/// A channel the hub hosts: a name (what `DecidedBy::Person { channel }` and an approval
/// row's `channel` say) and a task that serves people until `stop` is cancelled.
#[async_trait]
pub trait Channel: Send + Sync {
    /// `web`, `telegram`, ...: lowercase letters only, unique within a hub.
    fn name(&self) -> &str;

    /// Serves until `stop` is cancelled, talking to the hub only through `port` (bound to
    /// this channel's name).
    async fn run(
        self: Arc<Self>,
        port: Arc<dyn ChannelPort>,
        stop: CancellationToken,
    ) -> Result<(), ChannelError>;
}
