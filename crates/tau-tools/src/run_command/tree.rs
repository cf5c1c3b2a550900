//! Every process a command started: found in `/proc`, stopped, and reaped where tau
//! adopted it.
//!
//! Two facts make the search complete. A command's shell starts in a session of its own
//! (`setsid`), and a session can be left but never joined, so no process of a command is
//! ever in tau's session. And while a command runs tau is a child subreaper, so a process
//! whose parent dies is adopted by tau instead of init. So every process a command started
//! is, at any moment, in the command's session, or below the shell, or below a child of tau
//! outside tau's session that started after the shell. Those are stopped with SIGKILL
//! through a pidfd, so a recycled pid is never signalled, round after round until none is
//! left. Adopted ones are reaped by their own pid: never `waitpid(-1)`, which would take the
//! exit statuses of tau's own children (MCP servers) from tokio.
//!
//! tau is a subreaper only while a command runs, not for its whole life: otherwise the
//! orphans of an MCP server's own children would be adopted too, and those, in tau's
//! session, could not be told from tau's own children, so they would stay zombies.
//!
//! An adopted process that left the command's session cannot be told from another
//! command's that did the same; whichever command ends first stops it. None outlives its own.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use rustix::process::{Pid, WaitOptions};
use tau_sandbox::procs::{Proc, read_stat, scan};

/// A command's shell: the first process, leader of the command's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Root {
    pub pid: i32,
    pub start: u64,
}

/// tau itself, to tell its own children from a command's.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Me {
    pub pid: i32,
    pub session: i32,
}

impl Me {
    /// The session as `/proc` shows it, not from `getsid`: when tau's session leader is
    /// outside its pid namespace (a container started from a shell outside it) the session
    /// reads as 0, which `/proc` reports alike for every process in it.
    fn now() -> Self {
        let pid = rustix::process::getpid().as_raw_nonzero().get();
        let session = read_stat(pid).map_or(pid, |own| own.session);
        Self { pid, session }
    }
}

struct Registry {
    /// The shells of running commands that tokio has not reaped yet: not orphans, and
    /// never anyone else's to stop or reap.
    roots: BTreeSet<Root>,
    /// Commands not yet stopped in full; tau is a subreaper while there are any.
    active: usize,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    roots: BTreeSet::new(),
    active: 0,
});

fn registry() -> MutexGuard<'static, Registry> {
    REGISTRY.lock().unwrap_or_else(PoisonError::into_inner)
}

/// Why a command could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartError {
    #[error(
        "tau cannot become a child subreaper, so it could not stop what the command starts: {0}"
    )]
    Subreaper(std::io::Error),
    #[error("could not start `setsid sh -c`: {0}")]
    Spawn(std::io::Error),
    #[error("could not find the command's process in /proc, so it could not be stopped")]
    NotVisible,
}

/// Spawns `command` as a command's root. Registered before any other command looks for
/// orphans, so it is never taken for one.
pub(crate) fn spawn(
    command: &mut tokio::process::Command,
) -> Result<(tokio::process::Child, Root), StartError> {
    let mut registry = registry();
    if registry.active == 0 {
        rustix::process::set_child_subreaper(Some(rustix::process::getpid()))
            .map_err(|errno| StartError::Subreaper(errno.into()))?;
    }
    registry.active += 1;
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(error) => {
            registry.finish_one();
            return Err(StartError::Spawn(error));
        }
    };
    // Not reaped before it is waited for, so its stat is there.
    let stat = child
        .id()
        .and_then(|id| i32::try_from(id).ok())
        .and_then(read_stat);
    let Some(stat) = stat else {
        let _ = child.start_kill();
        registry.finish_one();
        return Err(StartError::NotVisible);
    };
    let root = Root {
        pid: stat.pid,
        start: stat.start,
    };
    registry.roots.insert(root);
    Ok((child, root))
}

impl Registry {
    fn finish_one(&mut self) {
        self.active = self.active.saturating_sub(1);
        if self.active == 0
            && let Err(error) = rustix::process::set_child_subreaper(None)
        {
            tracing::warn!(%error, "could not stop being a child subreaper");
        }
    }
}

/// Ends a command's bookkeeping once it is stopped in full. `reaped`: tokio has reaped the
/// shell; until then its pid stays registered, for good if it never is.
pub(crate) fn finish(root: Root, reaped: bool) {
    let mut registry = registry();
    if reaped {
        registry.roots.remove(&root);
    }
    registry.finish_one();
}

