//! How tau names a channel, a conversation and a time to a person, the same in every
//! listing (`tau approvals`, `tau grants`, the TUI's `/grants`, a refusal that names a
//! waiting question).

use jiff::Timestamp;
use jiff::tz::TimeZone;
use tau_protocol::SessionId;

use crate::display::{Listing, display};

/// A channel as a person knows it.
pub fn channel_name(channel: &str) -> String {
    match channel {
        "web" => "TauBar".to_owned(),
        "telegram" => "Telegram".to_owned(),
        "terminal" => "tau chat".to_owned(),
        "tui" => "tau tui".to_owned(),
        other => display(other),
    }
}

/// Where a question or a grant belongs: its conversation's title when it has one (a
/// field of `entry`, whose lookalike words are flagged), else the session's id.
pub fn conversation(entry: &mut Listing, session: &SessionId, title: Option<&str>) -> String {
    match title {
        Some(title) => format!("in “{}”", entry.field("title", title)),
        None => format!("in session {session}"),
    }
}

/// A time as a person reads it: to the second, in the configured zone (`zone`), which is
/// named (`2026-12-03 11:02:19 +03`).
pub fn when(at: Timestamp, zone: &TimeZone) -> String {
    at.to_zoned_datetime(zone.clone())
        .strftime("%Y-%m-%d %H:%M:%S %Z")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn channels_conversations_and_times_as_a_person_reads_them() {
        let mut entry = Listing::new();
        let session = SessionId::parse("web-20261203-120000-0f0f").unwrap();
        let zone = TimeZone::get("Europe/Istanbul").unwrap();
        let at: Timestamp = "2026-12-03T08:02:19Z".parse().unwrap();
        assert_eq!(
            (
                channel_name("web"),
                channel_name("mqtt\u{202e}"),
                conversation(&mut entry, &session, None),
                when(at, &zone),
            ),
            (
                "TauBar".to_owned(),
                display("mqtt\u{202e}"),
                "in session web-20261203-120000-0f0f".to_owned(),
                "2026-12-03 11:02:19 +03".to_owned(),
            )
        );
    }
}
