//! The namespace layer: a user namespace (so no privilege is needed), a PID namespace (the
//! program is its pid 1: when it ends, the kernel ends everything else in it, and nothing in
//! it can see or signal a process outside), and without network a network namespace of its
//! own (no interface but a loopback that is down, and its own abstract Unix sockets).
//!
//! Optional: where a machine forbids them, the launcher's subreaper and parent-death signals
//! still stop every process, and Landlock and seccomp still keep files and network closed.

use nix::sched::{CloneFlags, unshare};

/// What was set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Namespaces {
    pub pid: bool,
    pub net: bool,
}

/// Moves this process into new namespaces; its next child is pid 1 of the new PID
/// namespace. Must run before the process has a second thread. An error means the process
/// is in a user namespace it could not map itself into: it must not go on.
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
    if unshare(CloneFlags::CLONE_NEWUSER | isolated).is_ok() {
        map_ids(uid, gid)?;
        return Ok(set_up);
    }
    // Without user namespaces, a process with CAP_SYS_ADMIN (root outside a container)
    // can still have the others.
    if unshare(isolated).is_ok() {
        return Ok(set_up);
    }
    Ok(Namespaces::default())
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