/// Pause between rounds: long enough for a killed process to die.
const ROUND_PAUSE: Duration = Duration::from_millis(5);
/// Two seconds of rounds; a process that outlasts them is stuck in the kernel.
const MAX_ROUNDS: u32 = 400;

/// Stops every process of the command under `root` and reaps those tau adopted, round
/// after round until none is left. Blocks; the shell itself is left for tokio to reap.
pub(crate) fn stop_all(root: Root) {
    let me = Me::now();
    for _ in 0..MAX_ROUNDS {
        if sweep(root, me) == 0 {
            return;
        }
        std::thread::sleep(ROUND_PAUSE);
    }
    tracing::warn!(
        shell = root.pid,
        "some processes of a command did not stop within 2 s"
    );
}

/// One round: kills what lives, reaps what tau adopted and died. Returns how many processes
/// are not gone yet.
fn sweep(root: Root, me: Me) -> usize {
    // Held while deciding and reaping: no command starts (and no shell goes unregistered)
    // in between, and no other sweep reaps the same orphan.
    let registry = registry();
    let others: BTreeSet<Root> = registry
        .roots
        .iter()
        .filter(|other| **other != root)
        .copied()
        .collect();
    let members = members(&scan(), me, root, &others);
    let pids: BTreeSet<i32> = members.iter().map(|p| p.pid).collect();
    let mut left = 0;
    for process in &members {
        let is_root = process.pid == root.pid && process.start == root.start;
        if !process.zombie {
            kill(process);
            left += 1;
        } else if is_root {
            // Dead; tokio reaps it.
        } else if process.ppid == me.pid {
            reap(process);
        } else if pids.contains(&process.ppid) {
            // Its parent dies this round; then tau adopts it.
            left += 1;
        }
    }
    left
}

/// The processes of the command under `root` in `procs`.
pub(crate) fn members(procs: &[Proc], me: Me, root: Root, others: &BTreeSet<Root>) -> Vec<Proc> {
    let other_sessions: BTreeSet<i32> = others.iter().map(|other| other.pid).collect();
    let another_commands = |p: &Proc| {
        others.contains(&Root {
            pid: p.pid,
            start: p.start,
        }) || (p.session != root.pid && other_sessions.contains(&p.session))
    };
    let seed = |p: &Proc| {
        // 1. the shell
        if p.pid == root.pid && p.start == root.start {
            return true;
        }
        // 2. nothing older than the shell, nothing of another running command
        if p.start < root.start || another_commands(p) {
            return false;
        }
        // 3. in the command's session, wherever its parent went
        // 4. adopted by tau from outside tau's session, which only a command can leave
        p.session == root.pid || (p.ppid == me.pid && p.session != me.session)
    };
    let mut found: BTreeMap<i32, Proc> = procs
        .iter()
        .filter(|p| seed(p))
        .map(|p| (p.pid, *p))
        .collect();
    // 5. everything below those
    let mut children: BTreeMap<i32, Vec<&Proc>> = BTreeMap::new();
    for process in procs {
        children.entry(process.ppid).or_default().push(process);
    }
    let mut queue: Vec<i32> = found.keys().copied().collect();
    while let Some(parent) = queue.pop() {
        for child in children.get(&parent).into_iter().flatten() {
            if !another_commands(child) && found.insert(child.pid, **child).is_none() {
                queue.push(child.pid);
            }
        }
    }
    found.into_values().collect()
}

/// SIGKILL, only to the very process that was found (see `procs::kill`).
fn kill(process: &Proc) {
    if let Err(error) = tau_sandbox::procs::kill(process) {
        tracing::debug!(%error, pid = process.pid, "could not stop a command's process");
    }
}

/// Reaps one adopted zombie by its pid. Only sweeps reap adopted processes, under the
/// registry lock, so the pid still names the zombie that was found.
fn reap(process: &Proc) {
    if let Some(pid) = Pid::from_raw(process.pid)
        && let Err(error) = rustix::process::waitpid(Some(pid), WaitOptions::NOHANG)
    {
        tracing::warn!(%error, pid = process.pid, "could not reap a command's process");
    }
}

#[cfg(test)]
#[path = "tree_tests.rs"]
mod tests;
