//! `tau grants`: the grants people made ("yes, and allow this again"), what each covers,
//! where, until when and how often it was used; and their revoke, which takes effect
//! before any later call (it is one write to `state.db`, the same the gate's use is).
//! Every field a grant or a routine's exemption holds is shown through the display
//! function, the lookalike words of each entry flagged below it as on a card.

use std::sync::Arc;

use jiff::Timestamp;
use tau_core::display;
use tau_core::grants::{render, render_one, revoke_grant, revoked_line};
use tau_protocol::{DecidedBy, GrantId, RoutineAllowance, SessionId};
use tau_state::Revoked;

use crate::context::Context;
use crate::errors::{no_grant, usage};
use tau_audit::AuditLog;

/// The audit session a revoke from the command line is written under.
const AUDIT_SESSION: &str = "cli";

/// The routines' exemptions, read without starting any tool (no MCP server): the
/// routines of `tau.toml` and those stored, switches applied.
fn routine_allowances(
    ctx: &Context,
    store: Option<&tau_state::StateDb>,
) -> anyhow::Result<Vec<RoutineAllowance>> {
    let config = ctx.config_routines(None)?;
    let book = match store {
        Some(store) => {
            let zone = crate::settings::zone(&ctx.loaded.config)?;
            let people = ctx.loaded.config.household();
            let checks = tau_reflex::Checks {
                tools: None,
                zone: &zone,
                env: &*ctx.env,
                now: Timestamp::now(),
                at_must_be_future: false,
                webhooks: None,
                people: &people,
            };
            tau_reflex::load(
                &config,
                &tau_reflex::RoutineStore::new(store.routines()),
                &checks,
            )?
        }
        None => tau_reflex::Book {
            routines: config,
            problems: Vec::new(),
        },
    };
    Ok(tau_reflex::allowances(&book))
}

/// `tau grants list`.
pub(crate) fn list(ctx: &Context) -> anyhow::Result<String> {
    let zone = crate::settings::zone(&ctx.loaded.config)?;
    let store = ctx.existing_state()?;
    let routines = routine_allowances(ctx, store.as_ref())?;
    let grants = match &store {
        Some(store) => store.grants().grants(None)?,
        None => Vec::new(),
    };
    let titles = |session: &SessionId| {
        store
            .as_ref()
            .and_then(|store| store.sessions().session_title(session).ok().flatten())
    };
    Ok(render(&grants, &routines, &titles, Timestamp::now(), &zone))
}

fn parse_id(id: &str) -> anyhow::Result<GrantId> {
    GrantId::parse(id).map_err(|_| {
        usage(format!(
            "{} is not a grant id (tau grants list shows them)",
            display(id)
        ))
    })
}

/// `tau grants show ID`: one grant, also one that ended.
pub(crate) fn show(ctx: &Context, id: &str) -> anyhow::Result<String> {
    let id = parse_id(id)?;
    let zone = crate::settings::zone(&ctx.loaded.config)?;
    let store = ctx.existing_state()?;
    let grant = match &store {
        Some(store) => store.grants().grant(&id)?,
        None => None,
    };
    let grant = grant.ok_or_else(|| no_grant(&id))?;
    let titles = |session: &SessionId| {
        store
            .as_ref()
            .and_then(|store| store.sessions().session_title(session).ok().flatten())
    };
    Ok(render_one(&grant, &titles, Timestamp::now(), &zone))
}

/// Revokes `id` in `store` from the command line, its line under the `cli` audit session;
/// `logging` says whether the audit log is already subscribed.
fn revoke_in(
    ctx: &Context,
    store: &tau_state::StateDb,
    logging: &mut bool,
    id: &GrantId,
) -> anyhow::Result<Revoked> {
    if !*logging {
        ctx.events.subscribe(Arc::new(AuditLog::open(
            &ctx.home.audit_log(),
            AUDIT_SESSION,
            store.audit_anchor(),
        )?));
        *logging = true;
    }
    Ok(revoke_grant(
        &store.grants(),
        &ctx.events,
        id,
        DecidedBy::person("cli"),
    )?)
}

/// `/grants` and `/revoke` in `tau tui`: the same list as `tau grants list`, and a revoke
/// by the TUI's person, written on the conversation's audit bus.
pub(crate) fn tui_grants(
    ctx: &Context,
    store: &tau_state::StateDb,
    events: tau_core::EventBus,
) -> anyhow::Result<tau_tui::StoredGrants> {
    Ok(tau_tui::StoredGrants {
        grants: store.grants(),
        sessions: store.sessions(),
        events,
        zone: crate::settings::zone(&ctx.loaded.config)?,
        routines: routine_allowances(ctx, Some(store))?,
    })
}

/// `tau grants revoke ID`: from its commit on the grant covers nothing; a `grant_revoked`
/// line says so, with the uses it had.
pub(crate) fn revoke(ctx: &Context, id: &str) -> anyhow::Result<String> {
    let id = parse_id(id)?;
    let Some(store) = ctx.existing_state()? else {
        return Err(no_grant(&id));
    };
    match revoke_in(ctx, &store, &mut false, &id)? {
        Revoked::Revoked(grant) => Ok(revoked_line(&grant)),
        Revoked::AlreadyRevoked(grant) => Ok(format!("{} was revoked already\n", grant.id)),
        Revoked::NotFound => Err(no_grant(&id)),
    }
}

/// `tau grants revoke --all`: every live grant, each with its own line; a grant that
/// ended or was revoked meanwhile is left as it is.
pub(crate) fn revoke_all(ctx: &Context) -> anyhow::Result<String> {
    let Some(store) = ctx.existing_state()? else {
        return Ok("no grants to revoke\n".to_owned());
    };
    let live = store.grants().grants(Some(Timestamp::now()))?;
    let mut logging = false;
    let mut out = String::new();
    for grant in &live {
        if let Revoked::Revoked(grant) = revoke_in(ctx, &store, &mut logging, &grant.id)? {
            out.push_str(&revoked_line(&grant));
        }
    }
    if out.is_empty() {
        out.push_str("no grants to revoke\n");
    }
    Ok(out)
}
