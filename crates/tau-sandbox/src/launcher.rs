//! The two stages of a sandboxed start, run in tau's own executable started again.
//!
//! Stage one (`__sandbox`, tau's child, unconfined): leaves tau's session, becomes a
//! subreaper, watches tau, enters the namespaces (none with `sandbox = "reduced"`) and
//! starts stage two as the leader of a process group of its own, then waits: when the
//! program ends it stops whatever is left below it and exits as the program did; when tau
//! is gone, or closes its end of the report's stream (a cancelled call), it stops
//! everything and exits.
//!
//! Stage two (`__sandbox-exec`, pid 1 of the new PID namespace where there is one): asks
//! for SIGKILL when stage one dies, confines itself with Landlock and seccomp, drops every
//! capability, reports ready and becomes the program, which keeps all of it.
//!
//! Both run before any thread exists (a user namespace requires it; Landlock and seccomp
//! then hold for the whole process). Either one that cannot set a required layer up
//! reports which and why, and the program never starts.

use std::ffi::OsString;
use std::io::Write;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitCode, Stdio};

use rustix::process::{Pid, PidfdFlags, Signal};

use crate::policy::{Launch, ReportStream};
use crate::report::{Report, SandboxLayer};
use crate::watch::{Ending, watch};
use crate::{files, namespaces, privileges, probe, syscalls};

/// tau's first argument for stage one.
pub(crate) const STAGE_ONE: &str = "__sandbox";
const STAGE_TWO: &str = "__sandbox-exec";
/// tau's first argument for the probe of `tau doctor`.
pub(crate) const PROBE: &str = "__sandbox-probe";
/// Where a program's own path starts among the arguments.
const SEPARATOR: &str = "--";
/// A start refused before the program ran.
const REFUSED_EXIT: u8 = 125;

/// Runs a stage when tau was started as one and returns its exit code; `None` for every
/// other start of tau. Call it first thing in `main`, before any thread is started.
pub fn launcher_main() -> Option<ExitCode> {
    let mut args = std::env::args_os().skip(1);
    let stage = args.next()?;
    let rest: Vec<OsString> = args.collect();
    match stage.to_str()? {
        STAGE_ONE => Some(stage_one(&rest)),
        STAGE_TWO => Some(stage_two(&rest)),
        PROBE => Some(probe::probe_main()),
        _ => None,
    }
}

/// The launch and the program's own arguments.
fn parse(rest: &[OsString]) -> Option<(Launch, &[OsString])> {
    let (json, after) = rest.split_first()?;
    let (separator, program) = after.split_first()?;
    if separator != SEPARATOR || program.is_empty() {
        return None;
    }
    Some((serde_json::from_str(json.to_str()?).ok()?, program))
}

/// Writes the report on the stream tau reads it from.
fn report(stream: ReportStream, report: &Report) {
    let line = report.line();
    let written = match stream {
        ReportStream::Stdin => rustix::io::write(std::io::stdin().as_fd(), line.as_bytes()),
        ReportStream::Stderr => rustix::io::write(std::io::stderr().as_fd(), line.as_bytes()),
    };
    if written.is_err() {
        // tau is gone or not listening; the program does not start either way.
    }
}

fn refuse(stream: ReportStream, layer: SandboxLayer, reason: impl Into<String>) -> ExitCode {
    report(stream, &Report::refused(layer, reason));
    ExitCode::from(REFUSED_EXIT)
}

