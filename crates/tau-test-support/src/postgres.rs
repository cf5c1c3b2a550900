//! A throwaway PostgreSQL server for a test: a fresh cluster (`initdb -A trust`) in a temp
//! folder, listening on a free loopback port with its unix socket in the same folder,
//! stopped (`pg_ctl stop -m immediate`) when dropped. It can be stopped and started again
//! on the same port, for a test of a lost connection.
//!
//! The server is Debian's `postgresql` package: `TAU_TEST_POSTGRES_BIN` names the folder
//! of `initdb`, `pg_ctl` and `psql`, else the newest `/usr/lib/postgresql/*/bin` is used.
//! A missing installation is an error, never a skip: a test of the shared store that did
//! not run says so by failing. PostgreSQL refuses to run as root, so a process running as
//! root (CI does) runs the server's programs as the `postgres` user (`runuser`), who owns
//! the folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

/// The user the cluster's superuser is called, in every url this hands out.
const SUPERUSER: &str = "postgres";
/// The account the server runs as when the test runs as root.
const SYSTEM_USER: &str = "postgres";

/// A running (or stopped, between [`Postgres::stop`] and [`Postgres::start_again`])
/// PostgreSQL server.
pub struct Postgres {
    bin: PathBuf,
    dir: tempfile::TempDir,
    port: u16,
    as_system_user: bool,
    running: bool,
    /// Whether commits wait for the disk (`fsync`), as on a real server; off for tests,
    /// which lose nothing they need when the machine stops.
    flushing: bool,
}

impl std::fmt::Debug for Postgres {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Postgres")
            .field("port", &self.port)
            .field("running", &self.running)
            .finish_non_exhaustive()
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        if self.running {
            let _ = self.pg_ctl(&["stop", "-m", "immediate", "-w"]);
        }
    }
}

/// The folder of PostgreSQL's programs: `TAU_TEST_POSTGRES_BIN`, else the newest
/// `/usr/lib/postgresql/<version>/bin` that has `initdb`.
pub fn postgres_bin() -> Result<PathBuf, String> {
    if let Some(bin) = std::env::var_os("TAU_TEST_POSTGRES_BIN") {
        let bin = PathBuf::from(bin);
        return if bin.join("initdb").is_file() {
            Ok(bin)
        } else {
            Err(format!(
                "TAU_TEST_POSTGRES_BIN is {}, which has no `initdb`",
                bin.display()
            ))
        };
    }
    newest_in(Path::new("/usr/lib/postgresql")).ok_or_else(|| {
        "PostgreSQL is not installed: there is no /usr/lib/postgresql/*/bin/initdb \
         (Debian package `postgresql`; scripts/test installs it)"
            .to_owned()
    })
}

/// The `bin` folder of the highest numbered version under `root` that has `initdb`.
fn newest_in(root: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(root).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let version: u32 = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .max_by_key(|(version, _)| *version)
        .map(|(_, bin)| bin)
}

fn running_as_root() -> bool {
    rustix::process::geteuid().is_root()
}

impl Postgres {
    /// A new cluster, started, without `fsync` (a test's data need not outlive a crash of
    /// the machine). An error says what is missing or what the server said.
    pub fn start() -> Result<Self, String> {
        Self::start_with(false)
    }

    /// [`Postgres::start`] with `fsync` on, as a real server runs: every commit waits for
    /// the disk. For a benchmark that should pay what a deployment pays.
    pub fn start_flushing() -> Result<Self, String> {
        Self::start_with(true)
    }

    fn start_with(flushing: bool) -> Result<Self, String> {
        let bin = postgres_bin()?;
        let as_system_user = running_as_root();
        let dir = tempfile::Builder::new()
            .prefix("tau-postgres-")
            .tempdir()
            .map_err(|e| format!("cannot make a folder for PostgreSQL: {e}"))?;
        if as_system_user {
            run(Command::new("chown")
                .arg(format!("{SYSTEM_USER}:"))
                .arg(dir.path()))
            .map_err(|e| format!("{e} (is there a `{SYSTEM_USER}` user?)"))?;
        }
        let mut server = Self {
            bin,
            dir,
            port: 0,
            as_system_user,
            running: false,
            flushing,
        };
        server.initdb()?;
        // A free port is found by binding port 0 and letting it go, so another test can
        // take it first: a server that cannot listen is started again on another port.
        let mut last = String::new();
        for _ in 0..3 {
            server.port = free_port()?;
            match server.start_again() {
                Ok(()) => return Ok(server),
                Err(why) => last = why,
            }
        }
        Err(last)
    }

