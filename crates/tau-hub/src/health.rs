//! Whether the hub still serves: what `tau serve` asks before it tells a service manager
//! that all is well (systemd's watchdog). A hub that answers "no" is restarted by it, so
//! the question is what a person would call a hub that works: it is not shutting down,
//! a channel is still there to reach it, and its store answers.

use crate::Hub;

/// Why the hub does not serve.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unhealthy {
    #[error("the hub is stopping")]
    Stopping,
    /// Every channel it hosts stopped with an error: nobody can reach it.
    #[error("every channel stopped: {}", .0.join(", "))]
    ChannelsStopped(Vec<String>),
    #[error("state.db does not answer: {0}")]
    State(String),
}

impl Hub {
    /// `Ok` while the hub serves: it is not stopping, at least one of its channels runs
    /// (a hub whose channels have not started yet counts as serving), and `state.db`
    /// answers a read on the hub's own connection. A store that hangs makes this hang:
    /// the caller's silence is then the answer.
    pub fn health(&self) -> Result<(), Unhealthy> {
        if self.stopping() {
            return Err(Unhealthy::Stopping);
        }
        let channels = self.channels();
        if !channels.is_empty() && channels.iter().all(|c| c.stopped.is_some()) {
            return Err(Unhealthy::ChannelsStopped(
                channels.into_iter().map(|c| c.name).collect(),
            ));
        }
        self.state()
            .data_version()
            .map_err(|e| Unhealthy::State(e.to_string()))?;
        Ok(())
    }
}
