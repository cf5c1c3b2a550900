//! The engine: keeps every enabled routine's trigger, and when one fires, runs its action
//! through the gate, never two runs of one routine at once, backing off after failures.
//! It re-reads `state.db` when its routines change there (made, deleted, switched).
//!
//! - `timers.rs`: `every`, `cron` and `at`, and the runs missed while tau was not running
//! - `mqtt.rs`: one subscription client for every `mqtt` trigger
//! - `webhook.rs`: what the host's HTTP listener hands a `POST /hooks/NAME` to
//! - `counted.rs`: skipped triggers and refused webhook calls, one record a window

mod counted;
mod mqtt;
mod timers;
mod webhook;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use rumqttc::MqttOptions;
use tau_core::flood::{FLOOD_WINDOW, Flood, Tally};
use tau_core::{
    AuditEvent, AutoRejectApprover, ConfigError, EventBus, Household, RoutineOutcome,
    StoredAnswers, ToolCatalog,
};
use tau_protocol::SessionId;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use counted::{REFUSED_SECRET, refusals_summary, skips_summary};

use crate::ask::{Asking, asking_on};
use crate::book;
use crate::clock::Clock;
use crate::def::RoutineDef;
use crate::host::RoutineHost;
use crate::offers::{Offers, check_routines};
use crate::run::{ActionRun, record, run_action};
use crate::store::{RoutineStore, RunRecord};
use crate::validate::{Checks, Routine};

pub use webhook::{WebhookCall, WebhookReply};

/// Looks up environment variables (webhook secrets of routines made later).
pub type Env = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// How the engine paces itself.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// How often `state.db` is checked for changed routines: a routine switched or made
    /// by another tau process (`tau routines enable`) is kept or dropped within a second.
    /// The check reads one row, so twice a second costs nothing worth counting.
    pub reload_every: Duration,
    /// The pause after a first failed run; it doubles with each further failure.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// How long a question on a routine's `ask` channel waits.
    pub ask_timeout: Duration,
    /// A time trigger this late is counted as missed, not run.
    pub late_after: Duration,
}

impl Default for EngineSettings {
    fn default() -> Self {
        Self {
            reload_every: Duration::from_millis(500),
            backoff_base: Duration::from_secs(60),
            backoff_max: Duration::from_secs(3600),
            ask_timeout: Duration::from_secs(1800),
            late_after: Duration::from_secs(120),
        }
    }
}

/// Everything the engine is built from.
pub struct EngineParts {
    /// The `tau.toml` routines, as written.
    pub config: Vec<RoutineDef>,
    pub store: Arc<RoutineStore>,
    /// The tools routines call (the routine tools themselves need not be in it).
    pub catalog: Arc<ToolCatalog>,
    pub events: EventBus,
    pub host: Arc<dyn RoutineHost>,
    /// The routine zone: `cron` and `at` are read in it.
    pub zone: TimeZone,
    pub clock: Arc<dyn Clock>,
    pub env: Env,
    /// The broker `mqtt` triggers subscribe at (`[tools.mqtt]`).
    pub mqtt: Option<MqttOptions>,
    pub settings: EngineSettings,
    /// The household routines' owners are of.
    pub people: Household,
}

/// Runs routines until told to stop.
#[derive(Clone)]
pub struct Engine {
    inner: Arc<Inner>,
}

#[derive(Debug, Default)]
struct Backoff {
    failures: u32,
    until: Option<Timestamp>,
}

/// One active routine.
pub(crate) struct Slot {
    routine: Routine,
    running: Arc<tokio::sync::Mutex<()>>,
    backoff: Mutex<Backoff>,
    /// Stops its trigger and a run in progress.
    cancel: CancellationToken,
}

