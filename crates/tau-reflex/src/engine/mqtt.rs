//! `mqtt` triggers: one client subscribed to every routine's topic filter at the broker of
//! `[tools.mqtt]`, under a client id of its own (the publishing tool keeps its own). A
//! message fires each routine whose filter matches its topic and, when the routine names
//! one, whose payload is exactly the message's. A broker that goes away is retried with a
//! growing pause; the subscriptions are made again on every connection.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use rumqttc::{AsyncClient, Event, MqttOptions, Packet, QoS};
use tau_core::flood::capped;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::Inner;
use crate::trigger::{Trigger, filter_matches};
use crate::validate::Routine;

const MAX_RETRY: Duration = Duration::from_secs(60);
/// The most of a topic a run's trigger or a log line keeps (a topic may be 64 KiB).
const TOPIC_SHOWN: usize = 200;

/// A routine listening on a topic filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Route {
    routine: String,
    filter: String,
    payload: Option<String>,
}

impl Route {
    pub(crate) fn of(routine: &Routine) -> Option<Self> {
        match &routine.trigger {
            Trigger::Mqtt { filter, payload } => Some(Self {
                routine: routine.name().to_owned(),
                filter: filter.clone(),
                payload: payload.clone(),
            }),
            Trigger::Every { .. }
            | Trigger::Cron { .. }
            | Trigger::At { .. }
            | Trigger::Webhook { .. } => None,
        }
    }
}

/// Brings the client's subscriptions in line with the routes.
fn resubscribe(client: &AsyncClient, routes: &[Route], subscribed: &mut BTreeSet<String>) {
    let wanted: BTreeSet<String> = routes.iter().map(|r| r.filter.clone()).collect();
    for gone in subscribed.difference(&wanted) {
        if let Err(error) = client.try_unsubscribe(gone.clone()) {
            tracing::warn!(filter = %gone, %error, "could not unsubscribe");
        }
    }
    for new in wanted.difference(subscribed) {
        if let Err(error) = client.try_subscribe(new.clone(), QoS::AtLeastOnce) {
            tracing::warn!(filter = %new, %error, "could not subscribe");
        }
    }
    *subscribed = wanted;
}

fn dispatch(inner: &Arc<Inner>, routes: &[Route], topic: &str, payload: &[u8]) {
    let shown = capped(topic, TOPIC_SHOWN);
    for route in routes {
        if !filter_matches(&route.filter, topic) {
            continue;
        }
        if route
            .payload
            .as_ref()
            .is_some_and(|p| p.as_bytes() != payload)
        {
            tracing::debug!(routine = %route.routine, topic = %shown, "message on the topic, another payload");
            continue;
        }
        let Some(slot) = inner.slot(&route.routine) else {
            continue;
        };
        if !inner.can_ask_now(&slot.routine) {
            continue;
        }
        // One run per message across the hubs sharing the store, each of which receives
        // it. A claim that fails runs nothing (the store is not answering).
        match inner.store.claim_message(&route.routine) {
            Ok(true) => {
                inner.fire(&slot, format!("mqtt {shown}"));
            }
            Ok(false) => {
                tracing::debug!(routine = %route.routine, topic = %shown, "another hub sharing the store takes this message");
            }
            Err(error) => {
                tracing::warn!(routine = %route.routine, %error, "cannot claim this message; the routine is not run");
            }
        }
    }
}

pub(super) async fn listen(
    inner: Arc<Inner>,
    options: MqttOptions,
    mut routes: watch::Receiver<Vec<Route>>,
    shutdown: CancellationToken,
) {
    let (host, port) = options.broker_address();
    let (client, mut events) = AsyncClient::new(options, 64);
    let mut subscribed = BTreeSet::new();
    let mut retry = Duration::from_secs(1);
    loop {
        tokio::select! {
            () = shutdown.cancelled() => {
                let _ = client.try_disconnect();
                return;
            }
            changed = routes.changed() => {
                if changed.is_err() {
                    return;
                }
                let current = routes.borrow_and_update().clone();
                resubscribe(&client, &current, &mut subscribed);
            }
            event = events.poll() => match event {
                Ok(Event::Incoming(Packet::ConnAck(_))) => {
                    tracing::info!(%host, port, "MQTT triggers connected");
                    retry = Duration::from_secs(1);
                    // A clean session forgets subscriptions: make them all again.
                    subscribed.clear();
                    let current = routes.borrow().clone();
                    resubscribe(&client, &current, &mut subscribed);
                }
                Ok(Event::Incoming(Packet::Publish(message))) => {
                    let current = routes.borrow().clone();
                    dispatch(&inner, &current, &message.topic, &message.payload);
                }
                Ok(_) => {}
                Err(error) => {
                    tracing::warn!(%host, port, %error, seconds = retry.as_secs(), "MQTT triggers cannot reach the broker; retrying");
                    tokio::select! {
                        () = shutdown.cancelled() => return,
                        () = tokio::time::sleep(retry) => {}
                    }
                    retry = (retry * 2).min(MAX_RETRY);
                }
            }
        }
    }
}
