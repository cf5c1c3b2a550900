//! A press on a question's or a grant's button: only an owner's counts, in the chat the
//! question was shown in; it answers through the hub's port (the first answer wins) or
//! revokes the presser's own grant, and the toast says what became of it.

use jiff::Timestamp;
use tau_core::flood::Tally;
use tau_protocol::{DecidedBy, GrantId, GrantScope};
use tau_state::{Answered, ApprovalState, Revoked};

use super::{CHANNEL, TelegramChannel};
use crate::auth::Verdict;
use crate::callback::{Action, ButtonData};
use crate::chat::ChatCommand;
use crate::hub::{PressRefusal, RefusedPress, Reply, chat_of};
use crate::question::outcome;
use crate::texts::texts;
use crate::updates::Press;

impl TelegramChannel {
    pub(super) async fn press(&self, press: Press) {
        let Press {
            id,
            from,
            from_name,
            chat,
            message_id,
            data,
        } = press;
        let Some(callback) = id else {
            tracing::warn!(user = ?from, "telegram: a press without an id was ignored");
            return;
        };
        let t = texts(self.language);
        let button = data.as_deref().and_then(ButtonData::parse);
        let refuse = |reason: PressRefusal| {
            if self.refused.event((from, chat, reason)) == Tally::Counted {
                return;
            }
            tracing::warn!(user = ?from, chat = ?chat, reason = reason.as_str(), "telegram: a press was refused");
            self.hub.refused_press(&RefusedPress {
                approval_id: button
                    .as_ref()
                    .filter(|b| b.action != Action::Revoke)
                    .map(|b| b.id.clone()),
                user: from,
                chat,
                reason,
                count: None,
            });
        };
        // 1. a stranger, or a chat not allowed: "not yours", audited
        let verdict = self.access.check(from, chat);
        if verdict != Verdict::Owner {
            refuse(match verdict {
                Verdict::ChatNotAllowed => PressRefusal::ChatNotAllowed,
                Verdict::Stranger | Verdict::Owner => PressRefusal::NotAnOwner,
            });
            self.answer_press(&callback, t.not_yours).await;
            return;
        }
        let (Some(chat), Some(from)) = (chat, from) else {
            return;
        };
        self.parts.names.learn(from, from_name.as_deref());
        // 2. data tau did not write
        let Some(button) = button.clone() else {
            refuse(PressRefusal::Forged);
            self.answer_press(&callback, t.invalid_button).await;
            return;
        };
        // 3. a Revoke: the presser's own grant, wherever the list was sent
        if button.action == Action::Revoke {
            self.revoke(&callback, chat, from, &button.id, &refuse)
                .await;
            return;
        }
        // 4. no such question
        let question = match self.hub.question(&button.id).await {
            Ok(Some(question)) => question,
            Ok(None) => {
                refuse(PressRefusal::Forged);
                self.answer_press(&callback, t.gone).await;
                return;
            }
            Err(error) => {
                tracing::warn!("telegram: {error}");
                self.answer_press(&callback, &format!("{} {error}", t.not_taken))
                    .await;
                return;
            }
        };
        // 5. a question of another chat's conversation, or of another channel
        if question.row.channel != CHANNEL
            || question.conversation.as_deref().and_then(chat_of) != Some(chat)
        {
            refuse(PressRefusal::OtherConversation);
            self.answer_press(&callback, t.not_yours).await;
            return;
        }
        let id = question.row.id.to_string();
        if let (Ok(None), Some(message_id)) = (self.store.shown(&id), message_id) {
            // Shown before this store knew it: the press says where.
            let _ = self.store.remember(&id, chat, message_id);
        }
        // 6. "Show all" shows; Approve and Reject decide, if it is still open
        let reply = match button.action {
            Action::ShowAll => {
                self.to_chat(
                    chat,
                    ChatCommand::ShowAll(Box::new(question.row.question())),
                );
                self.answer_press(&callback, "").await;
                return;
            }
            Action::Approve => Reply::Approve,
            Action::ApproveAlways => Reply::ApproveAlways(GrantScope::Conversation),
            Action::ApproveAlwaysEverywhere => Reply::ApproveAlways(GrantScope::Channel),
            Action::Confirm(number) => Reply::Confirm(number.to_string()),
            Action::Reject => Reply::Reject,
            // Taken above.
            Action::Revoke => return,
        };
        // 7. past its deadline: expired, whether or not the hub has marked it yet
        if question.row.state == ApprovalState::Pending && question.row.deadline <= Timestamp::now()
        {
            let mut expired = question.row;
            expired.state = ApprovalState::Expired;
            expired.decided_by = Some(DecidedBy::Timeout);
            expired.decided_at = Some(expired.deadline);
            self.answer_press(
                &callback,
                &outcome(&expired, self.language, &self.zone, &self.parts.names),
            )
            .await;
            return;
        }
        let reply = match self.hub.answer(&id, reply, &from.to_string()).await {
            Ok(Answered::Decided(row) | Answered::AlreadyDecided(row)) => {
                tracing::info!(approval_id = %id, user = from, state = row.state.as_str(), "telegram: a question was answered");
                outcome(&row, self.language, &self.zone, &self.parts.names)
            }
            Ok(Answered::StepMissing(_)) => {
                // Not a yes: the question stays open, with its buttons.
                refuse(PressRefusal::StepMissing);
                self.answer_press(&callback, t.step_missing).await;
                return;
            }
            Ok(Answered::NotFound) => t.gone.to_owned(),
            // Nothing waited for it: not used, and the question closed (a notice in the
            // chat says so too).
            Ok(Answered::NotUsed(row)) => {
                tracing::warn!(approval_id = %id, user = from, "telegram: an answer nothing waited for was not used");
                tau_core::Notice::AnswerNotUsed { tool: row.tool }.text(self.language)
            }
            // Not this person's to answer: refused and recorded by the hub; the question
            // stays open for the one it waits for.
            Err(crate::hub::HubError::Hub(tau_hub::HubError::NotYours(_))) => {
                self.answer_press(&callback, t.not_yours).await;
                return;
            }
            Err(error) => {
                tracing::warn!(approval_id = %id, "telegram: {error}");
                format!("{} {error}", t.not_taken)
            }
        };
        self.answer_press(&callback, &reply).await;
        self.close_everywhere(&id);
    }

