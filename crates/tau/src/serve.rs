//! `tau serve`: the hub. One process hosts the channels (TauBar, Telegram); each conversation
//! is a session of its own, opened (and locked against `tau chat`) on first use, with the
//! same model, tools and config as `tau chat`. Tier-2 questions are stored in `state.db`
//! and survive a restart; SIGTERM or Ctrl-C cancels running turns and leaves pending
//! questions pending.

use std::io::IsTerminal;
use std::sync::Arc;

use tau_core::{EventBus, StoredSessions};
use tau_hub::{Channel, Hub, HubOptions, OpenError, StoredFactory};
use tau_protocol::SessionId;
use tau_state::StateDb;
use tau_web::{REMOTE_RISK, WebChannel, WebError};

use crate::context::Context;
use crate::errors::usage;
use tau_audit::{AuditGrants, AuditHistory, AuditLog, SessionAudit, Witness};

/// The `session` of the hub's own audit lines (MCP servers that failed to start).
const AUDIT_SESSION: &str = "serve";
/// The `session` of the routines' audit lines (their runs and fixed calls).
const ROUTINES_SESSION: &str = "routines";

pub(crate) async fn run(ctx: &Context, print_token: bool) -> anyhow::Result<()> {
    let config = &ctx.loaded.config;
    if print_token {
        ctx.create_home()?;
        crate::output::print(&format!(
            "{}\n",
            tau_home::token_file::load_or_create(&ctx.home.web_token())?
        ));
        return Ok(());
    }
    let notifier = tau_home::systemd::Notifier::from_env(&*ctx.env);
    notifier.status("starting: checking the config");
    // Everything `tau config check` and `tau doctor` check too, before anything is
    // written or bound: a config refused here is refused there with the same words.
    crate::start_checks::check(ctx)?;
    let model = ctx.model()?;
    let telegram_token = match &config.telegram {
        Some(telegram) => Some(
            telegram
                .token(|name| (ctx.env)(name))
                .map_err(|e| usage(e.to_string()))?,
        ),
        None => None,
    };
    ctx.create_home()?;
    tau_home::logging::init_serve(
        &ctx.home,
        &*ctx.env,
        &config.log,
        tau_models::is_unscrubbed_log_target,
    )?;
    tau_web::raise_open_files_limit();
    let token_path = ctx.home.web_token();
    let mut web_token = None;
    let web = if config.web.enabled {
        let token = web_token.insert(tau_home::token_file::load_or_create(&token_path)?);
        Some(
            WebChannel::bind(&config.web, token)
                .await
                .map_err(|error| match error {
                    WebError::Config(_) | WebError::Bind { .. } => usage(error.to_string()),
                    WebError::EmptyToken => anyhow::Error::new(error),
                })?,
        )
    } else {
        None
    };
    let (tools, problem) = ctx.hub_tools().await?;
    if let Some(problem) = problem {
        // Said before anything waits on the model; the hub starts all the same, since
        // the model may be started after it.
        crate::output::eprint_line(&format!(
            "tau serve: warning: {}",
            tau_core::display(&problem)
        ));
    }
    let state = ctx.state()?;
    // Held before anything is recovered: no other hub takes this one's running calls for
    // cut off while it serves.
    let _alive = crate::hub_lease::hold(&state)?;
    let audit = Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        AUDIT_SESSION,
        state.audit_anchor(),
    )?);
    let hub_events = EventBus::new();
    hub_events.subscribe(Arc::clone(&audit) as _);
    for event in &tools.startup_errors {
        hub_events.emit(event);
    }

    let people = state.clone();
    let household = config.household();
    let routine_tools = ctx.routine_tools(&tools.catalog)?;
    let (owners, owners_household) = (state.clone(), config.household());
    let passkey_step = tau_hub::PasskeyStep {
        taubar: web.as_ref().map(WebChannel::passkey_url),
        tools: config.tools.passkey_tools(),
    };
    let factory = Arc::new(StoredFactory {
        home: ctx.home.clone(),
        model: Arc::clone(&model),
        catalog: tools.catalog.clone(),
        config: config.core(),
        sessions: state.clone(),
        audit: Arc::clone(&audit),
        history: Arc::new(AuditHistory::new(ctx.home.audit_log())),
        ledger: Arc::new(AuditGrants::new(ctx.home.audit_log(), state.clone())),
        grant_person: Box::new(move |session, channel| {
            grant_person(&people, &household, session, channel)
        }),
        // A routine made in a conversation is its person's.
        session_tools: Box::new(move |session| {
            let person = if owners_household.is_named() {
                Some(
                    owners
                        .people()
                        .conversation_person(session)?
                        .unwrap_or_else(|| owners_household.first()),
                )
            } else {
                None
            };
            Ok(routine_tools.tools(person))
        }),
        passkey_step: passkey_step.clone(),
    });
    let hub = Hub::open(
        state.clone(),
        factory,
        HubOptions {
            remote_timeout: config.approval.remote_timeout(),
            audit: hub_events.clone(),
            language: config.ui.language(),
            passkey_step,
            people: crate::people::hub_people(config),
        },
    );
    let routine_events = EventBus::new();
    routine_events.subscribe(Arc::new(SessionAudit {
        log: audit,
        session: ROUTINES_SESSION.to_owned(),
    }));
    // False while another hub sharing the store polls the bot: routines asking on
    // Telegram are then that hub's to run.
    let polls_telegram_now = Arc::new(std::sync::atomic::AtomicBool::new(true));
    let hosted = crate::hosted::build(
        ctx,
        crate::hosted::HostParts {
            hub: hub.clone(),
            sessions: Arc::new(StoredSessions::new(state.sessions())),
            catalog: tools.catalog,
            model,
            config: config.core(),
            events: routine_events,
            polls_telegram: Arc::clone(&polls_telegram_now),
        },
    )?;
    let mut channels: Vec<Arc<dyn Channel>> = Vec::new();
    let mut web_url = None;
    if let Some(web) = web {
        // The key each device subscribes with: made once, kept in the home.
        let push_key = tau_home::token_file::load_or_create(&ctx.home.push_key())?;
        let web = web
            .with_people(state.people())
            .with_routines(Arc::clone(&hosted.routines) as _)
            .with_passkeys(state.passkeys(), config.tools.passkey_tools())
            .with_decisions(Arc::new(crate::audit::Decisions(
                tau_audit::AuditDecisions::new(ctx.home.audit_log()),
            )))
            .with_push(tau_web::WebPush::new(
                &push_key,
                state.push_subscriptions(),
            )?);
        if !config.web.listen.ip().is_loopback() {
            crate::output::eprint_line(&format!(
                "tau serve: warning: TauBar listens on {}: {REMOTE_RISK}",
                web.local_addr()
            ));
        }
        web_url = Some(web.url());
        channels.push(Arc::new(web));
    }
    let mut witness = None;
    // One poller per bot across the hubs sharing a store.
    let poller = match &telegram_token {
        Some(token) => Some(crate::hub_lease::telegram_poller(&state, token)?),
        None => None,
    };
    let polls_telegram = matches!(poller, Some(crate::hub_lease::TelegramPoller::Here { .. }));
    if let (crate::store::ConfiguredStore::Shared(shared), Some(hub)) =
        (ctx.store_location()?, state.hub())
    {
        // The url as configured, which holds no password (one that did was refused).
        crate::output::print(&format!(
            "tau serve: store {}, shared with other hubs; this one is hub {}\n",
            tau_core::display(&shared.url),
            crate::hub_lease::short(hub)
        ));
    }
    // The poller's lease stays held (and renewed) while `_polling` lives.
    let (_polling, waiting) = match poller {
        Some(crate::hub_lease::TelegramPoller::Elsewhere(waiting)) => {
            crate::output::print(TELEGRAM_ELSEWHERE);
            (None, Some(waiting))
        }
        polling => (polling, None),
    };
    if let (Some(telegram), Some(token)) = (&config.telegram, telegram_token) {
        // A person of `[[people]]` with a Telegram id owns the bot too.
        let mut telegram = telegram.clone();
        for id in config.household().telegram_ids() {
            if !telegram.owners.contains(&id) {
                telegram.owners.push(id);
            }
        }
        let (telegram_channel, channel) = tau_telegram::host(
            &telegram,
            &token,
            hub.port(tau_telegram::CHANNEL),
            Arc::clone(&hosted.routines) as _,
            tau_telegram::Store::new(state.telegram_memory()),
            config.ui.language(),
            crate::settings::zone(config)?,
        )?;
        match waiting {
            // Another hub polls the bot: this one serves it only once that hub is gone.
            Some(waiting) => {
                polls_telegram_now.store(false, std::sync::atomic::Ordering::SeqCst);
                channels.push(waiting.around(telegram_channel, polls_telegram_now));
            }
            None => {
                channels.push(telegram_channel);
                if config.audit.witness == Some(Witness::Telegram) {
                    witness = Some(channel);
                }
            }
        }
    }
    notifier.status("starting: recovering stored questions");
    let recovery = hub.start().await?;
    let stop_routines = tokio_util::sync::CancellationToken::new();
    let routines = hosted.start(stop_routines.clone());
    let witness = witness.map(|channel| {
        crate::audit::start_witness(
            ctx.home.audit_log(),
            state.clone(),
            channel,
            stop_routines.clone(),
        )
    });

    // The link with the token only for a person at a terminal.
    let token = web_token.filter(|_| std::io::stdout().is_terminal());
    crate::output::print(&crate::serve_banner::announce(
        &config.model.spec,
        web_url.as_deref().map(|url| crate::serve_banner::Entry {
            url,
            token_path: &token_path,
            token: token.as_deref(),
        }),
        polls_telegram,
        &recovery,
    ));
    let watchdog =
        tau_home::systemd::watchdog_interval(&*ctx.env, std::process::id()).map(|every| {
            let hub = hub.clone();
            let health = move || match hub.health() {
                Ok(()) => tau_home::systemd::Health::Serving,
                Err(tau_hub::Unhealthy::Stopping) => tau_home::systemd::Health::Stopping,
                Err(why) => tau_home::systemd::Health::NotServing(why.to_string()),
            };
            tau_home::systemd::start_watchdog(notifier, every, health, stop_routines.clone())
        });
    // Said in the log by the hub, on stdout and to `systemctl status` here.
    let stops = tau_hub::report_channel_stops(&hub, hub_events.clone(), move |said| {
        notifier.status(said);
        crate::output::print(&format!("tau serve: {said}\n"));
    });
    // TauBar's socket listens since it was bound; the channels start serving as soon as
    // the hub runs them, right below.
    notifier.ready(&serving_status(
        web_url.as_deref(),
        polls_telegram,
        recovery.pending.len(),
    ));
    let stop = async move {
        tau_hub::stop_signal().await;
        notifier.stopping();
    };
    let served = hub.run_channels(channels, stop).await;
    stops.abort();
    stop_routines.cancel();
    if let Some(watchdog) = watchdog {
        let _ = watchdog.await;
    }
    let _ = routines.await;
    if let Some(witness) = witness {
        let _ = witness.await;
    }
    served?;
    crate::output::print("tau serve: stopped; pending questions stay pending\n");
    Ok(())
}

