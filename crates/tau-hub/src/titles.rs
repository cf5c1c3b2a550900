//! What a channel does to its conversations besides talking in them: names them (a
//! person's title, else the first prompt's), finds them (title or message text) and
//! deletes them. A conversation in use (a turn runs or waits, a question waits) is not
//! deleted: its turn and its questions would lose their home.

use tau_protocol::SessionId;
use tau_state::ApprovalState;

use crate::hub::Hub;
use crate::{HubError, InUse, InvalidTitle};

impl Hub {
    /// Names a conversation of `channel` (`None`: back to its first prompt's title).
    pub fn rename_conversation(
        &self,
        channel: &str,
        session: &SessionId,
        title: Option<&str>,
    ) -> Result<(), HubError> {
        self.owned(channel, session)?;
        match self.inner.state.sessions().rename_session(session, title) {
            Ok(true) => Ok(()),
            Ok(false) => Err(HubError::UnknownSession(session.to_string())),
            Err(tau_state::StateError::Title(why)) => Err(HubError::Title(InvalidTitle {
                title: title.map(str::to_owned),
                why,
            })),
            Err(error) => Err(error.into()),
        }
    }

    /// The conversations of `channel` whose title or message text holds `text`, most
    /// recently updated first.
    pub fn search_conversations(
        &self,
        channel: &str,
        text: &str,
    ) -> Result<Vec<SessionId>, HubError> {
        let found = self.inner.state.sessions().search_sessions(text)?;
        let mut mine = Vec::with_capacity(found.len());
        for session in found {
            if self
                .conversation_of(&session)?
                .is_some_and(|c| c.channel == channel)
            {
                mine.push(session);
            }
        }
        Ok(mine)
    }

    /// Deletes a conversation of `channel` with everything it holds, and closes it here
    /// (its session lock goes with it). Refused while a turn runs or waits in it, or one
    /// of its questions waits for an answer.
    pub async fn delete_conversation(
        &self,
        channel: &str,
        session: &SessionId,
    ) -> Result<(), HubError> {
        self.owned(channel, session)?;
        // No turn opens the session while it goes.
        let _opening = self.inner.opening.lock().await;
        // A waiting question first: its turn counts as running until it paused, and the
        // question is what a person can act on.
        let waiting = self
            .inner
            .state
            .approvals()
            .approvals(Some(ApprovalState::Pending))?
            .iter()
            .any(|row| &row.session == session);
        if waiting {
            return Err(InUse::QuestionWaits.into());
        }
        if self.is_busy(session) {
            return Err(InUse::TurnRuns.into());
        }
        // Its session lock goes with its slot, before the store lets the session go.
        self.inner.live.forget(session);
        if !self
            .inner
            .state
            .conversations()
            .delete_conversation(session)?
        {
            return Err(HubError::UnknownSession(session.to_string()));
        }
        self.inner.state.people().forget_conversation(session)?;
        tracing::info!(%session, channel, "conversation deleted");
        Ok(())
    }
}