struct Inner {
    store: Arc<RoutineStore>,
    catalog: Arc<ToolCatalog>,
    events: EventBus,
    host: Arc<dyn RoutineHost>,
    zone: TimeZone,
    clock: Arc<dyn Clock>,
    env: Env,
    mqtt: Option<MqttOptions>,
    settings: EngineSettings,
    people: Household,
    config: Vec<Routine>,
    slots: Mutex<BTreeMap<String, Arc<Slot>>>,
    routes: watch::Sender<Vec<mqtt::Route>>,
    mqtt_started: Mutex<bool>,
    reported: Mutex<BTreeSet<(String, String)>>,
    /// Triggers skipped while their routine ran or backed off, by (routine, trigger).
    skips: Flood<(String, String)>,
    /// Webhook calls refused before their body, by (routine, sender).
    refusals: Flood<(String, String)>,
}

/// Whether a trigger started a run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fired {
    Started,
    /// Nothing ran; the reason is in the run record.
    Skipped(String),
}

impl Engine {
    /// Validates the `tau.toml` routines against the tools and what the host offers; the
    /// first that cannot run is a config error naming it and its key.
    pub fn new(parts: EngineParts) -> Result<Self, ConfigError> {
        let EngineParts {
            config,
            store,
            catalog,
            events,
            host,
            zone,
            clock,
            env,
            mqtt,
            settings,
            people,
        } = parts;
        let env_fn = |name: &str| env(name);
        let checks = Checks {
            tools: Some(&catalog),
            zone: &zone,
            env: &env_fn,
            now: clock.now(),
            at_must_be_future: false,
            webhooks: Some(host.serves_webhooks()),
            people: &people,
        };
        let config = check_routines(&config, &checks, &Offers::of(host.as_ref(), mqtt.is_some()))?;
        let (routes, _) = watch::channel(Vec::new());
        let skips = Flood::new(
            FLOOD_WINDOW,
            skips_summary(Arc::clone(&store), events.clone(), Arc::clone(&clock)),
        );
        let refusals = Flood::new(FLOOD_WINDOW, refusals_summary(events.clone()));
        Ok(Self {
            inner: Arc::new(Inner {
                store,
                catalog,
                events,
                host,
                zone,
                clock,
                env,
                mqtt,
                settings,
                people,
                config,
                slots: Mutex::default(),
                routes,
                mqtt_started: Mutex::new(false),
                reported: Mutex::default(),
                skips,
                refusals,
            }),
        })
    }

    /// Keeps the routines until `shutdown` fires; then stops every trigger and every run.
    pub async fn run(&self, shutdown: CancellationToken) {
        let inner = &self.inner;
        let mut seen = None;
        loop {
            match inner.store.generation() {
                Ok(generation) if seen == Some(generation) => {}
                Ok(generation) => {
                    seen = Some(generation);
                    Inner::sync(inner, &shutdown);
                }
                Err(error) => {
                    tracing::error!(%error, "cannot read the routines; keeping the ones running");
                }
            }
            tokio::select! {
                () = shutdown.cancelled() => break,
                () = tokio::time::sleep(inner.settings.reload_every) => {}
            }
        }
        let slots =
            std::mem::take(&mut *inner.slots.lock().unwrap_or_else(PoisonError::into_inner));
        for slot in slots.values() {
            slot.cancel.cancel();
        }
    }

    /// The routines the engine is keeping now, by name.
    pub fn active(&self) -> Vec<String> {
        self.inner
            .slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
            .cloned()
            .collect()
    }
}

impl Inner {
    fn checks<'a>(&'a self, env: &'a dyn Fn(&str) -> Option<String>) -> Checks<'a> {
        Checks {
            tools: Some(&self.catalog),
            zone: &self.zone,
            env,
            now: self.clock.now(),
            at_must_be_future: false,
            webhooks: Some(self.host.serves_webhooks()),
            people: &self.people,
        }
    }