    /// A Revoke press by an owner: only their own grant is revoked; the toast and a line
    /// in the chat say what became of it.
    async fn revoke(
        &self,
        callback: &str,
        chat: i64,
        from: i64,
        id: &str,
        refuse: &impl Fn(PressRefusal),
    ) {
        let t = texts(self.language);
        let Ok(grant) = GrantId::parse(id) else {
            refuse(PressRefusal::Forged);
            self.answer_press(callback, t.invalid_button).await;
            return;
        };
        match self.hub.revoke(&grant, &from.to_string()).await {
            Ok(Revoked::Revoked(grant)) => {
                tracing::info!(grant = %grant.id, user = from, "telegram: a grant was revoked");
                let text = t.revoked.replace("{tool}", &grant.tool);
                self.answer_press(callback, &text).await;
                self.say(chat, &text);
            }
            Ok(Revoked::AlreadyRevoked(_)) => {
                self.answer_press(callback, t.revoked_already).await;
            }
            Ok(Revoked::NotFound) => {
                refuse(PressRefusal::NotYourGrant);
                self.answer_press(callback, t.grant_not_yours).await;
            }
            Err(error) => {
                tracing::warn!(grant = %grant, "telegram: {error}");
                self.answer_press(callback, &format!("{} {error}", t.not_taken))
                    .await;
            }
        }
    }

    async fn answer_press(&self, callback: &str, text: &str) {
        // Telegram shows at most 200 characters.
        let text: String = tau_core::display(text).chars().take(200).collect();
        if let Err(error) = self.api.answer_callback(callback, &text).await {
            tracing::warn!("telegram: {error}");
        }
    }
}
