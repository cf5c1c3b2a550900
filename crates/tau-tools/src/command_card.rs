//! What tau says on the question of a `run_command`: what the sandbox allows it, and the
//! content of each file it names that tau's file tools wrote (with its length and
//! SHA-256, pinned: the command runs only while the file still hashes to what was shown).
//! The pins go on the card too, so a question stored in `state.db` and answered after a
//! restart is held to them all the same.

use std::sync::Arc;

use serde_json::Value;
use tau_core::{CardWriter, Resumed, SHOWN_FILES_UNCHECKED_TEXT};
use tau_protocol::{CallCard, CardNote, ShownFile};
use tau_sandbox::Sandbox;

use crate::workspace::Workspace;
use crate::written::{Written, read_and_hash};

pub(crate) struct CommandCard {
    pub workspace: Workspace,
    pub sandbox: Sandbox,
    pub written: Arc<Written>,
}

/// The sandbox's line: a fact while the sandbox holds, a warning where it lets more out.
pub(crate) fn sandbox_note(sandbox: &Sandbox, network: bool) -> CardNote {
    let allowance = sandbox.allowance(network);
    if allowance.is_full() {
        CardNote::info(SANDBOX_LABEL, allowance.describe())
    } else {
        CardNote::warning(SANDBOX_LABEL, allowance.describe())
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
                    pins.push(ShownFile {
                        path,
                        sha256: Some(sha256),
                    });
                }
                Err(why) => {
                    card.push(CardNote::warning(
                        FILE_LABEL,
                        format!("{path} cannot be read ({why}); the command will not run"),
                    ));
                    pins.push(ShownFile { path, sha256: None });
                }
            }
        }
        self.written.pin(arguments, pins.clone());
        card.shown_files = pins;
    }

    /// A stored question of a `run_command` about to run: the sandbox must still be the
    /// one its card named, and the hashes of the files it showed become the call's pins
    /// again (after a restart this process remembers none). A card with file notes but
    /// no hashes (stored by an older tau) refuses: nothing could check those files.
    fn resume(&self, tool: &str, arguments: &Value, card: &CallCard) -> Result<Resumed, String> {
        if tool != "run_command" {
            return Ok(Resumed::Nothing);
        }
        let network = arguments.get("network") == Some(&Value::Bool(true));
        let now = sandbox_note(&self.sandbox, network);
        let shown = card.notes.iter().find(|note| note.label == SANDBOX_LABEL);
        if shown != Some(&now) {
            return Err(sandbox_changed_text(
                shown.map(|n| n.text.as_str()),
                &now.text,
            ));
        }
        if card.shown_files.is_empty() {
            if card.notes.iter().any(|note| note.label == FILE_LABEL) {
                return Err(SHOWN_FILES_UNCHECKED_TEXT.to_owned());
            }
            return Ok(Resumed::Nothing);
        }
        self.written.pin(arguments, card.shown_files.clone());
        Ok(Resumed::HoldsShownFiles)
    }
}

/// The label of the sandbox's note.
const SANDBOX_LABEL: &str = "sandbox";
/// The label of a file's note.
const FILE_LABEL: &str = "file";

