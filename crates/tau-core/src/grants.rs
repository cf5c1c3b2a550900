//! Grants as a person reads them (`tau grants`, `/grants` in the TUI): what each covers,
//! where, until when and how often it was used, and the routines' exemptions beside them;
//! and a revoke, which writes its `grant_revoked` line once it is committed. Every field
//! a grant or an exemption holds is shown through the display function, the lookalike
//! words of each entry flagged below it as on a card.

use std::fmt::Write;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_protocol::{DecidedBy, Grant, GrantId, GrantScope, RoutineAllowance, SessionId};
use tau_state::{Grants, Revoked, StateError, is_live};

use crate::audit::{AuditEvent, EventBus};
use crate::display::{Listing, counted, display};
use crate::shown::{channel_name, conversation};

fn when(text: &str, zone: &TimeZone) -> String {
    text.parse::<Timestamp>()
        .map_or_else(|_| display(text), |t| crate::shown::when(t, zone))
}

/// The title of a conversation, where it has one (a person's, else its first prompt's).
pub type Titles<'a> = &'a dyn Fn(&SessionId) -> Option<String>;

/// What a grant covers, where (its conversation by title where it has one), until when and
/// its uses: the lines `list` and `show` share.
fn describe(
    out: &mut String,
    entry: &mut Listing,
    grant: &Grant,
    titles: Titles<'_>,
    zone: &TimeZone,
) {
    let place = match grant.scope {
        GrantScope::Conversation => {
            conversation(entry, &grant.session, titles(&grant.session).as_deref())
        }
        GrantScope::Channel => {
            format!("every conversation on {}", channel_name(&grant.channel))
        }
    };
    let _ = writeln!(
        out,
        "{}  {} (tier {})  {place}",
        grant.id,
        entry.field("tool", &grant.tool),
        grant.tier.number(),
    );
    let _ = writeln!(
        out,
        "  arguments {}",
        entry.json("arguments", &grant.arguments)
    );
    let uses = match grant.max_uses {
        Some(max) => format!("{} of {}", grant.uses, counted(max as usize, "use", "uses")),
        None => counted(grant.uses as usize, "use", "uses"),
    };
    let last = grant
        .last_used_at
        .as_deref()
        .map(|t| format!(", last {}", when(t, zone)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  made on {} {} · until {} · {uses}{last}",
        channel_name(&grant.channel),
        when(&grant.created_at, zone),
        when(&grant.expires_at, zone),
    );
}

/// A routine's exemption: its own call, exactly, while the routine is on.
fn describe_routine(out: &mut String, routine: &RoutineAllowance) {
    let mut entry = Listing::new();
    let off = if routine.enabled { "" } else { " (disabled)" };
    let name = entry.field("routine", &routine.routine);
    let _ = writeln!(
        out,
        "routine {name}  {}  {}{off}",
        entry.field("tool", &routine.tool),
        entry.field("trigger", &routine.trigger),
    );
    let _ = writeln!(
        out,
        "  arguments {}",
        entry.json("arguments", &routine.arguments)
    );
    let _ = writeln!(
        out,
        "  the routine's own call: runs without a question while the routine is on \
         (tau routines disable {name} stops it)"
    );
    out.push_str(&entry.flags("  "));
}

/// The live grants, oldest first, then the routines' exemptions, as the person reads
/// them at `now` in `zone`.
pub fn render(
    grants: &[Grant],
    routines: &[RoutineAllowance],
    titles: Titles<'_>,
    now: Timestamp,
    zone: &TimeZone,
) -> String {
    let live: Vec<&Grant> = grants.iter().filter(|g| is_live(g, now)).collect();
    if live.is_empty() && routines.is_empty() {
        return "no grants: every tier-2 call is asked\n".to_owned();
    }
    let mut out = String::new();
    if live.is_empty() {
        out.push_str("no grants\n");
    }
    for grant in live {
        let mut entry = Listing::new();
        describe(&mut out, &mut entry, grant, titles, zone);
        out.push_str(&entry.flags("  "));
    }
    for routine in routines {
        describe_routine(&mut out, routine);
    }
    out
}

fn who(entry: &mut Listing, decided_by: &DecidedBy) -> String {
    match decided_by {
        DecidedBy::Person {
            channel,
            user: Some(user),
            ..
        } => format!(
            "a person on {} ({})",
            channel_name(channel),
            entry.field("user", user)
        ),
        DecidedBy::Person {
            channel,
            user: None,
            ..
        } => {
            format!("a person on {}", channel_name(channel))
        }
        other => display(&serde_json::to_string(other).unwrap_or_default()),
    }
}

/// One grant, live or not, with what it is checked against and where it came from.
pub fn render_one(grant: &Grant, titles: Titles<'_>, now: Timestamp, zone: &TimeZone) -> String {
    let mut out = String::new();
    let mut entry = Listing::new();
    describe(&mut out, &mut entry, grant, titles, zone);
    let standing = match (&grant.revoked_at, &grant.revoked_by) {
        (Some(at), by) => format!(
            "revoked {}{}: covers nothing",
            when(at, zone),
            by.as_ref()
                .map(|b| format!(" by {}", who(&mut entry, b)))
                .unwrap_or_default()
        ),
        (None, _) if is_live(grant, now) => {
            "live: the exact call above runs without a question".to_owned()
        }
        (None, _) => "ended (expired or used up): covers nothing".to_owned(),
    };
    let _ = writeln!(out, "  {standing}");
    let question = grant
        .approval_id
        .as_ref()
        .map(|id| format!(", answering question {}", display(id.as_str())))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "  made by {}{question}",
        who(&mut entry, &grant.created_by)
    );
    let _ = writeln!(
        out,
        "  arguments sha-256 {}",
        display(&grant.arguments_sha256)
    );
    let _ = writeln!(
        out,
        "  tool schema sha-256 {} (a change of the tool's schema or tier ends it)",
        display(&grant.schema_sha256)
    );
    out.push_str(&entry.flags("  "));
    out
}