fn stage_one(rest: &[OsString]) -> ExitCode {
    let Some((launch, program)) = parse(rest) else {
        let _ = writeln!(std::io::stderr(), "tau: not a sandbox launch");
        return ExitCode::from(REFUSED_EXIT);
    };
    let stream = launch.report;
    let Some(parent) = Pid::from_raw(launch.parent) else {
        return refuse(stream, SandboxLayer::Launcher, "no parent was named");
    };
    // Watched through a pidfd, not a parent-death signal: tau has many threads, and that
    // signal comes when the thread that started this process ends, not tau.
    let parent_fd = rustix::process::pidfd_open(parent, PidfdFlags::empty()).ok();
    if rustix::process::getppid() != Some(parent) {
        // tau is already gone.
        return ExitCode::from(REFUSED_EXIT);
    }
    // A session of its own: tau finds everything the program starts by it.
    let _ = rustix::process::setsid();
    // Orphans below come here, not to init, so they can be stopped.
    if let Err(error) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        return refuse(
            stream,
            SandboxLayer::Launcher,
            format!("cannot become a child subreaper: {error}"),
        );
    }
    let entered = if launch.reduced {
        namespaces::Namespaces::default()
    } else {
        match namespaces::enter(launch.network) {
            Ok(entered) => entered,
            Err(reason) => return refuse(stream, SandboxLayer::Namespaces, reason),
        }
    };
    let next = Launch {
        in_pid_namespace: entered.pid,
        in_net_namespace: entered.net,
        stage_one: Some(rustix::process::getpid().as_raw_nonzero().get()),
        ..launch
    };
    let Ok(json) = serde_json::to_string(&next) else {
        return refuse(stream, SandboxLayer::Launcher, "cannot pass the launch on");
    };
    let child = Command::new("/proc/self/exe")
        .arg(STAGE_TWO)
        .arg(json)
        .arg(SEPARATOR)
        .args(program)
        // Its own group: one `kill` stops every process in it at once (see `watch`).
        .process_group(0)
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(error) => {
            return refuse(
                stream,
                SandboxLayer::Launcher,
                format!("cannot start its second stage: {error}"),
            );
        }
    };
    // The report's stream, kept (and not passed on): tau closes its end to have
    // everything stopped, and the kernel closes it when tau dies.
    let lifeline = lifeline(stream);
    // The program's streams are its own; holding them here would keep tau waiting for an
    // end of file.
    release_standard_streams();
    let Some(child) = Pid::from_raw(i32::try_from(child.id()).unwrap_or(0)) else {
        return ExitCode::from(REFUSED_EXIT);
    };
    match watch(child, parent, parent_fd.as_ref(), lifeline.as_ref()) {
        Ending::Exited(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        Ending::Signaled(signal) => die_by(signal),
        Ending::ParentGone => ExitCode::from(REFUSED_EXIT),
        Ending::Stopped => die_by(Signal::KILL.as_raw()),
    }
}

/// A copy of the stream the report went on, closed at `exec`.
fn lifeline(stream: ReportStream) -> Option<OwnedFd> {
    let dup = |fd| rustix::io::fcntl_dupfd_cloexec(fd, 3).ok();
    match stream {
        ReportStream::Stdin => dup(std::io::stdin().as_fd()),
        ReportStream::Stderr => dup(std::io::stderr().as_fd()),
    }
}

fn release_standard_streams() {
    let Ok(null) = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
    else {
        return;
    };
    let _ = rustix::stdio::dup2_stdin(&null);
    let _ = rustix::stdio::dup2_stdout(&null);
    let _ = rustix::stdio::dup2_stderr(&null);
}

/// Ends this process by the signal that ended the program, so tau reads the same status.
fn die_by(signal: i32) -> ExitCode {
    if let Some(signal) = Signal::from_named_raw(signal) {
        let _ = rustix::process::kill_process(rustix::process::getpid(), signal);
    }
    // Ignored here (SIGPIPE is, in a Rust program): the shell's convention.
    ExitCode::from(u8::try_from(128 + signal).unwrap_or(1))
}

fn stage_two(rest: &[OsString]) -> ExitCode {
    let Some((launch, program)) = parse(rest) else {
        let _ = writeln!(std::io::stderr(), "tau: not a sandbox launch");
        return ExitCode::from(REFUSED_EXIT);
    };
    let stream = launch.report;
    // Dies with stage one; kept across `exec`, so the program does too.
    if let Err(error) = rustix::process::set_parent_process_death_signal(Some(Signal::KILL)) {
        return refuse(
            stream,
            SandboxLayer::Launcher,
            format!("cannot ask for a parent-death signal: {error}"),
        );
    }
    // Stage one may have died before that: then nothing may start. As pid 1 of a new
    // namespace the parent lies outside it and reads as 0.
    let expected = if launch.in_pid_namespace {
        None
    } else {
        launch.stage_one.and_then(Pid::from_raw)
    };
    if rustix::process::getppid() != expected {
        return ExitCode::from(REFUSED_EXIT);
    }
    let abi = match files::restrict(&launch) {
        Ok(abi) => abi,
        Err(reason) => return refuse(stream, SandboxLayer::Landlock, reason),
    };
    if let Err(reason) = syscalls::restrict(launch.network, launch.reduced) {
        return refuse(stream, SandboxLayer::Seccomp, reason);
    }
    if let Err(reason) = privileges::drop_all() {
        return refuse(stream, SandboxLayer::Privileges, reason);
    }
    report(
        stream,
        &Report::Ready {
            landlock_abi: abi,
            pid_namespace: launch.in_pid_namespace,
            net_namespace: launch.in_net_namespace,
        },
    );
    let Some((first, args)) = program.split_first() else {
        return ExitCode::from(REFUSED_EXIT);
    };
    let mut command = Command::new(first);
    command.args(args);
    // A command's stdin carried the report: it gets nothing there. An MCP server's stderr
    // carried it: the server's own lines follow the report on it.
    if stream == ReportStream::Stdin {
        command.stdin(Stdio::null());
    }
    let error = command.exec();
    let _ = writeln!(
        std::io::stderr(),
        "tau: cannot run {}: {error}",
        first.to_string_lossy()
    );
    ExitCode::from(127)
}
