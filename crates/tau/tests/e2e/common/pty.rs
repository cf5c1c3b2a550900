//! tau on a real terminal: a pseudo-terminal pair, tau on its slave side as its
//! controlling terminal (in a session of its own, `setsid -c`), the test typing on the
//! master side and reading what the terminal shows.

use std::ffi::OsStr;
use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::pty::{OpenptFlags, grantpt, openpt, ptsname, unlockpt};

use super::{Tau, spawn};

/// A generous bound for what a slow machine takes to show something; never a speed target.
const PATIENCE: Duration = Duration::from_secs(30);

pub struct Pty {
    master: File,
    child: Child,
    screen: Arc<Mutex<String>>,
}

impl Pty {
    /// tau with `args` on a terminal: stdin, stdout and stderr are the terminal.
    pub fn start(tau: &Tau, args: &[&str]) -> Self {
        Self::spawn_with(tau, &[], args, None)
    }

    /// [`Pty::start`] with `wrapper` (a program and its arguments that then runs tau, like
    /// `setpriv ...`) between the session leader and tau.
    pub fn start_wrapped(tau: &Tau, wrapper: &[&str], args: &[&str]) -> Self {
        Self::spawn_with(tau, wrapper, args, None)
    }

    /// [`Pty::start`] on a terminal of `columns` x `rows`, as a terminal window says.
    pub fn start_sized(tau: &Tau, args: &[&str], columns: u16, rows: u16) -> Self {
        let size = rustix::termios::Winsize {
            ws_row: rows,
            ws_col: columns,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        Self::spawn_sized(tau, &[], args, None, Some(size))
    }

    /// Waits until `text` shows after byte `from` of the screen; returns where it ends.
    pub fn wait_for_after(&self, text: &str, from: usize) -> usize {
        let deadline = Instant::now() + PATIENCE;
        loop {
            {
                let screen = self.screen.lock().unwrap();
                if let Some(at) = screen.get(from..).and_then(|rest| rest.find(text)) {
                    return from + at + text.len();
                }
            }
            assert!(
                Instant::now() < deadline,
                "never saw {text:?} after byte {from} on:\n{}",
                self.screen().get(from..).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// tau with `args`, its prompts read from `prompts` (a file, so stdin is not a
    /// terminal) and the terminal as its controlling terminal, stdout and stderr.
    pub fn start_with_prompts_from(tau: &Tau, args: &[&str], prompts: &str) -> Self {
        let path = tau.dir.path().join("prompts.txt");
        std::fs::write(&path, prompts).unwrap();
        Self::spawn_with(tau, &[], args, Some(&path))
    }

    fn spawn_with(tau: &Tau, wrapper: &[&str], args: &[&str], prompts: Option<&Path>) -> Self {
        Self::spawn_sized(tau, wrapper, args, prompts, None)
    }

    fn spawn_sized(
        tau: &Tau,
        wrapper: &[&str],
        args: &[&str],
        prompts: Option<&Path>,
        size: Option<rustix::termios::Winsize>,
    ) -> Self {
        let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
        grantpt(&master).unwrap();
        unlockpt(&master).unwrap();
        if let Some(size) = size {
            rustix::termios::tcsetwinsize(&master, size).unwrap();
        }
        let name = ptsname(&master, Vec::new()).unwrap();
        let slave = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(rustix::fs::OFlags::NOCTTY.bits().cast_signed())
            .open(OsStr::from_bytes(name.as_bytes()))
            .unwrap();
        // `setsid -c` makes the terminal on its stdin the controlling terminal; with
        // prompts from a file, a shell then puts the file on tau's stdin and execs it.
        let mut command = match prompts {
            None => tau.command_in_session(&[&["-c"], wrapper].concat(), args),
            Some(path) => tau.command_in_session(
                &[
                    "-c",
                    "sh",
                    "-c",
                    r#"f=$1; shift; exec "$@" <"$f""#,
                    "sh",
                    path.to_str().unwrap(),
                ],
                args,
            ),
        };
        command
            .env("NO_COLOR", "1")
            .stdin(Stdio::from(slave.try_clone().unwrap()))
            .stdout(Stdio::from(slave.try_clone().unwrap()))
            .stderr(Stdio::from(slave));
        let child = spawn(&mut command);
        // The command (and with it our copies of the slave) is dropped here, so the master
        // reads end once tau is gone.
        drop(command);
        let master = File::from(master);
        let mut reader = master.try_clone().unwrap();
        let screen = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&screen);
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            // EIO once every slave side is closed.
            while let Ok(n) = reader.read(&mut buffer) {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buffer[..n]));
            }
        });
        Self {
            master,
            child,
            screen,
        }
    }

    /// Types `text` on the terminal's keyboard.
    pub fn type_keys(&mut self, text: &str) {
        self.master.write_all(text.as_bytes()).unwrap();
        self.master.flush().unwrap();
    }

    /// Everything the terminal has shown so far.
    pub fn screen(&self) -> String {
        self.screen.lock().unwrap().clone()
    }

    /// Waits until the terminal has shown `text` `count` times.
    pub fn wait_for_nth(&self, text: &str, count: usize) {
        let deadline = Instant::now() + PATIENCE;
        while self.screen().matches(text).count() < count {
            assert!(
                Instant::now() < deadline,
                "never saw {text:?} {count} times on:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    pub fn wait_for(&self, text: &str) {
        self.wait_for_nth(text, 1);
    }

    /// Waits for tau to exit and returns its code and the whole screen.
    pub fn finish(mut self) -> (i32, String) {
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                Instant::now() < deadline,
                "tau did not exit; the screen:\n{}",
                self.screen()
            );
            std::thread::sleep(Duration::from_millis(10));
        };
        // Let the reader take what was still in flight.
        std::thread::sleep(Duration::from_millis(50));
        (status.code().unwrap_or(-1), self.screen())
    }
}
