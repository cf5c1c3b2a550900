//! The file log: `logs/tau.log`, INFO and above (override with `TAU_LOG`), readable only
//! by the person running tau (0600).

use std::fs::OpenOptions;
use std::sync::Mutex;

use tracing_subscriber::EnvFilter;

use crate::paths::{Env, Home};

pub(crate) fn init(home: &Home, env: Env<'_>) -> anyhow::Result<()> {
    let path = home.log_dir().join("tau.log");
    let file = crate::private::open(&path, OpenOptions::new().create(true).append(true))
        .map_err(|e| anyhow::anyhow!("cannot open the log {e}"))?;
    let filter = env("TAU_LOG")
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    // Only the first set-up counts; a second one in the same process keeps the first.
    let _ = tracing_subscriber::fmt()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_env_filter(filter)
        .try_init();
    Ok(())
}
