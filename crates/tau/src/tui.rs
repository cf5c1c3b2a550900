//! `tau tui`: the full-screen chat. The same home, config, model, sessions, audit log,
//! tools and session locks as `tau chat`; the screen and the approval card are tau-tui's.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::Arc;

use tau_agent::{Model, SessionRepository};
use tau_core::{AgentParts, StoredSessions, build_agent};
use tau_protocol::SessionId;
use tau_state::ApprovalState;
use tau_tui::{
    ChatSetup, Chosen, ModelCalls, Screen, SessionRow, SessionShelf, TuiApprover, choose_session,
    count_waiting_elsewhere,
};

use crate::chat::{OpenSession, new_session_id, open_session, terminal_grants};
use crate::context::{Context, Tools};
use crate::errors::usage;

/// The TUI's start once anyone has a passkey: what a yes to a question that takes one does.
pub(crate) const TUI_PASSKEYS: &str = "a passkey is enrolled: a yes here to a question that takes one (a lock-class device, a [tools.step_up] tool) approves nothing and refuses it; ask for it on TauBar, where the passkey confirms it";

/// The stored sessions as the picker reads and changes them.
struct Shelf<'a> {
    ctx: &'a Context,
    state: &'a tau_state::StateDb,
    repository: &'a dyn SessionRepository,
}

impl SessionShelf for Shelf<'_> {
    type Error = anyhow::Error;

    fn rows(&self) -> anyhow::Result<Vec<SessionRow>> {
        Ok(self
            .repository
            .list_sessions()?
            .into_iter()
            .map(|s| SessionRow {
                title: self.state.sessions().session_title(&s.id).ok().flatten(),
                name: s.id.to_string(),
                updated_at: s.updated_at,
                message_count: s.message_count,
            })
            .collect())
    }

    fn rename(&self, name: &str, title: Option<&str>) -> anyhow::Result<()> {
        // A title the store refuses (too long) leaves the name as it was.
        self.state
            .sessions()
            .rename_session(&SessionId::parse(name)?, title)?;
        Ok(())
    }

    fn delete(&self, name: &str) -> anyhow::Result<()> {
        // A session another tau has open is not deleted (its lock says so).
        crate::commands::sessions_delete(self.ctx, name).map(drop)
    }
}

pub(crate) async fn run(
    ctx: &Context,
    session: Option<SessionId>,
    model: Arc<dyn Model>,
    tools: Tools,
    warnings: Vec<String>,
    person: Option<tau_protocol::PersonName>,
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
        None => {
            let shelf = Shelf {
                ctx,
                state: &state,
                repository: repository.as_ref(),
            };
            match choose_session(&mut screen, language, &shelf, ctx.shown_zone()).await? {
                Chosen::New => new_session_id(&state)?,
                Chosen::Open(name) => SessionId::parse(&name)?,
                Chosen::Exit(exit) => return Ok(exit.code()),
            }
        }
    };
    let OpenSession {
        lock: _lock,
        cut_off,
        stored,
        model,
        events,
    } = open_session(ctx, repository.as_ref(), &id, model, &startup_errors)?;
    crate::terminal::claim(&state, &id, person.as_ref(), stored)?;
    let mut warnings = warnings;
    warnings.extend(cut_off);
    // Told once at the start: the card has no room of its own for it.
    if state.passkeys().any().unwrap_or(true) {
        warnings.push(TUI_PASSKEYS.to_owned());
    }
    let grant_commands = crate::grants::tui_grants(ctx, &state, events.clone())?;
    let passkeys = crate::terminal::passkey_questions(
        ctx,
        &state,
        events.clone(),
        person.as_ref(),
        tau_tui::TUI_CHANNEL,
    );
    let approver = TuiApprover::new()
        .for_person(person.as_ref().map(ToString::to_string))
        .with_passkeys(passkeys.takes_passkey, passkeys.not_yours, passkeys.refused);
    let questions = approver.questions();
    let no_yes = approver.no_yes();
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
        grants: Some(terminal_grants(ctx, &state, &id, person.as_ref())),
        // A crash while an approved call runs is closed at the next start; the first
        // turn tells the model.
        dispatches: Some(tau_core::approval::DispatchRecord {
            store: state.approvals(),
            session: id.clone(),
        }),
    })
    .await?;
    // The hub's stored questions: the TUI asks its own in memory.
    let reader = state.approval_reader();
    let (waiting_elsewhere, counter) = count_waiting_elsewhere(move || {
        reader
            .approvals(Some(ApprovalState::Pending))
            .map(|rows| rows.len())
    });
    let setup = ChatSetup {
        language,
        session: id.to_string(),
        model: config.model.spec.clone(),
        max_turns: config.agent.max_turns,
        stored,
        warnings,
        waiting_elsewhere: Some(waiting_elsewhere),
        no_yes,
        grants: Some(Arc::new(grant_commands)),
    };
    let exit = tau_tui::chat(&mut screen, &mut agent, questions, calls, setup).await;
    counter.abort();
    let exit = exit?;
    drop(screen);
    Ok(exit.code())
}
