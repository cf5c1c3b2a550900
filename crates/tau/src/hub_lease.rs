//! Leases a hub sharing its store with others holds while `tau serve` runs, each renewed
//! well before it runs out and given up when the hub stops:
//! - `hub:<id>` (its home's hub id) says it is alive: while it is held, no other hub
//!   closes this one's running calls as cut off; a hub that died stops renewing, and the
//!   next start anywhere closes its calls as `effect_uncertain`;
//! - `telegram:<bot id>`: one poller per bot across the hubs; a hub that finds another
//!   holding it does not poll that bot, and keeps trying: when the poller's hub stops or
//!   dies, one of the others takes the bot over once its lease has run out.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use async_trait::async_trait;
use tau_hub::{Channel, ChannelError, ChannelPort};
use tau_state::StateDb;
use tokio_util::sync::CancellationToken;

/// How long a lease lasts unless renewed: what another hub waits, after this one died,
/// before it may close this one's running calls.
pub(crate) const LEASE: Duration = Duration::from_secs(30);
/// How often it is renewed: three tries before it runs out.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// A lease, held until dropped: renewing stops and the lease is given up.
pub(crate) struct HeldLease {
    state: StateDb,
    name: String,
    holder: Arc<str>,
    renewing: tokio::task::JoinHandle<()>,
}

impl Drop for HeldLease {
    fn drop(&mut self) {
        self.renewing.abort();
        let _ = self.state.leases().release(&self.name, &self.holder);
    }
}

/// Claims `name` for this hub and keeps renewing it; `None` when another holds it.
fn claim_and_keep(state: &StateDb, name: String, hub: &str) -> anyhow::Result<Option<HeldLease>> {
    if !state.leases().claim(&name, hub, LEASE)? {
        return Ok(None);
    }
    let leases = state.leases();
    let holder: Arc<str> = Arc::from(hub);
    let (renewed, by) = (name.clone(), Arc::clone(&holder));
    let renewing = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(RENEW_EVERY);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            // A lost connection fails this try; the next one may reach the store again.
            match leases.claim(&renewed, &by, LEASE) {
                Ok(true) | Err(_) => {}
                Ok(false) => tracing::warn!("the lease {renewed} was taken by another process"),
            }
        }
    });
    Ok(Some(HeldLease {
        state: state.clone(),
        name,
        holder,
        renewing,
    }))
}

/// Claims this hub's lease on a shared store and keeps renewing it; `None` on a store of
/// its own (a file is one hub's). Refused when another process holds this hub's lease: a
/// copy of this home runs `tau serve` elsewhere.
pub(crate) fn hold(state: &StateDb) -> anyhow::Result<Option<HeldLease>> {
    let (true, Some(hub)) = (state.is_shared(), state.hub()) else {
        return Ok(None);
    };
    match claim_and_keep(state, tau_state::hub_lease(hub), hub)? {
        Some(held) => Ok(Some(held)),
        None => Err(anyhow::anyhow!(
            "another tau serve holds this home's hub id ({}) on {}: a home is one hub; give a copy of it a new id by deleting its hub-id file",
            short(hub),
            state.describe()
        )),
    }
}

/// Whether this hub polls the bot of `token`.
pub(crate) enum TelegramPoller {
    /// It does: the store is its own, or it holds the bot's lease.
    Here { _lease: Option<HeldLease> },
    /// Another hub sharing the store holds the bot's lease; this one may take it later.
    Elsewhere(WaitingLease),
}

/// A lease another hub holds, which this one claims as soon as it is free.
pub(crate) struct WaitingLease {
    state: StateDb,
    name: String,
    hub: String,
}

impl WaitingLease {
    /// `channel`, served only while this hub holds the lease: until then it waits, trying
    /// again every renewal period.
    /// `serving` turns true when it starts serving.
    pub(crate) fn around(
        self,
        channel: Arc<dyn Channel>,
        serving: Arc<AtomicBool>,
    ) -> Arc<dyn Channel> {
        Arc::new(AfterLease {
            lease: self,
            channel,
            serving,
        })
    }
}

/// A channel that starts serving once its lease is this hub's.
struct AfterLease {
    lease: WaitingLease,
    channel: Arc<dyn Channel>,
    serving: Arc<AtomicBool>,
}

/// What a hub says when it takes over a bot another hub polled.
pub(crate) const TELEGRAM_TAKEN_OVER: &str =
    "tau serve: Telegram: the hub that polled this bot stopped; this one polls it now\n";

#[async_trait]
impl Channel for AfterLease {
    fn name(&self) -> &str {
        self.channel.name()
    }

    async fn run(
        self: Arc<Self>,
        port: Arc<dyn ChannelPort>,
        stop: CancellationToken,
    ) -> Result<(), ChannelError> {
        let WaitingLease { state, name, hub } = &self.lease;
        let held = loop {
            match claim_and_keep(state, name.clone(), hub) {
                Ok(Some(held)) => break held,
                Ok(None) => {}
                // A lost store: nobody can claim it now; the next try may reach it.
                Err(error) => tracing::warn!("claiming the lease {name}: {error:#}"),
            }
            tokio::select! {
                () = stop.cancelled() => return Ok(()),
                () = tokio::time::sleep(RENEW_EVERY) => {}
            }
        };
        crate::output::print(TELEGRAM_TAKEN_OVER);
        self.serving.store(true, Ordering::SeqCst);
        let served = Arc::clone(&self.channel).run(port, stop).await;
        drop(held);
        served
    }
}

/// Claims the poller's lease of the bot of `token` (named by the bot's id, the part of the
/// token before its `:`, which is no secret) on a shared store.
pub(crate) fn telegram_poller(state: &StateDb, token: &str) -> anyhow::Result<TelegramPoller> {
    let (true, Some(hub)) = (state.is_shared(), state.hub()) else {
        return Ok(TelegramPoller::Here { _lease: None });
    };
    let bot = token.split(':').next().unwrap_or_default();
    let name = format!("telegram:{bot}");
    Ok(match claim_and_keep(state, name.clone(), hub)? {
        Some(held) => TelegramPoller::Here { _lease: Some(held) },
        None => TelegramPoller::Elsewhere(WaitingLease {
            state: state.clone(),
            name,
            hub: hub.to_owned(),
        }),
    })
}

/// A hub id as a person reads it: its first 12 characters.
pub(crate) fn short(hub: &str) -> &str {
    hub.get(..12).unwrap_or(hub)
}
