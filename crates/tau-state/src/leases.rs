//! Leases: a name held by one holder until a time, so that of several hubs sharing one
//! store exactly one does a thing at a time: `hub:<id>` says a hub is alive (its cut-off
//! calls are its own to close while it is), a Telegram bot's name says which hub polls it.
//! A lease is claimed and renewed by one compare-and-set (taken when free, expired or
//! already the claimer's) and lost when not renewed before it runs out.
//!
//! Times are the claiming process's clock, in milliseconds since the epoch: hubs sharing a
//! store keep their clocks in step (NTP), and a lease's length is far above their skew.

use std::time::Duration;

use jiff::Timestamp;
use rusqlite::params;

use crate::error::StateError;
use crate::handles::Leases;

/// One lease as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub name: String,
    pub holder: String,
    /// When it runs out, unless renewed.
    pub expires_at: Timestamp,
}

impl Lease {
    /// Whether it is still held at `now`.
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.expires_at > now
    }
}

/// The lease that says hub `hub` is alive.
pub fn hub_lease(hub: &str) -> String {
    format!("hub:{hub}")
}

pub(crate) fn now_millis() -> i64 {
    Timestamp::now().as_millisecond()
}

impl Leases {
    /// Claims `name` for `holder` until `for_` from now, or renews it: true when `holder`
    /// holds it now, false when another holder's lease has not run out.
    pub fn claim(&self, name: &str, holder: &str, for_: Duration) -> Result<bool, StateError> {
        let now = now_millis();
        let length = i64::try_from(for_.as_millis()).unwrap_or(i64::MAX);
        let until = now.saturating_add(length);
        self.db.write(|tx| {
            Ok(tx.execute(
                "INSERT INTO leases (name, holder, expires_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, \
                 expires_at = excluded.expires_at \
                 WHERE leases.holder = excluded.holder OR leases.expires_at <= ?4",
                params![name, holder, until, now],
            )? == 1)
        })
    }

    /// Gives `name` up, when `holder` holds it; another hub may claim it at once.
    pub fn release(&self, name: &str, holder: &str) -> Result<(), StateError> {
        self.db.write(|tx| {
            tx.execute(
                "DELETE FROM leases WHERE name = ?1 AND holder = ?2",
                params![name, holder],
            )?;
            Ok(())
        })
    }

    /// Every lease stored, live or run out, by name.
    pub fn leases(&self) -> Result<Vec<Lease>, StateError> {
        let rows = self.db.read(|c| {
            c.query_map(
                "SELECT name, holder, expires_at FROM leases ORDER BY name",
                params![],
                |row| {
                    Ok((
                        row.get::<_, String>(0)?,
                        row.get::<_, String>(1)?,
                        row.get::<_, i64>(2)?,
                    ))
                },
            )
        })?;
        rows.into_iter()
            .map(|(name, holder, millis)| {
                let expires_at = Timestamp::from_millisecond(millis)
                    .map_err(|e| StateError::unreadable("leases", e.to_string()))?;
                Ok(Lease {
                    name,
                    holder,
                    expires_at,
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::StateDb;
    use pretty_assertions::assert_eq;

    const LONG: Duration = Duration::from_secs(60);

    #[test]
    fn a_lease_is_one_holder_s_until_it_runs_out_or_is_given_up() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.db");
        let one = StateDb::open(&path).unwrap().leases();
        let two = StateDb::open(&path).unwrap().leases();
        assert!(one.claim("bot:42", "hub-a", LONG).unwrap());
        assert!(!two.claim("bot:42", "hub-b", LONG).unwrap(), "held");
        assert!(one.claim("bot:42", "hub-a", LONG).unwrap(), "renewed");
        two.release("bot:42", "hub-b").unwrap();
        assert!(
            !two.claim("bot:42", "hub-b", LONG).unwrap(),
            "not b's to give up"
        );
        one.release("bot:42", "hub-a").unwrap();
        assert!(two.claim("bot:42", "hub-b", LONG).unwrap(), "free again");
        // One that ran out is anyone's.
        assert!(two.claim("hub:b", "hub-b", Duration::ZERO).unwrap());
        assert!(one.claim("hub:b", "hub-a", LONG).unwrap(), "ran out");
        let now = Timestamp::now();
        let held: Vec<_> = one
            .leases()
            .unwrap()
            .into_iter()
            .map(|l| (l.name.clone(), l.holder.clone(), l.is_live(now)))
            .collect();
        assert_eq!(
            held,
            [
                ("bot:42".to_owned(), "hub-b".to_owned(), true),
                ("hub:b".to_owned(), "hub-a".to_owned(), true)
            ]
        );
    }
}
