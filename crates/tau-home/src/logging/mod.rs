//! The file log: one file a day in `logs/`, `tau.log.YYYY-MM-DD` (the day in UTC), INFO and
//! above (override with `TAU_LOG`), readable only by the person running tau (0600).
//! tracing-appender opens the day's file and moves to the next at midnight.
//!
//! `tau serve`, the process that outsiders can reach, keeps the last `[log] keep_files`
//! files (tracing-appender deletes older ones when the hub starts and at each new day) and
//! stops a day's file at `[log] max_file_bytes`: one line says so, and the rest of that
//! day's lines are dropped. So a flood of requests can never fill the disk: the logs take
//! at most `keep_files × max_file_bytes` and a line. The other commands append to the
//! same day's file and never delete one, so two processes never delete under each other.
//!
//! Under systemd, where `JOURNAL_STREAM` names this process's stderr, every line also goes
//! to stderr for the journal: no time stamp (the journal keeps its own) and the line's
//! priority in front (`<3>` error to `<7>` debug), which journald reads as the entry's
//! level. Anywhere else stderr gets none of it.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use tracing_appender::rolling::{RollingFileAppender, Rotation};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::fmt::format::DefaultFields;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::error::HomeError;
use crate::home::{Env, Home};

mod journal;

/// What every day's file is called before its date.
const FILE_PREFIX: &str = "tau.log";
/// The smallest and largest a day's file may be allowed to grow.
const MIN_FILE_BYTES: u64 = 64 * 1024;
const MAX_FILE_BYTES: u64 = 1024 * 1024 * 1024;
/// The most files that may be kept.
const MAX_KEEP_FILES: usize = 366;

/// `[log]`: how much of the log `tau serve` keeps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// A day's file stops growing at this size (bytes).
    pub max_file_bytes: u64,
    /// Files kept, today's among them: the last N days that logged anything.
    pub keep_files: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 * 1024 * 1024,
            keep_files: 7,
        }
    }
}

impl LogConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(MIN_FILE_BYTES..=MAX_FILE_BYTES).contains(&self.max_file_bytes) {
            return Err(format!(
                "log.max_file_bytes: must be from {MIN_FILE_BYTES} to {MAX_FILE_BYTES}, got {}",
                self.max_file_bytes
            ));
        }
        if !(1..=MAX_KEEP_FILES).contains(&self.keep_files) {
            return Err(format!(
                "log.keep_files: must be from 1 to {MAX_KEEP_FILES}, got {}",
                self.keep_files
            ));
        }
        Ok(())
    }
}

/// Says which log targets may never be written, whatever `TAU_LOG` asks: a library that
/// would write a secret (a model provider's response body may quote its API key).
pub type Unscrubbed = fn(&str) -> bool;

/// The log for a command: today's file, appended to; nothing is deleted or capped.
pub fn init(home: &Home, env: Env<'_>, unscrubbed: Unscrubbed) -> Result<(), HomeError> {
    let log = DailyLog::open(&home.log_dir(), None, None, Timestamp::now())?;
    install(log, env, unscrubbed);
    Ok(())
}

/// The log for `tau serve`: today's file, capped, the last `keep_files` kept (see the
/// module text).
pub fn init_serve(
    home: &Home,
    env: Env<'_>,
    config: &LogConfig,
    unscrubbed: Unscrubbed,
) -> Result<(), HomeError> {
    let log = DailyLog::open(
        &home.log_dir(),
        Some(config.keep_files),
        Some(config.max_file_bytes),
        Timestamp::now(),
    )?;
    install(log, env, unscrubbed);
    Ok(())
}

/// The name of the file of the day `now` falls on (UTC), as tracing-appender names it.
fn file_name(now: Timestamp) -> String {
    format!("{FILE_PREFIX}.{}", now.strftime("%Y-%m-%d"))
}

/// The day's files: tracing-appender's daily appender, with the day's size counted and
/// each new day's file made private before the appender opens it.
struct DailyLog {
    appender: RollingFileAppender,
    dir: PathBuf,
    cap: Option<u64>,
    today: Mutex<Today>,
}

/// What was written to the current day's file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Today {
    name: String,
    bytes: u64,
    /// The line saying the day's file is full was written.
    full: bool,
}

/// What becomes of one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Admit {
    Write,
    /// The day's file is full with this write: say so once, drop the write.
    SayFull,
    Drop,
}