    /// Reads the routines again and starts, stops or restarts what changed.
    fn sync(self: &Arc<Self>, shutdown: &CancellationToken) {
        let env = |name: &str| (self.env)(name);
        let book = match book::load(&self.config, &self.store, &self.checks(&env)) {
            Ok(book) => book,
            Err(error) => {
                tracing::error!(%error, "cannot read the routines; keeping the ones running");
                return;
            }
        };
        let mut problems = book.problems.clone();
        let mut wanted = BTreeMap::new();
        let offers = Offers::of(self.host.as_ref(), self.mqtt.is_some());
        for routine in book.routines {
            if let Some(problem) = offers.problem(&routine) {
                problems.push((
                    routine.name().to_owned(),
                    problem.in_routine(routine.name()).to_string(),
                ));
            } else if routine.enabled {
                wanted.insert(routine.name().to_owned(), routine);
            }
        }
        self.report(problems);
        let mut slots = self.slots.lock().unwrap_or_else(PoisonError::into_inner);
        slots.retain(|name, slot| {
            let keep = wanted.get(name).is_some_and(|r| {
                r.content_hash == slot.routine.content_hash
                    && r.approved() == slot.routine.approved()
            });
            if !keep {
                tracing::info!(routine = %name, "routine stopped");
                slot.cancel.cancel();
            }
            keep
        });
        for (name, routine) in wanted {
            if slots.contains_key(&name) {
                continue;
            }
            let slot = Arc::new(Slot {
                routine,
                running: Arc::default(),
                backoff: Mutex::default(),
                cancel: shutdown.child_token(),
            });
            tracing::info!(routine = %name, trigger = %slot.routine.trigger.describe(), "routine started");
            if slot.routine.trigger.is_timed() {
                tokio::spawn(timers::keep(Arc::clone(self), Arc::clone(&slot)));
            }
            slots.insert(name, slot);
        }
        let routes: Vec<mqtt::Route> = slots
            .values()
            .filter_map(|s| mqtt::Route::of(&s.routine))
            .collect();
        drop(slots);
        let any = !routes.is_empty();
        self.routes.send_replace(routes);
        if any && let Some(options) = &self.mqtt {
            let mut started = self
                .mqtt_started
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !*started {
                *started = true;
                tokio::spawn(mqtt::listen(
                    Arc::clone(self),
                    options.clone(),
                    self.routes.subscribe(),
                    shutdown.clone(),
                ));
            }
        }
    }

    /// Logs each problem with a stored routine once.
    fn report(&self, problems: Vec<(String, String)>) {
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        for (name, problem) in problems {
            if reported.insert((name.clone(), problem.clone())) {
                tracing::warn!(routine = %name, %problem, "routine left out");
            }
        }
    }

    pub(crate) fn slot(&self, name: &str) -> Option<Arc<Slot>> {
        self.slots
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .cloned()
    }

    fn record(&self, run: &RunRecord) {
        record(&self.store, &self.events, run);
    }

    /// A trigger that found its routine running or backing off: the first of a window is
    /// recorded, the rest are counted into one line when the window ends.
    fn skipped(&self, slot: &Slot, trigger: String, why: String) -> Fired {
        let name = slot.routine.name().to_owned();
        let key = (name.clone(), slot.routine.trigger.describe());
        if self.skips.event(key) == Tally::Record {
            self.record(&RunRecord {
                routine: name,
                trigger,
                scheduled: true,
                outcome: RoutineOutcome::Skipped,
                detail: Some(why.clone()),
                tool_use_id: None,
                started_at: self.clock.now(),
                duration_ms: None,
            });
        }
        Fired::Skipped(why)
    }

    /// A webhook call without the right secret: logged and audited once per sender and
    /// window, the rest counted.
    pub(crate) fn refused_webhook(&self, routine: &str, sender: &str) {
        if self.refusals.event((routine.to_owned(), sender.to_owned())) == Tally::Record {
            tracing::warn!(routine, sender, "webhook refused: {REFUSED_SECRET}");
            self.events.emit(&AuditEvent::WebhookRefused {
                routine: routine.to_owned(),
                sender: sender.to_owned(),
                reason: REFUSED_SECRET.to_owned(),
                count: None,
            });
        }
    }

