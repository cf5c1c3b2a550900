//! The words the channel protocol and the audit log share.

use serde::{Deserialize, Serialize};

use crate::grant::GrantId;

/// What happened to a tool call, as recorded after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// It ran and the tool reported success.
    Success,
    /// It ran (or was allowed to) and failed.
    Error,
    /// The gate refused it; it did not run.
    Refused,
    /// No tool of that name is registered; nothing ran.
    UnknownTool,
    /// The model's call was malformed (a name no tool can have, input that is not a JSON
    /// object); nothing ran.
    Invalid,
    /// The turn was cancelled before the call finished; a running tool was stopped.
    Cancelled,
}

/// What was decided about one tier-2 question.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    Approved,
    #[default]
    Rejected,
    /// The wait ended; never a person's answer.
    Timeout,
}

/// How a tool call got past (or did not get past) the gate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Approval {
    /// Tier 0 or 1: nobody is asked.
    NotRequired,
    Approved,
    Rejected,
    Timeout,
    /// A registered routine's exemption let it through without asking.
    Exempt,
    /// A live grant a person made earlier covered exactly this call; nobody was asked.
    Granted,
    /// Refused without asking: the tool is unknown, its tier is invalid, or the call was
    /// malformed or cancelled before the gate.
    Refused,
    /// The approver or the gate failed; the call was refused.
    Failed,
}

/// Who or what decided a call's fate. Only a person can stand behind a yes: directly
/// ([`DecidedBy::Person`]) or through a grant they made ([`DecidedBy::Grant`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DecidedBy {
    /// A person answered on a channel (`terminal`, `tui`, `web`, `telegram`, `mcp`);
    /// `user` names them where the channel knows (a Telegram user id, a web login).
    Person {
        channel: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        user: Option<String>,
        /// The person of `[[people]]` who answered, in a home that names people (absent
        /// in one that does not, so its lines read as before).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        person: Option<String>,
    },
    /// Nobody answered before the deadline.
    Timeout,
    /// The input ended while the question was open (a closed pipe, Ctrl-D).
    EndOfInput,
    /// The turn was cancelled or the question withdrawn (Ctrl-C).
    Cancelled,
    /// The approver failed or gave an answer that cannot count.
    ApproverFailed,
    /// A registered exemption (a routine) matched the call exactly.
    Exemption { name: String },
    /// A live grant covered the call exactly: a person's earlier "yes, and allow this
    /// again" (the grant's row says who, when and for how long).
    Grant { id: GrantId },
    /// A newer message in the conversation replaced the open question.
    Superseded,
    /// tau's rules decided without asking: tier 0 or 1, an unknown tool, an invalid tier,
    /// a malformed call, a channel that cannot ask.
    Policy,
}

impl DecidedBy {
    /// A person on `channel`, not named further.
    pub fn person(channel: impl Into<String>) -> Self {
        Self::Person {
            channel: channel.into(),
            user: None,
            person: None,
        }
    }

    pub fn is_person(&self) -> bool {
        matches!(self, Self::Person { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_grant_names_a_grant_id_and_nothing_else() {
        for bad in [
            json!({"kind": "grant"}),
            json!({"kind": "grant", "id": "ap_0123"}),
            json!({"kind": "grant", "id": "gr_../x"}),
        ] {
            assert!(
                serde_json::from_value::<DecidedBy>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        assert_eq!(
            serde_json::to_value(Approval::Granted).unwrap(),
            json!("granted")
        );
    }

    #[test]
    fn decided_by_is_tagged_data() {
        let cases = [
            (
                DecidedBy::person("terminal"),
                json!({"kind": "person", "channel": "terminal"}),
            ),
            (
                DecidedBy::Person {
                    channel: "telegram".into(),
                    user: Some("424242".into()),
                    person: None,
                },
                json!({"kind": "person", "channel": "telegram", "user": "424242"}),
            ),
            (DecidedBy::Timeout, json!({"kind": "timeout"})),
            (DecidedBy::EndOfInput, json!({"kind": "end_of_input"})),
            (DecidedBy::Cancelled, json!({"kind": "cancelled"})),
            (
                DecidedBy::ApproverFailed,
                json!({"kind": "approver_failed"}),
            ),
            (
                DecidedBy::Exemption {
                    name: "sunset lamp".into(),
                },
                json!({"kind": "exemption", "name": "sunset lamp"}),
            ),
            (
                DecidedBy::Grant {
                    id: GrantId::parse("gr_0123456789abcdef").unwrap(),
                },
                json!({"kind": "grant", "id": "gr_0123456789abcdef"}),
            ),
            (DecidedBy::Superseded, json!({"kind": "superseded"})),
            (DecidedBy::Policy, json!({"kind": "policy"})),
        ];
        for (value, expected) in cases {
            assert_eq!(serde_json::to_value(&value).unwrap(), expected);
            assert_eq!(
                serde_json::from_value::<DecidedBy>(expected).unwrap(),
                value
            );
        }
    }
}
