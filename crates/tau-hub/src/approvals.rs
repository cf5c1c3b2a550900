//! `SqliteApprovals`: the durable approval store, a table in `state.db`.
//!
//! Every change is a compare-and-set in one statement (`UPDATE ... WHERE state =
//! 'pending'`, `... WHERE consumed_at IS NULL`), committed with a full sync before it
//! returns, so two answers racing in two processes still have exactly one winner and an
//! approval is let through exactly once.

use std::path::Path;
use std::sync::{Mutex, MutexGuard, PoisonError};

use jiff::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};
use tau_core::approval::{Answered, ApprovalRow, ApprovalState, ApprovalStore, StoreError};
use tau_core::{DecidedBy, Tier};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS approvals (
    id TEXT PRIMARY KEY,
    session TEXT NOT NULL,
    call_id TEXT NOT NULL,
    tool TEXT NOT NULL,
    tier INTEGER NOT NULL,
    effect TEXT NOT NULL,
    arguments TEXT NOT NULL,
    arguments_sha256 TEXT NOT NULL,
    channel TEXT NOT NULL,
    created_at TEXT NOT NULL,
    deadline TEXT NOT NULL,
    state TEXT NOT NULL,
    decided_by TEXT,
    decided_at TEXT,
    consumed_at TEXT,
    settled INTEGER NOT NULL DEFAULT 0,
    card TEXT NOT NULL DEFAULT '{}'
);
CREATE INDEX IF NOT EXISTS approvals_state ON approvals (state, settled);
";

const COLUMNS: &str = "id, session, call_id, tool, tier, effect, arguments, arguments_sha256, \
     channel, created_at, deadline, state, decided_by, decided_at, consumed_at, card";

/// Durable questions in `state.db`. Safe to share between threads and processes.
pub struct SqliteApprovals {
    connection: Mutex<Connection>,
}

fn store_error(error: impl std::fmt::Display) -> StoreError {
    StoreError(error.to_string())
}

impl SqliteApprovals {
    /// Opens (creating when needed) the table in the database at `path`.
    pub fn open(path: &Path) -> Result<Self, StoreError> {
        Self::setup(Connection::open(path).map_err(store_error)?)
    }

    /// A store that lives as long as this value, for tests.
    pub fn in_memory() -> Result<Self, StoreError> {
        Self::setup(Connection::open_in_memory().map_err(store_error)?)
    }

