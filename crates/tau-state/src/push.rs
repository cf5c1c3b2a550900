//! Push subscriptions: the devices a person asked to be told on when a question waits for
//! them (TauBar's push switch). One row per push endpoint, the person it belongs to and the
//! two keys the browser made for it (RFC 8291's `p256dh` and `auth`, base64url as the
//! browser gives them). What a subscription may be (an https endpoint, keys of the right
//! size) is `tau-web`'s to check; this module keeps the text.

use jiff::Timestamp;
use rusqlite::params;

use crate::db::StateDb;
use crate::error::StateError;

/// Push subscriptions: kept, listed per person, removed. Reaches no other table.
#[derive(Clone)]
pub struct PushSubscriptions {
    pub(crate) db: StateDb,
}

impl std::fmt::Debug for PushSubscriptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("PushSubscriptions").field(&self.db).finish()
    }
}

impl StateDb {
    pub fn push_subscriptions(&self) -> PushSubscriptions {
        PushSubscriptions { db: self.clone() }
    }
}

/// One device's push subscription.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushSubscription {
    /// Where the push service takes pushes for that device (it names the device: the
    /// primary key).
    pub endpoint: String,
    /// The person it tells.
    pub person: String,
    /// The device's public key (P-256, base64url).
    pub p256dh: String,
    /// The device's authentication secret (base64url).
    pub auth: String,
}

/// Step 10 of the schema: push subscriptions.
pub(crate) const PUSH_SUBSCRIPTIONS: &str = "
CREATE TABLE push_subscriptions (
    endpoint TEXT PRIMARY KEY,
    person TEXT NOT NULL,
    p256dh TEXT NOT NULL,
    auth TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX push_subscriptions_by_person ON push_subscriptions (person);
";

impl PushSubscriptions {
    /// Keeps `subscription`; one already kept for its endpoint is replaced (a browser that
    /// subscribed again, with new keys, or the device now someone else's).
    pub fn keep(&self, subscription: &PushSubscription) -> Result<(), StateError> {
        let now = Timestamp::now().to_string();
        self.db.write(|tx| {
            tx.execute(
                "INSERT INTO push_subscriptions (endpoint, person, p256dh, auth, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5)
                 ON CONFLICT (endpoint) DO UPDATE SET person = excluded.person,
                 p256dh = excluded.p256dh, auth = excluded.auth, created_at = excluded.created_at",
                params![
                    subscription.endpoint,
                    subscription.person,
                    subscription.p256dh,
                    subscription.auth,
                    now
                ],
            )?;
            Ok(())
        })
    }

    /// `person`'s subscriptions, oldest first.
    pub fn of_person(&self, person: &str) -> Result<Vec<PushSubscription>, StateError> {
        self.db.read(|c| {
            c.query_map(
                "SELECT endpoint, person, p256dh, auth FROM push_subscriptions
                 WHERE person = ?1 ORDER BY created_at, endpoint",
                params![person],
                |row| {
                    Ok(PushSubscription {
                        endpoint: row.get(0)?,
                        person: row.get(1)?,
                        p256dh: row.get(2)?,
                        auth: row.get(3)?,
                    })
                },
            )
        })
    }

    /// Removes `person`'s subscription at `endpoint`; false when they had none there.
    pub fn remove(&self, person: &str, endpoint: &str) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let removed = tx.execute(
                "DELETE FROM push_subscriptions WHERE person = ?1 AND endpoint = ?2",
                params![person, endpoint],
            )?;
            Ok(removed > 0)
        })
    }

    /// Removes the subscription at `endpoint`, whoever's it was (the push service said the
    /// device is gone); false when none was kept.
    pub fn forget_endpoint(&self, endpoint: &str) -> Result<bool, StateError> {
        self.db.write(|tx| {
            let removed = tx.execute(
                "DELETE FROM push_subscriptions WHERE endpoint = ?1",
                params![endpoint],
            )?;
            Ok(removed > 0)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn subscription(endpoint: &str, person: &str) -> PushSubscription {
        PushSubscription {
            endpoint: endpoint.to_owned(),
            person: person.to_owned(),
            p256dh: "key".to_owned(),
            auth: "auth".to_owned(),
        }
    }

    #[test]
    fn kept_per_person_replaced_by_endpoint_and_removed() {
        for store in crate::test_stores::stores() {
            let push = store.open().push_subscriptions();
            assert_eq!(push.of_person("owner").unwrap(), vec![]);
            push.keep(&subscription("https://a", "owner")).unwrap();
            push.keep(&subscription("https://b", "ana")).unwrap();
            let mut again = subscription("https://a", "owner");
            again.auth = "new".to_owned();
            push.keep(&again).unwrap();
            assert_eq!(push.of_person("owner").unwrap(), vec![again.clone()]);
            assert_eq!(
                push.of_person("ana").unwrap(),
                vec![subscription("https://b", "ana")]
            );
            // One person cannot remove another's device.
            assert!(!push.remove("owner", "https://b").unwrap());
            assert!(push.remove("ana", "https://b").unwrap());
            assert!(push.forget_endpoint("https://a").unwrap());
            assert!(!push.forget_endpoint("https://a").unwrap());
            assert_eq!(push.of_person("owner").unwrap(), vec![]);
        }
    }
}
