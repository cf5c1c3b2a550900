//! The [`SessionFactory`] `tau serve` hands the hub: each conversation's agent built as
//! `tau chat` builds its own, over the session stored in `state.db`, with stored
//! questions, the session's lock in the home and its events in the audit log. Whose
//! grants a conversation has is the channel's to say; the binary hands that rule in.

use std::sync::Arc;

use async_trait::async_trait;
use tau_agent::{Message, Model, SessionRepository, SharedTool};
use tau_audit::{AuditGrants, AuditHistory, AuditLog, SessionAudit};
use tau_core::{
    AgentParts, AutoRejectApprover, CoreConfig, EventBus, StoredSessions, ToolCatalog,
    approval::DurableQuestions, build_agent,
};
use tau_home::{Home, SessionLock};
use tau_protocol::SessionId;
use tau_state::StateDb;

use crate::{OpenError, Opened, SessionFactory};

/// Whose grants a conversation's gate uses and makes ("yes, and allow this again"):
/// `Ok(None)` when it has none (every call there is asked), `Ok(Some(None))` for the
/// channel's one person, `Ok(Some(Some(person)))` for one of several.
pub type GrantPerson =
    dyn Fn(&SessionId, &str) -> Result<Option<Option<String>>, OpenError> + Send + Sync;

/// The tools one conversation has beside the shared catalog: those that act for its
/// person (a routine made there is theirs).
pub type SessionTools = dyn Fn(&SessionId) -> Result<Vec<SharedTool>, OpenError> + Send + Sync;

/// Builds each conversation's agent as `tau chat` builds its own, with stored questions.
pub struct StoredFactory {
    pub home: Home,
    pub model: Arc<dyn Model>,
    pub catalog: ToolCatalog,
    pub config: CoreConfig,
    pub sessions: StateDb,
    pub audit: Arc<AuditLog>,
    /// A person's approvals read back from the log, shared by every conversation.
    pub history: Arc<AuditHistory>,
    /// What the log records of grants, read on as it grows, shared likewise.
    pub ledger: Arc<AuditGrants>,
    /// Whose grants a conversation of a channel has (the channel's own rule).
    pub grant_person: Box<GrantPerson>,
    /// Each conversation's own tools, added to `catalog`.
    pub session_tools: Box<SessionTools>,
    /// Which calls take a passkey: no grant covers them while anyone has one.
    pub passkey_step: crate::PasskeyStep,
}

/// The model one stored conversation talks to. The one place a per-session model (a
/// `replay:` script that continues after the replies the session holds) plugs in.
fn model_for_session(model: &Arc<dyn Model>, stored: &[Message]) -> Arc<dyn Model> {
    model
        .for_session(stored)
        .unwrap_or_else(|| Arc::clone(model))
}

#[async_trait]
impl SessionFactory for StoredFactory {
    fn recorded_answers(&self) -> Result<Vec<tau_state::RecordedAnswer>, OpenError> {
        tau_audit::recorded_answers(&self.home.audit_log()).map_err(OpenError::AuditLog)
    }

    fn grant_ledger(&self) -> Option<Arc<dyn tau_core::GrantLedger>> {
        Some(Arc::clone(&self.ledger) as _)
    }

    fn open_elsewhere(&self, session: &SessionId) -> bool {
        // Taken and let go at once: a tau that holds it may still be running its call.
        match SessionLock::try_acquire(&self.home, session) {
            Ok(Some(_)) => false,
            Ok(None) => true,
            Err(error) => {
                tracing::warn!(%session, error = %format!("{error:#}"), "cannot tell whether another tau has the session open");
                true
            }
        }
    }

    fn events(&self, session: &SessionId) -> EventBus {
        let bus = EventBus::new();
        bus.subscribe(Arc::new(SessionAudit {
            log: Arc::clone(&self.audit),
            session: session.to_string(),
        }));
        bus
    }

    async fn open(
        &self,
        session: &SessionId,
        durable: DurableQuestions,
        events: EventBus,
    ) -> Result<Opened, OpenError> {
        let lock =
            SessionLock::acquire(&self.home, session).map_err(|e| OpenError::Locked(e.into()))?;
        let repository = StoredSessions::new(self.sessions.sessions());
        let stored = repository.messages(session, 0)?;
        let grants =
            (self.grant_person)(session, &durable.channel)?.map(|person| tau_core::GateGrants {
                store: self.sessions.grants(),
                conversations: self.sessions.conversations(),
                session: session.clone(),
                person,
                hours: self.config.approval.grant_hours,
                history: Some(Arc::clone(&self.history) as _),
                ledger: Arc::clone(&self.ledger) as _,
                step_up: Some(self.passkey_step.for_gate(self.sessions.clone())),
            });
        let mut catalog = self.catalog.clone();
        catalog.extend((self.session_tools)(session)?)?;
        let agent = build_agent(AgentParts {
            config: self.config.clone(),
            model: model_for_session(&self.model, &stored),
            catalog,
            // Never asked: a hub conversation's gate stores its questions.
            approver: Arc::new(AutoRejectApprover),
            hooks: Vec::new(),
            plugins: Vec::new(),
            session: Some((
                Arc::new(repository) as Arc<dyn SessionRepository>,
                session.clone(),
            )),
            events,
            durable: Some(durable),
            grants,
            // Its stored questions record what they let through.
            dispatches: None,
        })
        .await?;
        Ok(Opened {
            agent,
            guard: Box::new(lock),
        })
    }
}
