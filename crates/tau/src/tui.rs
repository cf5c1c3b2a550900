//! `tau tui`: the full-screen chat. The same home, config, model, sessions, audit log,
//! tools and session locks as `tau chat`; the screen and the approval card are tau-tui's.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use tau_agent::{Model, SessionRepository};
use tau_core::{AgentParts, StoredSessions, build_agent};
use tau_protocol::SessionId;
use tau_state::{ApprovalReader, ApprovalState};
use tau_tui::{ChatSetup, Exit, ModelCalls, Pick, Screen, SessionRow, TuiApprover};

use crate::chat::{OpenSession, new_session_id, open_session};
use crate::context::{Context, Tools};
use crate::errors::usage;
use tau_audit::AuditHistory;

/// How often the count of questions waiting on other channels is read again.
const ELSEWHERE_EVERY: Duration = Duration::from_secs(1);

/// Keeps `count` at the number of questions that wait for the person on other channels
/// (the hub's stored questions: the TUI asks its own in memory), until the TUI is gone.
async fn count_waiting_elsewhere(state: ApprovalReader, count: tokio::sync::watch::Sender<usize>) {
    let mut reported = false;
    while !count.is_closed() {
        let db = state.clone();
        let read = tokio::task::spawn_blocking(move || {
            db.approvals(Some(ApprovalState::Pending))
                .map(|rows| rows.len())
        })
        .await;
        match read {
            Ok(Ok(n)) => {
                count.send_if_modified(|shown| std::mem::replace(shown, n) != n);
            }
            // The count keeps its last value; the log says why, once.
            Ok(Err(error)) if !reported => {
                reported = true;
                tracing::warn!(%error, "cannot count the questions waiting elsewhere");
            }
            Ok(Err(_)) | Err(_) => {}
        }
        tokio::time::sleep(ELSEWHERE_EVERY).await;
    }
}

/// The exit code after a signal: 128 + its number, as a shell reports it.
fn signal_code(number: i32) -> ExitCode {
    ExitCode::from(u8::try_from(128 + number).unwrap_or(1))
}

pub(crate) async fn run(
    ctx: &Context,
    session: Option<SessionId>,
    model: Arc<dyn Model>,
    tools: Tools,
    warnings: Vec<String>,
) -> anyhow::Result<ExitCode> {
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(usage(
            "tau tui needs a terminal on stdin and stdout; for a pipe use tau chat",
        ));
    }
    let Tools {
        catalog,
        startup_errors,
        watch: _watch,
    } = tools;
    let config = &ctx.loaded.config;
    let language = config.ui.language();
    let state = ctx.state()?;
    let repository: Arc<dyn SessionRepository> = Arc::new(StoredSessions::new(state.sessions()));

    // From here on the terminal is the TUI's; dropping the screen gives it back, also when
    // an error below ends the command (the error is printed after that).
    let mut screen = Screen::enter()?;
    let id = match session {
        Some(id) => id,
        None => loop {
            // Sessions nobody wrote in are not offered; each with its title.
            let rows = repository
                .list_sessions()?
                .into_iter()
                .filter(|s| s.message_count > 0)
                .map(|s| SessionRow {
                    title: state.sessions().session_title(&s.id).ok().flatten(),
                    name: s.id.to_string(),
                    updated_at: s.updated_at,
                    message_count: s.message_count,
                })
                .collect();
            match tau_tui::pick_session(&mut screen, language, rows, ctx.shown_zone()).await? {
                Pick::New => break new_session_id(&state)?,
                Pick::Open(name) => break SessionId::parse(&name)?,
                Pick::Rename { name, title } => {
                    let wanted = (!title.trim().is_empty()).then_some(title.as_str());
                    // A title the store refuses (too long) leaves the name as it was.
                    if let Err(error) = state
                        .sessions()
                        .rename_session(&SessionId::parse(&name)?, wanted)
                    {
                        tracing::warn!(%error, "the session was not renamed");
                    }
                }
                Pick::Delete(name) => {
                    // A session another tau has open is not deleted (its lock says so).
                    if let Err(error) = crate::commands::sessions_delete(ctx, &name) {
                        tracing::warn!(%error, "the session was not deleted");
                    }
                }
                Pick::Quit => return Ok(ExitCode::SUCCESS),
                Pick::Signal(number) => return Ok(signal_code(number)),
            }
        },
    };
    let OpenSession {
        lock: _lock,
        cut_off,
        stored,
        model,
        events,
    } = open_session(ctx, repository.as_ref(), &id, model, &startup_errors)?;
    let mut warnings = warnings;
    warnings.extend(cut_off);
    let grant_commands = crate::grants::TuiGrants::new(ctx, state.clone(), events.clone())?;
    let approver = TuiApprover::new();
    let questions = approver.questions();
    let calls = ModelCalls::new();
    let mut agent = build_agent(AgentParts {
        config: config.core(),
        model,
        catalog,
        approver: Arc::new(approver),
        hooks: vec![calls.provider()],
        plugins: Vec::new(),
        session: Some((repository, id.clone())),
        events,
        durable: None,
        // "yes, and allow this again" on the TUI (one person): the word `always` on a
        // card makes a grant of exactly that call for this conversation.
        grants: Some(tau_core::GateGrants {
            store: state.grants(),
            conversations: state.conversations(),
            session: id.clone(),
            person: None,
            hours: config.core().approval.grant_hours,
            history: Some(Arc::new(AuditHistory::new(ctx.home.audit_log()))),
            ledger: Arc::new(tau_audit::AuditGrants::new(
                ctx.home.audit_log(),
                state.clone(),
            )),
        }),
        // A crash while an approved call runs is closed at the next start; the first
        // turn tells the model.
        dispatches: Some(tau_core::approval::DispatchRecord {
            store: state.approvals(),
            session: id.clone(),
        }),
    })
    .await?;
    let (elsewhere, waiting_elsewhere) = tokio::sync::watch::channel(0);
    let counter = tokio::spawn(count_waiting_elsewhere(state.approval_reader(), elsewhere));
    let setup = ChatSetup {
        language,
        session: id.to_string(),
        model: config.model.spec.clone(),
        max_turns: config.agent.max_turns,
        stored,
        warnings,
        waiting_elsewhere: Some(waiting_elsewhere),
        grants: Some(Arc::new(grant_commands)),
    };
    let exit = tau_tui::chat(&mut screen, &mut agent, questions, calls, setup).await;
    counter.abort();
    let exit = exit?;
    drop(screen);
    Ok(match exit {
        Exit::Quit => ExitCode::SUCCESS,
        Exit::Signal(number) => signal_code(number),
    })
}
