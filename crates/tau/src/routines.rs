//! `tau routines`: list, show, run, enable and disable the routines of `tau.toml` and those
//! made in conversations. `run` runs one action now, in this process, through the same gate
//! as `tau serve`: the routine's exemption applies, and any other tier-2 call is asked here
//! at the terminal, where the person who typed the command is.

use std::io::IsTerminal;
use std::sync::Arc;

use jiff::Timestamp;
use tau_agent::SessionRepository;
use tau_audit::AuditLog;
use tau_core::{RoutineOutcome, StoredSessions, display};
use tau_reflex::{
    Action, ActionRun, Asking, Book, Checks, PromptApprover, Routine, TurnPrompts, record,
    run_action,
};
use tau_terminal::{Console, Input, TerminalApprover, start_stdin};
use tokio_util::sync::CancellationToken;

use crate::context::Context;
use crate::errors::usage;

/// Runs shown by `tau routines show`.
const SHOWN_RUNS: usize = 10;

/// Every routine, checked against every tool.
async fn book(ctx: &Context) -> anyhow::Result<(Book, crate::context::Tools)> {
    ctx.create_home()?;
    let tools = ctx.catalog().await?;
    let config = ctx.config_routines(Some(&tools.catalog))?;
    let zone = crate::settings::zone(&ctx.loaded.config)?;
    let people = ctx.loaded.config.household();
    let checks = Checks {
        tools: Some(&tools.catalog),
        zone: &zone,
        env: &*ctx.env,
        now: Timestamp::now(),
        at_must_be_future: false,
        webhooks: None,
        people: &people,
    };
    let book = tau_reflex::load(&config, &*ctx.routine_store()?, &checks)?;
    Ok((book, tools))
}

fn find<'a>(book: &'a Book, name: &str) -> anyhow::Result<&'a Routine> {
    book.get(name)
        .ok_or_else(|| match book.problems.iter().find(|(n, _)| n == name) {
            Some((_, problem)) => usage(format!("routine '{name}' cannot run: {problem}")),
            None => usage(format!(
                "there is no routine named '{name}' (see `tau routines list`)"
            )),
        })
}

pub(crate) async fn list(ctx: &Context) -> anyhow::Result<String> {
    let (book, _) = book(ctx).await?;
    let zone = crate::settings::zone(&ctx.loaded.config)?;
    Ok(tau_reflex::listing::list_text(
        &book,
        &*ctx.routine_store()?,
        &zone,
    )?)
}

pub(crate) async fn show(ctx: &Context, name: &str) -> anyhow::Result<String> {
    let (book, _) = book(ctx).await?;
    let routine = find(&book, name)?;
    let zone = crate::settings::zone(&ctx.loaded.config)?;
    let runs = ctx.routine_store()?.runs(name, SHOWN_RUNS)?;
    Ok(tau_reflex::listing::show_text(routine, runs, &zone))
}

pub(crate) async fn switch(ctx: &Context, name: &str, enabled: bool) -> anyhow::Result<String> {
    let (book, _) = book(ctx).await?;
    let routine = find(&book, name)?;
    ctx.routine_store()?
        .set_enabled(routine.name(), enabled, Timestamp::now())?;
    Ok(format!(
        "routine {} {}\n",
        routine.name(),
        if enabled { "enabled" } else { "disabled" }
    ))
}

/// Runs one routine's action now. Its exemption applies; any other tier-2 call is asked at
/// this terminal (from stdin's lines with `answers_from_stdin`, as `tau chat` does).
/// Returns whether it succeeded.
pub(crate) async fn run(
    ctx: &Context,
    name: &str,
    answers_from_stdin: bool,
) -> anyhow::Result<bool> {
    let (book, tools) = book(ctx).await?;
    let routine = find(&book, name)?.clone();
    tau_home::logging::init(&ctx.home, &*ctx.env, tau_models::is_unscrubbed_log_target)?;
    let events = ctx.events.clone();
    events.subscribe(Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        routine.session().as_str(),
        ctx.state()?.audit_anchor(),
    )?));
    for event in &tools.startup_errors {
        events.emit(event);
    }
    let config = &ctx.loaded.config;
    let language = config.ui.language();
    let stdout_tty = std::io::stdout().is_terminal();
    let color = stdout_tty && (ctx.env)("NO_COLOR").is_none_or(|v| v.is_empty());
    let console = Console::new(Box::new(std::io::stdout()), stdout_tty, color, language);
    let Input {
        questions,
        question_screen,
        ..
    } = start_stdin(answers_from_stdin, stdout_tty, false);
    if let Some(screen) = question_screen {
        console.draw_questions_also_on(screen);
    }
    let approver = Arc::new(TerminalApprover::new(Arc::clone(&console), questions));
    if !matches!(routine.action, Action::Prompt { .. }) {
        // No turn projects this call: its question and outcome are drawn from its events.
        let shown = Arc::clone(&console);
        events.subscribe(Arc::new(move |event: &tau_core::AuditEvent| {
            if let Some(event) = tau_core::channel_event(event) {
                shown.render(&event);
            }
        }));
    }
    let catalog = Arc::new(tools.catalog);
    let prompts = match &routine.action {
        Action::Prompt { .. } => {
            let sessions: Arc<dyn SessionRepository> =
                Arc::new(StoredSessions::new(ctx.state()?.sessions()));
            Some(TurnPrompts {
                config: config.core(),
                model: ctx.model()?,
                catalog: (*catalog).clone(),
                sessions: Some(sessions),
                events: events.clone(),
                approver: PromptApprover::Always(Arc::clone(&approver) as _),
                sink: Some(console.sink()),
            })
        }
        Action::Tool { .. } => None,
    };
    let _lock = crate::owner::open_own(ctx, routine.session())?;
    console.print(&format!("running routine {} now\n", routine.name()));
    let no_prompts = tau_reflex::NoPrompts;
    let run = run_action(ActionRun {
        routine: &routine,
        trigger: "manual".to_owned(),
        scheduled: false,
        session: routine.session().clone(),
        catalog: &catalog,
        events: &events,
        asking: Asking::Now {
            approver,
            channel: tau_terminal::TERMINAL_CHANNEL.to_owned(),
            timeout: config.approval.timeout(),
        },
        prompts: prompts
            .as_ref()
            .map_or(&no_prompts as &dyn tau_reflex::PromptRunner, |p| p),
        cancel: CancellationToken::new(),
        started_at: Timestamp::now(),
    })
    .await;
    record(&*ctx.routine_store()?, &events, &run);
    console.print(&format!(
        "routine {}: {}{}\n",
        routine.name(),
        run.outcome.as_str(),
        run.detail
            .as_deref()
            .map(|d| format!(" — {}", display(d)))
            .unwrap_or_default()
    ));
    Ok(run.outcome == RoutineOutcome::Success)
}
