//! `tau service unit` and `tau service install`: the unit names this binary and this
//! home, systemd reads it without a complaint (`systemd-analyze verify`, Debian's
//! `systemd`, which `scripts/test` installs), and `install` writes it where systemd looks,
//! never over a different file unless told to.

use crate::common;

use std::path::Path;
use std::process::Command;

use common::Tau;
use pretty_assertions::assert_eq;

/// `systemd-analyze`, or `None` after saying why not (a failure when peers are required).
fn systemd_analyze() -> Option<&'static str> {
    let found = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some("systemd-analyze");
    }
    assert!(
        std::env::var_os("TAU_PEERS_REQUIRED").is_none_or(|v| v != "1"),
        "TAU_PEERS_REQUIRED is set, but systemd-analyze (Debian's systemd) is not installed"
    );
    eprintln!("skipped: systemd-analyze (Debian's systemd) is not installed");
    None
}

/// `systemd-analyze verify` of `unit` saved as `tau.service` (`--user` for a user unit).
fn verify(dir: &Path, unit: &str, user: bool) {
    let Some(analyze) = systemd_analyze() else {
        return;
    };
    let folder = dir.join(if user { "user-unit" } else { "system-unit" });
    std::fs::create_dir_all(&folder).unwrap();
    let path = folder.join("tau.service");
    std::fs::write(&path, unit).unwrap();
    let runtime = dir.join("runtime");
    std::fs::create_dir_all(&runtime).unwrap();
    let mut command = Command::new(analyze);
    if user {
        command.arg("--user").env("XDG_RUNTIME_DIR", &runtime);
    }
    let out = command.arg("verify").arg(&path).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "systemd-analyze verify failed:\n{said}\n{unit}"
    );
    // Its one remark on a system unit run as `nobody` (the test's stand-in user).
    let complaints: Vec<&str> = said
        .lines()
        .filter(|l| !l.contains("Special user nobody configured"))
        .collect();
    assert!(complaints.is_empty(), "{said}\n{unit}");
}

/// The unit with this run's paths named, so it reads the same on every machine.
fn redacted(tau: &Tau, unit: &str) -> String {
    unit.replace(env!("CARGO_BIN_EXE_tau"), "[TAU]")
        .replace(tau.home().to_str().unwrap(), "[HOME]")
        .replace(tau.dir.path().to_str().unwrap(), "[DIR]")
        .replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
}

#[test]
fn the_user_unit_runs_this_binary_on_this_home_and_systemd_reads_it() {
    let tau = Tau::new();
    let run = tau.run(&["service", "unit"], "");
    assert_eq!((run.code, run.stderr.as_str()), (0, ""));
    insta::assert_snapshot!(redacted(&tau, &run.stdout));
    verify(tau.dir.path(), &run.stdout, true);
}

#[test]
fn the_system_unit_runs_tau_as_a_person_and_systemd_reads_it() {
    let tau = Tau::new();
    let run = tau.run(&["service", "unit", "--system"], "");
    if rustix::process::getuid().is_root() {
        assert_eq!(run.code, 2, "{}", run.stdout);
        assert!(
            run.stderr.starts_with(
                "tau: a system unit runs tau as the person whose home it is, never as root"
            ),
            "{}",
            run.stderr
        );
        // As someone else (`nobody`), the way a person would run it.
        let mut command = tau.command_in_session(
            &[
                "setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
            ],
            &["service", "unit", "--system"],
        );
        command.env("HOME", "/nonexistent").current_dir("/");
        let run = tau.run_with(command, "");
        assert_eq!((run.code, run.stderr.as_str()), (0, ""));
        assert!(run.stdout.contains("\nUser=nobody\n"), "{}", run.stdout);
        verify(tau.dir.path(), &run.stdout, false);
    } else {
        assert_eq!((run.code, run.stderr.as_str()), (0, ""));
        assert!(
            run.stdout.contains("\nProtectSystem=strict\n"),
            "{}",
            run.stdout
        );
        verify(tau.dir.path(), &run.stdout, false);
    }
}

#[test]
fn install_writes_where_systemd_looks_and_never_over_a_different_file_unless_forced() {
    let tau = Tau::new();
    let config_home = tau.dir.path().join("xdg-config");
    let xdg = config_home.to_str().unwrap();
    let installed = config_home.join("systemd/user/tau.service");
    let env = [("XDG_CONFIG_HOME", xdg)];
    let unit = tau.run_env(&["service", "unit"], &env, "").stdout;

    let first = tau.run_env(&["service", "install"], &env, "");
    assert_eq!((first.code, first.stderr.as_str()), (0, ""));
    assert_eq!(
        first.stdout,
        format!(
            "wrote {}\nto start tau serve now and at every boot:\n  systemctl --user daemon-reload\n  systemctl --user enable --now tau.service\n",
            installed.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), unit);
    assert_eq!(common::mode(&installed), 0o644);
    assert!(
        tau.home().is_dir(),
        "the home the unit lets tau write exists"
    );

    let again = tau.run_env(&["service", "install"], &env, "");
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert!(
        again.stdout.starts_with(&format!(
            "{} is installed already, unchanged\n",
            installed.display()
        )),
        "{}",
        again.stdout
    );

    let edited = format!("{unit}# my own change\n");
    std::fs::write(&installed, &edited).unwrap();
    let refused = tau.run_env(&["service", "install"], &env, "");
    assert_eq!(refused.code, 2, "{}", refused.stdout);
    assert_eq!(
        refused.stderr,
        format!(
            "tau: {} exists and is not the unit this tau writes; `tau service unit` shows the new one, and `tau service install --force` replaces it\n",
            installed.display()
        )
    );
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), edited);

    let forced = tau.run_env(&["service", "install", "--force"], &env, "");
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    assert!(
        forced
            .stdout
            .starts_with(&format!("replaced {}\n", installed.display())),
        "{}",
        forced.stdout
    );
    assert_eq!(std::fs::read_to_string(&installed).unwrap(), unit);
}
