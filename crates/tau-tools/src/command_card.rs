//! What tau says on the question of a `run_command`: what the sandbox allows it, and the
//! content of each file it names that tau's file tools wrote (with its length and
//! SHA-256, pinned: the command runs only while the file still hashes to what was shown).

use std::sync::Arc;

use serde_json::Value;
use tau_core::{CallCard, CardNote, CardWriter};
use tau_sandbox::Sandbox;

use crate::workspace::Workspace;
use crate::written::{Pin, Written, read_and_hash};

pub(crate) struct CommandCard {
    pub workspace: Workspace,
    pub sandbox: Sandbox,
    pub written: Arc<Written>,
}

/// The sandbox's line: a fact while the sandbox holds, a warning where it lets more out.
pub(crate) fn sandbox_note(sandbox: &Sandbox, network: bool) -> CardNote {
    let allowance = sandbox.allowance(network);
    if allowance.sandboxed && !network {
        CardNote::info("sandbox", allowance.describe())
    } else {
        CardNote::warning("sandbox", allowance.describe())
    }
}

impl CardWriter for CommandCard {
    fn write(&self, tool: &str, arguments: &Value, card: &mut CallCard) {
        if tool != "run_command" {
            return;
        }
        let network = arguments.get("network") == Some(&Value::Bool(true));
        card.push(sandbox_note(&self.sandbox, network));
        let Some(command) = arguments.get("command").and_then(Value::as_str) else {
            return;
        };
        let mut pins = Vec::new();
        for path in self.written.named_in(command) {
            match read_and_hash(&self.workspace, &path) {
                Ok((shown, more, sha256)) => {
                    card.push(file_note(&path, &shown, more, &sha256));
                    pins.push(Pin {
                        path,
                        sha256: Some(sha256),
                    });
                }
                Err(why) => {
                    card.push(CardNote::warning(
                        "file",
                        format!("{path} cannot be read ({why}); the command will not run"),
                    ));
                    pins.push(Pin { path, sha256: None });
                }
            }
        }
        self.written.pin(arguments, pins);
    }
}

/// `setup.sh · 1,234 bytes · SHA-256 ab12…`, the content below.
fn file_note(path: &str, shown: &[u8], more: bool, sha256: &str) -> CardNote {
    let size = tau_core::grouped_digits(shown.len(), ',');
    let text = format!(
        "{path} · {size}{} bytes, written by the model · SHA-256 {sha256}",
        if more { "+" } else { "" }
    );
    let detail = match std::str::from_utf8(shown) {
        Ok(content) if more => format!("{content}\n[only the first {size} bytes are shown]"),
        Ok(content) => content.to_owned(),
        Err(_) => format!("[not UTF-8 text: {size} bytes]"),
    };
    CardNote::warning("file", text).with_detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_core::NoteLevel;

    fn card_for(writer: &CommandCard, arguments: &Value) -> CallCard {
        let mut card = CallCard::default();
        writer.write("run_command", arguments, &mut card);
        card
    }

    #[test]
    fn the_card_says_what_the_sandbox_allows_and_shows_the_files_written() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("setup.sh"), "echo hi\n").unwrap();
        let written = Arc::new(Written::default());
        written.record("setup.sh");
        let writer = CommandCard {
            workspace: Workspace::open(dir.path()).unwrap(),
            sandbox: Sandbox::on("/proc/self/exe".into(), Vec::new()),
            written: Arc::clone(&written),
        };
        let arguments = json!({"command": "sh setup.sh", "network": true});
        let card = card_for(&writer, &arguments);
        assert_eq!(card.notes.len(), 2);
        assert_eq!(
            card.notes.first().map(|n| (n.level, n.text.as_str())),
            Some((
                NoteLevel::Warning,
                "writes: workspace only · network: with network access"
            ))
        );
        let file = card.notes.get(1).unwrap();
        assert_eq!(file.detail.as_deref(), Some("echo hi\n"));
        assert!(
            file.text
                .starts_with("setup.sh · 8 bytes, written by the model · SHA-256 "),
            "{}",
            file.text
        );
        let pins = written.take_pins(&arguments);
        assert_eq!(pins.len(), 1);
        // Not another call's.
        card_for(&writer, &json!({"command": "ls"}));
        assert_eq!(written.take_pins(&json!({"command": "ls"})), vec![]);
    }

    #[test]
    fn without_a_sandbox_every_card_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let writer = CommandCard {
            workspace: Workspace::open(dir.path()).unwrap(),
            sandbox: Sandbox::Off,
            written: Arc::default(),
        };
        let card = card_for(&writer, &json!({"command": "ls"}));
        assert_eq!(
            card.notes,
            vec![CardNote::warning("sandbox", "runs without a sandbox")]
        );
        let mut other = CallCard::default();
        writer.write("clock", &json!({}), &mut other);
        assert_eq!(other, CallCard::default());
    }
}
