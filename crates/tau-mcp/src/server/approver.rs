//! The approver of a client that supports elicitation: the question goes back over the
//! same connection as `elicitation/create`, and the client's user answers it.

use std::time::Duration;

use async_trait::async_trait;
use rmcp::model::{ElicitRequestParams, ElicitResult, ElicitationAction};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tau_core::{Answer, Approver, ApproverError, display, display_multiline, sorted_json};
use tau_protocol::{ApprovalQuestion, DecidedBy, Decision, NoteLevel};

/// The field the client's user must set to `true` to approve.
const APPROVE_FIELD: &str = "approve";
/// The field a question with a second step asks the device's name or number in.
const CONFIRM_FIELD: &str = "confirm";

pub(crate) struct ElicitationApprover {
    peer: Peer<RoleServer>,
    timeout: Duration,
}

impl ElicitationApprover {
    pub(crate) fn new(peer: Peer<RoleServer>, timeout: Duration) -> Self {
        Self { peer, timeout }
    }
}

#[async_trait]
impl Approver for ElicitationApprover {
    fn name(&self) -> &str {
        "mcp_elicitation"
    }

    async fn decide(&self, request: ApprovalQuestion) -> Result<Answer, ApproverError> {
        let answer = self
            .peer
            .create_elicitation(question(&request)?)
            .await
            .map_err(|e| ApproverError::new(format!("the client did not answer: {e}")))?;
        Ok(decision(&answer))
    }

    /// The client's natural wait; `[approval] timeout_seconds` wins when set.
    fn timeout(&self) -> Option<Duration> {
        Some(self.timeout)
    }
}

/// The channel name of a person answering through their MCP client.
pub(crate) const MCP_CHANNEL: &str = "mcp";

/// Only an accepted answer whose field is exactly `true` approves; declining or accepting
/// without it is the client's user saying no; cancelling (dismissing the form) is no
/// answer at all. What the user typed for a second step goes with the yes; the gate
/// approves only when it passes the step.
pub(crate) fn decision(answer: &ElicitResult) -> Answer {
    let field = |name: &str| answer.content.as_ref().and_then(|c| c.get(name));
    let approved = field(APPROVE_FIELD).is_some_and(|v| *v == Value::Bool(true));
    let confirmation = field(CONFIRM_FIELD).and_then(Value::as_str);
    // The action enum is the SDK's and may grow; anything but an accepted `true` rejects.
    match (&answer.action, confirmation) {
        (ElicitationAction::Accept, Some(typed)) if approved => {
            Answer::approved_by(MCP_CHANNEL).confirmed_with(typed)
        }
        (ElicitationAction::Accept, None) if approved => Answer::approved_by(MCP_CHANNEL),
        (ElicitationAction::Accept | ElicitationAction::Decline, _) => {
            Answer::new(Decision::Rejected, DecidedBy::person(MCP_CHANNEL))
        }
        _ => Answer::rejected(DecidedBy::Cancelled),
    }
}

