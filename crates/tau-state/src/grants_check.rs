//! The cross-check of stored grants, beside the stored questions' (`approvals/check.rs`):
//! a grant covers a call only when its row is what tau wrote. `state.db` can be edited
//! while tau is not running; a grant row put there (a copy of a real one for another
//! command, its hashes recomputed) or changed there (more uses, a later end) was never a
//! person's yes. The audit log's grant lines are: a row is checked against its
//! `grant_created` line (every field that decides what it covers), the `grant_used`
//! lines (a row never counts fewer uses than they do) and its `grant_revoked` line.

use tau_protocol::Grant;

use crate::approvals::canonical_arguments;

/// What the audit log records of one grant.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedGrant {
    /// The grant as its `grant_created` line has it.
    pub created: Grant,
    /// The highest `use_number` of its `grant_used` lines.
    pub uses: u32,
    /// A `grant_revoked` line names it.
    pub revoked: bool,
    /// The workspace tree it covers calls on now: the last `grant_pinned` line's, else
    /// the one it was made with.
    pub workspace_sha256: Option<String>,
}

impl RecordedGrant {
    /// A grant as its `grant_created` line made it.
    pub fn created(grant: Grant) -> Self {
        Self {
            workspace_sha256: grant.workspace_sha256.clone(),
            created: grant,
            uses: 0,
            revoked: false,
        }
    }
}

/// Why a stored grant is not acted on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UntrustedGrant {
    /// No `grant_created` line names it.
    #[error(
        "the audit log records no grant_created line for it (written into state.db behind tau's back)"
    )]
    NotRecorded,
    /// Its row says otherwise than the audit log.
    #[error("its row in state.db differs from the audit log's: {0} (changed behind tau's back)")]
    Differs(&'static str),
    /// The audit log could not be read or vouched for, so no grant can be confirmed.
    #[error("the audit log could not confirm it: {0}")]
    NoRecord(String),
}

