//! What the TUI answers itself instead of sending it to the model: `/grants` lists what
//! runs without a question (the grants and the routines' own calls), `/revoke ID` ends a
//! grant before any later call. The binary knows where grants live and implements
//! [`GrantCommands`]; this only reads the prompt and shows the lines.

/// The grants view, as the binary provides it.
pub trait GrantCommands: Send + Sync {
    /// What runs without a question, in tau's words, one line each (the model's
    /// arguments already through the display function).
    fn list(&self) -> Vec<String>;
    /// Revokes the grant `id` (as typed); the line saying what became of it.
    fn revoke(&self, id: &str) -> String;
}

/// A prompt the TUI answers itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Local<'a> {
    Grants,
    Revoke(&'a str),
    /// `/revoke` without an id.
    RevokeWithoutId,
}

/// `/grants`, `/revoke ID`; `None` for everything else (it goes to the model).
pub(crate) fn local(prompt: &str) -> Option<Local<'_>> {
    let text = prompt.trim();
    if text == "/grants" {
        return Some(Local::Grants);
    }
    let rest = text.strip_prefix("/revoke")?;
    if rest.is_empty() {
        return Some(Local::RevokeWithoutId);
    }
    // `/revoked ...` is a prompt like any other.
    if !rest.starts_with(char::is_whitespace) {
        return None;
    }
    Some(Local::Revoke(rest.trim()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_two_commands_stay_in_the_tui() {
        for (prompt, expected) in [
            ("/grants", Some(Local::Grants)),
            ("  /grants \n", Some(Local::Grants)),
            ("/revoke gr_1", Some(Local::Revoke("gr_1"))),
            ("/revoke   gr_1  ", Some(Local::Revoke("gr_1"))),
            ("/revoke", Some(Local::RevokeWithoutId)),
            ("/revoked gr_1", None),
            ("/grants please", None),
            ("show my /grants", None),
            ("grants", None),
        ] {
            assert_eq!(local(prompt), expected, "{prompt:?}");
        }
    }
}