/// What `systemctl status` says while the hub serves.
/// What a hub says when another hub sharing its store polls the bot.
const TELEGRAM_ELSEWHERE: &str = "tau serve: Telegram: another hub sharing the store polls this bot; this one takes over if that hub stops\n";

fn serving_status(url: Option<&str>, telegram: bool, waiting: usize) -> String {
    let mut channels = Vec::new();
    if let Some(url) = url {
        channels.push(format!("TauBar at {url}"));
    }
    if telegram {
        channels.push("Telegram".to_owned());
    }
    let waiting = tau_core::counted(waiting, "question waits", "questions wait");
    format!("serving: {}; {waiting}", channels.join(", "))
}

/// Whose grants a conversation's gate uses and makes ("yes, and allow this again").
/// TauBar has one person (the token's holder) unless `[[people]]` names several: then a
/// conversation's grants are its person's. On Telegram a grant is one person's: a
/// private chat's conversations are its user's (a private chat's id is the user's id); a
/// group chat, where several people write, and a routine's conversation have none, so
/// every call there is asked.
fn grant_person(
    state: &StateDb,
    household: &tau_core::Household,
    session: &SessionId,
    channel: &str,
) -> Result<Option<Option<String>>, OpenError> {
    match channel {
        // With people named, a TauBar conversation's grants are its person's.
        "web" if household.is_named() => {
            let person = state
                .people()
                .conversation_person(session)?
                .unwrap_or_else(|| household.first());
            Ok(Some(Some(person.to_string())))
        }
        "web" => Ok(Some(None)),
        tau_telegram::CHANNEL => {
            let conversation = state.conversations().conversation_of(session)?;
            Ok(conversation
                .and_then(|c| tau_telegram::chat_of(&c.key))
                .filter(|chat| *chat > 0)
                .map(|chat| Some(chat.to_string())))
        }
        _ => Ok(None),
    }
}
