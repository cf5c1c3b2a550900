//! Log lines for the journal, when systemd runs tau: on stderr, without a time stamp (the
//! journal keeps its own), with the line's priority in front (`<3>` error to `<7>`
//! debug), which journald reads as the entry's level.

use std::io;

use tracing::{Event, Level, Subscriber};
use tracing_subscriber::fmt::format::{Format, Full, Writer};
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields};
use tracing_subscriber::registry::LookupSpan;

use crate::home::Env;

/// True when `JOURNAL_STREAM` (`DEVICE:INODE`, set by systemd) names the stderr this
/// process has: then stderr is the journal. A variable inherited by a process whose stderr
/// went elsewhere does not count.
pub(super) fn stderr_is_journal(env: Env<'_>) -> bool {
    let Some(stream) = env("JOURNAL_STREAM") else {
        return false;
    };
    let Ok(stat) = rustix::fs::fstat(io::stderr()) else {
        return false;
    };
    journal_stream_names(&stream, stat.st_dev, stat.st_ino)
}

/// Whether `stream` (`DEVICE:INODE`) names the file with `device` and `inode`.
fn journal_stream_names(stream: &str, device: u64, inode: u64) -> bool {
    let Some((dev, ino)) = stream.trim().split_once(':') else {
        return false;
    };
    dev.parse() == Ok(device) && ino.parse() == Ok(inode)
}

/// The journal's priority for a level (syslog's numbers: 3 error ... 7 debug).
fn priority(level: &Level) -> u8 {
    match *level {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        Level::DEBUG | Level::TRACE => 7,
    }
}

/// A line for the journal: its priority, then the usual line without the time.
pub(super) struct JournalLine(pub(super) Format<Full, ()>);

impl<S, N> FormatEvent<S, N> for JournalLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        write!(writer, "<{}>", priority(event.metadata().level()))?;
        self.0.format_event(ctx, writer, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_journal_is_stderr_only_when_the_variable_names_it() {
        assert!(journal_stream_names("8:12345", 8, 12345));
        assert!(!journal_stream_names("8:12345", 8, 54321));
        assert!(!journal_stream_names("garbage", 8, 12345));
        assert!(!journal_stream_names("", 8, 12345));
        assert_eq!(
            [
                Level::ERROR,
                Level::WARN,
                Level::INFO,
                Level::DEBUG,
                Level::TRACE
            ]
            .map(|l| priority(&l)),
            [3, 4, 6, 7, 7]
        );
    }
}
