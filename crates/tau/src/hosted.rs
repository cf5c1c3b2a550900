//! Routines hosted by `tau serve`: the engine runs beside the hub. A routine's questions
//! are stored in the hub's approval store and shown in its own conversation on its `ask`
//! channel (`routine:NAME`), where the person answers them like any other; its prompt
//! actions run as turns of that conversation. A prompt action without an `ask` channel
//! runs as a local turn in `routine-NAME` whose tier-2 calls are refused. Webhooks are
//! served under TauBar's listener, and the page lists the routines.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use tau_agent::{Model, SessionId, SessionRepository};
use tau_core::approval::{ApprovalRow, StateDb};
use tau_core::{
    ApprovalId, CallStatus, ChannelEvent, CoreConfig, EventBus, RoutineOutcome, StopReason,
};
use tau_hub::{Hub, SessionEvent};
use tau_reflex::{
    AskChannel, Checks, Engine, EngineParts, EngineSettings, HostError, Offers, PromptApprover,
    PromptOutcome, PromptRun, PromptRunner, RoutineHost, RoutineStore, SystemClock, TurnPrompts,
};
use tokio_util::sync::CancellationToken;

use crate::context::Context;
use crate::errors::usage;
use crate::lock::SessionLock;
use crate::paths::Home;
use crate::settings::TauConfig;

/// The client id of the routines' MQTT subscriptions, beside `mqtt_publish`'s own.
const MQTT_CLIENT_SUFFIX: &str = "-routines";
/// Opens the key of a routine's conversation on its `ask` channel: `routine:NAME`.
const ROUTINE_KEY: &str = "routine:";

/// The key of routine `name`'s conversation on its `ask` channel.
pub(crate) fn routine_key(name: &str) -> String {
    format!("{ROUTINE_KEY}{name}")
}

/// The routine whose conversation has `key`, if it is one's.
pub(crate) fn routine_of_key(key: &str) -> Option<&str> {
    key.strip_prefix(ROUTINE_KEY)
}

/// What `tau serve` hands the engine.
pub(crate) struct HostParts {
    pub hub: Hub,
    pub sessions: Arc<dyn SessionRepository>,
    pub catalog: tau_core::ToolCatalog,
    pub model: Arc<dyn Model>,
    pub config: CoreConfig,
    /// The audit log, for the routines' own lines.
    pub events: EventBus,
}

/// The engine, built and checked; `run` keeps it until `stop`.
pub(crate) struct Hosted {
    pub engine: Engine,
    pub web: Arc<WebRoutines>,
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
    let config = &ctx.loaded.config;
    let mut client_id: String = config.tools.mqtt.client_id.chars().take(14).collect();
    client_id.push_str(MQTT_CLIENT_SUFFIX);
    tau_tools::broker_options(&config.tools.mqtt, &*ctx.env, &client_id)
        .map_err(|e| usage(e.to_string()))
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
    let host = Arc::new(HubHost {
        hub,
        local,
        home: ctx.home.clone(),
        timeout,
        channels: offers(config).channels,
    });
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
        zone: crate::routines::zone(config)?,
        clock: Arc::new(SystemClock),
        env: Arc::new(move |name: &str| {
            env.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
        }),
        mqtt: Some(mqtt),
        settings: EngineSettings {
            ask_timeout: timeout,
            ..EngineSettings::default()
        },
    })
    .map_err(|e| usage(format!("{shown}: {e}")))?;
    let web = Arc::new(WebRoutines {
        engine: engine.clone(),
        store,
        ctx_config: crate::routines::config_routines(ctx, None)?,
        zone: crate::routines::zone(config)?,
    });
    Ok(Hosted { engine, web })
}

impl Hosted {
    /// Keeps the routines until `stop` fires.
    pub(crate) fn start(&self, stop: CancellationToken) -> tokio::task::JoinHandle<()> {
        let engine = self.engine.clone();
        tokio::spawn(async move { engine.run(stop).await })
    }
}

/// The hub as the engine's host.
struct HubHost {
    hub: Hub,
    local: TurnPrompts,
    home: Home,
    timeout: Duration,
    /// The channels this `tau serve` runs, where routines may ask.
    channels: Vec<AskChannel>,
}

impl HubHost {
    /// Webhooks are served under TauBar's listener.
    const SERVES_WEBHOOKS: bool = true;
}

fn host_error(error: impl std::fmt::Display) -> HostError {
    HostError(error.to_string())
}

