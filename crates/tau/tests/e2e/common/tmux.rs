//! A real terminal for tau: a tmux server of its own, keys sent with `send-keys`, the
//! screen read with `capture-pane`. Needs tmux (`TAU_TEST_TMUX`, else `tmux`);
//! `TAU_PEERS_REQUIRED=1` makes a missing tmux a failure.

use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use super::{Tau, peers};

/// Each terminal gets a tmux server of its own, even one after another in one folder.
static NEXT_SOCKET: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

/// One tmux server of its own, with one 80x24 window running a shell command; stopped
/// when dropped.
pub struct Terminal {
    tmux: String,
    socket: PathBuf,
    dir: PathBuf,
}

impl Terminal {
    /// Runs `tau ARGS` in the window, then prints its exit code and the terminal's modes
    /// (`stty -a`), so a test can see what tau left behind. `None` when tmux is missing.
    pub fn start(tau: &Tau, args: &[&str]) -> Option<Self> {
        let tmux = peers::tmux()?;
        let dir = tau.dir.path().to_path_buf();
        let mut line = format!(
            "echo \\$\\$ > '{}/tau.pid'; exec '{}' --home '{}'",
            dir.display(),
            env!("CARGO_BIN_EXE_tau"),
            tau.home().display()
        );
        for arg in args {
            line.push_str(&format!(" '{arg}'"));
        }
        let shell = format!(
            "sh -c \"{line}\"; echo \"EXIT:$?\"; stty -a | tr '\\n' ' '; echo; echo END; sleep 600"
        );
        let terminal = Self {
            tmux,
            socket: dir.join(format!(
                "tmux-{}.sock",
                NEXT_SOCKET.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )),
            dir,
        };
        let started = terminal.run(&[
            "new-session",
            "-d",
            "-s",
            "t",
            "-x",
            "80",
            "-y",
            "24",
            &shell,
        ]);
        assert!(
            started.status.success(),
            "{}",
            String::from_utf8_lossy(&started.stderr)
        );
        Some(terminal)
    }

    pub fn run(&self, args: &[&str]) -> Output {
        Command::new(&self.tmux)
            .arg("-u")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", &self.dir)
            .env("LANG", "C.UTF-8")
            .env("TERM", "xterm-256color")
            .output()
            .unwrap()
    }

    pub fn resize(&self, width: u16, height: u16) {
        let (width, height) = (width.to_string(), height.to_string());
        let resized = self.run(&["resize-window", "-t", "t", "-x", &width, "-y", &height]);
        assert!(
            resized.status.success(),
            "{}",
            String::from_utf8_lossy(&resized.stderr)
        );
    }

    /// Keys by tmux name (`Enter`, `C-c`, `Down`) or literal text.
    pub fn keys(&self, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", "t"];
        args.extend_from_slice(keys);
        assert!(self.run(&args).status.success());
    }

    pub fn type_text(&self, text: &str) {
        assert!(
            self.run(&["send-keys", "-t", "t", "-l", text])
                .status
                .success()
        );
    }

    pub fn screen(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-t", "t"]).stdout).into_owned()
    }

    /// The screen with wrapped lines joined back into one.
    pub fn joined(&self) -> String {
        String::from_utf8_lossy(&self.run(&["capture-pane", "-p", "-J", "-t", "t"]).stdout)
            .into_owned()
    }

    pub fn format(&self, format: &str) -> String {
        let out = self.run(&["display-message", "-p", "-t", "t", format]);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Waits (up to a generous bound, so a slow machine does not fail it) for `text`.
    pub fn wait_for(&self, text: &str) -> String {
        self.wait_for_all(&[text])
    }

    /// Waits until the screen shows every one of `texts` at once (a frame reaches the
    /// terminal in pieces, so one text on screen says nothing of another).
    pub fn wait_for_all(&self, texts: &[&str]) -> String {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let screen = self.screen();
            if texts.iter().all(|text| screen.contains(text)) {
                return screen;
            }
            assert!(
                Instant::now() < deadline,
                "never saw {texts:?} in:\n{screen}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// tau's process id (the shell `exec`s it).
    pub fn pid(&self) -> String {
        std::fs::read_to_string(self.dir.join("tau.pid"))
            .unwrap()
            .trim()
            .to_owned()
    }

    /// After tau ended: its exit code, and a check that the terminal is as it was (the
    /// normal screen, line editing and echo on, the cursor shown).
    pub fn exited(&self) -> i32 {
        self.wait_for("END");
        let screen = self.joined();
        assert_eq!(
            self.format("#{alternate_on}"),
            "0",
            "still on the alternate screen"
        );
        assert_eq!(self.format("#{cursor_flag}"), "1", "the cursor is hidden");
        let modes = screen
            .lines()
            .find(|l| l.contains("speed") || l.contains("icanon"))
            .unwrap_or_default()
            .to_owned();
        let all = screen.replace('\n', " ");
        for mode in [" icanon", " echo ", " isig", " icrnl", " opost"] {
            assert!(all.contains(mode), "{mode:?} is off: {modes}\n{screen}");
        }
        let code = screen
            .lines()
            .find_map(|l| l.trim().strip_prefix("EXIT:"))
            .unwrap_or_else(|| panic!("no exit code in:\n{screen}"));
        code.trim().parse().unwrap()
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.run(&["kill-server"]);
    }
}
