//! Processes as `/proc` shows them, and a SIGKILL that reaches only the process that was
//! found.

use rustix::io::Errno;
use rustix::process::{Pid, PidfdFlags, Signal};

/// A process as `/proc/PID/stat` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Proc {
    pub pid: i32,
    pub ppid: i32,
    pub session: i32,
    /// Clock ticks after boot; with the pid it names one process for good.
    pub start: u64,
    pub zombie: bool,
}

/// Every process in `/proc`; one that ends while it is read is left out.
pub fn scan() -> Vec<Proc> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_stat)
        .collect()
}

pub fn read_stat(pid: i32) -> Option<Proc> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_stat(pid, &text)
}

/// `pid (comm) state ppid pgrp session ... starttime ...`; the name may hold anything,
/// so the fields are counted from its last `)`.
pub fn parse_stat(pid: i32, text: &str) -> Option<Proc> {
    let (_, rest) = text.rsplit_once(')')?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    Some(Proc {
        pid,
        zombie: matches!(*fields.first()?, "Z" | "X"),
        ppid: fields.get(1)?.parse().ok()?,
        session: fields.get(3)?.parse().ok()?,
        start: fields.get(19)?.parse().ok()?,
    })
}

/// SIGKILL, only to the very process that was found: a pidfd holds it, and its start
/// time, read after the pidfd was taken, must still be the one found. An error other than
/// "already gone" is returned for the caller to log.
pub fn kill(process: &Proc) -> Result<(), Errno> {
    let Some(pid) = Pid::from_raw(process.pid) else {
        return Ok(());
    };
    let same = || read_stat(process.pid).is_some_and(|now| now.start == process.start);
    let sent = match rustix::process::pidfd_open(pid, PidfdFlags::empty()) {
        Ok(pidfd) if same() => rustix::process::pidfd_send_signal(&pidfd, Signal::KILL),
        // Kernels before 5.3: the stat check and the kill are a moment apart.
        Err(Errno::NOSYS) if same() => rustix::process::kill_process(pid, Signal::KILL),
        Ok(_) | Err(_) => Ok(()),
    };
    match sent {
        Ok(()) | Err(Errno::SRCH) => Ok(()),
        Err(error) => Err(error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_name_with_parentheses_and_spaces_does_not_shift_the_fields() {
        let text = "42 (a) b (c) S 7 42 42 0 -1 4194560 0 0 0 0 0 0 0 0 20 0 1 0 123456 0 0";
        assert_eq!(
            parse_stat(42, text),
            Some(Proc {
                pid: 42,
                ppid: 7,
                session: 42,
                start: 123_456,
                zombie: false,
            })
        );
        assert_eq!(parse_stat(1, "garbage"), None);
    }

    #[test]
    fn this_process_is_found() {
        let me = rustix::process::getpid().as_raw_nonzero().get();
        assert!(scan().iter().any(|p| p.pid == me));
    }
}
