//! `tau chat`: the line chat in the terminal (and `tau demo`, which is the same chat with
//! a replay model).

use std::io::IsTerminal;
use std::sync::Arc;

use tau_agent::{Model, SessionId, SessionRepository};
use tau_core::{AgentParts, AuditEvent, EventBus, build_agent};
use tau_terminal::{Console, Input, TerminalApprover, start_stdin, texts};

use crate::audit::AuditLog;
use crate::context::{Context, Tools};
use crate::lock::SessionLock;
use crate::signals::Interrupts;

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

/// A new session id: the start time and a few random characters.
pub(crate) fn new_session_id() -> anyhow::Result<SessionId> {
    let now = jiff::ZonedDateTime::now();
    let nanos = jiff::Timestamp::now().subsec_nanosecond().unsigned_abs();
    let suffix =
        std::hash::BuildHasher::hash_one(&std::collections::hash_map::RandomState::new(), nanos)
            % 0x10000;
    let text = format!("{}-{suffix:04x}", now.strftime("%Y%m%d-%H%M%S"));
    Ok(SessionId::parse(&text)?)
}

/// A terminal chat's session, once opened.
pub(crate) struct OpenSession {
    /// Held while the chat runs: no other tau opens the session meanwhile.
    pub lock: SessionLock,
    /// Messages the session already holds.
    pub stored: u64,
    /// The model; a replay model goes on after the replies the session already holds.
    pub model: Arc<dyn Model>,
    /// The bus, with the session's audit log subscribed and the start-up errors on it.
    pub events: EventBus,
}

/// What `tau chat` and `tau tui` do once they know their session.
pub(crate) fn open_session(
    ctx: &Context,
    repository: &dyn SessionRepository,
    id: &SessionId,
    model: Arc<dyn Model>,
    startup_errors: &[AuditEvent],
) -> anyhow::Result<OpenSession> {
    let lock = SessionLock::acquire(&ctx.home, id)?;
    let stored = repository.message_count(id)?;
    let model = model
        .for_session(&repository.messages(id, 0)?)
        .unwrap_or(model);
    let events = ctx.events.clone();
    events.subscribe(Arc::new(AuditLog::open(
        &ctx.home.audit_log(),
        id.as_str(),
        ctx.state()?,
    )?));
    for event in startup_errors {
        events.emit(event);
    }
    Ok(OpenSession {
        lock,
        stored,
        model,
        events,
    })
}

pub(crate) async fn run(ctx: &Context, chat: Chat) -> anyhow::Result<()> {
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
    let repository: Arc<dyn SessionRepository> = Arc::new(ctx.state()?);
    let id = match session {
        Some(id) => id,
        None => new_session_id()?,
    };
    let OpenSession {
        lock: _lock,
        stored,
        model,
        events,
    } = open_session(ctx, repository.as_ref(), &id, model, &startup_errors)?;

    let stdout_tty = std::io::stdout().is_terminal();
    let color = stdout_tty && (ctx.env)("NO_COLOR").is_none_or(|v| v.is_empty());
    let console = Console::new(Box::new(std::io::stdout()), stdout_tty, color, language);
    let Input {
        mut prompts,
        questions,
        question_screen,
        stdin_is_terminal: stdin_tty,
    } = start_stdin(answers_from_stdin, stdout_tty);
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
    })
    .await?;
    let t = texts(language);
    if stored == 0 {
        console.print(&format!("{} {id}\n", t.new_session));
    } else {
        console.print(&format!("{} {id} ({stored})\n", t.resumed_session));
    }

    let sink = console.sink();
    let mut interrupts = Interrupts::listen()?;
    loop {
        let prompt = match &mut scripted {
            Some(queue) => queue.pop_front(),
            None => {
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
                        return Ok(());
                    }
                    cancelled = true;
                    cancel.cancel();
                    questions.close();
                }
            }
        };
        if let Err(error) = result
            && error.notice.is_none()
        {
            console.notice(&error.to_string());
        }
    }
    Ok(())
}
