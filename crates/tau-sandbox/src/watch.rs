//! Stage one's wait: for the program's end or tau's, whichever comes first, reaping the
//! orphans that come to it meanwhile; then nothing below it is left alive.

use std::collections::{BTreeMap, BTreeSet};
use std::os::fd::OwnedFd;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::process::{Pid, PidfdFlags, WaitOptions, WaitStatus};

use crate::procs::{self, Proc};

/// How the wait ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    Exited(i32),
    Signaled(i32),
    /// tau is gone: everything was stopped.
    ParentGone,
}

/// How often the wait wakes without news, to reap orphans and look at its parent.
const TICK: Timespec = Timespec {
    tv_sec: 0,
    tv_nsec: 100_000_000,
};

pub(crate) fn watch(child: Pid, parent: Pid, parent_fd: Option<&OwnedFd>) -> Ending {
    let child_fd = rustix::process::pidfd_open(child, PidfdFlags::empty()).ok();
    loop {
        if let Some(status) = reap(child) {
            stop_everything_below();
            return ending(status);
        }
        if rustix::process::getppid() != Some(parent) {
            stop_everything_below();
            return Ending::ParentGone;
        }
        let mut fds = Vec::with_capacity(2);
        if let Some(fd) = parent_fd {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        if let Some(fd) = &child_fd {
            fds.push(PollFd::new(fd, PollFlags::IN));
        }
        let _ = poll(&mut fds, Some(&TICK));
    }
}

/// Reaps every child that has ended; the program's status when it is among them.
fn reap(child: Pid) -> Option<WaitStatus> {
    let mut found = None;
    while let Ok(Some((pid, status))) = rustix::process::waitpid(None, WaitOptions::NOHANG) {
        if pid == child {
            found = Some(status);
        }
    }
    found
}

fn ending(status: WaitStatus) -> Ending {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(code), _) => Ending::Exited(code),
        (None, Some(signal)) => Ending::Signaled(signal),
        (None, None) => Ending::Exited(1),
    }
}

const ROUND_PAUSE: Duration = Duration::from_millis(5);
/// Two seconds of rounds; a process that outlasts them is stuck in the kernel.
const MAX_ROUNDS: u32 = 400;

/// SIGKILL to every process below this one, round after round until none is left: orphans
/// come here (a subreaper), so a process that left the session or whose parent is gone is
/// still below.
pub(crate) fn stop_everything_below() {
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
        while let Ok(Some(_)) = rustix::process::waitpid(None, WaitOptions::NOHANG) {}
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
