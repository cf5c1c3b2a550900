//! Sending a push: when a question waits for a person, each of their subscribed devices
//! gets one push whose encrypted payload (RFC 8291, `aes128gcm`) says only that something
//! waits and where: `{"type":"waiting","url":"/#q=<approval id>"}`. No tool, no
//! arguments, no device name: a lock screen shows nothing of the call, and opening the
//! push fetches the card over the authenticated API. `TTL` is the question's remaining
//! time (a push delivered after it would point at nothing), `Urgency: high`.
//!
//! Off the turn's path: the pump reads the hub's events and sends from a task of its own,
//! so a slow or failing push service never holds a turn. A 404 or 410 from the push
//! service means the device is gone: its subscription is removed. Anything else is logged.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use jiff::Timestamp;
use serde::Serialize;
use tau_protocol::ApprovalId;
use tau_state::PushSubscription;

use super::WebPush;
use super::subscription::{Target, target};

/// How long one push may take, connection included.
pub(crate) const SEND_TIMEOUT: Duration = Duration::from_secs(10);
/// The `TTL` of a question that is never withdrawn: a day (push services keep a push at
/// most about that long anyway).
const TTL_WITHOUT_DEADLINE: u64 = 24 * 60 * 60;
/// How many questions' ids are remembered as pushed, so one shown again is not pushed
/// again.
const REMEMBERED: usize = 512;

/// The whole payload of a push: a locator, nothing of the question.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub(crate) enum Payload {
    /// A question waits; `url` is where TauBar shows it.
    Waiting { url: String },
}

impl Payload {
    pub(crate) fn waiting(id: &ApprovalId) -> Self {
        Self::Waiting {
            url: format!("/#q={}", id.as_str()),
        }
    }
}

/// What the push service said of one push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sent {
    Delivered,
    /// 404 or 410: the device unsubscribed or the subscription expired.
    Gone,
    /// Any other answer, or none.
    Failed,
}

/// The ids of the questions already pushed, the oldest forgotten first.
#[derive(Default)]
pub(crate) struct Pushed {
    order: VecDeque<String>,
    ids: HashSet<String>,
}

impl Pushed {
    /// True the first time `id` is seen.
    pub(crate) fn first(&mut self, id: &ApprovalId) -> bool {
        let id = id.as_str().to_owned();
        if !self.ids.insert(id.clone()) {
            return false;
        }
        self.order.push_back(id);
        if self.order.len() > REMEMBERED
            && let Some(oldest) = self.order.pop_front()
        {
            self.ids.remove(&oldest);
        }
        true
    }
}

/// The seconds a question with `deadline` still waits at `now` (0 once it passed).
pub(crate) fn ttl(deadline: Option<Timestamp>, now: Timestamp) -> u64 {
    match deadline {
        Some(deadline) => {
            let seconds = deadline.as_second().saturating_sub(now.as_second());
            u64::try_from(seconds).unwrap_or(0)
        }
        None => TTL_WITHOUT_DEADLINE,
    }
}

/// The origin of `endpoint` (`https://host[:port]`): the VAPID token's audience.
fn audience(endpoint: &reqwest::Url) -> String {
    endpoint.origin().ascii_serialization()
}

impl WebPush {
    /// Pushes "a question waits" for question `id` to every device of each of `people`
    /// (those who may answer it), once per question however often it is shown. Returns at
    /// once; the pushes go on in a task.
    pub(crate) fn question_waits(
        self: &Arc<Self>,
        people: Vec<String>,
        id: &ApprovalId,
        deadline: Option<Timestamp>,
    ) {
        let first = self
            .pushed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .first(id);
        if !first {
            return;
        }
        let push = Arc::clone(self);
        let payload = Payload::waiting(id);
        tokio::spawn(async move {
            let devices = {
                let subscriptions = push.subscriptions.clone();
                tokio::task::spawn_blocking(move || {
                    let mut devices = Vec::new();
                    for person in &people {
                        devices.extend(subscriptions.of_person(person)?);
                    }
                    Ok::<_, tau_state::StateError>(devices)
                })
                .await
            };
            let devices = match devices {
                Ok(Ok(devices)) => devices,
                Ok(Err(error)) => {
                    tracing::warn!(%error, "push: cannot read the subscriptions");
                    return;
                }
                Err(error) => {
                    tracing::warn!(%error, "push: cannot read the subscriptions");
                    return;
                }
            };
            for device in devices {
                push.send_to(&device, &payload, ttl(deadline, Timestamp::now()))
                    .await;
            }
        });
    }

