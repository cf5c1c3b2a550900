//! What an inline button carries: `v1:<action>:<approval id>`. Versioned, so a button
//! sent by an older tau is recognised as such instead of misread; the id is the approval
//! row's unguessable id, so a button cannot be made up for a question one never saw. A
//! question with a second step has a number button for each number it shows
//! (`v1:c47:<id>`) instead of Approve.

/// Telegram's limit for a button's data, in bytes.
const MAX_BYTES: usize = 64;
const VERSION: &str = "v1";

/// What pressing a button asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    Approve,
    Reject,
    /// Send the arguments whole.
    ShowAll,
    /// Yes, pressing this number (10 to 99) for the question's second step.
    Confirm(u8),
}

impl Action {
    fn code(self) -> String {
        match self {
            Self::Approve => "a".to_owned(),
            Self::Reject => "r".to_owned(),
            Self::ShowAll => "s".to_owned(),
            Self::Confirm(number) => format!("c{number}"),
        }
    }
}

/// A button's data, read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ButtonData {
    pub action: Action,
    pub approval_id: String,
}

impl ButtonData {
    pub(crate) fn new(action: Action, approval_id: &str) -> Self {
        Self {
            action,
            approval_id: approval_id.to_owned(),
        }
    }

    pub(crate) fn encode(&self) -> String {
        format!("{VERSION}:{}:{}", self.action.code(), self.approval_id)
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
            "r" => Action::Reject,
            "s" => Action::ShowAll,
            other => Action::Confirm(confirm_number(other)?),
        };
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

/// An approval id as tau makes them: a short prefix, `_`, lowercase hex.
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

    #[test]
    fn every_action_round_trips_within_the_limit() {
        for action in [
            Action::Approve,
            Action::Reject,
            Action::ShowAll,
            Action::Confirm(10),
            Action::Confirm(99),
        ] {
            let data = ButtonData::new(action, ID);
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
        ] {
            assert_eq!(ButtonData::parse(&bad), None, "{bad}");
        }
    }
}
