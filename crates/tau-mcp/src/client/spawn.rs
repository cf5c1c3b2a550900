//! How an MCP server that is a program starts: like a command. In a session of its own
//! (util-linux or BusyBox `setsid`), so it has no controlling terminal: it cannot type into
//! the terminal tau asks its questions on (`TIOCSTI`), nor open `/dev/tty` to draw over a
//! question. Its stdin and stdout are pipes to tau and nothing else; its stderr is a pipe
//! whose lines go to tau's log, escaped; its environment is the allow-list
//! (`tau_core::child_env`) plus what the config passes on and sets.
//!
//! This is the one place a server's process is described, so a sandbox can wrap the
//! [`ServerProgram`] it returns (prefix another program, add arguments) without knowing
//! MCP.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use tokio::io::AsyncReadExt;
use tokio::process::ChildStderr;

/// The program that gives a process a session of its own and then runs the server.
const SETSID: &str = "setsid";
/// The longest piece of one stderr line written to the log.
const MAX_LOGGED_LINE: usize = 4096;

/// What starts one server: `program` with `args`, in exactly the environment `env`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ServerProgram {
    pub program: OsString,
    pub args: Vec<OsString>,
    pub env: Vec<(String, String)>,
}

impl ServerProgram {
    /// The server `program` (a path, or a name found in the child's `PATH`) with `args`,
    /// in a session of its own. Fails like `exec` would when there is no such program.
    pub(crate) fn new(
        program: &str,
        args: &[String],
        values: &BTreeMap<String, String>,
        pass_env: &[String],
        env: &dyn Fn(&str) -> Option<String>,
    ) -> std::io::Result<Self> {
        let mut child_env = tau_core::child_env(pass_env, env);
        child_env.extend(values.iter().map(|(k, v)| (k.clone(), v.clone())));
        let path = child_env
            .iter()
            .rev()
            .find(|(name, _)| name == "PATH")
            .map(|(_, value)| value.clone())
            .unwrap_or_default();
        let found = find_program(program, &path)?;
        // `--` so that a program whose name starts with `-` is never an option of setsid.
        let mut setsid_args = vec![OsString::from("--"), found.into_os_string()];
        setsid_args.extend(args.iter().map(OsString::from));
        Ok(Self {
            program: OsString::from(SETSID),
            args: setsid_args,
            env: child_env,
        })
    }

    /// The server's own program (found) and arguments, without `setsid` in front: a
    /// sandbox's launcher gives it a session of its own itself.
    pub(crate) fn server(&self) -> Option<(&OsString, &[OsString])> {
        let (_separator, after) = self.args.split_first()?;
        after.split_first()
    }

    /// The process: pipes on stdin, stdout and stderr, nothing else of tau's.
    pub(crate) fn command(&self) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(&self.program);
        command
            .args(&self.args)
            .env_clear()
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        command
    }
}

/// `program` as a path when it has a `/`, else the first file of that name in `path`'s
/// folders (an empty entry is the working directory).
fn find_program(program: &str, path: &str) -> std::io::Result<PathBuf> {
    let not_found = || std::io::Error::from(rustix::io::Errno::NOENT);
    if program.contains('/') {
        return Path::new(program)
            .is_file()
            .then(|| PathBuf::from(program))
            .ok_or_else(not_found);
    }
    if program.is_empty() {
        return Err(not_found());
    }
    path.split(':')
        .map(|folder| Path::new(if folder.is_empty() { "." } else { folder }).join(program))
        .find(|candidate| candidate.is_file())
        .ok_or_else(not_found)
}

/// Writes each line the server writes on stderr to tau's log (escaped, each at most
/// [`MAX_LOGGED_LINE`] bytes), until the server closes it.
pub(crate) fn log_stderr(server: &str, mut stderr: ChildStderr) {
    let server = server.to_owned();
    tokio::spawn(async move {
        let mut pending: Vec<u8> = Vec::new();
        let mut buffer = [0_u8; 4096];
        loop {
            let read = match stderr.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(read) => read,
            };
            pending.extend_from_slice(buffer.get(..read).unwrap_or_default());
            while let Some(end) = pending.iter().position(|&b| b == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                log_line(&server, &line);
            }
            if pending.len() >= MAX_LOGGED_LINE {
                log_line(&server, &pending);
                pending.clear();
            }
        }
        if !pending.is_empty() {
            log_line(&server, &pending);
        }
    });
}

fn log_line(server: &str, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches(['\n', '\r']);
    tracing::info!(server, "MCP server stderr: {}", tau_core::display(text));
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_server_runs_under_setsid_with_only_its_environment() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("srv"), "").unwrap();
        let parent_env = |name: &str| match name {
            "PATH" => Some(bin.to_str().unwrap().to_owned()),
            "SECRET_KEY" => Some("k".to_owned()),
            "HOME" => Some("/home/me".to_owned()),
            _ => None,
        };
        let values = BTreeMap::from([("LOG_LEVEL".to_owned(), "warn".to_owned())]);
        let program =
            ServerProgram::new("srv", &["--x".to_owned()], &values, &[], &parent_env).unwrap();
        assert_eq!(
            program,
            ServerProgram {
                program: "setsid".into(),
                args: vec!["--".into(), bin.join("srv").into_os_string(), "--x".into()],
                env: vec![
                    ("HOME".into(), "/home/me".into()),
                    ("PATH".into(), bin.to_str().unwrap().into()),
                    ("LOG_LEVEL".into(), "warn".into()),
                ],
            }
        );
    }

    #[test]
    fn a_missing_program_fails_as_exec_would() {
        for (program, path) in [
            ("/nonexistent/srv", "/bin"),
            ("no-such-server", "/x:"),
            ("", "/bin"),
        ] {
            let error = find_program(program, path).unwrap_err();
            assert_eq!(error.to_string(), "No such file or directory (os error 2)");
        }
    }
}
