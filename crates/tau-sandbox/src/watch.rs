//! Stage one's wait: for the program's end, tau's, or tau closing its end of the report's
//! stream (a cancelled call), whichever comes first, reaping the orphans that come to it
//! meanwhile; then nothing below it is left alive.
//!
//! The program is the leader of a process group of its own. The group is killed first,
//! while its leader is still unreaped (so its number names nobody else): one `kill` that
//! the kernel delivers to every member at once, and that a process forking at that moment
//! cannot slip past. With `sandbox = "reduced"` nothing can leave the group (seccomp), so
//! that alone stops a chain that keeps forking and letting its parent exit; with a PID
//! namespace the kernel ends the rest once its pid 1 is gone. What is left below (orphans
//! come here: a subreaper) is then stopped round after round.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, Signal, WaitId, WaitIdOptions, WaitIdStatus, WaitOptions};

use crate::procs::{self, Proc};

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Exited(i32),
    Signaled(i32),
    /// tau is gone: everything was stopped.
    ParentGone,
    /// tau closed its end of the report's stream: everything was stopped.
    Stopped,
}

/// How often the wait wakes without news, to reap orphans and look at its parent.
const TICK: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 100_000_000,
};

/// Waits for `child` (the program, leader of its process group) and `parent` (tau);
/// `lifeline`: this process's copy of the stream tau reads the report on.
pub(crate) fn watch(
    child: Pid,
    parent: Pid,
    parent_fd: Option<&OwnedFd>,
    lifeline: Option<&OwnedFd>,
) -> Ending {
    let child_fd = rustix::process::pidfd_open(child, PidfdFlags::empty()).ok();
    loop {
        if let Some(status) = ended(child) {
            stop_everything_below(child);
            return ending(&status);
        }
        if rustix::process::getppid() != Some(parent) {
            stop_everything_below(child);
            return Ending::ParentGone;
        }
        let mut fds = Vec::with_capacity(3);
        if let Some(fd) = parent_fd {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        if let Some(fd) = &child_fd {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        // A pipe's write end reports an error once no reader is left; nothing else is
        // asked of it.
        let lifeline_at = lifeline.map(|fd| {
            fds.push(PollFd::new(fd, PollFlags::empty()));
            fds.len() - 1
        });
        let _ = poll(&mut fds, Some(&TICK));
        let cut = lifeline_at
            .and_then(|at| fds.get(at))
            .is_some_and(|fd| !fd.revents().is_empty());
        if cut {
            stop_everything_below(child);
            return Ending::Stopped;
        }
        drop(fds);
        reap_orphans(child);
    }
}

/// The program's status once it has ended, left unreaped: its pid, and so its process
/// group's number, stays its own until the group is killed.
fn ended(child: Pid) -> Option<WaitIdStatus> {
    rustix::process::waitid(
        WaitId::Pid(child),
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    )
    .ok()
    .flatten()
}

/// Reaps the orphans that came here and ended, each by its own pid: never the program,
/// which is reaped only once its group is stopped.
fn reap_orphans(child: Pid) {
    let me = rustix::process::getpid().as_raw_nonzero().get();
    let program = child.as_raw_nonzero().get();
    for process in procs::scan() {
        if process.ppid == me
            && process.zombie
            && process.pid != program
            && let Some(pid) = Pid::from_raw(process.pid)
        {
            let _ = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG);
        }
    }
}

fn ending(status: &WaitIdStatus) -> Ending {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signaled(signal),
        (None, None) => Ending::Exited(1),
    }
}

const ROUND_PAUSE: Duration = Duration::from_millis(5);
/// Two seconds of rounds; a process that outlasts them is stuck in the kernel.
const MAX_ROUNDS: u32 = 400;

/// SIGKILL to the program's process group (`child`, not reaped yet), then to every process
/// below this one, round after round until none is left: orphans come here (a
/// subreaper), so a process that left the group or whose parent is gone is still below.
pub(crate) fn stop_everything_below(child: Pid) {
    // Fails only when the group is already empty.
    let _ = rustix::process::kill_process_group(child, Signal::KILL);
    let me = rustix::process::getpid().as_raw_nonzero().get();
    for _ in 0..MAX_ROUNDS {
        let below = descendants(&procs::scan(), me);
        let mut left = 0;
        for process in &below {
            if !process.zombie {
                let _ = procs::kill(process);
                left += 1;
            } else if process.ppid != me {
                // Its parent dies this round; then it comes here to be reaped.
                left += 1;
            }
        }
        // Any child (`waitpid(None)` would wait only for this process's own group).
        while let Ok(Some(_)) = rustix::process::wait(WaitOptions::NOHANG) {}
        if left == 0 {
            return;
        }
        std::thread::sleep(ROUND_PAUSE);
    }
}

/// Every process below `root` in `procs`.
pub(crate) fn descendants(procs: &[Proc], root: i32) -> Vec<Proc> {
    let mut children: BTreeMap<i32, Vec<&Proc>> = BTreeMap::new();
    for process in procs {
        children.entry(process.ppid).or_default().push(process);
    }
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    let mut queue = vec![root];
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            if child.pid != root && seen.insert(child.pid) {
                found.push(**child);
                queue.push(child.pid);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn proc(pid: i32, ppid: i32) -> Proc {
        Proc {
            pid,
            ppid,
            session: 1,
            start: 1,
            zombie: false,
        }
    }

    #[test]
    fn everything_below_and_nothing_beside() {
        let procs = [
            proc(10, 1),
            proc(11, 10),
            proc(12, 11),
            proc(13, 12),
            proc(20, 1),
            proc(21, 20),
        ];
        let mut below: Vec<i32> = descendants(&procs, 10).iter().map(|p| p.pid).collect();
        below.sort_unstable();
        assert_eq!(below, vec![11, 12, 13]);
    }
}
