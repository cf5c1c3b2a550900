//! Grants: a person's "yes, and allow exactly this again", as the channels, the audit log
//! and the store name it. What a grant covers is tau's to decide (the gate offers it on
//! the question); a person only picks its scope, its hours and, if they like, a number of
//! uses.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ids::{ApprovalId, SessionId};
use crate::tier::Tier;
use crate::vocabulary::DecidedBy;

/// Hours a grant lasts when the person does not say (`[approval] grant_hours`'s default).
pub const DEFAULT_GRANT_HOURS: u32 = 24;

/// The longest a grant may last: 30 days.
pub const MAX_GRANT_HOURS: u32 = 30 * 24;

/// The most uses a grant may be limited to (a larger limit is no limit worth stating).
pub const MAX_GRANT_USES: u32 = 10_000;

/// The id of a grant: `gr_` and 1 to 64 lowercase letters and digits (tau makes them from
/// 128 random bits). A revoke names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct GrantId(String);

/// A grant id that is not one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{id:?} is not a grant id")]
pub struct InvalidGrantId {
    pub id: String,
}

impl GrantId {
    /// What every grant id starts with.
    pub const PREFIX: &'static str = "gr_";

    pub fn parse(text: &str) -> Result<Self, InvalidGrantId> {
        let valid = text.strip_prefix(Self::PREFIX).is_some_and(|rest| {
            (1..=64).contains(&rest.len())
                && rest
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
        if valid {
            Ok(Self(text.to_owned()))
        } else {
            Err(InvalidGrantId {
                id: text.to_owned(),
            })
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for GrantId {
    type Error = InvalidGrantId;
    fn try_from(value: String) -> Result<Self, Self::Error> {
        Self::parse(&value)
    }
}

impl From<GrantId> for String {
    fn from(id: GrantId) -> Self {
        id.0
    }
}

impl fmt::Display for GrantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Where a grant applies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GrantScope {
    /// Only the conversation whose question made it (the default).
    #[default]
    Conversation,
    /// Every conversation of the person who made it, on the channel it was made on.
    Channel,
}

impl GrantScope {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Conversation => "conversation",
            Self::Channel => "channel",
        }
    }

    pub fn parse(text: &str) -> Option<Self> {
        [Self::Conversation, Self::Channel]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// What a person asks for when they answer "yes, and allow this again": the scope, the
/// hours and a number of uses. Nothing here can widen what the grant covers (that is the
/// question's call, exactly).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GrantRequest {
    #[serde(default)]
    pub scope: GrantScope,
    /// `None`: the offer's hours (`[approval] grant_hours`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hours: Option<u32>,
    /// `None`: as many uses as come before it expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
}

/// A grant request outside what tau allows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrantRequestError {
    #[error("a grant lasts 1 to {MAX_GRANT_HOURS} hours (30 days), got {0}")]
    Hours(u32),
    #[error("a grant's uses are 1 to {MAX_GRANT_USES}, got {0}")]
    Uses(u32),
}

impl GrantRequest {
    /// A grant for this conversation, for the offer's hours, without a limit of uses.
    pub fn conversation() -> Self {
        Self::default()
    }

    /// A grant for every conversation of this person on this channel.
    pub fn channel() -> Self {
        Self {
            scope: GrantScope::Channel,
            ..Self::default()
        }
    }

    /// The hours it lasts, `default_hours` when none were asked for; refused outside
    /// 1 to [`MAX_GRANT_HOURS`], and uses outside 1 to [`MAX_GRANT_USES`].
    pub fn checked_hours(&self, default_hours: u32) -> Result<u32, GrantRequestError> {
        if let Some(uses) = self.max_uses
            && !(1..=MAX_GRANT_USES).contains(&uses)
        {
            return Err(GrantRequestError::Uses(uses));
        }
        let hours = self.hours.unwrap_or(default_hours);
        if (1..=MAX_GRANT_HOURS).contains(&hours) {
            Ok(hours)
        } else {
            Err(GrantRequestError::Hours(hours))
        }
    }
}

/// What a grant made by answering this question would cover, as the gate offers it. It is
/// tau's: the tool, its tier and input schema (by SHA-256) and the exact arguments (the
/// SHA-256 of their canonical JSON). The question's card states it in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantOffer {
    /// SHA-256 of the tool's input schema (canonical JSON), lowercase hex.
    pub schema_sha256: String,
    /// SHA-256 of the arguments' canonical JSON, lowercase hex.
    pub arguments_sha256: String,
    /// SHA-256 of tau's card for the call (canonical JSON), before the grant's own words.
    pub card_sha256: String,
    /// How long it lasts unless the person says otherwise.
    pub hours: u32,
    /// The tool runs what the workspace holds (a script, a module, a Makefile): a grant
    /// pins the workspace's files and covers the call only while they are unchanged but
    /// by the granted calls themselves.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pins_workspace: bool,
    /// Set when the person keeps approving exactly this call: the card suggests the grant
    /// (tau never makes one by itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suggestion: Option<GrantSuggestion>,
}

/// How many days back approvals of the same call are counted for a suggestion.
pub const SUGGESTION_DAYS: u32 = 7;

/// How many approvals of the same call in [`SUGGESTION_DAYS`] make the card suggest a
/// grant.
pub const SUGGESTION_APPROVALS: u32 = 3;

/// "You keep approving this": measured from the audit log, shown on the card, never
/// acted on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantSuggestion {
    /// A person's yes to exactly this call (tool and arguments) in the last
    /// [`SUGGESTION_DAYS`] days.
    pub approved: u32,
    /// Those approvals came at about the same time of day: a routine could make the call
    /// on a schedule instead.
    pub regular: bool,
}

impl GrantSuggestion {
    /// The card's words (English; a channel with other languages has its own).
    pub fn text(&self) -> String {
        let mut text = format!(
            "You approved exactly this call {} times in the last {SUGGESTION_DAYS} days: \
             allowing it again would spare you this question.",
            self.approved
        );
        if self.regular {
            text.push_str(
                " It came at about the same time each day: a routine could make it on a \
                 schedule (tau routines).",
            );
        }
        text
    }
}

impl GrantOffer {
    /// What a grant made from this question would cover, in tau's words, as every channel
    /// states it on the card before the person can make it. `scope` is the one the
    /// channel's answer makes.
    pub fn covers_text(&self, tool: &str, scope: GrantScope) -> String {
        let place = match scope {
            GrantScope::Conversation => "in this conversation",
            GrantScope::Channel => "in every conversation of yours on this channel",
        };
        let mut text = format!(
            "A grant covers exactly this call, {place}, for {hours} h: the tool {tool} with \
             the same tier and input schema and exactly these arguments (no prefix, no \
             pattern). Any other call is asked again.",
            hours = self.hours
        );
        if self.pins_workspace {
            text.push(' ');
            text.push_str(PINS_WORKSPACE_TEXT);
        }
        text
    }
}

impl GrantOffer {
    /// The card's one line about a grant (English), read at a glance: what "allow again"
    /// lets through and for how long. [`GrantOffer::covers_text`] is the whole rule, which
    /// a card keeps one step away.
    pub fn line(&self) -> String {
        let hours = self.hours;
        if self.pins_workspace {
            format!(
                "Allow again lets exactly this call run without asking for {hours} h, while \
                 the workspace's files stay as they are."
            )
        } else {
            format!("Allow again lets exactly this call run without asking for {hours} h.")
        }
    }
}

/// What a grant of a tool that runs the workspace's files adds to its words (English; a
/// channel with other languages has its own).
pub const PINS_WORKSPACE_TEXT: &str = "It also pins the workspace's files as they are now: \
    if anything but the granted call itself changes one of them (a script, a module, a \
    Makefile), the call is asked again.";

/// A grant an answer made, as the channels and the audit log tell it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantMade {
    pub id: GrantId,
    pub scope: GrantScope,
    /// When it ends (RFC 3339).
    pub expires_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
}

