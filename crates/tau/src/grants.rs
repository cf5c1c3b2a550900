//! `tau grants`: the grants people made ("yes, and allow this again"), what each covers,
//! where, until when and how often it was used; and their revoke, which takes effect
//! before any later call (it is one write to `state.db`, the same the gate's use is).

use std::fmt::Write;
use std::sync::Arc;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_core::{AuditEvent, DecidedBy, Grant, GrantId, GrantScope, display};
use tau_state::{Revoked, is_live};

use crate::approvals::channel_name;
use crate::audit::AuditLog;
use crate::context::Context;
use crate::errors::usage;

/// The audit session a revoke from the command line is written under.
const AUDIT_SESSION: &str = "cli";

fn when(text: &str, zone: &TimeZone) -> String {
    text.parse::<Timestamp>()
        .map_or_else(|_| display(text), |t| crate::routines::when(t, zone))
}

/// The live grants, oldest first, as the person reads them at `now` in `zone`.
pub(crate) fn render(grants: &[Grant], now: Timestamp, zone: &TimeZone) -> String {
    let live: Vec<&Grant> = grants.iter().filter(|g| is_live(g, now)).collect();
    if live.is_empty() {
        return "no grants: every tier-2 call is asked\n".to_owned();
    }
    let mut out = String::new();
    for grant in live {
        let place = match grant.scope {
            GrantScope::Conversation => format!("conversation {}", display(&grant.session)),
            GrantScope::Channel => {
                format!("every conversation on {}", channel_name(&grant.channel))
            }
        };
        let _ = writeln!(
            out,
            "{}  {} (tier {})  {place}",
            grant.id,
            display(&grant.tool),
            grant.tier.number(),
        );
        let _ = writeln!(
            out,
            "  arguments {}",
            display(&tau_core::sorted_json(&grant.arguments))
        );
        let uses = match grant.max_uses {
            Some(max) => format!("{} of {max} uses", grant.uses),
            None => format!("{} uses", grant.uses),
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
    out
}

/// `tau grants list`.
pub(crate) fn list(ctx: &Context) -> anyhow::Result<String> {
    let zone = crate::routines::zone(&ctx.loaded.config)?;
    let Some(store) = ctx.existing_state()? else {
        return Ok(render(&[], Timestamp::now(), &zone));
    };
    Ok(render(&store.grants(None)?, Timestamp::now(), &zone))
}

/// `tau grants revoke ID`: from its commit on the grant covers nothing; a `grant_revoked`
/// line says so, with the uses it had.
pub(crate) fn revoke(ctx: &Context, id: &str) -> anyhow::Result<String> {
    let Ok(id) = GrantId::parse(id) else {
        return Err(usage(format!(
            "{} is not a grant id (tau grants list shows them)",
            display(id)
        )));
    };
    let Some(store) = ctx.existing_state()? else {
        return Err(usage(format!("no grant {id}")));
    };
    let by = DecidedBy::person("cli");
    match store.revoke_grant(&id, &by, Timestamp::now())? {
        Revoked::Revoked(grant) => {
            ctx.events.subscribe(Arc::new(AuditLog::open(
                &ctx.home.audit_log(),
                AUDIT_SESSION,
                store.clone(),
            )?));
            ctx.events.emit(&AuditEvent::GrantRevoked {
                grant_id: grant.id.clone(),
                tool: grant.tool.clone(),
                revoked_by: by,
                uses: grant.uses,
                reason: None,
            });
            Ok(format!(
                "revoked {} ({} after {} uses): the next such call is asked\n",
                grant.id,
                display(&grant.tool),
                grant.uses
            ))
        }
        Revoked::AlreadyRevoked(grant) => Ok(format!("{} was revoked already\n", grant.id)),
        Revoked::NotFound => Err(usage(format!("no grant {id}"))),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use tau_core::Tier;

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
            scope,
            channel: "terminal".into(),
            session: "chat-20261203-120000-abcdef".into(),
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
        insta::assert_snapshot!(render(&grants, now, &TimeZone::UTC));
        let later: Timestamp = "2026-12-04T12:00:00Z".parse().unwrap();
        assert_eq!(
            render(&grants, later, &TimeZone::UTC),
            "no grants: every tier-2 call is asked\n"
        );
    }
}
