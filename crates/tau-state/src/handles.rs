//! The narrow handles: one per table or concern, each a clone of the one connection, handed
//! out by whoever opened [`StateDb`] (the binary, the hub) to a part that needs exactly
//! that. A part holding a [`TelegramMemory`] can read and write the channel's memory and
//! nothing else; only a holder of [`Approvals`] can decide a question, and one holding an
//! [`ApprovalReader`] can only list them.
//!
//! The gate decides through its [`Approvals`]:
//! ```
//! # fn decide(approvals: &tau_state::Approvals, id: &tau_protocol::ApprovalId) {
//! let by = tau_protocol::DecidedBy::Policy;
//! let to = tau_state::ApprovalState::Cancelled;
//! let _ = approvals.decide_approval(id, to, &by, jiff::Timestamp::now());
//! # }
//! ```
//! A part handed only the reader cannot:
//! ```compile_fail
//! # fn decide(reader: &tau_state::ApprovalReader, id: &tau_protocol::ApprovalId) {
//! let by = tau_protocol::DecidedBy::Policy;
//! let to = tau_state::ApprovalState::Cancelled;
//! let _ = reader.decide_approval(id, to, &by, jiff::Timestamp::now());
//! # }
//! ```
//! nor can the Telegram channel's memory reach a question at all:
//! ```compile_fail
//! # fn decide(memory: &tau_state::TelegramMemory, id: &tau_protocol::ApprovalId) {
//! let by = tau_protocol::DecidedBy::Policy;
//! let to = tau_state::ApprovalState::Cancelled;
//! let _ = memory.decide_approval(id, to, &by, jiff::Timestamp::now());
//! # }
//! ```

use crate::db::StateDb;

/// A handle over the one connection, cheap to clone, that reaches one concern only.
macro_rules! handle {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone)]
        pub struct $name {
            pub(crate) db: StateDb,
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_tuple(stringify!($name)).field(&self.db).finish()
            }
        }
    };
}

handle!(
    /// Sessions: their messages and agent state (as JSON text), their titles and search.
    Sessions
);
handle!(
    /// Conversations: which session a channel's conversation talks to.
    Conversations
);
handle!(
    /// Stored questions, read only: one by id, the lists. Nothing through it decides,
    /// stores, shows or lets a call through.
    ApprovalReader
);
handle!(
    /// Grants: made, matched, used and revoked, and the workspace trees they are pinned to.
    Grants
);
handle!(
    /// Routines: definitions, switches, runs and marks.
    Routines
);
handle!(
    /// Devices, the discovery configs seen and the last states.
    Devices
);
handle!(
    /// What the Telegram channel remembers: where it stopped reading updates, each chat's
    /// `/new` count, which message shows which question.
    TelegramMemory
);
handle!(
    /// People's TauBar tokens and invites, and whose each conversation is.
    People
);
handle!(
    /// The audit log's anchor and the line announced before it is written.
    AuditAnchor
);
handle!(
    /// Leases: which of the hubs sharing the store holds a name (itself alive, a bot's
    /// poller) until when.
    Leases
);

/// The gate's durable questions: stored, shown, decided (the compare-and-set every answer
/// and expiry goes through), let through, closed and settled. Whoever may decide may read:
/// it derefs to its [`ApprovalReader`].
#[derive(Clone, Debug)]
pub struct Approvals {
    pub(crate) reader: ApprovalReader,
}

impl Approvals {
    pub(crate) fn db(&self) -> &StateDb {
        &self.reader.db
    }
}

impl std::ops::Deref for Approvals {
    type Target = ApprovalReader;

    fn deref(&self) -> &ApprovalReader {
        &self.reader
    }
}

impl StateDb {
    pub fn sessions(&self) -> Sessions {
        Sessions { db: self.clone() }
    }

    pub fn conversations(&self) -> Conversations {
        Conversations { db: self.clone() }
    }

    pub fn approval_reader(&self) -> ApprovalReader {
        ApprovalReader { db: self.clone() }
    }

    pub fn approvals(&self) -> Approvals {
        Approvals {
            reader: self.approval_reader(),
        }
    }

    pub fn grants(&self) -> Grants {
        Grants { db: self.clone() }
    }

    pub fn routines(&self) -> Routines {
        Routines { db: self.clone() }
    }

    pub fn devices(&self) -> Devices {
        Devices { db: self.clone() }
    }

    pub fn telegram_memory(&self) -> TelegramMemory {
        TelegramMemory { db: self.clone() }
    }

    pub fn people(&self) -> People {
        People { db: self.clone() }
    }

    pub fn audit_anchor(&self) -> AuditAnchor {
        AuditAnchor { db: self.clone() }
    }

    pub fn leases(&self) -> Leases {
        Leases { db: self.clone() }
    }
}
