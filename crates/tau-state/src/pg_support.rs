//! The PostgreSQL store's plumbing: the texts that name a server or an error without a
//! secret.

use tokio_postgres::Config;

/// `error` and what caused it (`error connecting to server: Connection refused`): the
/// driver's own words stop at the first.
pub(crate) fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    while let Some(error) = cause {
        let more = error.to_string();
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cause = error.source();
    }
    text
}

/// `postgres://host:port/db`: the url without user, password or options.
pub(crate) fn describe(config: &Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_owned(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("postgres://{host}:{port}/{db}")
}

/// `text` with the url's password (if any) blotted out: a parse error may quote the url.
pub(crate) fn redact(text: &str, url: &str) -> String {
    let password = url
        .split_once("://")
        .and_then(|(_, rest)| rest.split_once('@'))
        .and_then(|(credentials, _)| credentials.split_once(':'))
        .map(|(_, password)| password)
        .filter(|password| !password.is_empty());
    match password {
        Some(password) => text.replace(password, "***"),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn a_store_is_described_without_its_user_or_password() {
        let config: Config = "postgres://tau:s3cret@db.example:6543/tau_home?sslmode=disable"
            .parse()
            .unwrap();
        assert_eq!(describe(&config), "postgres://db.example:6543/tau_home");
        assert_eq!(
            redact("bad url postgres://tau:s3cret@x", "postgres://tau:s3cret@x"),
            "bad url postgres://tau:***@x"
        );
    }
}