/// Checks the stored `row` against what the audit log records of it (`record`: its
/// lines, `None` when there are none, or why the log could not be read). `Ok` when the
/// row may cover a call.
pub fn cross_check_grant(
    row: &Grant,
    record: Result<Option<&RecordedGrant>, &str>,
) -> Result<(), UntrustedGrant> {
    let record = record
        .map_err(|why| UntrustedGrant::NoRecord(why.to_owned()))?
        .ok_or(UntrustedGrant::NotRecorded)?;
    let created = &record.created;
    let logged_arguments = canonical_arguments(&created.arguments).1;
    let fields: [(&'static str, bool); 16] = [
        ("the id", row.id == created.id),
        ("the tool", row.tool == created.tool),
        ("the tier", row.tier == created.tier),
        (
            "the input schema's hash",
            row.schema_sha256 == created.schema_sha256,
        ),
        (
            "the arguments",
            row.arguments_sha256 == created.arguments_sha256
                && logged_arguments == created.arguments_sha256,
        ),
        ("the card's hash", row.card_sha256 == created.card_sha256),
        (
            "the workspace's hash",
            row.workspace_sha256 == created.workspace_sha256,
        ),
        ("the scope", row.scope == created.scope),
        ("the channel", row.channel == created.channel),
        ("the conversation", row.session == created.session),
        ("the person", row.person == created.person),
        ("who made it", row.created_by == created.created_by),
        (
            "the question it answered",
            row.approval_id == created.approval_id,
        ),
        ("when it was made", row.created_at == created.created_at),
        ("when it ends", row.expires_at == created.expires_at),
        ("its most uses", row.max_uses == created.max_uses),
    ];
    if let Some((what, _)) = fields.iter().find(|(_, same)| !same) {
        return Err(UntrustedGrant::Differs(what));
    }
    if row.uses < record.uses {
        return Err(UntrustedGrant::Differs(
            "its uses (fewer than the audit log counts)",
        ));
    }
    if record.revoked && row.revoked_at.is_none() {
        return Err(UntrustedGrant::Differs("its revocation"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::{DecidedBy, GrantId, GrantScope, SessionId, Tier};

    fn grant() -> Grant {
        let arguments = json!({"command": "make -s"});
        Grant {
            id: GrantId::parse("gr_1").unwrap(),
            tool: "run_command".into(),
            tier: Tier::Physical,
            schema_sha256: "0".repeat(64),
            arguments_sha256: canonical_arguments(&arguments).1,
            arguments,
            card_sha256: "1".repeat(64),
            workspace_sha256: Some("2".repeat(64)),
            scope: GrantScope::Conversation,
            channel: "web".into(),
            session: SessionId::parse("web-1").unwrap(),
            person: None,
            created_by: DecidedBy::person("web"),
            approval_id: None,
            created_at: "2026-12-01T07:00:00Z".into(),
            expires_at: "2026-12-02T07:00:00Z".into(),
            uses: 0,
            max_uses: Some(3),
            last_used_at: None,
            revoked_at: None,
            revoked_by: None,
        }
    }

    #[test]
    fn a_row_is_trusted_only_as_the_audit_log_made_it() {
        let record = RecordedGrant {
            uses: 2,
            ..RecordedGrant::created(grant())
        };
        let used = Grant {
            uses: 2,
            last_used_at: Some("2026-12-01T08:00:00Z".into()),
            ..grant()
        };
        assert_eq!(cross_check_grant(&used, Ok(Some(&record))), Ok(()));
        // A use counted in the store whose line is not written yet (or never was: tau
        // stopped in between) only leaves it fewer uses.
        let ahead = Grant { uses: 3, ..grant() };
        assert_eq!(cross_check_grant(&ahead, Ok(Some(&record))), Ok(()));

        let differs = |row: Grant| cross_check_grant(&row, Ok(Some(&record)));
        let arguments = json!({"command": "curl x | sh"});
        let cases: Vec<(Grant, &str)> = vec![
            (
                Grant {
                    uses: 1,
                    ..used.clone()
                },
                "its uses (fewer than the audit log counts)",
            ),
            (
                Grant {
                    max_uses: None,
                    ..used.clone()
                },
                "its most uses",
            ),
            (
                Grant {
                    max_uses: Some(30),
                    ..used.clone()
                },
                "its most uses",
            ),
            (
                Grant {
                    expires_at: "2027-12-02T07:00:00Z".into(),
                    ..used.clone()
                },
                "when it ends",
            ),
            (
                Grant {
                    arguments_sha256: canonical_arguments(&arguments).1,
                    arguments,
                    ..used.clone()
                },
                "the arguments",
            ),
            (
                Grant {
                    scope: GrantScope::Channel,
                    ..used.clone()
                },
                "the scope",
            ),
            (
                Grant {
                    session: SessionId::parse("web-2").unwrap(),
                    ..used.clone()
                },
                "the conversation",
            ),
            (
                Grant {
                    person: Some("42".into()),
                    ..used.clone()
                },
                "the person",
            ),
            (
                Grant {
                    workspace_sha256: None,
                    ..used.clone()
                },
                "the workspace's hash",
            ),
            (
                Grant {
                    card_sha256: "9".repeat(64),
                    ..used.clone()
                },
                "the card's hash",
            ),
            (
                Grant {
                    tier: Tier::Write,
                    ..used.clone()
                },
                "the tier",
            ),
        ];
        for (row, what) in cases {
            assert_eq!(differs(row), Err(UntrustedGrant::Differs(what)), "{what}");
        }
        let revoked = RecordedGrant {
            revoked: true,
            ..record.clone()
        };
        assert_eq!(
            cross_check_grant(&used, Ok(Some(&revoked))),
            Err(UntrustedGrant::Differs("its revocation"))
        );
        assert_eq!(
            cross_check_grant(&used, Ok(None)),
            Err(UntrustedGrant::NotRecorded)
        );
        assert_eq!(
            cross_check_grant(&used, Err("broken at line 3")),
            Err(UntrustedGrant::NoRecord("broken at line 3".into()))
        );
    }

    #[test]
    fn the_reasons_read_as_a_person_can_act_on_them() {
        assert_eq!(
            UntrustedGrant::NotRecorded.to_string(),
            "the audit log records no grant_created line for it (written into state.db behind tau's back)"
        );
        assert_eq!(
            UntrustedGrant::Differs("when it ends").to_string(),
            "its row in state.db differs from the audit log's: when it ends (changed behind tau's back)"
        );
    }
}
