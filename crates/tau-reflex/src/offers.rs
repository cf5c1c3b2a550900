//! What the process that runs routines offers them (where they may ask, whether webhooks
//! reach it, whether an MQTT broker is set up), and the one check of the `tau.toml`
//! routines against it: the engine runs it at start, and `tau config check` runs it too,
//! so both refuse the same routines with the same words.

use tau_core::ConfigError;

use crate::book::config_routines;
use crate::def::{FieldError, RoutineDef};
use crate::host::RoutineHost;
use crate::trigger::Trigger;
use crate::validate::{AskChannel, Checks, Routine};

/// What a process running routines offers them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offers {
    /// The channels a routine's question can be asked on (none without an approval store).
    pub channels: Vec<AskChannel>,
    /// Whether webhooks reach this process (`POST /hooks/NAME` under its HTTP listener).
    pub webhooks: bool,
    /// Whether an MQTT broker is configured for `mqtt` triggers.
    pub mqtt: bool,
}

impl Offers {
    /// What `host` offers; `mqtt` when the engine has a broker.
    pub fn of(host: &dyn RoutineHost, mqtt: bool) -> Self {
        Self {
            channels: if host.approvals().is_some() {
                host.channels()
            } else {
                Vec::new()
            },
            webhooks: host.serves_webhooks(),
            mqtt,
        }
    }

    /// What `routine` would miss here, as the error of its key.
    pub(crate) fn problem(&self, routine: &Routine) -> Option<FieldError> {
        if let Some(ask) = routine.ask
            && !self.channels.contains(&ask)
        {
            return Some(FieldError::new(
                "ask",
                format!(
                    "the {} channel is not set up here, so nobody could be asked",
                    ask.as_str()
                ),
            ));
        }
        match &routine.trigger {
            Trigger::Webhook { .. } if !self.webhooks => Some(FieldError::new(
                "webhook",
                "cannot be reached: this process serves no webhooks",
            )),
            Trigger::Mqtt { .. } if !self.mqtt => Some(FieldError::new(
                "mqtt",
                "cannot be reached: no MQTT broker is configured ([tools.mqtt])",
            )),
            Trigger::Every { .. }
            | Trigger::Cron { .. }
            | Trigger::At { .. }
            | Trigger::Mqtt { .. }
            | Trigger::Webhook { .. } => None,
        }
    }
}

/// The `tau.toml` routines that can run where `offers` holds: each checked by
/// [`crate::validate`] (its tool and the tool's input schema when `checks` has the tools,
/// its webhook secret set and long enough when webhooks reach the process), then against
/// what the process offers. The first that cannot run is the error, naming it and its key.
pub fn check_routines(
    defs: &[RoutineDef],
    checks: &Checks<'_>,
    offers: &Offers,
) -> Result<Vec<Routine>, ConfigError> {
    let checks = Checks {
        webhooks: Some(offers.webhooks),
        ..*checks
    };
    let routines = config_routines(defs, &checks)?;
    for routine in &routines {
        if let Some(problem) = offers.problem(routine) {
            return Err(problem.in_routine(routine.name()));
        }
    }
    Ok(routines)
}