    /// One push to one device; a gone device's subscription is removed.
    async fn send_to(&self, device: &PushSubscription, payload: &Payload, ttl: u64) {
        let sent = match target(&device.endpoint, &device.p256dh, &device.auth) {
            Ok(target) => self.send(&target, payload, ttl).await,
            Err(error) => {
                tracing::warn!(%error, "push: a kept subscription no longer reads");
                Sent::Failed
            }
        };
        if sent == Sent::Gone {
            let subscriptions = self.subscriptions.clone();
            let endpoint = device.endpoint.clone();
            match tokio::task::spawn_blocking(move || subscriptions.forget_endpoint(&endpoint))
                .await
            {
                Ok(Ok(_)) => tracing::info!("push: a device is gone; its subscription is removed"),
                Ok(Err(error)) => tracing::warn!(%error, "push: cannot remove a gone subscription"),
                Err(error) => tracing::warn!(%error, "push: cannot remove a gone subscription"),
            }
        }
    }

    /// Encrypts `payload` for `target` and posts it to its push service.
    pub(crate) async fn send(&self, target: &Target, payload: &Payload, ttl: u64) -> Sent {
        let body = match serde_json::to_vec(payload) {
            Ok(body) => body,
            Err(error) => {
                tracing::warn!(%error, "push: cannot write the payload");
                return Sent::Failed;
            }
        };
        let body = match web_push_native::encrypt(body, &target.public_key, &target.auth) {
            Ok(body) => body,
            Err(error) => {
                tracing::warn!(%error, "push: cannot encrypt");
                return Sent::Failed;
            }
        };
        let expires = Timestamp::now().as_second() + super::vapid::TOKEN_SECONDS;
        let authorization =
            self.key
                .authorization(&audience(&target.endpoint), expires, &self.contact);
        let response = self
            .client
            .post(target.endpoint.clone())
            .header("TTL", ttl.to_string())
            .header("Urgency", "high")
            .header(reqwest::header::CONTENT_ENCODING, "aes128gcm")
            .header(reqwest::header::CONTENT_TYPE, "application/octet-stream")
            .header(reqwest::header::AUTHORIZATION, authorization)
            .body(body)
            .send()
            .await;
        // The endpoint names the device: it is never logged.
        match response {
            Ok(response) if response.status().is_success() => Sent::Delivered,
            Ok(response) if matches!(response.status().as_u16(), 404 | 410) => Sent::Gone,
            Ok(response) => {
                tracing::warn!(
                    status = response.status().as_u16(),
                    "push: the push service refused a push"
                );
                Sent::Failed
            }
            Err(error) => {
                tracing::warn!(error = %error.without_url(), "push: the push service could not be reached");
                Sent::Failed
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_payload_is_a_locator_only() {
        let id = ApprovalId::parse("ap_a1b2c3").unwrap();
        assert_eq!(
            serde_json::to_string(&Payload::waiting(&id)).unwrap(),
            r#"{"type":"waiting","url":"/#q=ap_a1b2c3"}"#
        );
    }

    #[test]
    fn ttl_is_the_time_left() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let later: Timestamp = "2026-01-01T00:05:00Z".parse().unwrap();
        assert_eq!(ttl(Some(later), now), 300);
        assert_eq!(ttl(Some(now), later), 0);
        assert_eq!(ttl(None, now), TTL_WITHOUT_DEADLINE);
    }

    #[test]
    fn each_question_is_pushed_once() {
        let mut pushed = Pushed::default();
        let first = ApprovalId::parse("ap_q0").unwrap();
        assert!(pushed.first(&first));
        assert!(!pushed.first(&first));
        for n in 1..=REMEMBERED {
            assert!(pushed.first(&ApprovalId::parse(&format!("ap_q{n}")).unwrap()));
        }
        // Long forgotten: the oldest went first.
        assert!(pushed.first(&first));
    }
}