    fn setup(connection: Connection) -> Result<Self, StoreError> {
        // An answer is durable when it returns.
        tau_agent::prepare_state_tables(&connection, SCHEMA).map_err(store_error)?;
        add_card_column(&connection).map_err(store_error)?;
        Ok(Self {
            connection: Mutex::new(connection),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Connection> {
        self.connection
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Marks a decided question as dealt with: its turn was resumed or closed. Only the
    /// hub's own bookkeeping; the gate never reads it.
    pub fn mark_settled(&self, id: &str) -> Result<(), StoreError> {
        self.lock()
            .execute(
                "UPDATE approvals SET settled = 1 WHERE id = ?1 AND state != 'pending'",
                params![id],
            )
            .map_err(store_error)?;
        Ok(())
    }

    /// Decided questions whose turn was not resumed or closed yet (the hub stopped in
    /// between), oldest first.
    pub fn unsettled(&self) -> Result<Vec<ApprovalRow>, StoreError> {
        self.select("WHERE state != 'pending' AND settled = 0", params![])
    }

    /// Rows of one session, oldest first.
    pub fn of_session(&self, session: &str) -> Result<Vec<ApprovalRow>, StoreError> {
        self.select("WHERE session = ?1", params![session])
    }

    fn select(
        &self,
        filter: &str,
        values: impl rusqlite::Params,
    ) -> Result<Vec<ApprovalRow>, StoreError> {
        let connection = self.lock();
        let mut statement = connection
            .prepare(&format!("SELECT {COLUMNS} FROM approvals {filter}"))
            .map_err(store_error)?;
        let rows = statement
            .query_map(values, read_columns)
            .map_err(store_error)?;
        let mut out = Vec::new();
        for row in rows {
            out.push(parse(row.map_err(store_error)?)?);
        }
        out.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        Ok(out)
    }

    fn get_locked(connection: &Connection, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        connection
            .query_row(
                &format!("SELECT {COLUMNS} FROM approvals WHERE id = ?1"),
                params![id],
                read_columns,
            )
            .optional()
            .map_err(store_error)?
            .map(parse)
            .transpose()
    }
}

/// A table made before questions had cards gets the column; its rows have empty cards.
fn add_card_column(connection: &Connection) -> rusqlite::Result<()> {
    let has_card = connection
        .prepare("SELECT 1 FROM pragma_table_info('approvals') WHERE name = 'card'")?
        .exists([])?;
    if !has_card {
        connection
            .execute_batch("ALTER TABLE approvals ADD COLUMN card TEXT NOT NULL DEFAULT '{}'")?;
    }
    Ok(())
}

/// A row's columns as stored, before they are checked.
type Raw = (
    [String; 13],
    (Option<String>, Option<String>, Option<String>),
);

fn read_columns(row: &rusqlite::Row<'_>) -> rusqlite::Result<Raw> {
    let text = |i: usize| row.get::<_, String>(i);
    let tier: i64 = row.get(4)?;
    Ok((
        [
            text(0)?,
            text(1)?,
            text(2)?,
            text(3)?,
            tier.to_string(),
            text(5)?,
            text(6)?,
            text(7)?,
            text(8)?,
            text(9)?,
            text(10)?,
            text(11)?,
            text(15)?,
        ],
        (row.get(12)?, row.get(13)?, row.get(14)?),
    ))
}

/// A stored row, checked field by field: a row that does not parse is an error, never a
/// default (a default could look approved).
fn parse(raw: Raw) -> Result<ApprovalRow, StoreError> {
    let (
        [
            id,
            session,
            call_id,
            tool,
            tier,
            effect,
            arguments,
            arguments_sha256,
            channel,
            created_at,
            deadline,
            state,
            card,
        ],
        (decided_by, decided_at, consumed_at),
    ) = raw;
    let bad = |what: &str| StoreError(format!("approval '{id}' has an unreadable {what}"));
    let time = |text: &str, what: &str| text.parse::<Timestamp>().map_err(|_| bad(what));
    let tier = match tier.as_str() {
        "0" => Tier::Read,
        "1" => Tier::Write,
        "2" => Tier::Physical,
        _ => return Err(bad("tier")),
    };
    let state = ApprovalState::parse(&state).ok_or_else(|| bad("state"))?;
    let decided_by = decided_by
        .map(|text| serde_json::from_str::<DecidedBy>(&text).map_err(|_| bad("decided_by")))
        .transpose()?;
    let decided_at = decided_at.map(|t| time(&t, "decided_at")).transpose()?;
    let consumed_at = consumed_at.map(|t| time(&t, "consumed_at")).transpose()?;
    let card = serde_json::from_str(&card).map_err(|_| bad("card"))?;
    Ok(ApprovalRow {
        created_at: time(&created_at, "created_at")?,
        deadline: time(&deadline, "deadline")?,
        id,
        session,
        call_id,
        tool,
        tier,
        effect,
        arguments,
        arguments_sha256,
        channel,
        state,
        decided_by,
        decided_at,
        consumed_at,
        card,
    })
}

fn tier_number(tier: Tier) -> i64 {
    match tier {
        Tier::Read => 0,
        Tier::Write => 1,
        Tier::Physical => 2,
    }
}

impl ApprovalStore for SqliteApprovals {
    fn create(&self, row: ApprovalRow) -> Result<(), StoreError> {
        let decided_by = row
            .decided_by
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .map_err(store_error)?;
        let card = serde_json::to_string(&row.card).map_err(store_error)?;
        let inserted = self
            .lock()
            .execute(
                &format!(
                    "INSERT OR IGNORE INTO approvals ({COLUMNS}) VALUES \
                     (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
                ),
                params![
                    row.id,
                    row.session,
                    row.call_id,
                    row.tool,
                    tier_number(row.tier),
                    row.effect,
                    row.arguments,
                    row.arguments_sha256,
                    row.channel,
                    row.created_at.to_string(),
                    row.deadline.to_string(),
                    row.state.as_str(),
                    decided_by,
                    row.decided_at.map(|t| t.to_string()),
                    row.consumed_at.map(|t| t.to_string()),
                    card,
                ],
            )
            .map_err(store_error)?;
        if inserted == 1 {
            Ok(())
        } else {
            Err(StoreError(format!("approval '{}' exists already", row.id)))
        }
    }

    fn get(&self, id: &str) -> Result<Option<ApprovalRow>, StoreError> {
        Self::get_locked(&self.lock(), id)
    }

    fn decide(
        &self,
        id: &str,
        to: ApprovalState,
        decided_by: &DecidedBy,
        at: Timestamp,
    ) -> Result<Answered, StoreError> {
        if to == ApprovalState::Pending {
            return Err(StoreError("a question cannot be decided as pending".into()));
        }
        let by = serde_json::to_string(decided_by).map_err(store_error)?;
        let connection = self.lock();
        let changed = connection
            .execute(
                "UPDATE approvals SET state = ?2, decided_by = ?3, decided_at = ?4 \
                 WHERE id = ?1 AND state = 'pending'",
                params![id, to.as_str(), by, at.to_string()],
            )
            .map_err(store_error)?;
        let row = Self::get_locked(&connection, id)?;
        Ok(match (changed, row) {
            (_, None) => Answered::NotFound,
            (1, Some(row)) => Answered::Decided(row),
            (_, Some(row)) => Answered::AlreadyDecided(row),
        })
    }

    fn consume(&self, id: &str, at: Timestamp) -> Result<bool, StoreError> {
        let changed = self
            .lock()
            .execute(
                "UPDATE approvals SET consumed_at = ?2 \
                 WHERE id = ?1 AND state = 'approved' AND consumed_at IS NULL",
                params![id, at.to_string()],
            )
            .map_err(store_error)?;
        Ok(changed == 1)
    }

    fn list(&self, state: Option<ApprovalState>) -> Result<Vec<ApprovalRow>, StoreError> {
        match state {
            Some(state) => self.select("WHERE state = ?1", params![state.as_str()]),
            None => self.select("", params![]),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_core::approval::NewApproval;
    use tau_core::{CallCard, CardNote};

    fn row(id: &str, created: i64) -> ApprovalRow {
        NewApproval {
            id: id.into(),
            session: "web-1".into(),
            call_id: "t1".into(),
            tool: "lights".into(),
            tier: Tier::Physical,
            effect: "switches lights".into(),
            arguments: json!({"room": "kitchen", "a": [2, 1]}),
            channel: "web".into(),
            created_at: Timestamp::from_second(created).unwrap(),
            deadline: Timestamp::from_second(created + 1800).unwrap(),
            card: Default::default(),
        }
        .into_row()
    }

    #[test]
    fn a_row_reads_back_exactly_as_it_was_written() {
        let store = SqliteApprovals::in_memory().unwrap();
        let mut written = row("ap_1", 10);
        written.created_at = "2026-12-02T21:44:52.123456789Z".parse().unwrap();
        store.create(written.clone()).unwrap();
        assert_eq!(store.get("ap_1").unwrap(), Some(written));
        assert_eq!(store.get("ap_2").unwrap(), None);
        assert!(
            store.create(row("ap_1", 11)).is_err(),
            "ids are never reused"
        );
    }

    #[test]
    fn a_card_is_stored_with_its_question_and_a_table_made_before_cards_gets_the_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        {
            // The table as it was before questions had cards, with one question in it.
            let old = Connection::open(&path).unwrap();
            let before = SCHEMA.replace(",\n    card TEXT NOT NULL DEFAULT '{}'", "");
            assert!(!before.contains("card"), "{before}");
            old.execute_batch(&before).unwrap();
            old.execute(
                "INSERT INTO approvals (id, session, call_id, tool, tier, effect, arguments, \
                 arguments_sha256, channel, created_at, deadline, state) VALUES ('ap_old', \
                 'web-1', 't1', 'lights', 2, 'switches lights', '{}', 'x', 'web', \
                 '2026-12-02T10:00:00Z', '2026-12-02T10:30:00Z', 'pending')",
                [],
            )
            .unwrap();
        }
        let store = SqliteApprovals::open(&path).unwrap();
        assert_eq!(
            store.get("ap_old").unwrap().unwrap().card,
            CallCard::default()
        );
        let mut written = row("ap_1", 10);
        written.card.headline = Some("switch ON · Kitchen light (kitchen)".into());
        written
            .card
            .push(CardNote::warning("file", "setup.sh (8 bytes)").with_detail("echo hi\n"));
        store.create(written.clone()).unwrap();
        assert_eq!(store.get("ap_1").unwrap(), Some(written));
    }

    #[test]
    fn the_first_answer_wins_and_repeats_change_nothing() {
        let store = SqliteApprovals::in_memory().unwrap();
        store.create(row("ap_1", 10)).unwrap();
        let person = DecidedBy::person("web");
        let at = Timestamp::from_second(20).unwrap();
        let Answered::Decided(decided) = store
            .decide("ap_1", ApprovalState::Approved, &person, at)
            .unwrap()
        else {
            panic!("the first answer decides");
        };
        assert_eq!(
            (
                decided.state,
                decided.decided_by.clone(),
                decided.decided_at
            ),
            (ApprovalState::Approved, Some(person.clone()), Some(at))
        );
        for (to, by) in [
            (ApprovalState::Approved, person.clone()),
            (ApprovalState::Rejected, person.clone()),
            (ApprovalState::Expired, DecidedBy::Timeout),
        ] {
            let later = Timestamp::from_second(30).unwrap();
            assert_eq!(
                store.decide("ap_1", to, &by, later).unwrap(),
                Answered::AlreadyDecided(decided.clone())
            );
        }
        assert_eq!(
            store
                .decide("ap_9", ApprovalState::Approved, &person, at)
                .unwrap(),
            Answered::NotFound
        );
        assert!(
            store
                .decide("ap_1", ApprovalState::Pending, &person, at)
                .is_err()
        );
    }

    #[test]
    fn only_an_approved_row_is_consumed_and_only_once() {
        let store = SqliteApprovals::in_memory().unwrap();
        store.create(row("ap_1", 10)).unwrap();
        store.create(row("ap_2", 11)).unwrap();
        let at = Timestamp::from_second(20).unwrap();
        assert!(!store.consume("ap_1", at).unwrap(), "pending");
        store
            .decide(
                "ap_2",
                ApprovalState::Rejected,
                &DecidedBy::person("web"),
                at,
            )
            .unwrap();
        assert!(!store.consume("ap_2", at).unwrap(), "rejected");
        store
            .decide(
                "ap_1",
                ApprovalState::Approved,
                &DecidedBy::person("web"),
                at,
            )
            .unwrap();
        assert!(store.consume("ap_1", at).unwrap());
        assert!(!store.consume("ap_1", at).unwrap());
        assert_eq!(store.get("ap_1").unwrap().unwrap().consumed_at, Some(at));
    }

    #[test]
    fn lists_and_settling() {
        let store = SqliteApprovals::in_memory().unwrap();
        store.create(row("ap_b", 12)).unwrap();
        store.create(row("ap_a", 11)).unwrap();
        store.create(row("ap_c", 13)).unwrap();
        let at = Timestamp::from_second(20).unwrap();
        store
            .decide("ap_c", ApprovalState::Expired, &DecidedBy::Timeout, at)
            .unwrap();
        let ids = |rows: Vec<ApprovalRow>| rows.into_iter().map(|r| r.id).collect::<Vec<_>>();
        assert_eq!(
            ids(store.list(Some(ApprovalState::Pending)).unwrap()),
            ["ap_a", "ap_b"],
            "oldest first"
        );
        assert_eq!(ids(store.list(None).unwrap()), ["ap_a", "ap_b", "ap_c"]);
        assert_eq!(ids(store.unsettled().unwrap()), ["ap_c"]);
        store.mark_settled("ap_a").unwrap();
        assert_eq!(
            ids(store.list(Some(ApprovalState::Pending)).unwrap()),
            ["ap_a", "ap_b"],
            "a pending question is never settled"
        );
        store.mark_settled("ap_c").unwrap();
        assert!(store.unsettled().unwrap().is_empty());
    }

    #[test]
    fn two_handles_on_one_file_race_to_one_winner() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        SqliteApprovals::open(&path)
            .unwrap()
            .create(row("ap_1", 10))
            .unwrap();
        let winners: usize = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..6)
                .map(|n| {
                    let path = &path;
                    scope.spawn(move || {
                        let store = SqliteApprovals::open(path).unwrap();
                        let to = if n % 2 == 0 {
                            ApprovalState::Approved
                        } else {
                            ApprovalState::Rejected
                        };
                        let by = DecidedBy::person("web");
                        let answered = store.decide("ap_1", to, &by, Timestamp::now()).unwrap();
                        usize::from(matches!(answered, Answered::Decided(_)))
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).sum()
        });
        assert_eq!(winners, 1);
    }

    #[test]
    fn a_tampered_row_is_an_error_never_a_default() {
        let store = SqliteApprovals::in_memory().unwrap();
        store.create(row("ap_1", 10)).unwrap();
        store
            .lock()
            .execute("UPDATE approvals SET state = 'yes' WHERE id = 'ap_1'", [])
            .unwrap();
        assert_eq!(
            store.get("ap_1").unwrap_err().to_string(),
            "approval store: approval 'ap_1' has an unreadable state"
        );
    }
}