/// One grant as it is stored, listed and audited: exactly what it covers, where, who
/// made it, how long it lasts and how much of it was used.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Grant {
    pub id: GrantId,
    pub tool: String,
    /// The tier the tool had when the grant was made; a call at another tier is not covered.
    pub tier: Tier,
    /// SHA-256 of the tool's input schema then; a changed schema voids the grant.
    pub schema_sha256: String,
    /// The arguments it covers, exactly. Untrusted (the model wrote them): shown only
    /// through the display function.
    pub arguments: Value,
    /// SHA-256 of their canonical JSON: the only arguments it covers.
    pub arguments_sha256: String,
    /// SHA-256 of tau's card for the call then (the files it names, the device behind a
    /// name): a call whose card reads otherwise is not covered.
    pub card_sha256: String,
    /// For a tool that runs the workspace's files: the SHA-256 of the workspace's tree
    /// when the grant was made (see `WorkspaceTree`). A call is covered only while the
    /// tree is what the last granted call left (its `grant_pinned` line), or this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace_sha256: Option<String>,
    pub scope: GrantScope,
    /// The channel it was made on and covers calls on.
    pub channel: String,
    /// The conversation (session) it was made in: all it covers in scope `conversation`.
    pub session: SessionId,
    /// Who made it, as the channel names people (a Telegram user id); `None` on a channel
    /// with one person (the terminal, the web page's token holder). Scope `channel` covers
    /// the conversations of this person on `channel`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub person: Option<String>,
    /// The answer that made it.
    pub created_by: DecidedBy,
    /// The question that answer was given to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approval_id: Option<ApprovalId>,
    /// RFC 3339, like every time below.
    pub created_at: String,
    pub expires_at: String,
    /// Calls it let through so far.
    pub uses: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_uses: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    /// A person on a surface (`cli`, `tui`, `web`, `telegram`), or `policy` when tau
    /// voided it (the tool's schema or tier changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<DecidedBy>,
}