impl HubHost {
    /// A prompt action as a turn of the routine's conversation: durable questions on its
    /// channel, and this run waits until the turn is over, answers included.
    async fn hub_turn(
        &self,
        channel: AskChannel,
        run: PromptRun,
    ) -> Result<PromptOutcome, HostError> {
        let session = run.session.clone();
        let mut events = self
            .hub
            .subscribe(channel.as_str(), &session)
            .map_err(host_error)?;
        self.hub
            .send(channel.as_str(), &session, run.prompt)
            .await
            .map_err(host_error)?;
        let mut refused = Vec::new();
        // A question waits up to the remote timeout; a little more for the turn around it.
        let wait = self.timeout + Duration::from_secs(300);
        let ended = tokio::time::timeout(wait, async {
            loop {
                match events.recv().await {
                    Ok(SessionEvent::Turn(ChannelEvent::ToolCallFinished {
                        tool,
                        status: CallStatus::Refused | CallStatus::UnknownTool | CallStatus::Invalid,
                        ..
                    })) => refused.push(tool),
                    Ok(SessionEvent::Turn(ChannelEvent::TurnEnded { stop_reason, .. }))
                        if stop_reason != StopReason::Interrupt =>
                    {
                        return Ok(stop_reason);
                    }
                    Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => {
                        return Err(HostError("the hub stopped".into()));
                    }
                }
            }
        })
        .await
        .map_err(|_| HostError("the turn did not end in time".into()))??;
        Ok(match ended {
            _ if !refused.is_empty() => PromptOutcome {
                outcome: RoutineOutcome::Refused,
                detail: Some(format!("refused: {}", refused.join(", "))),
            },
            StopReason::EndTurn | StopReason::StopSequence => PromptOutcome {
                outcome: RoutineOutcome::Success,
                detail: None,
            },
            other => PromptOutcome {
                outcome: RoutineOutcome::Error,
                detail: Some(format!(
                    "the turn ended with {}",
                    serde_json::to_value(other)
                        .ok()
                        .and_then(|v| v.as_str().map(str::to_owned))
                        .unwrap_or_default()
                )),
            },
        })
    }
}

#[async_trait]
impl PromptRunner for HubHost {
    async fn run_prompt(&self, run: PromptRun) -> Result<PromptOutcome, HostError> {
        match run.ask {
            Some(channel) => self.hub_turn(channel, run).await,
            None => {
                let _lock = SessionLock::acquire(&self.home, &run.session)
                    .map_err(|e| HostError(format!("{e:#}")))?;
                self.local.run_prompt(run).await
            }
        }
    }
}

#[async_trait]
impl RoutineHost for HubHost {
    fn approvals(&self) -> Option<StateDb> {
        Some(self.hub.state().clone())
    }

    fn channels(&self) -> Vec<AskChannel> {
        self.channels.clone()
    }

    fn session_for(&self, routine: &str, ask: Option<AskChannel>) -> Result<SessionId, HostError> {
        match ask {
            None => tau_reflex::session_of(routine).map_err(host_error),
            Some(channel) => self
                .hub
                .open_conversation(channel.as_str(), &routine_key(routine))
                .map_err(host_error),
        }
    }

    fn announce(&self, row: &ApprovalRow) {
        self.hub.show_question(row);
    }

    fn withdrawn(&self, row: &ApprovalRow) {
        self.hub.show_question(row);
    }

    fn settled(&self, id: &ApprovalId) {
        if let Err(error) = self.hub.state().mark_approval_settled(id) {
            tracing::warn!(approval_id = %id, %error, "cannot settle a routine's question");
        }
    }

    async fn changed(&self, id: &ApprovalId) {
        let mut changes = self.hub.approval_changes();
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            while let Ok(row) = changes.recv().await {
                if row.id == *id {
                    return;
                }
            }
        })
        .await;
    }

    fn serves_webhooks(&self) -> bool {
        Self::SERVES_WEBHOOKS
    }
}

/// The routines as TauBar serves them.
pub(crate) struct WebRoutines {
    engine: Engine,
    store: Arc<RoutineStore>,
    ctx_config: Vec<tau_reflex::Routine>,
    zone: jiff::tz::TimeZone,
}

impl tau_web::Routines for WebRoutines {
    fn webhook(
        &self,
        name: &str,
        authorization: Option<&str>,
        sender: &str,
    ) -> Result<tau_web::WebhookDelivery, (u16, String)> {
        match self.engine.webhook(name, authorization, sender) {
            Ok(call) => Ok(Box::new(move |body: &[u8]| {
                let reply = call.deliver(body);
                (reply.status, reply.text)
            })),
            Err(refused) => Err((refused.status, refused.text)),
        }
    }

    fn list(&self) -> serde_json::Value {
        self.book()
            .and_then(|book| tau_reflex::routines_json(&book, &self.store))
            .unwrap_or_else(|error| {
                tracing::error!(%error, "cannot list the routines");
                serde_json::json!([])
            })
    }

    fn allowances(&self) -> Vec<tau_protocol::RoutineAllowance> {
        self.book()
            .map(|book| tau_reflex::allowances(&book))
            .unwrap_or_else(|error| {
                tracing::error!(%error, "cannot list the routines' exemptions");
                Vec::new()
            })
    }

    fn origin(&self, key: &str) -> Option<tau_web::RoutineOrigin> {
        let name = routine_of_key(key)?;
        let trigger = match self.book() {
            Ok(book) => book.get(name).map(tau_reflex::Routine::origin),
            Err(error) => {
                tracing::warn!(%error, "cannot read the routines");
                None
            }
        };
        Some(tau_web::RoutineOrigin {
            routine: name.to_owned(),
            // A routine since deleted still owns its conversation.
            trigger: trigger.unwrap_or_else(|| "no longer set up".to_owned()),
        })
    }
}

impl WebRoutines {
    fn book(&self) -> Result<tau_reflex::Book, tau_reflex::StoreError> {
        let no_env = |_: &str| None;
        let checks = Checks {
            tools: None,
            zone: &self.zone,
            env: &no_env,
            now: jiff::Timestamp::now(),
            at_must_be_future: false,
            webhooks: None,
        };
        tau_reflex::load(&self.ctx_config, &self.store, &checks)
    }
}
