//! A hub sharing its store with others says it is alive: it holds the lease `hub:<id>`
//! (its home's hub id) while `tau serve` runs, renewed well before it runs out. While it
//! is held, no other hub closes this one's running calls as cut off; a hub that died stops
//! renewing, and the next start anywhere closes its calls as `effect_uncertain`.

use std::sync::Arc;
use std::time::Duration;

use tau_state::StateDb;

/// How long the lease lasts unless renewed: what another hub waits, after this one died,
/// before it may close this one's running calls.
pub(crate) const LEASE: Duration = Duration::from_secs(30);
/// How often it is renewed: three tries before it runs out.
const RENEW_EVERY: Duration = Duration::from_secs(10);

/// The lease, held until dropped: renewing stops and the lease is given up.
pub(crate) struct HubLease {
    state: StateDb,
    hub: Arc<str>,
    renewing: tokio::task::JoinHandle<()>,
}

impl Drop for HubLease {
    fn drop(&mut self) {
        self.renewing.abort();
        let _ = self
            .state
            .leases()
            .release(&tau_state::hub_lease(&self.hub), &self.hub);
    }
}

/// Claims this hub's lease on a shared store and keeps renewing it; `None` on a store of
/// its own (a file is one hub's). Refused when another process holds this hub's lease: a
/// copy of this home runs `tau serve` elsewhere.
pub(crate) fn hold(state: &StateDb) -> anyhow::Result<Option<HubLease>> {
    let (true, Some(hub)) = (state.is_shared(), state.hub()) else {
        return Ok(None);
    };
    let hub: Arc<str> = Arc::from(hub);
    let name = tau_state::hub_lease(&hub);
    if !state.leases().claim(&name, &hub, LEASE)? {
        return Err(anyhow::anyhow!(
            "another tau serve holds this home's hub id ({}) on {}: a home is one hub; give a copy of it a new id by deleting its hub-id file",
            short(&hub),
            state.describe()
        ));
    }
    let leases = state.leases();
    let holder = Arc::clone(&hub);
    let renewing = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(RENEW_EVERY);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            // A lost connection fails this try; the next one may reach the store again.
            match leases.claim(&name, &holder, LEASE) {
                Ok(true) | Err(_) => {}
                Ok(false) => tracing::warn!(
                    "the lease of hub {} was taken by another process",
                    short(&holder)
                ),
            }
        }
    });
    Ok(Some(HubLease {
        state: state.clone(),
        hub,
        renewing,
    }))
}

/// A hub id as a person reads it: its first 12 characters.
pub(crate) fn short(hub: &str) -> &str {
    hub.get(..12).unwrap_or(hub)
}
