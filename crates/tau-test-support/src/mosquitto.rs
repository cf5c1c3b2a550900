//! A real Mosquitto broker for a test, on a free loopback port, stopped when dropped.
//! `TAU_TEST_MOSQUITTO` names the binary, else `mosquitto` on PATH or in /usr/sbin. Without
//! one, [`Mosquitto::start`] says so and returns `Ok(None)`, unless `TAU_PEERS_REQUIRED=1`:
//! then a missing broker is an error.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A running broker.
pub struct Mosquitto {
    child: Child,
    pub port: u16,
    _dir: tempfile::TempDir,
}

impl Drop for Mosquitto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn find() -> Result<PathBuf, String> {
    if let Some(binary) = std::env::var_os("TAU_TEST_MOSQUITTO") {
        let binary = PathBuf::from(binary);
        return if binary.is_file() {
            Ok(binary)
        } else {
            Err(format!("there is no `mosquitto` at {}", binary.display()))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    // Debian installs the broker in sbin, which a non-root PATH may lack.
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/sbin")])
        .map(|dir| dir.join("mosquitto"))
        .find(|candidate| candidate.is_file())
        .ok_or_else(|| {
            "there is no `mosquitto` binary on PATH (Debian package `mosquitto`)".to_owned()
        })
}

impl Mosquitto {
    /// Starts a broker with `extra` config lines, or `Ok(None)` (the reason printed) when
    /// none is installed and peers are not required.
    pub fn start(extra: &str) -> Result<Option<Self>, String> {
        let binary = match find() {
            Ok(binary) => binary,
            Err(reason) => {
                if std::env::var_os("TAU_PEERS_REQUIRED").is_some_and(|v| v == "1") {
                    return Err(format!("TAU_PEERS_REQUIRED is set, but {reason}"));
                }
                #[allow(clippy::print_stdout)]
                {
                    println!("skipped: {reason}");
                }
                return Ok(None);
            }
        };
        // A free port is found by binding port 0 and letting it go, so another test can
        // take the same one first: a broker that exits instead of listening is started
        // again on another port.
        let mut last = String::new();
        for _ in 0..3 {
            match Self::start_once(&binary, extra)? {
                Ok(broker) => return Ok(Some(broker)),
                Err(why) => last = why,
            }
        }
        Err(last)
    }

    /// One try: the broker listening, or why it did not (the outer error is one that a
    /// new port would not cure).
    fn start_once(binary: &std::path::Path, extra: &str) -> Result<Result<Self, String>, String> {
        let failed = |e: std::io::Error| e.to_string();
        let dir = tempfile::tempdir().map_err(failed)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map_err(failed)?
            .port();
        let config = dir.path().join("mosquitto.conf");
        std::fs::write(
            &config,
            format!("listener {port} 127.0.0.1\npersistence false\n{extra}\n"),
        )
        .map_err(failed)?;
        let child = Command::new(binary)
            .arg("-c")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(failed)?;
        let mut broker = Self {
            child,
            port,
            _dir: dir,
        };
        let exited = |broker: &mut Self| {
            broker.child.try_wait().ok().flatten().map(|status| {
                format!("mosquitto on 127.0.0.1:{port} exited ({status}) instead of listening")
            })
        };
        for _ in 0..250 {
            if let Some(why) = exited(&mut broker) {
                return Ok(Err(why));
            }
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                // Still ours: a broker that could not bind the port has exited by now.
                std::thread::sleep(Duration::from_millis(50));
                return Ok(exited(&mut broker).map_or(Ok(broker), Err));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!(
            "mosquitto did not listen on 127.0.0.1:{port} within 5 s"
        ))
    }
}
