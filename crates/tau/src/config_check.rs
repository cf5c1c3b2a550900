//! `tau config check`: the effective config, once everything `tau chat`, `tau serve`,
//! `tau routines` and the Telegram channel check at start holds, without connecting to
//! anything or writing anything. The routines go through the very check `tau serve` runs
//! ([`tau_reflex::check_routines`], with what `tau serve` offers them), so both refuse the
//! same routine with the same words.

use tau_core::ToolCatalog;
use tau_reflex::{Checks, RoutineDef, check_routines, defs_from_toml};
use tau_sandbox::Sandbox;

use crate::context::Context;
use crate::errors::usage;

/// What the effective config shows in `[model]` for a model nobody set.
const NO_MODEL: &str =
    "# spec: none (`tau chat` and `tau serve` need one: --model SPEC, or spec = \"...\" here)\n";

/// The report: a header, a note per routine whose tool could not be checked offline, and
/// the effective config as TOML.
pub(crate) fn run(ctx: &Context) -> anyhow::Result<String> {
    ctx.check_workspace()?;
    ctx.build_model()?;
    if let Some(telegram) = &ctx.loaded.config.telegram {
        telegram
            .token(|name| (ctx.env)(name))
            .map_err(|e| usage(e.to_string()))?;
    }
    let unchecked = routines(ctx)?;
    let source = ctx.loaded.path.as_ref().map_or_else(
        || "no config file; defaults".to_owned(),
        |p| format!("from {}", p.display()),
    );
    let mut out = format!("# effective config ({source})\n");
    for (routine, tool, server) in unchecked {
        out.push_str(&format!(
            "# routines.{routine}: the arguments of {tool} are checked against its schema when tau connects to the MCP server '{server}' (tau serve, tau routines)\n"
        ));
    }
    let config = toml::to_string_pretty(&ctx.loaded.config)?;
    if ctx.loaded.model_configured {
        out.push_str(&config);
    } else {
        // The default spec is one `tau chat` refuses to start with: shown as none.
        let default = format!(
            "[model]\nspec = {}\n",
            toml::Value::String(ctx.loaded.config.model.spec.clone())
        );
        out.push_str(&config.replacen(&default, &format!("[model]\n{NO_MODEL}"), 1));
    }
    Ok(out)
}

/// Checks the `tau.toml` routines as `tau serve` does at start: the tools and their
/// schemas (the built-in and device tools; an MCP server's tools are known only once it
/// is connected, so those calls are returned, by routine, tool and server), webhook
/// secrets set and long enough, `ask` channels that `tau serve` runs, the MQTT client.
fn routines(ctx: &Context) -> anyhow::Result<Vec<(String, String, String)>> {
    let config = &ctx.loaded.config;
    if config.routines.is_empty() {
        return Ok(Vec::new());
    }
    let shown = ctx.config_name();
    let defs =
        defs_from_toml(config.routines.clone()).map_err(|e| usage(format!("{shown}: {e}")))?;
    crate::hosted::broker(ctx)?;
    let offers = crate::hosted::offers(config);
    let catalog = offline_tools(ctx)?;
    let zone = crate::routines::zone(config)?;
    let mut unchecked = Vec::new();
    for def in defs {
        let server = mcp_server_of(ctx, &def, &catalog);
        let checks = Checks {
            tools: if server.is_some() {
                None
            } else {
                Some(&catalog)
            },
            zone: &zone,
            env: &*ctx.env,
            now: jiff::Timestamp::now(),
            at_must_be_future: false,
            webhooks: Some(offers.webhooks),
        };
        check_routines(std::slice::from_ref(&def), &checks, &offers)
            .map_err(|e| usage(format!("{shown}: {e}")))?;
        if let (Some(server), Some(tool)) = (server, def.tool) {
            unchecked.push((def.name, tool, server));
        }
    }
    Ok(unchecked)
}

/// The configured MCP server whose tool `def` calls, when the tool is not one of `known`.
fn mcp_server_of(ctx: &Context, def: &RoutineDef, known: &ToolCatalog) -> Option<String> {
    let tool = def.tool.as_deref()?;
    if known.get(tool).is_some() {
        return None;
    }
    let (server, _) = tool.split_once("__")?;
    ctx.loaded
        .config
        .mcp
        .servers
        .contains_key(server)
        .then(|| server.to_owned())
}

/// The built-in and device tools, built without connecting or writing. Their schemas do
/// not depend on the workspace, which does not exist before tau's first run: then the
/// system's temporary folder stands in.
fn offline_tools(ctx: &Context) -> anyhow::Result<ToolCatalog> {
    let mut tools = ctx.loaded.config.tools.clone();
    if !tools.workspace.is_dir() {
        tools.workspace = std::env::temp_dir();
    }
    let builtins =
        tau_tools::builtins(&tools, &*ctx.env, Sandbox::Off).map_err(|e| usage(e.to_string()))?;
    let mut catalog = ToolCatalog::new();
    catalog.extend(builtins.tools)?;
    catalog.extend(ctx.device_tools_read_only()?)?;
    Ok(catalog)
}
