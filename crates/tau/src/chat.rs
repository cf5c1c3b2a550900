//! `tau chat`: the line chat in the terminal (and `tau demo`, which is the same chat with
//! a replay model).

use std::io::IsTerminal;
use std::sync::Arc;

use tau_agent::{Model, SessionRepository};
use tau_core::{AgentParts, AuditEvent, EventBus, StoredSessions, build_agent};
use tau_terminal::{Console, Input, PromptEditor, TerminalApprover, start_stdin, texts};

use crate::context::{Context, Tools};
use crate::signals::Interrupts;
use tau_audit::AuditHistory;
use tau_audit::AuditLog;
use tau_home::ChatHistory;
use tau_home::SessionLock;
use tau_protocol::SessionId;

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
}

/// How a chat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ended {
    /// Turns that could not finish (the model or the store failed).
    pub failed_turns: u32,
    /// The prompts came from a pipe or a file: a script is reading the exit code.
    pub piped: bool,
}

impl Ended {
    /// 1 when a turn failed on a pipe, so a script learns that its prompt got no answer;
    /// at a terminal the person saw the notice, and the chat ends as they chose.
    pub(crate) fn exit_code(self) -> std::process::ExitCode {
        if self.piped && self.failed_turns > 0 {
            std::process::ExitCode::from(1)
        } else {
            std::process::ExitCode::SUCCESS
        }
    }
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
        prompts: scripted,
        answers_from_stdin,
    } = chat;
    let mut scripted = scripted.map(std::collections::VecDeque::from);
    let config = &ctx.loaded.config;
    let language = config.ui.language();
    let state = ctx.state()?;
    let id = match session {
        Some(id) => id,
        None => new_session_id(&state)?,
    };
    // "yes, and allow this again" at this terminal: grants of this conversation, or of
    // every conversation on the terminal (one person).
    let grants = tau_core::GateGrants {
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
    };
    let repository: Arc<dyn SessionRepository> = Arc::new(StoredSessions::new(state.sessions()));
    let OpenSession {
        lock: _lock,
        cut_off,
        stored,
        model,
        events,
    } = open_session(ctx, repository.as_ref(), &id, model, &startup_errors)?;
    for line in &cut_off {
        crate::output::eprint_line(line);
    }

    let stdout_tty = std::io::stdout().is_terminal();
    let color = stdout_tty && (ctx.env)("NO_COLOR").is_none_or(|v| v.is_empty());
    let console = Console::new(Box::new(std::io::stdout()), stdout_tty, color, language);
    let history = ChatHistory::of(&ctx.home, tau_terminal::HISTORY_ENTRIES);
    let mut editor = if scripted.is_none() && tau_terminal::can_edit((ctx.env)("TERM").as_deref()) {
        line_editor(&history)
    } else {
        None
    };
    let Input {
        mut prompts,
        questions,
        question_screen,
        stdin_is_terminal: stdin_tty,
        line_editing,
    } = start_stdin(answers_from_stdin, stdout_tty, editor.is_some());
    if !line_editing {
        editor = None;
    }
    if let Some(screen) = question_screen {
        console.draw_questions_also_on(screen);
    }
    let approver = Arc::new(TerminalApprover::new(
        Arc::clone(&console),
        questions.clone(),
    ));

    let mut agent = build_agent(AgentParts {
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
    .await?;
    let t = texts(language);
    if stored == 0 {
        console.print(&format!("{} {id}\n", t.new_session));
    } else {
        console.print(&format!("{} {id} ({stored})\n", t.resumed_session));
    }

    let sink = console.sink();
    // A call this session's last tau let through and never saw return: said now, and the
    // model reads it with the next prompt.
    if let Err(error) = agent.answer_cut_off_calls(Some(&sink)).await {
        console.notice(&error.to_string());
    }
    let mut interrupts = Interrupts::listen()?;
    let mut ended = Ended {
        failed_turns: 0,
        piped: !stdin_tty && scripted.is_none(),
    };
    loop {
        let prompt = match (&mut scripted, &mut editor) {
            (Some(queue), _) => queue.pop_front(),
            (None, Some(editor)) => {
                let keep = |text: &str| {
                    if let Err(error) = history.append(text) {
                        tracing::warn!(%error, "a prompt could not be added to the history");
                    }
                };
                prompts.next_prompt(editor, &console, &keep).await
            }
            (None, None) => {
                if stdin_tty {
                    console.print("you> ");
                }
                tokio::select! {
                    prompt = prompts.next() => prompt,
                    () = interrupts.next() => None,
                }
            }
        };
        let Some(prompt) = prompt else { break };
        if !stdin_tty || scripted.is_some() {
            console.print(&format!(
                "you> {}\n",
                tau_terminal::escape_for_terminal(&prompt)
            ));
        }
        if prompt.trim().is_empty() {
            continue;
        }
        let cancel = agent.cancel_handle();
        console.thinking();
        let turn = agent.stream(&prompt, Some(&sink));
        tokio::pin!(turn);
        let mut cancelled = false;
        let result = loop {
            tokio::select! {
                result = &mut turn => break result,
                () = interrupts.next() => {
                    if cancelled {
                        // A second Ctrl-C while the turn winds down: leave now.
                        console.print("\n");
                        return Ok(ended);
                    }
                    cancelled = true;
                    cancel.cancel();
                    questions.close();
                }
            }
        };
        if let Err(error) = result {
            ended.failed_turns += 1;
            if error.notice.is_none() {
                console.notice(&error.to_string());
            }
        }
    }
    Ok(ended)
}

/// The editor with the history kept in the home; without the history when it cannot be
/// read (said once), without the editor when none can be made.
fn line_editor(history: &ChatHistory) -> Option<PromptEditor> {
    let entries = history.load().unwrap_or_else(|error| {
        crate::output::eprint_line(&format!(
            "tau: warning: the prompt history cannot be read: {error}"
        ));
        Vec::new()
    });
    match PromptEditor::new(&entries) {
        Ok(editor) => Some(editor),
        Err(error) => {
            crate::output::eprint_line(&format!(
                "tau: warning: {error}; prompts are read as plain lines"
            ));
            None
        }
    }
}