impl Today {
    fn of(dir: &Path, now: Timestamp) -> Self {
        let name = file_name(now);
        let bytes = std::fs::metadata(dir.join(&name)).map_or(0, |m| m.len());
        Self {
            name,
            bytes,
            full: false,
        }
    }

    /// Counts a write of `len` bytes to the file `name` (today's); `cap` is the day's
    /// most. A new day starts from nothing.
    fn admit(&mut self, name: &str, len: u64, cap: Option<u64>) -> Admit {
        if self.name != name {
            *self = Self {
                name: name.to_owned(),
                bytes: 0,
                full: false,
            };
        }
        match cap {
            Some(cap) if self.bytes.saturating_add(len) > cap => {
                if self.full {
                    Admit::Drop
                } else {
                    self.full = true;
                    Admit::SayFull
                }
            }
            Some(_) | None => {
                self.bytes = self.bytes.saturating_add(len);
                Admit::Write
            }
        }
    }
}

impl DailyLog {
    /// Opens today's file in `dir` (created 0600, a looser one tightened); with `keep`,
    /// deletes all but the newest `keep` files now and at each new day.
    fn open(
        dir: &Path,
        keep: Option<usize>,
        cap: Option<u64>,
        now: Timestamp,
    ) -> Result<Self, HomeError> {
        tighten_logs(dir)?;
        let today = Today::of(dir, now);
        make_private(dir, &today.name).map_err(HomeError::OpenLog)?;
        let mut builder = RollingFileAppender::builder()
            .rotation(Rotation::DAILY)
            .filename_prefix(FILE_PREFIX);
        if let Some(keep) = keep {
            // tracing-appender 0.2.5 prunes to one file fewer than this, counting the
            // current day's file when it exists; it always does here (made private just
            // above, and at each new day before the appender moves to it). Pinned by
            // `opening_keeps_the_newest_files_and_writes_today_s_private`.
            builder = builder.max_log_files(keep.saturating_add(1));
        }
        let appender = builder.build(dir).map_err(|error| HomeError::StartLog {
            dir: dir.to_owned(),
            error,
        })?;
        Ok(Self {
            appender,
            dir: dir.to_owned(),
            cap,
            today: Mutex::new(today),
        })
    }

    /// Writes `buf` to today's file if the day's cap allows it.
    fn write_line(&self, buf: &[u8]) -> io::Result<usize> {
        let now = Timestamp::now();
        let name = file_name(now);
        let admit = {
            let mut today = self.today.lock().unwrap_or_else(PoisonError::into_inner);
            let new_day = today.name != name;
            let admit = today.admit(&name, buf.len() as u64, self.cap);
            if new_day {
                // Before the appender opens it, so the new day's file is private too.
                make_private(&self.dir, &name)?;
            }
            admit
        };
        match admit {
            Admit::Write => self.appender.make_writer().write_all(buf)?,
            Admit::SayFull => {
                let line = format!(
                    "{now} tau: this day's log reached [log] max_file_bytes ({} bytes); its other lines are dropped until the next day (UTC)\n",
                    self.cap.unwrap_or_default()
                );
                self.appender.make_writer().write_all(line.as_bytes())?;
            }
            Admit::Drop => {}
        }
        // All of it is accounted for, written or dropped.
        Ok(buf.len())
    }
}

/// Tightens every log file in `dir` (earlier days', an earlier tau's `tau.log.N`) that
/// another umask left readable; a link is never followed (and refused before this runs).
fn tighten_logs(dir: &Path) -> Result<(), HomeError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for entry in entries.flatten() {
        let is_log = entry.file_name().to_string_lossy().starts_with(FILE_PREFIX);
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        if is_log && is_file {
            crate::private::tighten_file(&entry.path()).map_err(HomeError::TightenLog)?;
        }
    }
    Ok(())
}

/// Creates the day's file `name` in `dir` private, or tightens it.
fn make_private(dir: &Path, name: &str) -> io::Result<()> {
    crate::private::ensure_file(&dir.join(name))
}

/// One write of the file layer (a whole line: the formatter writes each line at once).
struct DayWriter<'a>(&'a DailyLog);

impl Write for DayWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write_line(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for DailyLog {
    type Writer = DayWriter<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        DayWriter(self)
    }
}

