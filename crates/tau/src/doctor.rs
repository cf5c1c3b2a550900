//! `tau doctor`: what this machine and this config give tau. The sandbox's layers (set up
//! for real in a throwaway process), the modes of the home and its files, the workspace
//! boundary, the config (through the very checks `tau serve` runs at start, so a config
//! `serve` refuses is never said to be fine here), and the model: whether one is set, and
//! whether its server can be reached; a store several hubs share: its connection, schema
//! step and leases. Changes nothing (but connecting to a shared store brings an empty
//! database's tables to this tau's schema, as every command does).

use std::path::Path;

use tau_sandbox::Sandbox;

use crate::context::Context;
use crate::store::ConfiguredStore;

/// One line of the report.
struct Row {
    /// `ok`, `no` (a problem) or `--` (nothing to check, not a problem).
    mark: &'static str,
    name: String,
    detail: String,
}

impl From<(&'static str, &'static str, String)> for Row {
    fn from((mark, name, detail): (&'static str, &'static str, String)) -> Self {
        Self::new(mark, name, detail)
    }
}

impl Row {
    fn new(mark: &'static str, name: impl Into<String>, detail: impl Into<String>) -> Self {
        Self {
            mark,
            name: name.into(),
            detail: detail.into(),
        }
    }
}

/// The report, and whether everything tau needs is there. `config_error` is why the
/// config file did not read, if it did not (the rest then uses the defaults).
pub(crate) async fn run(ctx: &Context, config_error: Option<&anyhow::Error>) -> (String, bool) {
    let mut text = String::new();
    let mut healthy = true;
    let mut sections = vec![sandbox(ctx).await, home(ctx)];
    sections.extend(shared_store(ctx));
    sections.extend([workspace(ctx), config(ctx, config_error), model(ctx).await]);
    for (title, rows) in sections {
        text.push_str(&title);
        text.push('\n');
        for row in rows {
            healthy &= row.mark != "no";
            text.push_str(&format!(
                "  {:<3} {:<12} {}\n",
                row.mark, row.name, row.detail
            ));
        }
    }
    text.push_str(if healthy {
        "tau doctor: everything tau needs is there\n"
    } else {
        "tau doctor: some of what tau needs is missing (the rows marked no)\n"
    });
    (text, healthy)
}

async fn sandbox(ctx: &Context) -> (String, Vec<Row>) {
    let layers = tau_sandbox::probe(Path::new("/proc/self/exe")).await;
    let (on, reduced) = match ctx.sandbox() {
        Sandbox::On(confinement) => (true, confinement.is_reduced()),
        Sandbox::Off => (false, false),
    };
    let (title, rows) = layers.doctor_section(on, reduced);
    (title, rows.into_iter().map(Row::from).collect())
}

fn home(ctx: &Context) -> (String, Vec<Row>) {
    let (title, rows) = ctx.home.doctor_section();
    (title, rows.into_iter().map(Row::from).collect())
}

/// A store several hubs share: whether it answers, its schema step, its leases. Nothing
/// for `state.db` in the home (the home's section has it).
fn shared_store(ctx: &Context) -> Option<(String, Vec<Row>)> {
    let shared = match ctx.store_location() {
        Ok(ConfiguredStore::Shared(shared)) => shared,
        Ok(ConfiguredStore::Home(_)) => return None,
        Err(error) => {
            let why = tau_core::display(&format!("{error:#}"));
            return Some(("store".to_owned(), vec![Row::new("no", "url", why)]));
        }
    };
    let title = format!("store {}", tau_core::display(&shared.url));
    let state = match ctx.existing_state() {
        Ok(Some(state)) => state,
        Ok(None) => return None,
        Err(error) => {
            let why = tau_core::display(&format!("{error:#}"));
            return Some((
                title,
                vec![
                    Row::new("no", "connection", why),
                    Row::new("--", "schema", "not checked: no connection"),
                    Row::new("--", "leases", "not checked: no connection"),
                ],
            ));
        }
    };
    let schema = match state.schema_version() {
        Ok(step) if step == tau_state::SCHEMA_VERSION => {
            Row::new("ok", "schema", format!("step {step}, this tau's"))
        }
        Ok(step) => Row::new(
            "no",
            "schema",
            format!("step {step}; this tau knows {}", tau_state::SCHEMA_VERSION),
        ),
        Err(error) => Row::new("no", "schema", tau_core::display(&error.to_string())),
    };
    let leases = match state.leases().leases() {
        Ok(leases) => {
            let now = jiff::Timestamp::now();
            let live = leases.iter().filter(|l| l.is_live(now)).count();
            let hubs = leases
                .iter()
                .filter(|l| l.is_live(now) && l.name.starts_with("hub:"))
                .count();
            Row::new(
                "ok",
                "leases",
                format!(
                    "readable: {live} held ({hubs} by a running hub), {} run out",
                    leases.len() - live
                ),
            )
        }
        Err(error) => Row::new("no", "leases", tau_core::display(&error.to_string())),
    };
    Some((
        title,
        vec![Row::new("ok", "connection", "answers"), schema, leases],
    ))
}

fn workspace(ctx: &Context) -> (String, Vec<Row>) {
    let path = &ctx.loaded.config.tools.workspace;
    let row = match ctx.check_workspace() {
        Ok(()) if path.is_dir() => Row::new("ok", "boundary", "holds nothing tau trusts"),
        Ok(()) => Row::new("--", "boundary", "not made yet (tau makes it on first use)"),
        Err(error) => Row::new("no", "boundary", format!("{error:#}")),
    };
    (format!("workspace {}", path.display()), vec![row])
}

/// The config as `tau serve` would take it: [`crate::start_checks::check`], or why the
/// file did not read.
fn config(ctx: &Context, load_error: Option<&anyhow::Error>) -> (String, Vec<Row>) {
    let title = match (&ctx.loaded.path, load_error) {
        (Some(path), _) => format!("config {}", path.display()),
        (None, Some(_)) => {
            "config (not read: the rest of this report uses the defaults)".to_owned()
        }
        (None, None) => "config (no file: the defaults)".to_owned(),
    };
    let problem = match load_error {
        Some(error) => Some(format!("{error:#}")),
        None => crate::start_checks::check(ctx)
            .err()
            .map(|error| format!("{error:#}")),
    };
    let row = match problem {
        None => Row::new("ok", "checks", "tau serve would start with it"),
        Some(problem) => Row::new("no", "checks", tau_core::display(&problem)),
    };
    (title, vec![row])
}

/// What `tau doctor` says when no model is set.
const NO_MODEL_ROW: &str = "none is set, and tau chat and tau serve need one: pass --model SPEC \
    or write [model] spec = \"...\" in tau.toml, e.g. ollama:llama3.2 for a local Ollama \
    (`tau chat` without one lists every kind)";

async fn model(ctx: &Context) -> (String, Vec<Row>) {
    let spec_text = ctx.loaded.config.model.spec.clone();
    if !ctx.loaded.model_configured {
        return (
            "model".to_owned(),
            vec![Row::new("no", "spec", NO_MODEL_ROW)],
        );
    }
    let title = format!("model {}", tau_core::display(&spec_text));
    (
        title,
        vec![Row::from(tau_models::doctor_row(&spec_text).await)],
    )
}
