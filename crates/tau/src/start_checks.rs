//! What `tau serve` checks before it starts anything, as one function: `tau serve` runs it
//! first, `tau config check` runs it and prints the effective config, `tau doctor` runs it
//! for its `config` row. One function, so the three cannot drift apart: a config `serve`
//! refuses, the other two refuse with the same words. Nothing here connects to anything or
//! writes anything.
//!
//! Whether a model is set at all is each command's own: `serve` refuses to start without
//! one, `config check` shows `# spec: none`, `doctor` marks it missing and says how to set
//! one. What `[model]` says is checked here (its spec, its values, its key).

use tau_core::ToolCatalog;
use tau_reflex::{Checks, RoutineDef, check_routines, defs_from_toml};
use tau_sandbox::Sandbox;

use crate::context::Context;
use crate::errors::usage;

/// A routine whose tool is an MCP server's: its arguments are checked against the tool's
/// schema only once the server is connected.
pub(crate) struct UncheckedRoutine {
    pub routine: String,
    pub tool: String,
    pub server: String,
}

/// What the checks could not settle without connecting.
pub(crate) struct Checked {
    pub unchecked: Vec<UncheckedRoutine>,
}

/// Every check `tau serve` runs at start, in its order; the first problem is the error
/// (exit 2):
/// 1. no entry tau owns in its home is a symbolic link
/// 2. the model's keys: its spec, its values, its API key
/// 3. a channel to serve: TauBar (`web.enabled`) or `[telegram]`
/// 4. Telegram's bot token is in its variable
/// 5. the workspace holds nothing tau trusts or starts
/// 6. the built-in and device tools can be built: the zone, the broker's password, ...
/// 7. the routines of `tau.toml`: their tools and schemas, webhook secrets, `ask` channels,
///    their MQTT client
pub(crate) fn check(ctx: &Context) -> anyhow::Result<Checked> {
    let config = &ctx.loaded.config;
    ctx.refuse_home_links()?;
    // Also when none is set: `[model]`'s other keys are the default spec's then.
    ctx.build_model()?;
    if !config.web.enabled && config.telegram.is_none() {
        return Err(usage(
            "tau serve has no channel to serve: web.enabled is false and there is no [telegram]",
        ));
    }
    if let Some(telegram) = &config.telegram {
        telegram
            .token(|name| (ctx.env)(name))
            .map_err(|e| usage(e.to_string()))?;
    }
    ctx.check_workspace()?;
    let catalog = offline_tools(ctx)?;
    let unchecked = routines(ctx, &catalog)?;
    Ok(Checked { unchecked })
}

/// Checks the `tau.toml` routines as `tau serve` does at start: the tools and their
/// schemas (the built-in and device tools; an MCP server's tools are known only once it
/// is connected, so those calls are returned), webhook secrets set and long enough, `ask`
/// channels that `tau serve` runs, the MQTT client.
fn routines(ctx: &Context, catalog: &ToolCatalog) -> anyhow::Result<Vec<UncheckedRoutine>> {
    let config = &ctx.loaded.config;
    if config.routines.is_empty() {
        return Ok(Vec::new());
    }
    let shown = ctx.config_name();
    let defs =
        defs_from_toml(config.routines.clone()).map_err(|e| usage(format!("{shown}: {e}")))?;
    crate::hosted::broker(ctx)?;
    let offers = crate::hosted::offers(config);
    let zone = crate::settings::zone(config)?;
    let people = config.household();
    let mut unchecked = Vec::new();
    for def in defs {
        let server = mcp_server_of(ctx, &def, catalog);
        let checks = Checks {
            tools: if server.is_some() {
                None
            } else {
                Some(catalog)
            },
            zone: &zone,
            env: &*ctx.env,
            now: jiff::Timestamp::now(),
            at_must_be_future: false,
            webhooks: Some(offers.webhooks),
            people: &people,
        };
        check_routines(std::slice::from_ref(&def), &checks, &offers)
            .map_err(|e| usage(format!("{shown}: {e}")))?;
        if let (Some(server), Some(tool)) = (server, def.tool) {
            unchecked.push(UncheckedRoutine {
                routine: def.name,
                tool,
                server,
            });
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

/// The built-in and device tools, built without connecting or writing: what `tau serve`
/// refuses in `[tools]` (an unknown zone, a broker password that is not set) is refused
/// here, naming the file. Their schemas do not depend on the workspace, which does not
/// exist before tau's first run: then the system's temporary folder stands in.
fn offline_tools(ctx: &Context) -> anyhow::Result<ToolCatalog> {
    let mut tools = ctx.loaded.config.tools.clone();
    if !tools.workspace.is_dir() {
        tools.workspace = std::env::temp_dir();
    }
    let shown = ctx.config_name();
    let builtins = tau_tools::builtins(&tools, &*ctx.env, Sandbox::Off)
        .map_err(|e| usage(format!("{shown}: {e}")))?;
    let mut catalog = ToolCatalog::new();
    catalog.extend(builtins.tools)?;
    catalog.extend(ctx.device_tools_read_only()?)?;
    Ok(catalog)
}
