//! `tau config check`: the effective config, once everything `tau serve` checks at start
//! holds ([`crate::start_checks::check`], the very function `tau serve` runs first, so both
//! refuse the same config with the same words), without connecting to anything or writing
//! anything.

use crate::context::Context;
use crate::start_checks::UncheckedRoutine;

/// What the effective config shows in `[model]` for a model nobody set.
const NO_MODEL: &str =
    "# spec: none (`tau chat` and `tau serve` need one: --model SPEC, or spec = \"...\" here)\n";

/// The report: a header, a note per routine whose tool could not be checked offline, and
/// the effective config as TOML.
pub(crate) fn run(ctx: &Context) -> anyhow::Result<String> {
    let checked = crate::start_checks::check(ctx)?;
    let source = ctx.loaded.path.as_ref().map_or_else(
        || "no config file; defaults".to_owned(),
        |p| format!("from {}", p.display()),
    );
    let mut out = format!("# effective config ({source})\n");
    for UncheckedRoutine {
        routine,
        tool,
        server,
    } in checked.unchecked
    {
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
