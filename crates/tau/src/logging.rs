//! The file log: `logs/tau.log`, INFO and above (override with `TAU_LOG`), readable only
//! by the person running tau (0600).

use std::fs::OpenOptions;
use std::sync::Mutex;

use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::{EnvFilter, Layer};

use crate::paths::{Env, Home};

pub(crate) fn init(home: &Home, env: Env<'_>) -> anyhow::Result<()> {
    let path = home.log_dir().join("tau.log");
    let file = crate::private::open(&path, OpenOptions::new().create(true).append(true))
        .map_err(|e| anyhow::anyhow!("cannot open the log {}: {e}", path.display()))?;
    let levels = env("TAU_LOG")
        .and_then(|f| EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| EnvFilter::new("info"));
    // Beside the levels, not among them: no `TAU_LOG` can let the model library write a
    // response body (which may quote the API key) into the log.
    let scrubbed = filter_fn(|meta| !tau_models::is_unscrubbed_log_target(meta.target()));
    let layer = tracing_subscriber::fmt::layer()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_filter(scrubbed)
        .with_filter(levels);
    // Only the first set-up counts; a second one in the same process keeps the first.
    let _ = tracing_subscriber::registry().with(layer).try_init();
    Ok(())
}
