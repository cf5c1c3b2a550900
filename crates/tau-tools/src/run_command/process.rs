//! A running command: its run to the end, the timeout or a cancelled turn, then every
//! process it started stopped, so nothing outlives the call.
//!
//! A sandboxed command is stopped by its launcher first: tau closes its end of the
//! launcher's report pipe, and the launcher kills the command's process group at once
//! (which no process forking and exiting slips past) and everything below it, then exits.
//! tau's own sweep (`tree`) follows for whatever is left.

use std::process::ExitStatus;
use std::time::Duration;

use tau_agent::ToolContext;
use tau_sandbox::Lifeline;
use tokio::process::{Child, Command};

use super::output::Capture;
use super::tree::{self, Root, StartError};

/// How long output still held by a process that is being stopped may keep the result
/// waiting.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How long a dropped call waits for the killed shell to be reaped through tokio.
const DROP_REAP_WAIT: Duration = Duration::from_millis(200);
/// How long a launcher has to stop its command and exit: one kill, then rounds of at most
/// two seconds for what left the group.
const LAUNCHER_STOP_WAIT: Duration = Duration::from_secs(3);
/// The same for a dropped call, which blocks meanwhile; the sweep on a thread follows.
const DROP_STOP_WAIT: Duration = Duration::from_millis(500);

/// How the wait for a command ended.
pub(crate) enum Ending {
    Exited(std::io::Result<ExitStatus>),
    TimedOut,
    Cancelled,
}

/// The shell and everything it starts, stopped by `finish` or, when the call is dropped
/// first, by `Drop`.
pub(crate) struct Running {
    child: Child,
    root: Root,
    /// A sandboxed command's launcher stops it whole when this is dropped.
    lifeline: Option<Lifeline>,
    stopped: bool,
    finished: bool,
}

impl Running {
    pub(crate) fn start(command: &mut Command) -> Result<Self, StartError> {
        let (child, root) = tree::spawn(command)?;
        Ok(Self {
            child,
            root,
            lifeline: None,
            stopped: false,
            finished: false,
        })
    }

    /// Keeps tau's end of the launcher's report pipe until the command is stopped.
    pub(crate) fn hold(&mut self, lifeline: Option<Lifeline>) {
        self.lifeline = lifeline;
    }

    /// Stops every process of the command; the shell is reaped by `wait`.
    async fn stop_all(&mut self) {
        if self.lifeline.take().is_some() {
            let _ = tokio::time::timeout(LAUNCHER_STOP_WAIT, self.child.wait()).await;
        }
        let root = self.root;
        let stopping = tokio::task::spawn_blocking(move || tree::stop_all(root));
        if stopping.await.is_err() {
            tracing::warn!(shell = root.pid, "stopping a command's processes failed");
        }
        self.stopped = true;
    }

    /// The shell's status, once it is dead.
    pub(crate) async fn wait(&mut self) -> std::io::Result<ExitStatus> {
        self.child.wait().await
    }

    /// Stops everything, reaps the shell and ends the bookkeeping.
    pub(crate) async fn end(mut self) {
        self.stop_all().await;
        let _ = self.wait().await;
        self.finish();
    }

    /// Ends the bookkeeping, after `wait`.
    pub(crate) fn finish(mut self) {
        self.finished = true;
        tree::finish(self.root, true);
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // Dropped mid-run (the caller went away): have the launcher stop everything, else
        // kill the shell, and reap it through tokio, so its pid is never mistaken for an
        // orphan; the rest is stopped on a thread.
        let asked = self.lifeline.take().is_some();
        let mut reaped = asked && self.reaped_within(DROP_STOP_WAIT);
        if !reaped {
            let _ = self.child.start_kill();
            reaped = self.reaped_within(DROP_REAP_WAIT);
        }
        let root = self.root;
        let stopped = self.stopped;
        std::thread::spawn(move || {
            if !stopped {
                tree::stop_all(root);
            }
            tree::finish(root, reaped);
        });
    }
}

impl Running {
    /// Whether the shell (or launcher) was reaped within `wait`; blocks meanwhile.
    fn reaped_within(&mut self, wait: Duration) -> bool {
        let deadline = std::time::Instant::now() + wait;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => return true,
                Ok(None) if std::time::Instant::now() >= deadline => return false,
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            }
        }
    }
}

/// Runs the command to its end, the timeout or a cancel, reading both streams meanwhile.
/// Whichever comes first, every process the command started is stopped before this returns.
pub(crate) async fn supervise(
    running: &mut Running,
    [stdout, stderr]: [&mut Capture; 2],
    timeout: Duration,
    context: &ToolContext,
) -> Ending {
    let mut out_pipe = running.child.stdout.take();
    let mut err_pipe = running.child.stderr.take();
    let ending = {
        let child = &mut running.child;
        let reading = async {
            tokio::join!(
                drain(stdout, out_pipe.as_mut(), context),
                drain(stderr, err_pipe.as_mut(), context)
            )
        };
        tokio::select! {
            status = async {
                tokio::select! {
                    status = child.wait() => status,
                    _ = reading => child.wait().await,
                }
            } => Ending::Exited(status),
            () = tokio::time::sleep(timeout) => Ending::TimedOut,
            () = context.cancelled() => Ending::Cancelled,
        }
    };
    running.stop_all().await;
    // Output written just before the end is still in the pipes; nothing holds them open
    // any more, but the wait stays short all the same.
    let _ = tokio::time::timeout(DRAIN_GRACE, async {
        tokio::join!(
            drain(stdout, out_pipe.as_mut(), context),
            drain(stderr, err_pipe.as_mut(), context)
        )
    })
    .await;
    ending
}

async fn drain<R: tokio::io::AsyncRead + Unpin>(
    capture: &mut Capture,
    pipe: Option<&mut R>,
    context: &ToolContext,
) {
    if let Some(pipe) = pipe {
        capture.drain(pipe, context).await;
    }
}
