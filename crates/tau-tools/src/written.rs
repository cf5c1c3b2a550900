//! Files in the workspace that tau's file tools wrote while this tau runs, and the hashes a
//! command's question showed of them.
//!
//! The person reads `sh setup.sh`; what runs is whatever `setup.sh` holds. So the question
//! of a command that names such a file shows the file (see `command_card`) and pins its
//! SHA-256 to the call's arguments; the command runs only while the file still hashes to
//! what was shown. The pins are kept here for the call's own process and on the card the
//! question is stored with, from which a durable question's resume puts them back.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::sync::{Mutex, MutexGuard, PoisonError};

use rustix::fs::{Mode, OFlags};
use serde_json::Value;
use sha2::{Digest, Sha256};
// A pin is what a question showed of one file (`tau-protocol`'s `ShownFile`): its path and
// the hex SHA-256 of the whole file, or `None` when it could not be read. The card carries
// the same, so a stored question brings its pins back after a restart (see `command_card`).
use tau_protocol::ShownFile;

use crate::workspace::{OpenError, Workspace};

/// The most of a file a question shows and a pin covers.
pub(crate) const SHOWN_LIMIT_BYTES: u64 = 256 * 1024;

#[derive(Default)]
struct State {
    /// Paths (as the tools name them, normalized) written while this tau runs.
    files: BTreeSet<String>,
    /// Canonical arguments of a command -> what its question showed.
    pins: BTreeMap<String, Vec<ShownFile>>,
}

/// Shared by the file tools (which record), the card writer (which pins) and
/// `run_command` (which checks).
#[derive(Default)]
pub(crate) struct Written {
    state: Mutex<State>,
}

/// `a/./b//c` as `a/b/c`; `None` for what no file tool writes (absolute, `..`).
pub(crate) fn normalize(path: &str) -> Option<String> {
    let mut parts = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => return None,
            part => parts.push(part),
        }
    }
    (!path.starts_with('/') && !parts.is_empty()).then(|| parts.join("/"))
}

impl Written {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A file tool wrote `path`.
    pub(crate) fn record(&self, path: &str) {
        if let Some(path) = normalize(path) {
            self.state().files.insert(path);
        }
    }

    /// The written files `command` names, as words of it (`sh setup.sh`, `python3 ./x.py`,
    /// `bash -c 'sh setup.sh'`), in the order first named.
    pub(crate) fn named_in(&self, command: &str) -> Vec<String> {
        let files = &self.state().files;
        let mut named = Vec::new();
        for word in command.split(|c: char| c.is_whitespace() || "'\";&|<>()`$={}".contains(c)) {
            if let Some(path) = normalize(word)
                && files.contains(&path)
                && !named.contains(&path)
            {
                named.push(path);
            }
        }
        named
    }

    /// What the question for `arguments` showed.
    pub(crate) fn pin(&self, arguments: &Value, pins: Vec<ShownFile>) {
        let key = tau_core::sorted_json(arguments);
        let mut state = self.state();
        if pins.is_empty() {
            state.pins.remove(&key);
        } else {
            state.pins.insert(key, pins);
        }
    }

    /// What the question for `arguments` showed, once: the pins go with the call.
    pub(crate) fn take_pins(&self, arguments: &Value) -> Vec<ShownFile> {
        let key = tau_core::sorted_json(arguments);
        self.state().pins.remove(&key).unwrap_or_default()
    }
}

/// A file's bytes (at most [`SHOWN_LIMIT_BYTES`], and whether there is more) and the hex
/// SHA-256 of all of it, opened beneath the workspace (never through a symlink).
pub(crate) fn read_and_hash(
    workspace: &Workspace,
    path: &str,
) -> Result<(Vec<u8>, bool, String), String> {
    let fd = workspace
        .open_file(path, OFlags::RDONLY | OFlags::NONBLOCK, Mode::empty())
        .map_err(|error| match error {
            OpenError::Refused(error) => error.to_string(),
            OpenError::Missing => "it does not exist".to_owned(),
            OpenError::Io(error) => error.to_string(),
        })?;
    let mut file = std::fs::File::from(fd);
    if !file.metadata().map_err(|e| e.to_string())?.is_file() {
        return Err("it is not a regular file".to_owned());
    }
    let mut hasher = Sha256::new();
    let mut shown = Vec::new();
    let mut more = false;
    let mut buffer = [0u8; 64 * 1024];
    loop {
        let read = file.read(&mut buffer).map_err(|e| e.to_string())?;
        let Some(chunk) = buffer.get(..read).filter(|c| !c.is_empty()) else {
            break;
        };
        hasher.update(chunk);
        let room = usize::try_from(SHOWN_LIMIT_BYTES)
            .unwrap_or(usize::MAX)
            .saturating_sub(shown.len());
        shown.extend_from_slice(chunk.get(..room.min(chunk.len())).unwrap_or_default());
        more |= chunk.len() > room;
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((shown, more, hex))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;

    #[test]
    fn a_command_names_the_files_written_as_its_words() {
        let written = Written::default();
        written.record("setup.sh");
        written.record("./tools/x.py");
        written.record("notes.md");
        let cases = [
            ("sh setup.sh", vec!["setup.sh"]),
            ("python3 ./tools//x.py --fast", vec!["tools/x.py"]),
            ("bash -c 'sh ./setup.sh; sh setup.sh'", vec!["setup.sh"]),
            ("cat notes.md|sh setup.sh", vec!["notes.md", "setup.sh"]),
            ("sh setup.sh.bak", vec![]),
            ("sh /abs/setup.sh ../setup.sh", vec![]),
        ];
        for (command, expected) in cases {
            assert_eq!(written.named_in(command), expected, "{command}");
        }
    }

    #[test]
    fn a_pin_is_taken_once_and_keyed_by_the_whole_arguments() {
        let written = Written::default();
        let arguments = json!({"command": "sh setup.sh", "timeout_seconds": 5});
        let pin = ShownFile {
            path: "setup.sh".into(),
            sha256: Some("ab".into()),
        };
        written.pin(&arguments, vec![pin.clone()]);
        assert_eq!(
            written.take_pins(&json!({"command": "sh setup.sh"})),
            vec![]
        );
        assert_eq!(
            written.take_pins(&json!({"timeout_seconds": 5, "command": "sh setup.sh"})),
            vec![pin]
        );
        assert_eq!(written.take_pins(&arguments), vec![]);
    }
}
