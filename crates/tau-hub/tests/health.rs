//! Whether the hub still serves, as a watchdog asks it: yes while a channel runs and
//! `state.db` answers; no once every channel stopped, or the hub is stopping.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod support;

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use pretty_assertions::assert_eq;
use tau_hub::{Channel, ChannelError, ChannelPort, Unhealthy};
use tokio_util::sync::CancellationToken;

use support::*;

/// A channel that serves until stopped, or fails at once.
struct Plain {
    name: &'static str,
    fails: bool,
}

#[async_trait]
impl Channel for Plain {
    fn name(&self) -> &str {
        self.name
    }

    async fn run(
        self: Arc<Self>,
        _port: Arc<dyn ChannelPort>,
        stop: CancellationToken,
    ) -> Result<(), ChannelError> {
        if self.fails {
            return Err(ChannelError {
                channel: self.name.to_owned(),
                message: "the socket went away".to_owned(),
            });
        }
        stop.cancelled().await;
        Ok(())
    }
}

async fn until_stopped(hub: &tau_hub::Hub, name: &str) {
    for _ in 0..200 {
        if hub
            .channels()
            .iter()
            .any(|c| c.name == name && c.stopped.is_some())
        {
            return;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("{name} never stopped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_serves_while_a_channel_runs_and_not_once_none_does() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    assert_eq!(hub.health(), Ok(()), "no channel started yet");

    let stop = CancellationToken::new();
    let running = {
        let hub = hub.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let channels: Vec<Arc<dyn Channel>> = vec![
                Arc::new(Plain {
                    name: "web",
                    fails: false,
                }),
                Arc::new(Plain {
                    name: "telegram",
                    fails: true,
                }),
            ];
            hub.run_channels(channels, stop.cancelled_owned()).await
        })
    };
    until_stopped(&hub, "telegram").await;
    assert_eq!(hub.health(), Ok(()), "the web channel still runs");
    stop.cancel();
    running.await.unwrap().unwrap();
    assert_eq!(hub.health(), Err(Unhealthy::Stopping));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hub_whose_every_channel_stopped_does_not_serve() {
    let setup = Setup::new();
    let hub = setup.hub(lights_script(), HOUR);
    hub.start().await.unwrap();
    let stop = CancellationToken::new();
    let running = {
        let hub = hub.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let channels: Vec<Arc<dyn Channel>> = vec![Arc::new(Plain {
                name: "web",
                fails: true,
            })];
            hub.run_channels(channels, stop.cancelled_owned()).await
        })
    };
    until_stopped(&hub, "web").await;
    assert_eq!(
        hub.health(),
        Err(Unhealthy::ChannelsStopped(vec!["web".to_owned()]))
    );
    assert_eq!(
        hub.health().unwrap_err().to_string(),
        "every channel stopped: web"
    );
    stop.cancel();
    running.await.unwrap().unwrap();
}
