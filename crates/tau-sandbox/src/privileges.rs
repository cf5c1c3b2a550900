//! No privilege at all for the program: every capability dropped (bounding, effective,
//! permitted, inheritable and ambient sets) and `no_new_privs` set, so neither root nor a
//! set-user-ID or file-capability program it runs gets one back. Without it, a program
//! that tau (running as root) starts would keep every capability, in a user namespace too.
//!
//! Checked after it is done, through the kernel's own answers: a set that is not empty
//! refuses the program, naming the capability left.

use rustix::io::Errno;
use rustix::thread::{self, CapabilitySet, CapabilitySets};

/// Capabilities are numbered below 64 (`CapabilitySet` is a 64-bit mask); the kernel
/// answers EINVAL past its last one.
const CAPABILITY_BITS: u32 = 64;

/// Drops everything, for good, then checks that nothing is left.
pub(crate) fn drop_all() -> Result<(), String> {
    thread::set_no_new_privs(true).map_err(|e| format!("cannot set no_new_privs: {e}"))?;
    // Needs CAP_SETPCAP, which a process that is not root (in its namespace) lacks; it
    // then cannot regain a capability anyway (see `check`).
    let mut bounding_kept = None;
    for bit in 0..CAPABILITY_BITS {
        match thread::remove_capability_from_bounding_set(one(bit)) {
            Ok(()) | Err(Errno::INVAL) => {}
            Err(error) => bounding_kept = Some(error),
        }
    }
    match thread::clear_ambient_capability_set() {
        // Kernels before 4.3 have no ambient set.
        Ok(()) | Err(Errno::INVAL) => {}
        Err(error) => return Err(format!("cannot clear the ambient capabilities: {error}")),
    }
    let none = CapabilitySets {
        effective: CapabilitySet::empty(),
        permitted: CapabilitySet::empty(),
        inheritable: CapabilitySet::empty(),
    };
    thread::set_capabilities(None, none).map_err(|e| format!("cannot drop capabilities: {e}"))?;
    check(bounding_kept)
}

fn one(bit: u32) -> CapabilitySet {
    CapabilitySet::from_bits_retain(1 << bit)
}

/// What is left, as the kernel says it.
fn check(bounding_kept: Option<Errno>) -> Result<(), String> {
    if !thread::no_new_privs().unwrap_or(false) {
        return Err("no_new_privs is not set".to_owned());
    }
    let sets = thread::capabilities(None).map_err(|e| format!("cannot read capabilities: {e}"))?;
    for (name, set) in [
        ("effective", sets.effective),
        ("permitted", sets.permitted),
        ("inheritable", sets.inheritable),
    ] {
        if !set.is_empty() {
            return Err(format!("the {name} capabilities are not empty: {set:?}"));
        }
    }
    let left = |present: fn(CapabilitySet) -> rustix::io::Result<bool>| {
        (0..CAPABILITY_BITS).find(|bit| present(one(*bit)).unwrap_or(false))
    };
    if let Some(bit) = left(thread::capability_is_in_ambient_set) {
        return Err(format!("capability {bit} is still in the ambient set"));
    }
    // A process whose user ids are all non-zero gains nothing from the bounding set under
    // no_new_privs; root (in its namespace) would get all of it back at `exec`.
    let root = rustix::process::getuid().is_root()
        || rustix::process::geteuid().is_root()
        || saved_uid_is_root() != Some(false);
    if root && let Some(bit) = left(thread::capability_is_in_bounding_set) {
        return Err(format!(
            "capability {bit} is still in the bounding set{}",
            bounding_kept.map_or_else(String::new, |e| format!(" ({e})"))
        ));
    }
    Ok(())
}

/// Whether the saved user id is root, from `/proc/self/status` (`Uid: real effective
/// saved filesystem`); `None` when it cannot be read.
fn saved_uid_is_root() -> Option<bool> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    let saved = line.split_whitespace().nth(3)?;
    Some(saved == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bit_is_one_capability() {
        assert_eq!(one(0), CapabilitySet::CHOWN);
        assert_eq!(one(21), CapabilitySet::SYS_ADMIN);
        assert_eq!(one(63).bits(), 1 << 63);
    }
}
