//! `tau service unit` and `tau service install`: `tau serve` as a systemd service. The unit
//! names this very binary and this home (see `unit.rs` for its text and its hardening);
//! `install` writes it where systemd looks for it, never over a different file unless
//! told to, and says how to enable it.

mod unit;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::context::Context;
use crate::errors::usage;

use unit::{Scope, UnitParts};

/// The file name systemd knows the service by.
const UNIT_NAME: &str = "tau.service";
/// Where a system unit goes.
const SYSTEM_UNITS: &str = "/etc/systemd/system";

/// The unit for this binary, home and config; `--model` goes along when it was given.
pub(crate) fn unit(ctx: &Context, system: bool, model: Option<&str>) -> anyhow::Result<String> {
    unit::render(&parts(ctx, system, model)?)
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
    let path = unit_path(&*ctx.env, system)?;
    // The unit lets tau write only there (`ReadWritePaths=`): it must exist first.
    ctx.create_home()?;
    let said = match std::fs::read(&path) {
        Ok(existing) if existing == text.as_bytes() => {
            format!("{} is installed already, unchanged\n", path.display())
        }
        Ok(_) if !force => {
            return Err(usage(format!(
                "{} exists and is not the unit this tau writes; `tau service unit{}` shows the new one, and `tau service install{} --force` replaces it",
                path.display(),
                if system { " --system" } else { "" },
                if system { " --system" } else { "" },
            )));
        }
        Ok(_) => {
            write_unit(&path, &text)?;
            format!("replaced {}\n", path.display())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            write_unit(&path, &text)?;
            format!("wrote {}\n", path.display())
        }
        Err(error) => return Err(anyhow::anyhow!("cannot read {}: {error}", path.display())),
    };
    let manager = if system {
        "systemctl"
    } else {
        "systemctl --user"
    };
    Ok(format!(
        "{said}to start tau serve now and at every boot{}:\n  {manager} daemon-reload\n  {manager} enable --now {UNIT_NAME}\n",
        if system { " (as root)" } else { "" }
    ))
}

/// Where systemd looks for the unit: the person's `$XDG_CONFIG_HOME/systemd/user/` (else
/// `~/.config/systemd/user/`), or `/etc/systemd/system/`.
fn unit_path(env: crate::paths::Env<'_>, system: bool) -> anyhow::Result<PathBuf> {
    if system {
        return Ok(Path::new(SYSTEM_UNITS).join(UNIT_NAME));
    }
    let base = env("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            env("HOME")
                .filter(|p| !p.is_empty())
                .map(|home| PathBuf::from(home).join(".config"))
        })
        .ok_or_else(|| {
            usage("cannot find where systemd keeps user units: set HOME or XDG_CONFIG_HOME")
        })?;
    Ok(base.join("systemd/user").join(UNIT_NAME))
}

/// Writes `text` to `path` through a file renamed over it, readable by all (a unit holds no
/// secret; systemd reads system units as root and warns about writable ones).
fn write_unit(path: &Path, text: &str) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .ok_or_else(|| anyhow::anyhow!("{} has no folder", path.display()))?;
    std::fs::create_dir_all(dir)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", dir.display()))?;
    let failed = |e: std::io::Error| {
        let hint = if e.kind() == std::io::ErrorKind::PermissionDenied {
            "; as the user tau should run as, `tau service unit --system | sudo tee /etc/systemd/system/tau.service` writes it"
        } else {
            ""
        };
        anyhow::anyhow!("cannot write {}: {e}{hint}", path.display())
    };
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(failed)?;
    file.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
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
    let env_file = crate::paths::config_path(None, &*ctx.env)
        .and_then(|(default_config, _)| Some(default_config.parent()?.join("service.env")));
    let scope = if system {
        Scope::System {
            user: system_user()?,
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

/// Who a system unit runs tau as: the person running this command, never root (tau's
/// sandbox and its home are made for a person's account).
fn system_user() -> anyhow::Result<String> {
    let uid = rustix::process::getuid().as_raw();
    if uid == 0 {
        return Err(usage(
            "a system unit runs tau as the person whose home it is, never as root: run `tau service unit --system` as that user, and save what it prints as /etc/systemd/system/tau.service as root",
        ));
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    Ok(user_name(&passwd, uid).unwrap_or_else(|| uid.to_string()))
}

/// The name `/etc/passwd` gives `uid`.
fn user_name(passwd: &str, uid: u32) -> Option<String> {
    passwd.lines().find_map(|line| {
        let mut fields = line.split(':');
        let name = fields.next()?;
        let id = fields.nth(1)?;
        (id.parse() == Ok(uid)).then(|| name.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_user_is_named_by_the_passwd_line_with_its_uid() {
        let passwd =
            "root:x:0:0:root:/root:/bin/bash\nme:x:1000:1000:Me,,,:/home/me:/bin/bash\nbroken\n";
        assert_eq!(user_name(passwd, 1000).as_deref(), Some("me"));
        assert_eq!(user_name(passwd, 0).as_deref(), Some("root"));
        assert_eq!(user_name(passwd, 1001), None);
    }

    #[test]
    fn user_units_go_under_the_config_home() {
        let env = |name: &str| match name {
            "HOME" => Some("/home/me".to_owned()),
            _ => None,
        };
        assert_eq!(
            unit_path(&env, false).unwrap(),
            PathBuf::from("/home/me/.config/systemd/user/tau.service")
        );
        let xdg = |name: &str| match name {
            "XDG_CONFIG_HOME" => Some("/x".to_owned()),
            _ => None,
        };
        assert_eq!(
            unit_path(&xdg, false).unwrap(),
            PathBuf::from("/x/systemd/user/tau.service")
        );
        assert_eq!(
            unit_path(&xdg, true).unwrap(),
            PathBuf::from("/etc/systemd/system/tau.service")
        );
    }
}
