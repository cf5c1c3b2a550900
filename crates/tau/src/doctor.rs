//! `tau doctor`: what this machine and this config give tau. The sandbox's layers (set up
//! for real in a throwaway process), the modes of the home and its files, the workspace
//! boundary, the config (through the very checks `tau serve` runs at start, so a config
//! `serve` refuses is never said to be fine here), and the model: whether one is set, and
//! whether its server can be reached. Changes nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tau_models::ModelSpec;
use tau_sandbox::Sandbox;

use crate::context::Context;
use tau_home::private::{DIR_MODE, FILE_MODE};

/// How long the model's server has to accept a connection.
const CONNECT_WAIT: Duration = Duration::from_secs(3);

/// One line of the report.
struct Row {
    /// `ok`, `no` (a problem) or `--` (nothing to check, not a problem).
    mark: &'static str,
    name: String,
    detail: String,
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
    let sections = [
        sandbox(ctx).await,
        home(ctx),
        workspace(ctx),
        config(ctx, config_error),
        model(ctx).await,
    ];
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
    let title = match (on, reduced) {
        (true, false) => "sandbox for commands and MCP servers ([tools.command] sandbox = \"on\")",
        (true, true) => {
            "sandbox for commands and MCP servers, reduced ([tools.command] sandbox = \
             \"reduced\"): without namespaces"
        }
        (false, _) => {
            "sandbox: off ([tools.command] sandbox = \"off\"): commands run without a sandbox"
        }
    };
    let rows = layers
        .rows()
        .into_iter()
        .map(|(name, available, detail)| {
            let namespaces = name == "namespaces";
            // "reduced" does without namespaces; "on" refuses every command without them.
            let mark = match available {
                true => "ok",
                false if on && !(namespaces && reduced) => "no",
                false => "--",
            };
            let detail = match (available, namespaces && on && !reduced) {
                (true, _) if namespaces && reduced => {
                    format!("available: {detail} (not used: sandbox = \"reduced\")")
                }
                (true, _) => format!("available: {detail}"),
                (false, true) => format!(
                    "not available: {detail}; every command is refused. `sandbox = \
                     \"reduced\"` under [tools.command] runs them without namespaces"
                ),
                (false, false) => format!("not available: {detail}"),
            };
            Row::new(mark, name, detail)
        })
        .collect();
    (title.to_owned(), rows)
}

fn home(ctx: &Context) -> (String, Vec<Row>) {
    let home = &ctx.home;
    let entries: [(&str, PathBuf, u32); 7] = [
        ("home", home.root().to_owned(), DIR_MODE),
        ("state.db", home.state_db(), FILE_MODE),
        ("audit.jsonl", home.audit_log(), FILE_MODE),
        ("logs", home.log_dir(), DIR_MODE),
        ("locks", home.locks(), DIR_MODE),
        ("web-token", home.web_token(), FILE_MODE),
        ("mcp-token", home.mcp_token(), FILE_MODE),
    ];
    let rows = entries
        .into_iter()
        .map(|(name, path, wanted)| match home_entry(name, &path) {
            Err(_) => Row::new("--", name, "not made yet"),
            Ok(meta) if meta.file_type().is_symlink() => Row::new(
                "no",
                name,
                "a symbolic link: tau refuses to start until it is removed",
            ),
            Ok(meta) => {
                let mode = meta.permissions().mode() & 0o777;
                if mode & !wanted == 0 {
                    Row::new("ok", name, format!("{mode:04o}"))
                } else {
                    Row::new(
                        "no",
                        name,
                        format!(
                            "{mode:04o}: others may read it; tau tightens it to {wanted:04o} when it next opens it"
                        ),
                    )
                }
            }
        })
        .collect();
    (format!("home {}", home.root().display()), rows)
}

/// What `path` is: the home itself followed (it may be a link, the person's own path to
/// it; see `Home::refuse_links`), every entry in it as it is.
fn home_entry(name: &str, path: &Path) -> std::io::Result<std::fs::Metadata> {
    if name == "home" {
        std::fs::metadata(path)
    } else {
        std::fs::symlink_metadata(path)
    }
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
    let row = match ModelSpec::parse(&spec_text) {
        Err(error) => Row::new("no", "spec", error.to_string()),
        Ok(ModelSpec::Replay { path }) => match std::fs::metadata(&path) {
            Ok(_) => Row::new("ok", "script", "readable"),
            Err(error) => Row::new("no", "script", format!("{}: {error}", path.display())),
        },
        Ok(spec) => {
            let (host, port) = spec.endpoint();
            let address = format!("{host}:{port}");
            match tokio::time::timeout(CONNECT_WAIT, tokio::net::TcpStream::connect(&address)).await
            {
                Ok(Ok(_)) => Row::new("ok", "server", format!("{address} accepts connections")),
                Ok(Err(error)) => Row::new("no", "server", format!("{address}: {error}")),
                Err(_) => Row::new(
                    "no",
                    "server",
                    format!("{address}: no answer within {} s", CONNECT_WAIT.as_secs()),
                ),
            }
        }
    };
    (title, vec![row])
}