/// What the model reads when a stored question's card named another sandbox than the one
/// commands run in now (`[tools.command] sandbox` changed while it waited).
pub(crate) fn sandbox_changed_text(shown: Option<&str>, now: &str) -> String {
    format!(
        "the command did not run: its question said \"sandbox: {}\", but commands now run with \
         \"{now}\" (tau's configuration changed since). Ask the user again if it is still needed.",
        shown.unwrap_or("(nothing)")
    )
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
    CardNote::warning(FILE_LABEL, text).with_detail(detail)
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use tau_protocol::NoteLevel;

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

    fn writer_in(dir: &std::path::Path, sandbox: Sandbox) -> CommandCard {
        CommandCard {
            workspace: Workspace::open(dir).unwrap(),
            sandbox,
            written: Arc::default(),
        }
    }

    fn sandbox_on() -> Sandbox {
        Sandbox::on("/proc/self/exe".into(), Vec::new())
    }

    /// The card a first process stored, handed to a second that remembers nothing: the
    /// second holds the call to the hashes on the card.
    #[test]
    fn a_stored_card_brings_its_pins_back_after_a_restart() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("setup.sh"), "echo hi\n").unwrap();
        let before = writer_in(dir.path(), sandbox_on());
        before.written.record("setup.sh");
        before.written.record("gone.sh");
        let arguments = json!({"command": "sh setup.sh gone.sh"});
        let card = card_for(&before, &arguments);
        let shown = before.written.take_pins(&arguments);
        assert_eq!(card.shown_files, shown);
        assert_eq!(
            card.shown_files
                .iter()
                .map(|f| (f.path.as_str(), f.sha256.is_some()))
                .collect::<Vec<_>>(),
            vec![("setup.sh", true), ("gone.sh", false)]
        );

        let after = writer_in(dir.path(), sandbox_on());
        assert_eq!(after.written.take_pins(&arguments), vec![]);
        assert_eq!(
            after.resume("run_command", &arguments, &card),
            Ok(Resumed::HoldsShownFiles)
        );
        assert_eq!(after.written.take_pins(&arguments), shown);
        // Another tool's card is not this writer's.
        assert_eq!(
            after.resume("write_file", &arguments, &card),
            Ok(Resumed::Nothing)
        );
    }

    #[test]
    fn a_stored_card_without_files_holds_nothing_and_leaves_other_pins_alone() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer_in(dir.path(), sandbox_on());
        let arguments = json!({"command": "ls"});
        let card = card_for(&writer, &arguments);
        assert_eq!(card.shown_files, vec![]);
        let pin = ShownFile {
            path: "x.sh".into(),
            sha256: Some("ab".into()),
        };
        writer.written.pin(&arguments, vec![pin.clone()]);
        assert_eq!(
            writer.resume("run_command", &arguments, &card),
            Ok(Resumed::Nothing)
        );
        assert_eq!(writer.written.take_pins(&arguments), vec![pin]);
    }

    /// A card stored by a tau that showed the file but kept no hash on the card.
    #[test]
    fn a_stored_card_with_a_file_note_but_no_hashes_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer_in(dir.path(), sandbox_on());
        let arguments = json!({"command": "sh setup.sh"});
        let mut card = card_for(&writer, &arguments);
        card.push(file_note("setup.sh", b"echo hi\n", false, "ab12"));
        assert_eq!(
            writer.resume("run_command", &arguments, &card),
            Err(SHOWN_FILES_UNCHECKED_TEXT.to_owned())
        );
        assert_eq!(writer.written.take_pins(&arguments), vec![]);
    }

    #[test]
    fn a_stored_card_that_named_another_sandbox_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let on = writer_in(dir.path(), sandbox_on());
        let off = writer_in(dir.path(), Sandbox::Off);
        let reduced = writer_in(
            dir.path(),
            Sandbox::reduced("/proc/self/exe".into(), Vec::new()),
        );
        let arguments = json!({"command": "ls"});
        let with_network = json!({"command": "ls", "network": true});
        let cases = [
            // Made reduced while the question waited: what was shown no longer holds.
            (
                &on,
                &reduced,
                &arguments,
                Some("writes: workspace only · network: none"),
                "reduced · writes: workspace only · network: none",
            ),
            (
                &on,
                &off,
                &arguments,
                Some("writes: workspace only · network: none"),
                "runs without a sandbox",
            ),
            (
                &off,
                &on,
                &arguments,
                Some("runs without a sandbox"),
                "writes: workspace only · network: none",
            ),
            // The arguments say network; a card forged without it is not that call's.
            (
                &on,
                &on,
                &with_network,
                Some("writes: workspace only · network: none"),
                "writes: workspace only · network: with network access",
            ),
        ];
        for (asked, runs, resumed_with, shown, now) in cases {
            let card = card_for(asked, &arguments);
            assert_eq!(
                runs.resume("run_command", resumed_with, &card),
                Err(sandbox_changed_text(shown, now))
            );
        }
        assert_eq!(
            on.resume("run_command", &arguments, &CallCard::default()),
            Err(sandbox_changed_text(
                None,
                "writes: workspace only · network: none"
            ))
        );
        let same = card_for(&on, &with_network);
        assert_eq!(
            on.resume("run_command", &with_network, &same),
            Ok(Resumed::Nothing)
        );
    }

    #[test]
    fn the_sandbox_changed_text_is_byte_exact() {
        assert_eq!(
            sandbox_changed_text(
                Some("writes: workspace only · network: none"),
                "runs without a sandbox"
            ),
            "the command did not run: its question said \"sandbox: writes: workspace only · \
             network: none\", but commands now run with \"runs without a sandbox\" (tau's \
             configuration changed since). Ask the user again if it is still needed."
        );
        assert_eq!(
            sandbox_changed_text(None, "runs without a sandbox"),
            "the command did not run: its question said \"sandbox: (nothing)\", but commands now \
             run with \"runs without a sandbox\" (tau's configuration changed since). Ask the \
             user again if it is still needed."
        );
    }

    #[test]
    fn the_reduced_sandbox_is_a_warning_on_every_card() {
        let dir = tempfile::tempdir().unwrap();
        let writer = writer_in(
            dir.path(),
            Sandbox::reduced("/proc/self/exe".into(), Vec::new()),
        );
        for (arguments, text) in [
            (
                json!({"command": "ls"}),
                "reduced · writes: workspace only · network: none",
            ),
            (
                json!({"command": "ls", "network": true}),
                "reduced · writes: workspace only · network: with network access",
            ),
        ] {
            let card = card_for(&writer, &arguments);
            assert_eq!(card.notes, vec![CardNote::warning("sandbox", text)]);
        }
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