/// A call that runs without a question, as the lists of grants show it: a grant a person
/// made, or a routine's exemption (its own action, with its exact arguments).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Allowance {
    Grant(Box<Grant>),
    /// Revoked by disabling or deleting the routine, not here.
    Routine(RoutineAllowance),
}

/// A routine's exemption: its own tier-2 action, exactly as approved with the routine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutineAllowance {
    pub routine: String,
    pub tool: String,
    /// Untrusted, as every argument.
    pub arguments: Value,
    /// What fires it, in words (`cron 0 7 * * *`).
    pub trigger: String,
    pub enabled: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn grant_ids_have_one_shape() {
        assert!(GrantId::parse("gr_0123456789abcdef0123456789abcdef").is_ok());
        for bad in ["", "gr_", "ap_0123", "gr_ABC", "gr_é", "gr_a/b", "gr_a b"] {
            assert!(GrantId::parse(bad).is_err(), "{bad}");
            assert!(
                serde_json::from_value::<GrantId>(json!(bad)).is_err(),
                "{bad}"
            );
        }
        let long = format!("gr_{}", "a".repeat(65));
        assert!(GrantId::parse(&long).is_err());
    }

    #[test]
    fn a_request_reads_as_the_api_writes_it_and_nothing_else() {
        let read = |value| serde_json::from_value::<GrantRequest>(value);
        assert_eq!(
            read(json!({"scope": "conversation", "hours": 24})).unwrap(),
            GrantRequest {
                scope: GrantScope::Conversation,
                hours: Some(24),
                max_uses: None
            }
        );
        assert_eq!(read(json!({})).unwrap(), GrantRequest::conversation());
        assert_eq!(
            read(json!({"scope": "channel", "max_uses": 3})).unwrap(),
            GrantRequest {
                scope: GrantScope::Channel,
                hours: None,
                max_uses: Some(3)
            }
        );
        for bad in [
            json!({"scope": "everyone"}),
            json!({"scope": "conversation", "pattern": "npm *"}),
            json!({"hours": -1}),
            json!({"hours": "24"}),
            json!({"hours": 1.5}),
            json!({"max_uses": true}),
            json!({"arguments_sha256": "00"}),
        ] {
            assert!(read(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn hours_and_uses_stay_inside_tau_s_bounds() {
        let hours = |hours, max_uses| GrantRequest {
            scope: GrantScope::Conversation,
            hours,
            max_uses,
        };
        assert_eq!(hours(None, None).checked_hours(24), Ok(24));
        assert_eq!(hours(None, None).checked_hours(6), Ok(6));
        assert_eq!(hours(Some(720), Some(1)).checked_hours(24), Ok(720));
        assert_eq!(
            hours(Some(721), None).checked_hours(24),
            Err(GrantRequestError::Hours(721))
        );
        assert_eq!(
            hours(Some(0), None).checked_hours(24),
            Err(GrantRequestError::Hours(0))
        );
        assert_eq!(
            hours(None, Some(0)).checked_hours(24),
            Err(GrantRequestError::Uses(0))
        );
        assert_eq!(
            hours(None, Some(MAX_GRANT_USES + 1)).checked_hours(24),
            Err(GrantRequestError::Uses(MAX_GRANT_USES + 1))
        );
        assert_eq!(
            GrantRequestError::Hours(721).to_string(),
            "a grant lasts 1 to 720 hours (30 days), got 721"
        );
    }

    #[test]
    fn the_card_says_what_a_grant_covers_in_tau_s_words() {
        let offer = GrantOffer {
            schema_sha256: "0".repeat(64),
            arguments_sha256: "1".repeat(64),
            card_sha256: "2".repeat(64),
            hours: 24,
            pins_workspace: false,
            suggestion: None,
        };
        assert_eq!(
            offer.covers_text("run_command", GrantScope::Conversation),
            "A grant covers exactly this call, in this conversation, for 24 h: the tool \
             run_command with the same tier and input schema and exactly these arguments \
             (no prefix, no pattern). Any other call is asked again."
        );
        assert_eq!(
            offer.covers_text("lamp", GrantScope::Channel),
            "A grant covers exactly this call, in every conversation of yours on this \
             channel, for 24 h: the tool lamp with the same tier and input schema and \
             exactly these arguments (no prefix, no pattern). Any other call is asked again."
        );
        let pinning = GrantOffer {
            pins_workspace: true,
            ..offer.clone()
        };
        assert_eq!(
            pinning.covers_text("run_command", GrantScope::Conversation),
            "A grant covers exactly this call, in this conversation, for 24 h: the tool \
             run_command with the same tier and input schema and exactly these arguments \
             (no prefix, no pattern). Any other call is asked again. It also pins the \
             workspace's files as they are now: if anything but the granted call itself \
             changes one of them (a script, a module, a Makefile), the call is asked again."
        );
        assert_eq!(
            offer.line(),
            "Allow again lets exactly this call run without asking for 24 h."
        );
        assert_eq!(
            pinning.line(),
            "Allow again lets exactly this call run without asking for 24 h, while the \
             workspace's files stay as they are."
        );
    }

    #[test]
    fn a_suggestion_says_what_was_measured_and_never_asks_for_more() {
        let mut suggestion = GrantSuggestion {
            approved: 3,
            regular: false,
        };
        assert_eq!(
            suggestion.text(),
            "You approved exactly this call 3 times in the last 7 days: allowing it again \
             would spare you this question."
        );
        suggestion.regular = true;
        assert_eq!(
            suggestion.text(),
            "You approved exactly this call 3 times in the last 7 days: allowing it again \
             would spare you this question. It came at about the same time each day: a \
             routine could make it on a schedule (tau routines)."
        );
        // An offer stored before suggestions existed still reads.
        let stored = json!({"schema_sha256": "0", "arguments_sha256": "1", "card_sha256": "2",
                            "hours": 24});
        let offer: GrantOffer = serde_json::from_value(stored.clone()).unwrap();
        assert_eq!(offer.suggestion, None);
        assert_eq!(serde_json::to_value(&offer).unwrap(), stored);
    }

    #[test]
    fn a_list_says_whose_each_allowance_is() {
        let routine = Allowance::Routine(RoutineAllowance {
            routine: "sunset lamp".into(),
            tool: "device_set".into(),
            arguments: json!({"device": "lamp", "action": "on"}),
            trigger: "cron 0 19 * * *".into(),
            enabled: true,
        });
        let value = serde_json::to_value(&routine).unwrap();
        assert_eq!(
            value,
            json!({"kind": "routine", "routine": "sunset lamp", "tool": "device_set",
                   "arguments": {"device": "lamp", "action": "on"},
                   "trigger": "cron 0 19 * * *", "enabled": true})
        );
        assert_eq!(serde_json::from_value::<Allowance>(value).unwrap(), routine);
    }
}
