//! The namespace layer: a user namespace (so no privilege is needed), a PID namespace (the
//! program is its pid 1: when it ends, the kernel ends everything else in it, and nothing in
//! it can see or signal a process outside), and without network a network namespace of its
//! own (no interface but a loopback that is down, and its own abstract Unix sockets).
//!
//! Required with `sandbox = "on"`: a machine that allows none refuses every program, naming
//! this layer. `sandbox = "reduced"` does not enter them at all (see `launcher.rs`).

use nix::sched::{CloneFlags, unshare};

/// What was set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Namespaces {
    pub pid: bool,
    pub net: bool,
}

/// Moves this process into new namespaces; its next child is pid 1 of the new PID
/// namespace. Must run before the process has a second thread. An error says which could
/// not be made, and why; the process must then not start the program.
pub(crate) fn enter(network: bool) -> Result<Namespaces, String> {
    let uid = rustix::process::getuid().as_raw();
    let gid = rustix::process::getgid().as_raw();
    let mut isolated = CloneFlags::CLONE_NEWPID;
    if !network {
        isolated |= CloneFlags::CLONE_NEWNET;
    }
    let set_up = Namespaces {
        pid: true,
        net: !network,
    };
    let with_user = match unshare(CloneFlags::CLONE_NEWUSER | isolated) {
        Ok(()) => {
            map_ids(uid, gid)?;
            return Ok(set_up);
        }
        Err(errno) => errno,
    };
    // Without user namespaces, a process with CAP_SYS_ADMIN (root outside a container)
    // can still have the others.
    match unshare(isolated) {
        Ok(()) => Ok(set_up),
        Err(without_user) => Err(format!(
            "this machine allows no new user namespace here ({}), and no {} namespace \
             without one ({})",
            with_user.desc(),
            if network { "PID" } else { "PID or network" },
            without_user.desc()
        )),
    }
}

/// Inside the new user namespace the program keeps its own user and group.
fn map_ids(uid: u32, gid: u32) -> Result<(), String> {
    let write = |file: &str, text: String| {
        std::fs::write(format!("/proc/self/{file}"), text)
            .map_err(|e| format!("cannot write /proc/self/{file}: {e}"))
    };
    write("setgroups", "deny".to_owned())?;
    write("uid_map", format!("{uid} {uid} 1"))?;
    write("gid_map", format!("{gid} {gid} 1"))
}
