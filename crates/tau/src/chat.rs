//! `tau chat`: opens the session and the agent's parts for the line chat, whose loop is
//! tau-terminal's (and `tau demo`, which is the same chat with a replay model).

use std::sync::Arc;

use tau_agent::{Model, SessionRepository};
use tau_core::{AgentParts, AuditEvent, EventBus, StoredSessions, build_agent};
use tau_terminal::{ChatSetup, Ended};

use crate::context::{Context, Tools};
use tau_audit::AuditHistory;
use tau_audit::AuditLog;
use tau_home::ChatHistory;
use tau_home::SessionLock;
use tau_protocol::{PersonName, SessionId};

/// A chat about to start.
pub(crate) struct Chat {
    pub session: Option<SessionId>,
    pub model: Arc<dyn Model>,
    pub tools: Tools,
    /// Prompts to send instead of reading them (the demo); the answers are read as usual.
    pub prompts: Option<Vec<String>>,
    /// `--answers-from-stdin`: when stdin is not a terminal, its lines answer the
    /// approval prompts; otherwise the controlling terminal does, or nobody.
    pub answers_from_stdin: bool,
    /// The person of `[[people]]` at this terminal (none in a home that names nobody).
    pub person: Option<PersonName>,
}

/// A new session id: the start time and 32 random bits, drawn again while a stored
/// session has it, so a new chat never opens an old one. Two chats that draw the same
/// unused id at once meet at the session's lock, never in one history.
pub(crate) fn new_session_id(state: &tau_state::StateDb) -> anyhow::Result<SessionId> {
    unused_session_id(state, || {
        let random = tau_core::random_id("s")?;
        let bits = random.get(2..10).unwrap_or_default();
        let now = jiff::ZonedDateTime::now();
        Ok(SessionId::parse(&format!(
            "{}-{bits}",
            now.strftime("%Y%m%d-%H%M%S")
        ))?)
    })
}

/// The first id from `draw` that no stored session has, in a few tries.
fn unused_session_id(
    state: &tau_state::StateDb,
    mut draw: impl FnMut() -> anyhow::Result<SessionId>,
) -> anyhow::Result<SessionId> {
    const ATTEMPTS: usize = 4;
    for _ in 0..ATTEMPTS {
        let id = draw()?;
        if !state.sessions().session_exists(&id)? {
            return Ok(id);
        }
    }
    anyhow::bail!("no unused session id after {ATTEMPTS} tries")
}

/// A terminal chat's session, once opened.
pub(crate) struct OpenSession {
    /// Held while the chat runs: no other tau opens the session meanwhile.
    pub lock: SessionLock,
    /// A line for each call another session's killed tau left running, closed now.
    pub cut_off: Vec<String>,
    /// Messages the session already holds.
    pub stored: u64,
    /// The model; a replay model goes on after the replies the session already holds.
    pub model: Arc<dyn Model>,
    /// The bus, with the session's audit log subscribed and the start-up errors on it.
    pub events: EventBus,
}

/// What `tau chat` and `tau tui` do once they know their session: take it (refused while
/// another tau has it, or the hub holds it), and close what a killed tau left running in
/// the sessions nobody has open.
pub(crate) fn open_session(
    ctx: &Context,
    repository: &dyn SessionRepository,
    id: &SessionId,
    model: Arc<dyn Model>,
    startup_errors: &[AuditEvent],
) -> anyhow::Result<OpenSession> {
    let lock = crate::owner::open_own(ctx, id)?;
    let cut_off = crate::owner::close_cut_off_calls(ctx, &ctx.state()?, id)?;
    let stored = repository.message_count(id)?;
    let model = model
        .for_session(&repository.messages(id, 0)?)
        .unwrap_or(model);
    let events = ctx.events.clone();
    events.subscribe(Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        id.as_str(),
        ctx.state()?.audit_anchor(),
    )?));
    for event in startup_errors {
        events.emit(event);
    }
    Ok(OpenSession {
        lock,
        cut_off,
        stored,
        model,
        events,
    })
}

/// "yes, and allow this again" at this terminal (`tau chat`, `tau tui`: one person, its
/// `person` in a home that names people): grants of this conversation, or of every
/// conversation on the terminal.
pub(crate) fn terminal_grants(
    ctx: &Context,
    state: &tau_state::StateDb,
    id: &SessionId,
    person: Option<&PersonName>,
) -> tau_core::GateGrants {
    tau_core::GateGrants {
        store: state.grants(),
        conversations: state.conversations(),
        session: id.clone(),
        person: person.map(PersonName::to_string),
        hours: ctx.loaded.config.core().approval.grant_hours,
        history: Some(Arc::new(AuditHistory::new(ctx.home.audit_log()))),
        ledger: Arc::new(tau_audit::AuditGrants::new(
            ctx.home.audit_log(),
            state.clone(),
        )),
        // The terminal asks in memory, where no passkey can be given: its second step is
        // the device's name or number, as before.
        step_up: None,
    }
}

pub(crate) async fn run(ctx: &Context, chat: Chat) -> anyhow::Result<Ended> {
    let Chat {
        session,
        model,
        tools:
            Tools {
                catalog,
                startup_errors,
                watch: _watch,
            },
        prompts,
        answers_from_stdin,
        person,
    } = chat;
    let config = &ctx.loaded.config;
    let state = ctx.state()?;
    let id = match session {
        Some(id) => id,
        None => new_session_id(&state)?,
    };
    let grants = terminal_grants(ctx, &state, &id, person.as_ref());
    let repository: Arc<dyn SessionRepository> = Arc::new(StoredSessions::new(state.sessions()));
    let OpenSession {
        lock: _lock,
        cut_off,
        stored,
        model,
        events,
    } = open_session(ctx, repository.as_ref(), &id, model, &startup_errors)?;
    crate::terminal::claim(&state, &id, person.as_ref(), stored)?;
    for line in &cut_off {
        crate::output::eprint_line(line);
    }
    let passkeys = crate::terminal::passkey_questions(
        ctx,
        &state,
        events.clone(),
        person.as_ref(),
        tau_terminal::TERMINAL_CHANNEL,
    );
    let setup = ChatSetup {
        language: config.ui.language(),
        session: id.clone(),
        stored,
        prompts,
        answers_from_stdin,
        no_color: (ctx.env)("NO_COLOR").is_some_and(|v| !v.is_empty()),
        term: (ctx.env)("TERM"),
        history: ChatHistory::of(&ctx.home, tau_terminal::HISTORY_ENTRIES),
        person: person.as_ref().map(PersonName::to_string),
        passkeys,
    };
    let build = |approver| {
        build_agent(AgentParts {
            config: config.core(),
            model,
            catalog,
            approver,
            hooks: Vec::new(),
            plugins: Vec::new(),
            session: Some((repository, id.clone())),
            events,
            durable: None,
            grants: Some(grants),
            // A crash while an approved call runs is closed at the next start.
            dispatches: Some(tau_core::approval::DispatchRecord {
                store: state.approvals(),
                session: id.clone(),
            }),
        })
    };
    Ok(tau_terminal::chat(setup, build).await?)
}