    /// The port it listens on, on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The folder of its unix socket (`.s.PGSQL.<port>`).
    pub fn socket_dir(&self) -> &Path {
        self.dir.path()
    }

    /// The url of the `postgres` database as the superuser (no password: `trust`).
    pub fn admin_url(&self) -> String {
        self.url("postgres")
    }

    /// The url of database `name` on this server, as the superuser.
    pub fn url(&self, name: &str) -> String {
        format!("postgres://{SUPERUSER}@127.0.0.1:{}/{name}", self.port)
    }

    /// Creates an empty database of a name not used before on this server and returns
    /// its url.
    pub fn fresh_database(&self) -> Result<String, String> {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let name = format!("tau_test_{}", NEXT.fetch_add(1, Ordering::Relaxed));
        self.sql(&format!("CREATE DATABASE {name}"))?;
        Ok(self.url(&name))
    }

    /// Runs `statement` on the `postgres` database with `psql`, as the superuser over the
    /// unix socket; its output.
    pub fn sql(&self, statement: &str) -> Result<String, String> {
        self.sql_on("postgres", statement)
    }

    /// [`Postgres::sql`] on database `database`.
    pub fn sql_on(&self, database: &str, statement: &str) -> Result<String, String> {
        run(Command::new(self.bin.join("psql"))
            .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-d", database])
            .args(["-U", SUPERUSER, "-p", &self.port.to_string(), "-h"])
            .arg(self.dir.path())
            .arg("-c")
            .arg(statement))
    }

    /// From now on the server asks every connection over TCP for its password
    /// (`scram-sha-256`), as a real one does; the unix socket stays `trust`, so
    /// [`Postgres::sql`] still gets in.
    pub fn require_passwords(&mut self) -> Result<(), String> {
        let rules = "local all all trust\nhost all all 127.0.0.1/32 scram-sha-256\n";
        let hba = self.data().join("pg_hba.conf");
        // Written over the file initdb made, which keeps its owner.
        std::fs::write(&hba, rules).map_err(|e| format!("cannot write {}: {e}", hba.display()))?;
        self.pg_ctl(&["reload"]).map(drop)
    }

    /// From now on the server also speaks TLS over TCP, with a certificate for
    /// `localhost` and `127.0.0.1` signed by a certificate authority of its own, made
    /// here with `openssl`; the authority's certificate (PEM), for a client's roots.
    pub fn enable_tls(&self) -> Result<PathBuf, String> {
        let keys = self.dir.path().join("tls");
        std::fs::create_dir_all(&keys)
            .map_err(|e| format!("cannot make {}: {e}", keys.display()))?;
        let file = |name: &str| keys.join(name).display().to_string();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        run(Command::new("openssl")
            .args([
                "req",
                "-x509",
                "-days",
                "2",
                "-subj",
                "/CN=tau test authority",
            ])
            .args(ec)
            .args(["-keyout", &file("ca.key"), "-out", &file("ca.crt")]))?;
        run(Command::new("openssl")
            .args(["req", "-subj", "/CN=localhost"])
            .args(ec)
            .args(["-keyout", &file("server.key"), "-out", &file("server.csr")]))?;
        std::fs::write(
            keys.join("server.ext"),
            "subjectAltName = DNS:localhost, IP:127.0.0.1\nbasicConstraints = CA:FALSE\n",
        )
        .map_err(|e| format!("cannot write the extensions: {e}"))?;
        run(Command::new("openssl")
            .args(["x509", "-req", "-days", "2", "-in", &file("server.csr")])
            .args([
                "-CA",
                &file("ca.crt"),
                "-CAkey",
                &file("ca.key"),
                "-CAcreateserial",
            ])
            .args(["-extfile", &file("server.ext"), "-out", &file("server.crt")]))?;
        // The server reads its key only when its own user owns it and nobody else can.
        for name in ["server.crt", "server.key"] {
            let to = self.data().join(name);
            std::fs::copy(keys.join(name), &to).map_err(|e| format!("cannot copy {name}: {e}"))?;
            if self.as_system_user {
                run(Command::new("chown")
                    .arg(format!("{SYSTEM_USER}:"))
                    .arg(&to))?;
            }
        }
        run(Command::new("chmod")
            .arg("600")
            .arg(self.data().join("server.key")))?;
        self.sql("ALTER SYSTEM SET ssl = on")?;
        self.sql("SELECT pg_reload_conf()")?;
        Ok(keys.join("ca.crt"))
    }

