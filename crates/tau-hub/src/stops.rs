//! How `tau serve` ends and what it says of a channel that ends before it: SIGTERM or
//! Ctrl-C stops the hub; a channel that stops with an error is one `channel_stopped`
//! audit line and one sentence for the person, and the hub and the other channels go on.

use tau_core::{AuditEvent, EventBus};
use tokio::sync::broadcast::error::RecvError;

use crate::Hub;

/// Audits each channel that stops with an error on `events` and hands `tell` the sentence
/// that says so, until the hub is gone.
pub fn report_channel_stops(
    hub: &Hub,
    events: EventBus,
    tell: impl Fn(&str) + Send + 'static,
) -> tokio::task::JoinHandle<()> {
    let mut stops = hub.channel_stops();
    tokio::spawn(async move {
        loop {
            match stops.recv().await {
                Ok(stopped) => {
                    events.emit(&AuditEvent::ChannelStopped {
                        channel: stopped.channel.clone(),
                        error: stopped.message.clone(),
                    });
                    tell(&format!(
                        "the {} channel stopped: {}; the other channels and the routines go on",
                        stopped.channel,
                        tau_core::display(&stopped.message)
                    ));
                }
                Err(RecvError::Lagged(_)) => {}
                Err(RecvError::Closed) => return,
            }
        }
    })
}

/// SIGTERM or Ctrl-C.
pub async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut term), Ok(mut interrupt)) = (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("cannot listen for SIGTERM and SIGINT; stop tau serve with SIGKILL");
        return std::future::pending().await;
    };
    tokio::select! {
        _ = term.recv() => tracing::info!("SIGTERM: stopping"),
        _ = interrupt.recv() => tracing::info!("Ctrl-C: stopping"),
    }
}
