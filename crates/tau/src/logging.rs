//! The file log: `logs/tau.log`, INFO and above (override with `TAU_LOG`), readable only
//! by the person running tau (0600). `tau serve`, the process that outsiders can reach,
//! rotates it by size (file-rotate): past `[log] max_file_bytes` it becomes `tau.log.1`
//! (`.1` to `.N` shift up, the oldest goes), so the log never takes more than
//! `(keep_files + 1) × max_file_bytes` and a line. The other commands append to the same
//! file without rotating, so two processes never rename it under each other.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::sync::Mutex;

use file_rotate::compression::Compression;
use file_rotate::suffix::AppendCount;
use file_rotate::{ContentLimit, FileRotate};
use serde::{Deserialize, Serialize};
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::paths::{Env, Home};
use crate::private::FILE_MODE;

/// The smallest and largest size a log file may be given.
const MIN_FILE_BYTES: u64 = 64 * 1024;
const MAX_FILE_BYTES: u64 = 1024 * 1024 * 1024;
/// The most rotated files that may be kept.
const MAX_KEEP_FILES: usize = 100;

/// `[log]`: how large `tau.log` may grow under `tau serve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct LogConfig {
    /// `tau.log` is rotated once it is this large (bytes).
    pub max_file_bytes: u64,
    /// Rotated files kept beside it (`tau.log.1`, ...).
    pub keep_files: usize,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            max_file_bytes: 10 * 1024 * 1024,
            keep_files: 4,
        }
    }
}

impl LogConfig {
    pub(crate) fn validate(&self) -> Result<(), String> {
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

/// The log for a command: appended to, never rotated.
pub(crate) fn init(home: &Home, env: Env<'_>) -> anyhow::Result<()> {
    let path = home.log_dir().join("tau.log");
    let file = crate::private::open(&path, OpenOptions::new().create(true).append(true))
        .map_err(|e| anyhow::anyhow!("cannot open the log {}: {e}", path.display()))?;
    install(Mutex::new(file), env);
    Ok(())
}

/// The log for `tau serve`: rotated by size, its total bounded (see the module text).
pub(crate) fn init_rotating(home: &Home, env: Env<'_>, config: &LogConfig) -> anyhow::Result<()> {
    let path = home.log_dir().join("tau.log");
    // Created (or tightened) first, so the rotating writer finds a private file.
    crate::private::ensure_file(&path)
        .map_err(|e| anyhow::anyhow!("cannot open the log {}: {e}", path.display()))?;
    let mut options = OpenOptions::new();
    options.read(true).create(true).append(true).mode(FILE_MODE);
    let limit = usize::try_from(config.max_file_bytes).unwrap_or(usize::MAX);
    let writer = FileRotate::new(
        &path,
        AppendCount::new(config.keep_files),
        ContentLimit::BytesSurpassed(limit),
        Compression::None,
        Some(options),
    );
    install(Mutex::new(writer), env);
    Ok(())
}

fn install<W>(writer: Mutex<W>, env: Env<'_>)
where
    W: Write + Send + 'static,
{
    let levels = env("TAU_LOG")
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    // Beside the levels, not among them: no `TAU_LOG` can let the model library write a
    // response body (which may quote the API key) into the log.
    let scrubbed = filter_fn(|meta| !tau_models::is_unscrubbed_log_target(meta.target()));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(writer)
        .with_ansi(false)
        .with_filter(scrubbed)
        .with_filter(levels);
    // Only the first set-up counts; a second one in the same process keeps the first.
    let _ = tracing_subscriber::registry().with(layer).try_init();
}

#[cfg(test)]
mod tests {
    use super::*;

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
            Err("log.keep_files: must be from 1 to 100, got 0".into())
        );
    }
}