    /// A trigger fired: runs the action unless the routine is still running or backing off.
    pub(crate) fn fire(self: &Arc<Self>, slot: &Arc<Slot>, trigger: String) -> Fired {
        let now = self.clock.now();
        {
            let backoff = slot.backoff.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(until) = backoff.until
                && now < until
            {
                let why = format!(
                    "backing off after {} failed runs, until {until}",
                    backoff.failures
                );
                drop(backoff);
                return self.skipped(slot, trigger, why);
            }
        }
        let Ok(guard) = Arc::clone(&slot.running).try_lock_owned() else {
            return self.skipped(slot, trigger, "its previous run is still going".to_owned());
        };
        let inner = Arc::clone(self);
        let slot = Arc::clone(slot);
        tokio::spawn(async move {
            let _running = guard;
            let run = inner.run_once(&slot, trigger, now).await;
            inner.record(&run);
            inner.after(&slot, run.outcome);
        });
        Fired::Started
    }

    /// Whether `routine` runs on this host now: its `ask` channel, if it names one,
    /// reaches people from here (another hub may serve it instead).
    pub(crate) fn can_ask_now(&self, routine: &Routine) -> bool {
        routine
            .ask
            .is_none_or(|channel| self.host.can_ask_now(channel))
    }

    /// How `slot`'s calls are asked: on its `ask` channel when the host has one, else
    /// nobody (they are refused).
    fn asking(&self, slot: &Slot, session: &SessionId) -> Asking<'_> {
        if let Some(channel) = slot.routine.ask
            && let Some(store) = self.host.approvals()
        {
            let answers: &dyn StoredAnswers = self.host.as_ref();
            return asking_on(
                answers,
                store,
                channel,
                session.clone(),
                self.settings.ask_timeout,
            );
        }
        Asking::Now {
            approver: Arc::new(AutoRejectApprover),
            channel: "routine".to_owned(),
            timeout: Some(self.settings.ask_timeout),
        }
    }

    async fn run_once(&self, slot: &Slot, trigger: String, started_at: Timestamp) -> RunRecord {
        let session = match self.host.session_for(&slot.routine) {
            Ok(session) => session,
            Err(error) => {
                return RunRecord {
                    routine: slot.routine.name().to_owned(),
                    trigger,
                    scheduled: true,
                    outcome: RoutineOutcome::Error,
                    detail: Some(format!("no session for its turns and questions: {error}")),
                    tool_use_id: None,
                    started_at,
                    duration_ms: None,
                };
            }
        };
        let asking = self.asking(slot, &session);
        run_action(ActionRun {
            routine: &slot.routine,
            trigger,
            scheduled: true,
            session,
            catalog: &self.catalog,
            events: &self.events,
            asking,
            prompts: self.host.as_ref(),
            cancel: slot.cancel.clone(),
            started_at,
        })
        .await
    }

    /// Success clears the backoff; an error or a refusal doubles it.
    fn after(&self, slot: &Slot, outcome: RoutineOutcome) {
        let mut backoff = slot.backoff.lock().unwrap_or_else(PoisonError::into_inner);
        match outcome {
            RoutineOutcome::Success => *backoff = Backoff::default(),
            RoutineOutcome::Error | RoutineOutcome::Refused => {
                backoff.failures = backoff.failures.saturating_add(1);
                let doubling = 2u32.saturating_pow(backoff.failures.saturating_sub(1).min(20));
                let pause = self
                    .settings
                    .backoff_base
                    .saturating_mul(doubling)
                    .min(self.settings.backoff_max);
                backoff.until = jiff::SignedDuration::try_from(pause)
                    .ok()
                    .and_then(|p| self.clock.now().checked_add(p).ok());
            }
            RoutineOutcome::Skipped | RoutineOutcome::Missed => {}
        }
    }
}
