//! Webhooks: the host's HTTP listener hands `POST /hooks/NAME` here with the request's
//! `Authorization` header and body. The secret must come as `Bearer <secret>`; a body the
//! routine does not expect is refused. The body never reaches the action: a webhook only
//! says *when*, the routine says *what*, so its exemption stays exact.

use super::{Engine, Fired};
use crate::trigger::Trigger;

/// The largest body a webhook accepts.
pub const MAX_WEBHOOK_BODY: usize = 64 * 1024;

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

impl Engine {
    /// Handles `POST /hooks/{name}`.
    pub fn webhook(&self, name: &str, authorization: Option<&str>, body: &[u8]) -> WebhookReply {
        let Some(slot) = self.inner.slot(name) else {
            return reply(404, "no such webhook");
        };
        let Trigger::Webhook { secret, payload } = &slot.routine.trigger else {
            return reply(404, "no such webhook");
        };
        let offered = authorization
            .and_then(|h| h.strip_prefix("Bearer "))
            .unwrap_or("");
        if !secret.matches(offered) {
            tracing::warn!(routine = name, "webhook refused: wrong or missing secret");
            return reply(401, "wrong or missing secret");
        }
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
        if let Some(expected) = payload
            && expected.as_bytes() != body
        {
            tracing::warn!(
                routine = name,
                "webhook refused: not the body the routine expects"
            );
            return reply(400, "the body is not what this routine expects");
        }
        match self.inner.fire(&slot, "webhook".to_owned()) {
            Fired::Started => reply(202, "started"),
            Fired::Skipped(why) => reply(409, why),
        }
    }
}