/// Revokes `id` in `store` by `by` and writes its `grant_revoked` line on `events` once
/// the revoke is committed.
pub fn revoke_grant(
    store: &Grants,
    events: &EventBus,
    id: &GrantId,
    by: DecidedBy,
) -> Result<Revoked, StateError> {
    let revoked = store.revoke_grant(id, &by, Timestamp::now())?;
    if let Revoked::Revoked(grant) = &revoked {
        events.emit(&AuditEvent::GrantRevoked {
            grant_id: grant.id.clone(),
            tool: grant.tool.clone(),
            revoked_by: by,
            uses: grant.uses,
            reason: None,
        });
    }
    Ok(revoked)
}

/// The line a revoke says.
pub fn revoked_line(grant: &Grant) -> String {
    format!(
        "revoked {} ({} after {}): the next such call is asked\n",
        grant.id,
        display(&grant.tool),
        counted(grant.uses as usize, "use", "uses")
    )
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tau_protocol::Tier;

    use super::*;

    fn grant(id: &str, scope: GrantScope, uses: u32, max_uses: Option<u32>) -> Grant {
        Grant {
            id: GrantId::parse(id).unwrap(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            schema_sha256: "0".repeat(64),
            arguments: json!({"command": "npm run test\u{202e}"}),
            arguments_sha256: "1".repeat(64),
            card_sha256: "2".repeat(64),
            workspace_sha256: None,
            scope,
            channel: "terminal".into(),
            session: tau_protocol::SessionId::parse("chat-20261203-120000-abcdef").unwrap(),
            person: None,
            created_by: DecidedBy::person("terminal"),
            approval_id: None,
            created_at: "2026-12-03T12:00:00Z".into(),
            expires_at: "2026-12-04T12:00:00Z".into(),
            uses,
            max_uses,
            last_used_at: (uses > 0).then(|| "2026-12-03T12:30:00Z".into()),
            revoked_at: None,
            revoked_by: None,
        }
    }

    #[test]
    fn each_live_grant_says_what_it_covers_where_until_when_and_its_uses() {
        let now: Timestamp = "2026-12-03T13:00:00Z".parse().unwrap();
        let mut revoked = grant("gr_3", GrantScope::Conversation, 0, None);
        revoked.revoked_at = Some("2026-12-03T12:40:00Z".into());
        let grants = [
            grant("gr_1", GrantScope::Conversation, 2, None),
            grant("gr_2", GrantScope::Channel, 3, Some(3)),
            revoked,
            grant("gr_4", GrantScope::Channel, 0, Some(5)),
        ];
        // The conversation is named by its title; one without a title by its id.
        let titles = |session: &SessionId| {
            (session.as_str() == "chat-20261203-120000-abcdef")
                .then(|| "Run the tests\u{202e}".to_owned())
        };
        let mut untitled = grant("gr_5", GrantScope::Conversation, 0, Some(1));
        untitled.session = SessionId::parse("web-20261203-120000-0f0f").unwrap();
        let mut all = grants.to_vec();
        all.push(untitled);
        insta::assert_snapshot!(render(&all, &[], &titles, now, &TimeZone::UTC));
        let later: Timestamp = "2026-12-04T12:00:00Z".parse().unwrap();
        assert_eq!(
            render(&grants, &[], &titles, later, &TimeZone::UTC),
            "no grants: every tier-2 call is asked\n"
        );
    }

    #[test]
    fn a_routine_s_own_call_is_listed_as_the_routine_s() {
        let now: Timestamp = "2026-12-03T13:00:00Z".parse().unwrap();
        let routines = [
            RoutineAllowance {
                routine: "porch".into(),
                tool: "mqtt_publish".into(),
                arguments: json!({"topic": "home/porch/light/set", "payload": "ON"}),
                trigger: "cron 0 19 * * *".into(),
                enabled: true,
            },
            RoutineAllowance {
                routine: "door\u{202e}".into(),
                tool: "device_set".into(),
                arguments: json!({"device": "front-door", "action": "lock"}),
                trigger: "webhook door".into(),
                enabled: false,
            },
        ];
        let grants = [grant("gr_1", GrantScope::Conversation, 2, None)];
        insta::assert_snapshot!(format!(
            "{}---\n{}",
            render(&grants, &routines, &|_| None, now, &TimeZone::UTC),
            render(&[], &routines, &|_| None, now, &TimeZone::UTC)
        ));
    }
}
