//! Exemptions: a registered routine skips the per-call question for the calls it owns
//! (step 5 of the ladder). Only an exemption that returns exactly `Ok(true)` exempts; an
//! error or a panic counts as "not exempt".

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use serde_json::Value;

use super::gate::TierGate;
use crate::audit::ErrorSite;

/// An exemption that could not decide; it counts as "not exempt".
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ExemptionError {
    pub message: String,
}

/// Lets a registered routine skip the per-call question for calls it owns. Consulted only
/// for tier-2 calls to known tools; exempts only on `Ok(true)`.
pub trait Exemption: Send + Sync {
    fn exempts(&self, tool: &str, arguments: &Value) -> Result<bool, ExemptionError>;
}

impl<F: Fn(&str, &Value) -> bool + Send + Sync> Exemption for F {
    fn exempts(&self, tool: &str, arguments: &Value) -> Result<bool, ExemptionError> {
        Ok(self(tool, arguments))
    }
}

type Registered = Mutex<Vec<(u64, String, Arc<dyn Exemption>)>>;

/// A gate's exemptions, each under the name the audit log says decided an exempt call.
#[derive(Default)]
pub(super) struct Exemptions {
    registered: Arc<Registered>,
    next: AtomicU64,
}

/// Removes its exemption again with [`ExemptionHandle::undo`]. Dropping it keeps the
/// exemption in place.
#[derive(Debug)]
pub struct ExemptionHandle {
    id: u64,
    exemptions: Weak<Registered>,
}

impl ExemptionHandle {
    pub fn undo(self) {
        if let Some(exemptions) = self.exemptions.upgrade() {
            exemptions
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .retain(|(id, _, _)| *id != self.id);
        }
    }
}

impl TierGate {
    /// Adds an exemption under `name` (what the audit log says decided an exempt call);
    /// the handle takes it away again.
    pub fn add_exemption(
        &self,
        name: impl Into<String>,
        exemption: Arc<dyn Exemption>,
    ) -> ExemptionHandle {
        let id = self.exemptions.next.fetch_add(1, Ordering::Relaxed);
        self.exemptions
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((id, name.into(), exemption));
        ExemptionHandle {
            id,
            exemptions: Arc::downgrade(&self.exemptions.registered),
        }
    }

    /// The name of the first exemption that returns exactly `Ok(true)`.
    pub(super) fn exempting(
        &self,
        tool: &str,
        arguments: &Value,
        tool_use_id: &str,
    ) -> Option<String> {
        let exemptions: Vec<_> = self
            .exemptions
            .registered
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(_, name, e)| (name.clone(), Arc::clone(e)))
            .collect();
        for (name, exemption) in exemptions {
            // Each exemption sees its own copy, so none can change what another one, the
            // approver or the tool sees.
            let copy = arguments.clone();
            match std::panic::catch_unwind(AssertUnwindSafe(|| exemption.exempts(tool, &copy))) {
                Ok(Ok(true)) => return Some(name),
                Ok(Ok(false)) => {}
                Ok(Err(error)) => {
                    tracing::warn!(tool, exemption = %name, %error, "exemption failed; counted as not exempt");
                    self.emit_error(ErrorSite::Exemption, error.message, tool, tool_use_id);
                }
                Err(_) => {
                    tracing::warn!(tool, exemption = %name, "exemption panicked; counted as not exempt");
                    self.emit_error(
                        ErrorSite::Exemption,
                        "an exemption panicked",
                        tool,
                        tool_use_id,
                    );
                }
            }
        }
        None
    }
}
