//! `tau serve` as a systemd service: the unit's text (`unit.rs`, with its hardening),
//! where systemd looks for it, and writing it there, never over a different file unless
//! told to.

mod unit;

use std::io::Write;
use std::path::{Path, PathBuf};

pub use unit::{Scope, UnitParts, render};

use crate::error::HomeError;
use crate::home::Env;

/// The file name systemd knows the service by.
const UNIT_NAME: &str = "tau.service";
/// Where a system unit goes.
const SYSTEM_UNITS: &str = "/etc/systemd/system";

/// `tau service install`: writes `text` to `path` (a different file there only with
/// `force`) and says how to enable it.
pub fn install(path: &Path, text: &str, system: bool, force: bool) -> Result<String, HomeError> {
    let said = match std::fs::read(path) {
        Ok(existing) if existing == text.as_bytes() => {
            format!("{} is installed already, unchanged\n", path.display())
        }
        Ok(_) if !force => {
            return Err(HomeError::UnitExists {
                path: path.to_owned(),
                flag: if system { " --system" } else { "" },
            });
        }
        Ok(_) => {
            write_unit(path, text)?;
            format!("replaced {}\n", path.display())
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            write_unit(path, text)?;
            format!("wrote {}\n", path.display())
        }
        Err(error) => {
            return Err(HomeError::ReadSaid {
                path: path.to_owned(),
                error,
            });
        }
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
pub fn unit_path(env: Env<'_>, system: bool) -> Result<PathBuf, HomeError> {
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
        .ok_or(HomeError::NoUnitFolder)?;
    Ok(base.join("systemd/user").join(UNIT_NAME))
}

/// Writes `text` to `path` through a file renamed over it, readable by all (a unit holds no
/// secret; systemd reads system units as root and warns about writable ones).
fn write_unit(path: &Path, text: &str) -> Result<(), HomeError> {
    use std::os::unix::fs::PermissionsExt;
    let dir = path
        .parent()
        .ok_or_else(|| HomeError::NoFolder(path.to_owned()))?;
    std::fs::create_dir_all(dir).map_err(|error| HomeError::Create {
        path: dir.to_owned(),
        error,
    })?;
    let failed = |error: std::io::Error| {
        let hint = if error.kind() == std::io::ErrorKind::PermissionDenied {
            "; as the user tau should run as, `tau service unit --system | sudo tee /etc/systemd/system/tau.service` writes it"
        } else {
            ""
        };
        HomeError::WriteSaid {
            path: path.to_owned(),
            error,
            hint,
        }
    };
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(failed)?;
    file.write_all(text.as_bytes()).map_err(failed)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o644))
        .map_err(failed)?;
    file.persist(path).map_err(|e| failed(e.error))?;
    Ok(())
}

/// Who a system unit runs tau as: the person running this command, never root (tau's
/// sandbox and its home are made for a person's account).
pub fn system_user() -> Result<String, HomeError> {
    let uid = rustix::process::getuid().as_raw();
    if uid == 0 {
        return Err(HomeError::RootUnit);
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
