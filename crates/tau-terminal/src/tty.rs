//! Where the chat's answers come from, and the terminals behind them.
//!
//! Prompts always come from stdin. An answer must come from the person at the terminal:
//! when stdin is not one (a pipe, a file), a line on it may have been written for anything,
//! a prompt included, so the answers are read from the controlling terminal (`/dev/tty`),
//! as sudo reads a password, unless the chat was started with `--answers-from-stdin`.

use std::fs::File;
use std::io::{IsTerminal, Write};
use std::os::fd::AsFd;

use rustix::termios::{QueueSelector, tcflush};
use tokio::io::AsyncRead;

use crate::input::{Answers, Prompts, start};
use crate::question::{Flush, Questions};

const CONTROLLING_TERMINAL: &str = "/dev/tty";
/// Opening it opens the terminal on stdin anew (Linux).
const STDIN_TERMINAL: &str = "/proc/self/fd/0";

/// The source of the answers, in the order it is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source<T> {
    /// stdin is a terminal: its lines, guarded (`--answers-from-stdin` changes nothing).
    StdinTerminal,
    /// `--answers-from-stdin`: stdin's lines as written, for scripts and tests.
    StdinAsWritten,
    /// The controlling terminal, guarded.
    ControllingTerminal(T),
    /// Nobody can be asked: every tier-2 call is refused (`approver_failed`).
    Nobody,
}

/// 1. stdin is a terminal -> it answers
/// 2. `--answers-from-stdin` -> stdin answers, as written
/// 3. there is a controlling terminal -> it answers
/// 4. otherwise nobody answers, and every question is refused
pub(crate) fn choose<T>(
    stdin_is_terminal: bool,
    answers_from_stdin: bool,
    controlling_terminal: impl FnOnce() -> Option<T>,
) -> Source<T> {
    if stdin_is_terminal {
        return Source::StdinTerminal;
    }
    if answers_from_stdin {
        return Source::StdinAsWritten;
    }
    match controlling_terminal() {
        Some(terminal) => Source::ControllingTerminal(terminal),
        None => Source::Nobody,
    }
}

/// The chat's input, started on stdin.
pub struct Input {
    pub prompts: Prompts,
    pub questions: Questions,
    /// The answering terminal when stdout is not a terminal: the question is drawn there
    /// too, so the person sees what they answer.
    pub question_screen: Option<Box<dyn Write + Send>>,
    /// stdin is a terminal (prompts are read ahead and echoed by it).
    pub stdin_is_terminal: bool,
    /// Prompts are read with the line editor ([`Prompts::next_edited`]): stdin and stdout
    /// are terminals and editing was wanted. Answers stay plain lines.
    pub line_editing: bool,
}

/// Starts the readers on stdin, with the answers from where [`choose`] says. With
/// `line_editing` (the terminal can draw it) and stdin and stdout both terminals, prompts
/// are read with the line editor; between prompts the terminal is read as plain lines,
/// as without it.
pub fn start_stdin(
    answers_from_stdin: bool,
    stdout_is_terminal: bool,
    line_editing: bool,
) -> Input {
    let stdin_is_terminal = std::io::stdin().is_terminal();
    let source = choose(
        stdin_is_terminal,
        answers_from_stdin,
        open_controlling_terminal,
    );
    let answering_terminal = matches!(
        source,
        Source::StdinTerminal | Source::ControllingTerminal(_)
    );
    let answers = match source {
        Source::StdinTerminal => Answers::FromPrompts {
            terminal: Some(Flush::new(|| flush(std::io::stdin()))),
        },
        Source::StdinAsWritten => Answers::FromPrompts { terminal: None },
        Source::ControllingTerminal((source, flush)) => Answers::FromTerminal { source, flush },
        Source::Nobody => Answers::Nowhere,
    };
    // The editor reads stdin itself; the plain reader then reads stdin's terminal through
    // a description of its own, one it can stop reading at once when the editor starts.
    // (tokio's stdin reads on a thread that cannot be stopped: it would take keys from
    // the editor.)
    let own_terminal = (line_editing && stdin_is_terminal && stdout_is_terminal)
        .then(reopen_stdin_terminal)
        .flatten();
    let line_editing = own_terminal.is_some();
    let (prompts, questions) = match own_terminal {
        Some(terminal) => start(terminal, stdin_is_terminal, answers),
        None => start(tokio::io::stdin(), stdin_is_terminal, answers),
    };
    let question_screen = (answering_terminal && !stdout_is_terminal)
        .then(|| File::options().write(true).open(CONTROLLING_TERMINAL).ok())
        .flatten()
        .map(|file| Box::new(file) as Box<dyn Write + Send>);
    Input {
        prompts,
        questions,
        question_screen,
        stdin_is_terminal,
        line_editing,
    }
}

/// stdin's terminal, opened anew for reading without blocking (stdin's own description,
/// which the shell and the editor share, stays blocking), or `None`.
fn reopen_stdin_terminal() -> Option<Box<dyn AsyncRead + Unpin + Send>> {
    let file = File::options().read(true).open(STDIN_TERMINAL).ok()?;
    if !file.is_terminal() {
        return None;
    }
    rustix::io::ioctl_fionbio(&file, true).ok()?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(file.into()).ok()?;
    Some(Box::new(reader))
}

/// Drops what was typed on `terminal` and not read yet. A failure leaves the guard to do
/// the work alone.
fn flush(terminal: impl AsFd) {
    let _ = tcflush(terminal, QueueSelector::IFlush);
}

type Terminal = (Box<dyn AsyncRead + Unpin + Send>, Flush);

/// The controlling terminal, opened for reading without blocking (an open file description
/// of its own, so the shell's stays as it is), or `None` when there is none.
///
/// It is read through the runtime's reactor, so a read can be dropped when its question
/// ends without a thread left blocked on the terminal. tokio's only safe way to register
/// a descriptor is its pipe type, which reads any non-blocking descriptor with read(2)
/// and takes ownership of it.
fn open_controlling_terminal() -> Option<Terminal> {
    let file = File::options().read(true).open(CONTROLLING_TERMINAL).ok()?;
    rustix::io::ioctl_fionbio(&file, true).ok()?;
    let for_flush = file.try_clone().ok()?;
    let reader = tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(file.into()).ok()?;
    let source: Box<dyn AsyncRead + Unpin + Send> = Box::new(reader);
    Some((source, Flush::new(move || flush(&for_flush))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answers_come_from_a_person_at_a_terminal_or_from_nobody() {
        let tty = || Some("tty");
        let none = || None::<&str>;
        // (stdin is a terminal, --answers-from-stdin, controlling terminal) -> source
        let table = [
            ((true, false, true), Source::StdinTerminal),
            ((true, true, true), Source::StdinTerminal),
            ((true, false, false), Source::StdinTerminal),
            ((false, true, true), Source::StdinAsWritten),
            ((false, true, false), Source::StdinAsWritten),
            ((false, false, true), Source::ControllingTerminal("tty")),
            ((false, false, false), Source::Nobody),
        ];
        for ((stdin_tty, flag, has_tty), expected) in table {
            let got = if has_tty {
                choose(stdin_tty, flag, tty)
            } else {
                choose(stdin_tty, flag, none)
            };
            assert_eq!(got, expected, "{stdin_tty} {flag} {has_tty}");
        }
    }
}