/// The form the client shows: what runs, what it does, with which arguments (sorted
/// JSON), and one yes/no field that defaults to no. Every field goes through tau's display
/// function: the client's user reads it, and a model chose the arguments.
pub(crate) fn question(request: &ApprovalQuestion) -> Result<ElicitRequestParams, ApproverError> {
    let mut message = format!("tau asks before it runs a tier-{} tool.", request.tier);
    if let Some(headline) = &request.card.headline {
        message.push_str(&format!("\n{}", display(headline)));
    }
    message.push_str(&format!(
        "\nTool: {}\nEffect: {}",
        display(&request.tool),
        display(&request.effect)
    ));
    for note in &request.card.notes {
        let mark = match note.level {
            NoteLevel::Info => "",
            NoteLevel::Warning => "Warning: ",
        };
        message.push_str(&format!(
            "\n{mark}{}: {}",
            display(&note.label),
            display(&note.text)
        ));
        if let Some(detail) = &note.detail {
            message.push_str(&format!("\n{}", display_multiline(detail)));
        }
    }
    message.push_str(&format!(
        "\nArguments: {}",
        display(&sorted_json(&request.arguments))
    ));
    let mut properties = serde_json::Map::new();
    properties.insert(
        APPROVE_FIELD.to_owned(),
        json!({
            "type": "boolean",
            "title": "Run it?",
            "description": "Set to true to run this call once.",
            "default": false
        }),
    );
    let mut required = vec![APPROVE_FIELD];
    if let Some(step) = &request.card.confirm {
        let ask = format!(
            "Second step: type {} or {} to approve; a yes alone does not.",
            display(&step.word),
            display(&step.code)
        );
        message.push_str(&format!("\n{ask}"));
        properties.insert(
            CONFIRM_FIELD.to_owned(),
            json!({
                "type": "string",
                "title": "Second step",
                "description": ask,
            }),
        );
        required.push(CONFIRM_FIELD);
    }
    serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {
            "type": "object",
            "properties": properties,
            "required": required
        }
    }))
    .map_err(|e| ApproverError::new(format!("cannot build the approval question: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use tau_protocol::Tier;

    fn answer(value: Value) -> ElicitResult {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn only_an_accepted_true_approves() {
        let person_no = Answer::new(Decision::Rejected, DecidedBy::person("mcp"));
        let cases = [
            (
                json!({"action": "accept", "content": {"approve": true}}),
                Answer::approved_by("mcp"),
            ),
            (
                json!({"action": "accept", "content": {"approve": false}}),
                person_no.clone(),
            ),
            (
                json!({"action": "accept", "content": {"approve": "true"}}),
                person_no.clone(),
            ),
            (
                json!({"action": "accept", "content": {}}),
                person_no.clone(),
            ),
            (json!({"action": "accept"}), person_no.clone()),
            (json!({"action": "decline"}), person_no.clone()),
            (
                json!({"action": "cancel", "content": {"approve": true}}),
                Answer::rejected(DecidedBy::Cancelled),
            ),
            (
                json!({"action": "accept", "content": {"approve": true, "confirm": "47"}}),
                Answer::approved_by("mcp").confirmed_with("47"),
            ),
            (
                json!({"action": "accept", "content": {"approve": false, "confirm": "47"}}),
                person_no.clone(),
            ),
        ];
        for (wire, expected) in cases {
            assert_eq!(decision(&answer(wire.clone())), expected, "{wire}");
        }
    }

    #[test]
    fn a_question_with_a_second_step_asks_for_the_name_or_the_number_too() {
        let request = ApprovalQuestion {
            tool: "device_set".into(),
            tier: Tier::Physical,
            effect: "sends a command to a device in tau's registry".into(),
            arguments: json!({"device": "garage-door", "action": "open"}),
            call_id: "mcp-1-2".into(),
            channel: "mcp".into(),
            approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            deadline: None,
            grant: None,
            card: tau_protocol::CallCard {
                headline: Some("OPEN · Garage door (garage) — a lock-class device".into()),
                notes: Vec::new(),
                confirm: Some(tau_protocol::ConfirmStep {
                    word: "garage-door".into(),
                    code: "47".into(),
                }),
                ..Default::default()
            },
        };
        let wire = serde_json::to_value(question(&request).unwrap()).unwrap();
        assert_eq!(
            wire["message"],
            json!(
                "tau asks before it runs a tier-2 tool.\nOPEN · Garage door (garage) — a lock-class device\nTool: device_set\nEffect: sends a command to a device in tau's registry\nArguments: {\"action\":\"open\",\"device\":\"garage-door\"}\nSecond step: type garage-door or 47 to approve; a yes alone does not."
            )
        );
        assert_eq!(
            wire["requestedSchema"]["properties"]["confirm"],
            json!({"type": "string", "title": "Second step", "description": "Second step: type garage-door or 47 to approve; a yes alone does not."})
        );
        assert_eq!(
            wire["requestedSchema"]["required"],
            json!(["approve", "confirm"])
        );
    }

    #[test]
    fn the_question_names_the_call_and_asks_for_one_boolean() {
        let request = ApprovalQuestion {
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command in the workspace".into(),
            arguments: json!({"timeout": 5, "command": "ls"}),
            call_id: "mcp-1-2".into(),
            channel: "mcp".into(),
            approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            deadline: None,
            card: Default::default(),
            grant: None,
        };
        let wire = serde_json::to_value(question(&request).unwrap()).unwrap();
        assert_eq!(
            wire,
            json!({
                "mode": "form",
                "message": "tau asks before it runs a tier-2 tool.\nTool: run_command\nEffect: runs a shell command in the workspace\nArguments: {\"command\":\"ls\",\"timeout\":5}",
                "requestedSchema": {
                    "type": "object",
                    "properties": {"approve": {"type": "boolean", "title": "Run it?", "description": "Set to true to run this call once.", "default": false}},
                    "required": ["approve"]
                }
            })
        );
    }

    #[test]
    fn the_question_shows_bidi_and_invisible_characters_escaped() {
        let request = ApprovalQuestion {
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command\u{2028}in the workspace".into(),
            arguments: json!({
                "command": format!("sh setup.sh\u{34f}{}rm -rf ~ #\u{202e}\u{1b}[8m\u{9b}\u{fe0f}\u{e0041}\u{3164}\u{2800}", " ".repeat(40)),
            }),
            call_id: "mcp-1-3".into(),
            channel: "mcp".into(),
            approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            deadline: None,
            card: Default::default(),
            grant: None,
        };
        let wire = serde_json::to_value(question(&request).unwrap()).unwrap();
        let message = wire["message"].as_str().unwrap();
        assert_eq!(
            message,
            "tau asks before it runs a tier-2 tool.\nTool: run_command\nEffect: runs a shell command\\u{2028}in the workspace\nArguments: {\"command\":\"sh setup.sh\\u{34f}⟨40 spaces⟩rm -rf ~ #\\u{202e}\\u001b[8m\\u{9b}\\u{fe0f}\\u{e0041}\\u{3164}\\u{2800}\"}"
        );
    }

    #[test]
    fn the_question_carries_tau_s_card() {
        let mut request = ApprovalQuestion {
            tool: "run_command".into(),
            tier: Tier::Physical,
            effect: "runs a shell command in the workspace".into(),
            arguments: json!({"command": "sh setup.sh"}),
            call_id: "mcp-1-4".into(),
            channel: "mcp".into(),
            approval_id: tau_protocol::ApprovalId::parse("ap_1").unwrap(),
            deadline: None,
            card: Default::default(),
            grant: None,
        };
        request.card.headline = Some("run · sh setup.sh".into());
        request.card.push(tau_protocol::CardNote::info(
            "sandbox",
            "writes: workspace only · network: none",
        ));
        request.card.push(
            tau_protocol::CardNote::warning("file", "setup.sh (12 bytes)")
                .with_detail("echo hi\u{202e}\nls\n"),
        );
        let wire = serde_json::to_value(question(&request).unwrap()).unwrap();
        assert_eq!(
            wire["message"].as_str().unwrap(),
            "tau asks before it runs a tier-2 tool.\nrun · sh setup.sh\nTool: run_command\nEffect: runs a shell command in the workspace\nsandbox: writes: workspace only · network: none\nWarning: file: setup.sh (12 bytes)\necho hi\\u{202e}\nls\n\nArguments: {\"command\":\"sh setup.sh\"}"
        );
    }
}
