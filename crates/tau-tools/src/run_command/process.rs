//! A running command: its run to the end, the timeout or a cancelled turn, then every
//! process it started stopped, so nothing outlives the call.

use std::process::ExitStatus;
use std::time::Duration;

use tau_agent::ToolContext;
use tokio::process::{Child, Command};

use super::output::Capture;
use super::tree::{self, Root, StartError};

/// How long output still held by a process that is being stopped may keep the result
/// waiting.
const DRAIN_GRACE: Duration = Duration::from_millis(500);
/// How long a dropped call waits for the killed shell to be reaped through tokio.
const DROP_REAP_WAIT: Duration = Duration::from_millis(200);

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
    stopped: bool,
    finished: bool,
}

impl Running {
    pub(crate) fn start(command: &mut Command) -> Result<Self, StartError> {
        let (child, root) = tree::spawn(command)?;
        Ok(Self {
            child,
            root,
            stopped: false,
            finished: false,
        })
    }

    /// Stops every process of the command; the shell is reaped by `wait`.
    async fn stop_all(&mut self) {
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
        // Dropped mid-run (the caller went away): kill the shell and reap it through tokio,
        // so its pid is never mistaken for an orphan; the rest is stopped on a thread.
        let _ = self.child.start_kill();
        let deadline = std::time::Instant::now() + DROP_REAP_WAIT;
        let reaped = loop {
            match self.child.try_wait() {
                Ok(Some(_)) | Err(_) => break true,
                Ok(None) if std::time::Instant::now() >= deadline => break false,
                Ok(None) => std::thread::sleep(Duration::from_millis(1)),
            }
        };
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