fn install(log: DailyLog, env: Env<'_>, unscrubbed: Unscrubbed) {
    let levels = || {
        env("TAU_LOG")
            .and_then(|f| EnvFilter::try_new(f).ok())
            .unwrap_or_else(|| EnvFilter::new("info"))
    };
    // Beside the levels, not among them: no `TAU_LOG` can let the model library write a
    // response body (which may quote the API key) into the log.
    let scrubbed = || filter_fn(move |meta| !unscrubbed(meta.target()));
    let file = tracing_subscriber::fmt::layer()
        .with_writer(log)
        .with_ansi(false)
        .with_filter(scrubbed())
        .with_filter(levels());
    let journal = journal::stderr_is_journal(env).then(|| {
        tracing_subscriber::fmt::layer()
            .fmt_fields(DefaultFields::new())
            .event_format(journal::JournalLine(
                tracing_subscriber::fmt::format()
                    .without_time()
                    .with_level(false),
            ))
            .with_writer(io::stderr)
            .with_ansi(false)
            .with_filter(scrubbed())
            .with_filter(levels())
    });
    // Only the first set-up counts; a second one in the same process keeps the first.
    let _ = tracing_subscriber::registry()
        .with(file)
        .with(journal)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn the_sizes_are_checked() {
        assert_eq!(LogConfig::default().validate(), Ok(()));
        let small = LogConfig {
            max_file_bytes: 1000,
            ..LogConfig::default()
        };
        assert_eq!(
            small.validate(),
            Err("log.max_file_bytes: must be from 65536 to 1073741824, got 1000".into())
        );
        let none = LogConfig {
            keep_files: 0,
            ..LogConfig::default()
        };
        assert_eq!(
            none.validate(),
            Err("log.keep_files: must be from 1 to 366, got 0".into())
        );
    }

    #[test]
    fn a_day_s_file_is_named_by_its_utc_date() {
        assert_eq!(file_name(at("2026-12-02T23:59:59Z")), "tau.log.2026-12-02");
        assert_eq!(file_name(at("2026-12-03T00:00:00Z")), "tau.log.2026-12-03");
        assert_eq!(
            file_name(at("2026-12-03T01:30:00+03:00")),
            "tau.log.2026-12-02",
            "UTC, not the local day"
        );
    }

    #[test]
    fn a_day_s_file_stops_at_its_cap_says_so_once_and_the_next_day_starts_anew() {
        let mut today = Today {
            name: file_name(at("2026-12-02T10:00:00Z")),
            bytes: 0,
            full: false,
        };
        let day1 = file_name(at("2026-12-02T23:00:00Z"));
        let day2 = file_name(at("2026-12-03T00:00:01Z"));
        let cap = Some(100);
        let steps: Vec<Admit> = vec![
            today.admit(&day1, 60, cap),
            today.admit(&day1, 40, cap),
            today.admit(&day1, 1, cap),
            today.admit(&day1, 1, cap),
            today.admit(&day2, 90, cap),
            today.admit(&day2, 20, None),
        ];
        assert_eq!(
            steps,
            [
                Admit::Write,
                Admit::Write,
                Admit::SayFull,
                Admit::Drop,
                Admit::Write,
                Admit::Write
            ]
        );
        assert_eq!(
            today,
            Today {
                name: day2,
                bytes: 110,
                full: false
            }
        );
    }

    #[test]
    fn opening_keeps_the_newest_files_and_writes_today_s_private() {
        let dir = tempfile::tempdir().unwrap();
        let now = Timestamp::now();
        let old: Vec<String> = (1..=9)
            .map(|day| format!("tau.log.2020-01-0{day}"))
            .collect();
        for name in &old {
            std::fs::write(dir.path().join(name), "old\n").unwrap();
        }
        std::fs::write(dir.path().join("other.txt"), "not a log\n").unwrap();
        let log = DailyLog::open(dir.path(), Some(3), Some(64 * 1024), now).unwrap();
        log.write_line(b"a line\n").unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        let today = file_name(now);
        assert!(names.contains(&today), "{names:?}");
        assert!(names.contains(&"other.txt".to_owned()), "{names:?}");
        assert_eq!(
            names.len(),
            3 + 1,
            "three log files and the other: {names:?}"
        );
        let path = dir.path().join(&today);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "a line\n");
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
    }

    #[test]
    fn a_command_s_log_deletes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        for day in 1..=9 {
            std::fs::write(dir.path().join(format!("tau.log.2020-01-0{day}")), "").unwrap();
        }
        let log = DailyLog::open(dir.path(), None, None, Timestamp::now()).unwrap();
        log.write_line(b"x\n").unwrap();
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 10);
    }
}
