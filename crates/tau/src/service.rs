//! `tau service unit` and `tau service install`: `tau serve` as a systemd service. The unit
//! names this very binary and this home; its text, where it goes and its writing are
//! tau-home's.

use tau_home::service::{Scope, UnitParts};

use crate::context::Context;

/// The unit for this binary, home and config; `--model` goes along when it was given.
pub(crate) fn unit(ctx: &Context, system: bool, model: Option<&str>) -> anyhow::Result<String> {
    Ok(tau_home::service::render(&parts(ctx, system, model)?)?)
}

/// `tau service install`: writes the unit (a different file there only with `force`) and
/// says how to enable it.
pub(crate) fn install(
    ctx: &Context,
    system: bool,
    model: Option<&str>,
    force: bool,
) -> anyhow::Result<String> {
    let text = unit(ctx, system, model)?;
    let path = tau_home::service::unit_path(&*ctx.env, system)?;
    // The unit lets tau write only there (`ReadWritePaths=`): it must exist first.
    ctx.create_home()?;
    Ok(tau_home::service::install(&path, &text, system, force)?)
}

/// What the unit names, from this run of tau.
fn parts(ctx: &Context, system: bool, model: Option<&str>) -> anyhow::Result<UnitParts> {
    let binary = std::env::current_exe()
        .map_err(|e| anyhow::anyhow!("cannot tell where this tau binary is: {e}"))?;
    let home = std::path::absolute(ctx.home.root())
        .map_err(|e| anyhow::anyhow!("cannot make the home's path absolute: {e}"))?;
    let config = ctx
        .loaded
        .path
        .as_deref()
        .map(std::path::absolute)
        .transpose()
        .map_err(|e| anyhow::anyhow!("cannot make the config's path absolute: {e}"))?;
    let env_file = tau_home::config_path(None, &*ctx.env)
        .and_then(|(default_config, _)| Some(default_config.parent()?.join("service.env")));
    let scope = if system {
        Scope::System {
            user: tau_home::service::system_user()?,
        }
    } else {
        Scope::User
    };
    let writes = if ctx.own_workspace() {
        Vec::new()
    } else {
        vec![ctx.loaded.config.tools.workspace.clone()]
    };
    Ok(UnitParts {
        scope,
        binary,
        home,
        config,
        model: model.map(str::to_owned),
        env_file,
        writes,
        version: env!("CARGO_PKG_VERSION").to_owned(),
    })
}