    /// Stops the server at once (`-m immediate`: like a crash, every connection cut).
    pub fn stop(&mut self) -> Result<(), String> {
        self.pg_ctl(&["stop", "-m", "immediate", "-w"])?;
        self.running = false;
        Ok(())
    }

    /// Starts the server again on the same port, after [`Postgres::stop`]; returns once it
    /// accepts connections.
    pub fn start_again(&mut self) -> Result<(), String> {
        let options = format!(
            "-h 127.0.0.1 -p {} -k {}{}",
            self.port,
            self.dir.path().display(),
            if self.flushing { "" } else { " -F" }
        );
        let log = self.dir.path().join("server.log");
        let log_arg = log.display().to_string();
        match self.pg_ctl(&["start", "-w", "-t", "30", "-l", &log_arg, "-o", &options]) {
            Ok(_) => {
                self.running = true;
                Ok(())
            }
            Err(why) => {
                let said = std::fs::read_to_string(&log).unwrap_or_default();
                let tail: Vec<&str> = said.lines().rev().take(5).collect();
                let tail: Vec<&str> = tail.into_iter().rev().collect();
                Err(format!(
                    "PostgreSQL did not start on 127.0.0.1:{}: {why}\n{}",
                    self.port,
                    tail.join("\n")
                ))
            }
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    fn initdb(&self) -> Result<(), String> {
        let mut initdb = self.program("initdb");
        initdb
            .args(["-A", "trust", "-U", SUPERUSER])
            .args(["-E", "UTF8", "--locale=C.UTF-8"])
            .arg("--no-sync")
            .arg("-D")
            .arg(self.data());
        run(&mut initdb)
            .map(drop)
            .map_err(|e| format!("initdb failed: {e}"))
    }

    fn pg_ctl(&self, args: &[&str]) -> Result<String, String> {
        let mut pg_ctl = self.program("pg_ctl");
        pg_ctl.arg("-D").arg(self.data()).args(args);
        run(&mut pg_ctl)
    }

    /// One of the server's programs, run as the `postgres` user when this runs as root.
    fn program(&self, name: &str) -> Command {
        let path = self.bin.join(name);
        if self.as_system_user {
            let mut command = Command::new("runuser");
            command.args(["-u", SYSTEM_USER, "--"]).arg(path);
            command
        } else {
            Command::new(path)
        }
    }
}

/// Runs `command` to its end: its stdout, or what it said when it failed.
fn run(command: &mut Command) -> Result<String, String> {
    let shown = format!("{command:?}");
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{shown} failed ({}): {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| format!("cannot find a free port: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_installed_version_is_chosen() {
        let root = tempfile::tempdir().unwrap();
        for version in ["13", "15", "9", "16"] {
            let bin = root.path().join(version).join("bin");
            std::fs::create_dir_all(&bin).unwrap();
            if version != "16" {
                std::fs::write(bin.join("initdb"), "").unwrap();
            }
        }
        std::fs::create_dir_all(root.path().join("common")).unwrap();
        assert_eq!(
            newest_in(root.path()),
            Some(root.path().join("15").join("bin")),
            "16 has no initdb; `common` is no version"
        );
        assert_eq!(newest_in(&root.path().join("absent")), None);
    }

    #[test]
    fn a_server_starts_makes_databases_and_comes_back_on_its_port() {
        let mut server = Postgres::start().unwrap();
        let first = server.fresh_database().unwrap();
        let second = server.fresh_database().unwrap();
        assert_ne!(first, second);
        let port = server.port();
        assert!(first.starts_with(&format!("postgres://postgres@127.0.0.1:{port}/tau_test_")));
        server.stop().unwrap();
        assert!(server.sql("SELECT 1").is_err(), "stopped means unreachable");
        server.start_again().unwrap();
        assert_eq!(server.port(), port);
        let names = server
            .sql("SELECT count(*) FROM pg_database WHERE datname LIKE 'tau_test_%'")
            .unwrap();
        assert_eq!(names.trim(), "2", "the databases outlive a restart");
    }
}
