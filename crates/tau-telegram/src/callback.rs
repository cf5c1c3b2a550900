//! What an inline button carries: `v1:<action>:<id>`. Versioned, so a button sent by an
//! older tau is recognised as such instead of misread; the id is the approval row's (or,
//! for Revoke, the grant's) unguessable id, so a button cannot be made up for a question
//! one never saw. A question with a second step has a number button for each number it
//! shows (`v1:c47:<id>`) instead of Approve; a question that offers a grant has "Approve,
//! allow again" (`v1:g:<id>`); `/grants` has a Revoke button per grant (`v1:v:<grant id>`).

/// Telegram's limit for a button's data, in bytes.
const MAX_BYTES: usize = 64;
const VERSION: &str = "v1";
/// What every grant id starts with (`tau_protocol::GrantId::PREFIX`).
const GRANT_PREFIX: &str = "gr_";

/// What pressing a button asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    Approve,
    /// Yes, and allow exactly this call again in this conversation (the question's grant
    /// offer, for its hours).
    ApproveAlways,
    /// The same, in every conversation of the person's on Telegram.
    ApproveAlwaysEverywhere,
    Reject,
    /// Revoke the grant the id names.
    Revoke,
    /// Send the arguments whole.
    ShowAll,
    /// Yes, pressing this number (10 to 99) for the question's second step.
    Confirm(u8),
}

impl Action {
    fn code(self) -> String {
        match self {
            Self::Approve => "a".to_owned(),
            Self::ApproveAlways => "g".to_owned(),
            Self::ApproveAlwaysEverywhere => "w".to_owned(),
            Self::Reject => "r".to_owned(),
            Self::Revoke => "v".to_owned(),
            Self::ShowAll => "s".to_owned(),
            Self::Confirm(number) => format!("c{number}"),
        }
    }
}

/// A button's data, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ButtonData {
    pub action: Action,
    /// The approval's id; the grant's for [`Action::Revoke`].
    pub id: String,
}

impl ButtonData {
    pub(crate) fn new(action: Action, id: &str) -> Self {
        Self {
            action,
            id: id.to_owned(),
        }
    }

    pub(crate) fn encode(&self) -> String {
        format!("{VERSION}:{}:{}", self.action.code(), self.id)
    }

    /// `None` for anything tau did not write: another version, another action, an id
    /// with characters an approval id never has, or data over Telegram's limit.
    pub(crate) fn parse(data: &str) -> Option<Self> {
        if data.len() > MAX_BYTES {
            return None;
        }
        let mut parts = data.splitn(3, ':');
        let (version, action, id) = (parts.next()?, parts.next()?, parts.next()?);
        if version != VERSION || !is_approval_id(id) {
            return None;
        }
        let action = match action {
            "a" => Action::Approve,
            "g" => Action::ApproveAlways,
            "w" => Action::ApproveAlwaysEverywhere,
            "r" => Action::Reject,
            "v" => Action::Revoke,
            "s" => Action::ShowAll,
            other => Action::Confirm(confirm_number(other)?),
        };
        // A grant's id for Revoke, an approval's for the rest: one for the other is forged.
        let is_grant = id.starts_with(GRANT_PREFIX);
        if is_grant != (action == Action::Revoke) {
            return None;
        }
        Some(Self::new(action, id))
    }
}

/// `c47` -> 47: `c` and two ASCII digits, 10 to 99.
fn confirm_number(action: &str) -> Option<u8> {
    let digits = action.strip_prefix('c')?;
    if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok().filter(|n| (10..=99).contains(n))
}

/// An approval (or grant) id as tau makes them: a short prefix, `_`, lowercase hex.
pub(crate) fn is_approval_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_BYTES - 5
        && id
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    const ID: &str = "ap_0123456789abcdef0123456789abcdef";
    const GRANT: &str = "gr_0123456789abcdef0123456789abcdef";

    #[test]
    fn every_action_round_trips_within_the_limit() {
        for action in [
            Action::Approve,
            Action::ApproveAlways,
            Action::ApproveAlwaysEverywhere,
            Action::Reject,
            Action::ShowAll,
            Action::Confirm(10),
            Action::Confirm(99),
            Action::Revoke,
        ] {
            let id = if action == Action::Revoke { GRANT } else { ID };
            let data = ButtonData::new(action, id);
            let text = data.encode();
            assert!(text.len() <= MAX_BYTES, "{text}");
            assert_eq!(ButtonData::parse(&text), Some(data));
        }
        assert_eq!(
            ButtonData::new(Action::Approve, ID).encode(),
            format!("v1:a:{ID}")
        );
        assert_eq!(
            ButtonData::new(Action::Confirm(47), ID).encode(),
            format!("v1:c47:{ID}")
        );
        assert_eq!(
            ButtonData::new(Action::ApproveAlways, ID).encode(),
            format!("v1:g:{ID}")
        );
        assert_eq!(
            ButtonData::new(Action::Revoke, GRANT).encode(),
            format!("v1:v:{GRANT}")
        );
    }

    #[test]
    fn forged_or_foreign_data_is_not_read() {
        for bad in [
            String::new(),
            "v1".into(),
            "v1:a".into(),
            "v1:a:".into(),
            format!("v2:a:{ID}"),
            format!("v1:x:{ID}"),
            format!("v1:A:{ID}"),
            format!("v1:a:{ID}:extra"),
            format!("v1:a:{}", ID.to_uppercase()),
            "v1:a:ap_1 OR 1=1".into(),
            "v1:a:../../etc".into(),
            format!("v1:a:{}", "a".repeat(60)),
            "v1:a:ap_\u{202e}1".into(),
            format!("v1:c:{ID}"),
            format!("v1:c4:{ID}"),
            format!("v1:c09:{ID}"),
            format!("v1:c100:{ID}"),
            format!("v1:c+7:{ID}"),
            format!("v1:C47:{ID}"),
            format!("v1:c٤٧:{ID}"),
            // Revoke names a grant, everything else a question.
            format!("v1:v:{ID}"),
            format!("v1:a:{GRANT}"),
            format!("v1:g:{GRANT}"),
            format!("v1:w:{GRANT}"),
            format!("v1:r:{GRANT}"),
        ] {
            assert_eq!(ButtonData::parse(&bad), None, "{bad}");
        }
    }
}
