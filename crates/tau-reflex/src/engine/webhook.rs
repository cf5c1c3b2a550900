//! Webhooks: the host's HTTP listener hands `POST /hooks/NAME` here in two steps. First,
//! from the request head alone, the routine and its secret (`Authorization: Bearer
//! <secret>`) are checked; only a call that passes gets a [`WebhookCall`], which then
//! takes the body. So a sender without the secret never makes the host read a body. A
//! body the routine does not expect is refused. The body never reaches the action: a
//! webhook only says *when*, the routine says *what*, so its exemption stays exact.

use std::sync::Arc;

use super::{Engine, Fired, Inner, REFUSED_SECRET, Slot};
use crate::trigger::Trigger;

/// The largest body a webhook accepts.
pub const MAX_WEBHOOK_BODY: usize = 64 * 1024;

/// The reply to a call for a routine whose `ask` channel another hub serves now.
const ASKED_ELSEWHERE: &str = "this hub cannot ask on the routine's channel now: \
     another hub sharing the store serves it; send the call to that hub";

/// The HTTP status and a one-line text for the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookReply {
    pub status: u16,
    pub text: String,
}

fn reply(status: u16, text: impl Into<String>) -> WebhookReply {
    WebhookReply {
        status,
        text: text.into(),
    }
}

/// A webhook call whose routine and secret were right; its body comes next.
pub struct WebhookCall {
    inner: Arc<Inner>,
    slot: Arc<Slot>,
}

impl Engine {
    /// Checks `POST /hooks/{name}` from its head: the routine exists, is enabled, is a
    /// webhook routine, and `authorization` carries its secret. `sender` names the caller
    /// (its address) in the log.
    pub fn webhook(
        &self,
        name: &str,
        authorization: Option<&str>,
        sender: &str,
    ) -> Result<WebhookCall, WebhookReply> {
        let Some(slot) = self.inner.slot(name) else {
            return Err(reply(404, "no such webhook"));
        };
        let Trigger::Webhook { secret, .. } = &slot.routine.trigger else {
            return Err(reply(404, "no such webhook"));
        };
        let offered = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .unwrap_or("");
        if !secret.matches(offered) {
            self.inner.refused_webhook(name, sender);
            return Err(reply(401, REFUSED_SECRET));
        }
        Ok(WebhookCall {
            inner: Arc::clone(&self.inner),
            slot,
        })
    }
}

impl WebhookCall {
    /// The call's body: refused unless it is what the routine expects; else the routine
    /// runs (or says why not).
    pub fn deliver(self, body: &[u8]) -> WebhookReply {
        let name = self.slot.routine.name();
        if body.len() > MAX_WEBHOOK_BODY {
            tracing::warn!(
                routine = name,
                bytes = body.len(),
                "webhook refused: body too large"
            );
            return reply(
                413,
                format!("the body is larger than {MAX_WEBHOOK_BODY} bytes"),
            );
        }
        if let Trigger::Webhook {
            payload: Some(expected),
            ..
        } = &self.slot.routine.trigger
            && expected.as_bytes() != body
        {
            tracing::warn!(
                routine = name,
                "webhook refused: not the body the routine expects"
            );
            return reply(400, "the body is not what this routine expects");
        }
        if !self.inner.can_ask_now(&self.slot.routine) {
            // Its questions would reach nobody from here: another hub sharing the store
            // serves its channel (polls the bot). The caller can send it there.
            tracing::info!(
                routine = name,
                "webhook refused: another hub asks on its channel"
            );
            return reply(503, ASKED_ELSEWHERE);
        }
        match self.inner.fire(&self.slot, "webhook".to_owned()) {
            Fired::Started => reply(202, "started"),
            Fired::Skipped(why) => reply(409, why),
        }
    }
}
