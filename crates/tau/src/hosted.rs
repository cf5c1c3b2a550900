//! Routines hosted by `tau serve`, wired: the engine runs beside the hub, on the hub's
//! routine port (`tau_reflex::HubHost`); a prompt action without an `ask` channel runs as
//! a local turn in `routine-NAME` whose tier-2 calls are refused. Webhooks are served
//! under TauBar's listener, and the channels list the routines
//! (`tau_reflex::HostedRoutines`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use async_trait::async_trait;
use tau_agent::{Model, SessionRepository};
use tau_core::{CoreConfig, EventBus};
use tau_hub::Hub;
use tau_reflex::{
    AskChannel, Engine, EngineParts, EngineSettings, HostError, HostedRoutines, HubHost, Offers,
    PromptApprover, PromptOutcome, PromptRun, PromptRunner, RoutineHost, SystemClock, TurnPrompts,
};
use tokio_util::sync::CancellationToken;

use crate::context::Context;
use crate::errors::usage;
use crate::settings::TauConfig;
use tau_home::Home;
use tau_home::SessionLock;

/// The client id of the routines' MQTT subscriptions, beside `mqtt_publish`'s own.
const MQTT_CLIENT_SUFFIX: &str = "-routines";

/// What `tau serve` hands the engine.
pub(crate) struct HostParts {
    pub hub: Hub,
    pub sessions: Arc<dyn SessionRepository>,
    pub catalog: tau_core::ToolCatalog,
    pub model: Arc<dyn Model>,
    pub config: CoreConfig,
    /// The audit log, for the routines' own lines.
    pub events: EventBus,
    /// Whether this hub polls the Telegram bot now (another hub sharing the store may).
    pub polls_telegram: Arc<AtomicBool>,
}

/// The engine, built and checked; `run` keeps it until `stop`.
pub(crate) struct Hosted {
    pub engine: Engine,
    /// The routines as the channels see them.
    pub routines: Arc<HostedRoutines>,
}

/// What `tau serve` offers its routines: its channels to ask on (TauBar when
/// `web.enabled`, Telegram when `[telegram]` is there), webhooks under its HTTP listener,
/// and a broker client of their own for `mqtt` triggers ([`broker`]).
pub(crate) fn offers(config: &TauConfig) -> Offers {
    let mut channels = Vec::new();
    if config.web.enabled {
        channels.push(AskChannel::Web);
    }
    if config.telegram.is_some() {
        channels.push(AskChannel::Telegram);
    }
    Offers {
        channels,
        webhooks: HubHost::SERVES_WEBHOOKS,
        mqtt: true,
    }
}

/// The routines' own MQTT client, beside `mqtt_publish`'s; a bad `[tools.mqtt]` exits 2.
pub(crate) fn broker(ctx: &Context) -> anyhow::Result<rumqttc::MqttOptions> {
    let tools = ctx.tools_config()?;
    let mut client_id: String = tools.mqtt.client_id.chars().take(14).collect();
    client_id.push_str(MQTT_CLIENT_SUFFIX);
    tau_tools::broker_options(&tools.mqtt, &*ctx.env, &client_id).map_err(|e| usage(e.to_string()))
}

/// Builds the engine; a routine that cannot run here is a config error (exit 2).
pub(crate) fn build(ctx: &Context, parts: HostParts) -> anyhow::Result<Hosted> {
    let config = &ctx.loaded.config;
    let HostParts {
        hub,
        sessions,
        catalog,
        model,
        config: core,
        events,
        polls_telegram,
    } = parts;
    let store = ctx.routine_store()?;
    let timeout = config.approval.remote_timeout();
    let local = TurnPrompts {
        config: core,
        model,
        catalog: catalog.clone(),
        sessions: Some(Arc::clone(&sessions)),
        events: events.clone(),
        approver: PromptApprover::ByAsk(Arc::new(|_| None)),
        sink: None,
    };
    let local = Arc::new(LockedPrompts {
        home: ctx.home.clone(),
        local,
    });
    let host = Arc::new(
        HubHost::new(Arc::new(hub), local, timeout, offers(config).channels).asking_while(
            Arc::new(move |channel| {
                !matches!(channel, tau_reflex::AskChannel::Telegram)
                    || polls_telegram.load(Ordering::SeqCst)
            }),
        ),
    );
    let env: Vec<(String, String)> = std::env::vars().collect();
    let mqtt = broker(ctx)?;
    let shown = ctx.config_name();
    let engine = Engine::new(EngineParts {
        config: tau_reflex::defs_from_toml(config.routines.clone())
            .map_err(|e| usage(format!("{shown}: {e}")))?,
        store: Arc::clone(&store),
        catalog: Arc::new(catalog),
        events,
        host: Arc::clone(&host) as Arc<dyn RoutineHost>,
        zone: crate::settings::zone(config)?,
        clock: Arc::new(SystemClock),
        env: Arc::new(move |name: &str| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        }),
        mqtt: Some(mqtt),
        settings: EngineSettings {
            ask_timeout: timeout,
            ..EngineSettings::default()
        },
        people: config.household(),
    })
    .map_err(|e| usage(format!("{shown}: {e}")))?;
    let routines = Arc::new(HostedRoutines::new(
        engine.clone(),
        store,
        ctx.config_routines(None)?,
        crate::settings::zone(config)?,
        config.household(),
    ));
    Ok(Hosted { engine, routines })
}

impl Hosted {
    /// Keeps the routines until `stop` fires.
    pub(crate) fn start(&self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let engine = self.engine.clone();
        tokio::spawn(async move { engine.run(stop).await })
    }
}

/// A prompt action that asks nowhere: a local turn in `routine-NAME`, its session locked
/// as every other tau's local session is.
struct LockedPrompts {
    home: Home,
    local: TurnPrompts,
}

#[async_trait]
impl PromptRunner for LockedPrompts {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError> {
        let _lock = SessionLock::acquire(&self.home, &run.session)
            .map_err(|e| HostError::Locked(e.into()))?;
        self.local.run_prompt(run).await
    }
}

/// What a conversation's routine tools are made of; each conversation's person owns the
/// routines made in it.
#[derive(Clone)]
pub(crate) struct RoutineTools {
    pub store: Arc<tau_reflex::RoutineStore>,
    /// The tools a routine may call.
    pub catalog: tau_core::ToolCatalog,
    /// The `tau.toml` routines.
    pub config: Vec<tau_reflex::Routine>,
    pub zone: jiff::tz::TimeZone,
    pub people: tau_core::Household,
}

impl RoutineTools {
    /// The routine tools of a conversation of `person` (`None` with no `[[people]]`).
    pub(crate) fn tools(
        &self,
        person: Option<tau_protocol::PersonName>,
    ) -> Vec<tau_agent::SharedTool> {
        let parts = self.clone();
        tau_reflex::routine_tools(tau_reflex::RoutineToolsParts {
            store: parts.store,
            catalog: parts.catalog,
            config: parts.config,
            zone: parts.zone,
            people: parts.people,
            person,
        })
    }
}
