//! Durable approvals: a tier-2 question that outlives the process that asked it.
//!
//! In a hub conversation the gate does not wait in memory. It writes an [`ApprovalRow`]
//! (an unguessable id, the call, its arguments as canonical JSON and their SHA-256, the
//! channel, a deadline, state `pending`), and the turn stops. A channel answers with a
//! compare-and-set on the row (the first answer wins); the hub resumes the turn, and
//! before the call runs the gate checks the row again — approved, not yet consumed
//! (consuming is a second compare-and-set), not past its deadline, the tool registered
//! with the same tier, the arguments hashing to the same SHA-256. So what was approved is
//! what runs, exactly once, however many restarts lie between question and answer.
//!
//! Consuming the row is also the record that the call was dispatched, made durably before
//! the tool starts; its outcome (`finished`) is recorded when the tool returns. A row
//! consumed without an outcome was running when tau stopped: it is never run again but
//! closed as `effect_uncertain` (the model, the channel and the audit log are told it may
//! or may not have run).
//!
//! The rows live in `state.db`: `tau-state` keeps them and names their types, and the
//! gate is handed its [`Approvals`](tau_state::Approvals) handle, the one that may decide.
