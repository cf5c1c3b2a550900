//! Places where a test build of tau can be made to stop dead, so a test can kill it with
//! SIGKILL exactly there (between "the call was let through" and "its result was stored",
//! say). Only a build with the `failpoints` feature has them (the `tau` crate's tests turn
//! it on); in any other build [`reach`] is empty and reads no environment.
//!
//! `TAU_FAILPOINT=NAME` picks the place; reaching it writes `NAME` to the file named by
//! `TAU_FAILPOINT_MARK` (how the test knows) and blocks the thread forever, so nothing
//! after it happens until the test kills the process.

/// A question was stored (hidden) and the turn's paused state is not saved yet (a
/// routine's question: not shown yet).
pub const ASKED: &str = "asked";
/// The turn's paused state is saved; its question is not shown yet (to no channel).
pub const SAVED: &str = "saved";
/// A person's answer was stored and its `approval` audit line not written yet.
pub const ANSWERED: &str = "answered";
/// A call to a tier-2 tool was let through (its approval consumed); the tool has not
/// started.
pub const DISPATCHED: &str = "dispatched";
/// A tier-2 tool returned; nothing about its result is recorded yet.
pub const RAN: &str = "ran";
/// A tier-2 call's result is recorded (its `tool_call` audit line written, its stored
/// question marked finished); the turn has not stored the result in its history yet (a
/// routine's run is not recorded yet).
pub const FINISHED: &str = "finished";
/// The `tool_call` audit line of a call a stored question let through is in the file; the
/// chain's anchor in `state.db` has not moved past it yet.
pub const AUDIT_LINE: &str = "audit_line";

#[cfg(feature = "failpoints")]
pub fn reach(name: &str) {
    if std::env::var("TAU_FAILPOINT").ok().as_deref() != Some(name) {
        return;
    }
    if let Some(mark) = std::env::var_os("TAU_FAILPOINT_MARK") {
        let _ = std::fs::write(mark, name);
    }
    tracing::warn!(failpoint = name, "failpoint reached; blocking until killed");
    loop {
        std::thread::park();
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub fn reach(_name: &str) {}
