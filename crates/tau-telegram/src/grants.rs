//! `/grants`: what runs without a question for the person who asks, with a Revoke button
//! per grant. Their own grants on Telegram first (only the person who made a grant can
//! revoke it here), then the routines' exemptions, which are revoked by disabling the
//! routine. Arguments are the model's: shown through the display function, cut short.

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_core::{display, sorted_json};
use tau_protocol::{Allowance, GrantScope};

use crate::api::Keyboard;
use crate::callback::{Action, ButtonData};
use crate::html::escape;
use crate::question::when;
use crate::texts::Texts;

/// The most grants one message lists (each has a button; Telegram's message is 4096
/// characters).
const LISTED: usize = 10;
/// Characters of a grant's arguments the list shows.
const ARGUMENTS_SHOWN: usize = 160;

/// The model's arguments on one line, cut after [`ARGUMENTS_SHOWN`] characters.
fn arguments_line(arguments: &serde_json::Value) -> String {
    let shown = display(&sorted_json(arguments));
    let count = shown.chars().count();
    if count <= ARGUMENTS_SHOWN {
        return shown;
    }
    let kept: String = shown.chars().take(ARGUMENTS_SHOWN).collect();
    format!("{kept}… (+{})", count - ARGUMENTS_SHOWN)
}

/// The `/grants` message (HTML) and its Revoke buttons.
pub(crate) fn grants_message(
    t: &Texts,
    allowances: &[Allowance],
    zone: &TimeZone,
) -> (String, Keyboard) {
    if allowances.is_empty() {
        return (escape(t.grants_none), Vec::new());
    }
    let mut lines = vec![t.grants_head.replace("{n}", &allowances.len().to_string())];
    let mut keyboard: Keyboard = Vec::new();
    let mut grants = 0;
    let mut hidden = 0;
    for allowance in allowances {
        match allowance {
            Allowance::Grant(grant) => {
                if grants == LISTED {
                    hidden += 1;
                    continue;
                }
                grants += 1;
                let n = grants.to_string();
                let until = grant
                    .expires_at
                    .parse::<Timestamp>()
                    .map_or_else(|_| display(&grant.expires_at), |at| when(at, zone));
                let scope = match grant.scope {
                    GrantScope::Conversation => t.scope_conversation,
                    GrantScope::Channel => t.scope_channel,
                };
                let uses = match grant.max_uses {
                    Some(max) => format!("{}/{max}", grant.uses),
                    None => grant.uses.to_string(),
                };
                lines.push(
                    t.grant_line
                        .replace("{n}", &n)
                        .replace("{tool}", &display(&grant.tool))
                        .replace("{arguments}", &arguments_line(&grant.arguments))
                        .replace("{scope}", scope)
                        .replace("{uses}", &uses)
                        .replace("{until}", &until),
                );
                keyboard.push(vec![(
                    t.revoke.replace("{n}", &n),
                    ButtonData::new(Action::Revoke, grant.id.as_str()).encode(),
                )]);
            }
            Allowance::Routine(routine) => {
                let mut line = t
                    .routine_line
                    .replace("{routine}", &display(&routine.routine))
                    .replace("{trigger}", &display(&routine.trigger))
                    .replace("{tool}", &display(&routine.tool))
                    .replace("{arguments}", &arguments_line(&routine.arguments));
                if !routine.enabled {
                    line.push_str(t.routine_off);
                }
                lines.push(line);
            }
        }
    }
    if hidden > 0 {
        lines.push(t.grants_more.replace("{n}", &hidden.to_string()));
    }
    lines.push(String::new());
    lines.push(t.grants_foot.to_owned());
    (escape(&lines.join("\n")), keyboard)
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tau_core::Language;
    use tau_protocol::RoutineAllowance;
    use tau_protocol::{DecidedBy, Grant, GrantId, Tier};

    use super::*;
    use crate::texts::texts;

    fn grant(n: u32, scope: GrantScope, arguments: serde_json::Value) -> Allowance {
        Allowance::Grant(Box::new(Grant {
            id: GrantId::parse(&format!("gr_{n:032}")).unwrap_or_else(|e| panic!("{e}")),
            tool: "run_command".into(),
            tier: Tier::Physical,
            schema_sha256: "ab".repeat(32),
            arguments,
            arguments_sha256: "cd".repeat(32),
            card_sha256: "ef".repeat(32),
            workspace_sha256: None,
            scope,
            channel: "telegram".into(),
            session: tau_protocol::SessionId::parse("s1").unwrap(),
            person: Some("4242".into()),
            created_by: DecidedBy::Person {
                channel: "telegram".into(),
                user: Some("4242".into()),
                person: None,
            },
            approval_id: Some(tau_protocol::ApprovalId::parse("ap_1").unwrap()),
            created_at: "2026-12-03T12:00:00Z".into(),
            expires_at: "2026-12-04T12:00:00Z".into(),
            uses: n,
            max_uses: (n == 2).then_some(5),
            last_used_at: None,
            revoked_at: None,
            revoked_by: None,
        }))
    }

    fn shown((html, keyboard): (String, Keyboard)) -> String {
        let buttons: Vec<String> = keyboard
            .iter()
            .flatten()
            .map(|(label, data)| format!("[{label} → {data}]"))
            .collect();
        format!("{html}\n---\n{}", buttons.join("\n"))
    }

    #[test]
    fn grants_are_listed_with_a_revoke_each_and_routines_marked_as_theirs() {
        let allowances = [
            grant(
                1,
                GrantScope::Conversation,
                json!({"command": "npm run test"}),
            ),
            grant(
                2,
                GrantScope::Channel,
                json!({"command": "echo <b>hi</b>\u{202e}", "timeout_seconds": 30}),
            ),
            Allowance::Routine(RoutineAllowance {
                routine: "porch".into(),
                tool: "mqtt_publish".into(),
                arguments: json!({"topic": "home/porch/light/set", "payload": "ON"}),
                trigger: "cron 0 19 * * *".into(),
                enabled: false,
            }),
        ];
        for language in Language::ALL {
            let t = texts(language);
            insta::assert_snapshot!(
                format!("grants_{}", language.code()),
                format!(
                    "{}\n===\n{}",
                    shown(grants_message(t, &allowances, &TimeZone::UTC)),
                    shown(grants_message(t, &[], &TimeZone::UTC))
                )
            );
        }
    }

    #[test]
    fn a_long_list_stays_within_one_message_and_says_how_many_more() {
        let long = json!({"command": "x".repeat(5000)});
        let allowances: Vec<Allowance> = (1..=25)
            .map(|n| grant(n, GrantScope::Conversation, long.clone()))
            .collect();
        let (html, keyboard) = grants_message(texts(Language::En), &allowances, &TimeZone::UTC);
        assert_eq!(keyboard.len(), LISTED);
        assert!(html.chars().count() < 4096, "{}", html.chars().count());
        assert!(html.contains("… and 15 more"), "{html}");
    }
}
