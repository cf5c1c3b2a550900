//! The command's processes: its run to the end or the timeout, and its process group,
//! killed so that nothing the command started outlives the call.

use std::process::ExitStatus;
use std::time::Duration;

use rustix::io::Errno;
use rustix::process::{Pid, Signal};
use tau_agent::ToolContext;
use tokio::process::Child;

use super::output::Capture;

/// How long output still held by a process outside the group may keep the result waiting.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Runs the child to its end or the timeout, reading both streams meanwhile; None when the
/// timeout stopped it. Either way the process group is killed afterwards, so nothing the
/// command started outlives the call.
pub(crate) async fn supervise(
    child: &mut Child,
    group: &mut ProcessGroup,
    [stdout, stderr]: [&mut Capture; 2],
    timeout: Duration,
    context: &ToolContext,
) -> Option<std::io::Result<ExitStatus>> {
    let mut out_pipe = child.stdout.take();
    let mut err_pipe = child.stderr.take();
    let finished = {
        let reading = async {
            tokio::join!(
                drain(stdout, out_pipe.as_mut(), context),
                drain(stderr, err_pipe.as_mut(), context)
            )
        };
        tokio::time::timeout(timeout, async {
            tokio::select! {
                status = child.wait() => status,
                _ = reading => child.wait().await,
            }
        })
        .await
        .ok()
    };
    group.kill();
    // Output written just before the end is still in the pipes; a process that left the
    // group may hold them open, so the wait is short.
    let _ = tokio::time::timeout(DRAIN_GRACE, async {
        tokio::join!(
            drain(stdout, out_pipe.as_mut(), context),
            drain(stderr, err_pipe.as_mut(), context)
        )
    })
    .await;
    finished
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

/// The command's process group, killed once: when the command ends, or when the call is
/// dropped first (a cancelled turn), since `kill_on_drop` alone would stop only `sh`.
pub(crate) struct ProcessGroup(Option<Pid>);

impl ProcessGroup {
    pub(crate) fn of(child: &Child) -> Self {
        // `process_group(0)` made the shell the leader: the group id is its pid.
        let leader = child
            .id()
            .and_then(|id| i32::try_from(id).ok())
            .and_then(Pid::from_raw);
        Self(leader)
    }

    pub(crate) fn kill(&mut self) {
        let Some(group) = self.0.take() else {
            return;
        };
        match rustix::process::kill_process_group(group, Signal::KILL) {
            // SRCH: the group is already empty, which is the goal.
            Ok(()) | Err(Errno::SRCH) => {}
            Err(error) => {
                let group = group.as_raw_nonzero().get();
                tracing::warn!(%error, group, "could not stop a command's process group");
            }
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}
