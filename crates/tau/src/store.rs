//! Where the store is: `state.db` in the home (the default), or a PostgreSQL database
//! several hubs share, named by `[state] url` in `tau.toml` or `TAU_STATE_URL`. Every
//! command reaches the store through [`ConfiguredStore::open`] (by way of
//! `Context::state`), so there is one opener.
//!
//! A password never sits in `tau.toml` or a url, where a backup, a screenshot or a shell's
//! history would keep it: it comes from `TAU_STATE_PASSWORD` or the file `[state]
//! password_file` names, and a url that holds one is refused at start with a line that
//! says where it goes (without repeating the url). What tau shows of the store (the
//! banner, `tau doctor`) is the url, which then holds no password.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use tau_state::StateDb;

/// The variable that names the store's url, over `[state] url`.
pub(crate) const URL_VARIABLE: &str = "TAU_STATE_URL";
/// The variable that holds the store's password.
pub(crate) const PASSWORD_VARIABLE: &str = "TAU_STATE_PASSWORD";

/// `[state]` in `tau.toml`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub(crate) struct StateConfig {
    /// `postgres://USER@HOST:PORT/DATABASE`: a PostgreSQL store several hubs share.
    /// Absent: `state.db` in the home.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// A file whose first line is the password of the url's user.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub password_file: Option<PathBuf>,
}

/// Where the store is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ConfiguredStore {
    /// `state.db` in the home.
    Home(PathBuf),
    /// A PostgreSQL database several hubs may share.
    Shared(SharedStore),
}

/// A PostgreSQL store: its url (which holds no password) and where its password is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedStore {
    pub url: String,
    pub password: PasswordSource,
}

/// Where the password of a shared store comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PasswordSource {
    /// None is given (the server trusts the user, or asks for a certificate).
    None,
    /// `TAU_STATE_PASSWORD`; the value is read when the store is opened.
    Variable,
    /// `[state] password_file`.
    File(PathBuf),
}

/// A url refused, and why; the text never repeats a url that holds a password.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum StoreConfigError {
    #[error(
        "{source_name}: the url holds a password, and tau keeps none in a url: write it as \
         postgres://USER@HOST:PORT/DATABASE and put the password in {PASSWORD_VARIABLE} or \
         in a file named by [state] password_file"
    )]
    PasswordInUrl { source_name: &'static str },
    #[error(
        "{source_name}: '{url}' is not a PostgreSQL url; write postgres://USER@HOST:PORT/DATABASE \
         (leave [state] url out to keep state.db in the home)"
    )]
    NotPostgres {
        source_name: &'static str,
        url: String,
    },
    #[error("state.password_file: it is read only with a url ([state] url or {URL_VARIABLE})")]
    PasswordFileWithoutUrl,
}

impl StateConfig {
    /// Where the store is, by this section and the environment (`TAU_STATE_URL` over
    /// `[state] url`); `home_db` is the home's `state.db`.
    pub(crate) fn location(
        &self,
        env: tau_home::Env<'_>,
        home_db: &Path,
    ) -> Result<ConfiguredStore, StoreConfigError> {
        let from_env = env(URL_VARIABLE).filter(|url| !url.is_empty());
        let (url, source_name) = match (from_env, &self.url) {
            (Some(url), _) => (url, URL_VARIABLE),
            (None, Some(url)) => (url.clone(), "state.url"),
            (None, None) => {
                if self.password_file.is_some() {
                    return Err(StoreConfigError::PasswordFileWithoutUrl);
                }
                return Ok(ConfiguredStore::Home(home_db.to_owned()));
            }
        };
        check_url(&url, source_name)?;
        let password = match (env(PASSWORD_VARIABLE), &self.password_file) {
            (Some(value), _) if !value.is_empty() => PasswordSource::Variable,
            (_, Some(file)) => PasswordSource::File(file.clone()),
            (_, None) => PasswordSource::None,
        };
        Ok(ConfiguredStore::Shared(SharedStore { url, password }))
    }
}

/// Refuses a url that is not PostgreSQL's or that holds a password (in its user part or
/// as a `password` parameter).
fn check_url(url: &str, source_name: &'static str) -> Result<(), StoreConfigError> {
    let Some(rest) = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))
    else {
        // Said without the url when it may hold a password all the same.
        return Err(if url.contains('@') || url.contains("password") {
            StoreConfigError::PasswordInUrl { source_name }
        } else {
            StoreConfigError::NotPostgres {
                source_name,
                url: tau_core::display(url),
            }
        });
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let user_part = authority.rsplit_once('@').map(|(user, _)| user);
    let password_in_user = user_part.is_some_and(|user| user.contains(':'));
    let query = tail.split_once('?').map_or("", |(_, query)| query);
    let password_in_query = query.split('&').any(|pair| {
        pair.split('=')
            .next()
            .is_some_and(|key| key.eq_ignore_ascii_case("password"))
    });
    if password_in_user || password_in_query {
        return Err(StoreConfigError::PasswordInUrl { source_name });
    }
    Ok(())
}

/// `url` with `password` as its `password` parameter, percent-encoded: what the driver
/// reads, made here and handed over, never shown or kept.
fn with_password(url: &str, password: &str) -> String {
    let mut encoded = String::with_capacity(password.len() * 3);
    for byte in password.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            encoded.push(char::from(byte));
        } else {
            encoded.push_str(&format!("%{byte:02X}"));
        }
    }
    let joint = if url.contains('?') { '&' } else { '?' };
    format!("{url}{joint}password={encoded}")
}

impl SharedStore {
    /// Connects to the database and brings its tables to this tau's schema.
    fn connect(&self, env: tau_home::Env<'_>) -> anyhow::Result<StateDb> {
        let url = match self.password(env)? {
            Some(password) => with_password(&self.url, &password),
            None => self.url.clone(),
        };
        Ok(StateDb::connect(&url)?)
    }

    /// The password, read now: `TAU_STATE_PASSWORD`, else the first line of
    /// `[state] password_file`.
    pub(crate) fn password(&self, env: tau_home::Env<'_>) -> anyhow::Result<Option<String>> {
        match &self.password {
            PasswordSource::None => Ok(None),
            PasswordSource::Variable => Ok(env(PASSWORD_VARIABLE)),
            PasswordSource::File(file) => {
                let text = std::fs::read_to_string(file).map_err(|e| {
                    crate::errors::usage(format!(
                        "state.password_file: cannot read {}: {e}",
                        file.display()
                    ))
                })?;
                Ok(Some(text.lines().next().unwrap_or_default().to_owned()))
            }
        }
    }
}

impl ConfiguredStore {
    /// Opens the store, creating it (`state.db` in a home that exists; a shared store's
    /// tables) and bringing it to this tau's schema.
    pub(crate) fn open(&self, env: tau_home::Env<'_>) -> anyhow::Result<StateDb> {
        match self {
            Self::Home(path) => Ok(StateDb::open(path)?),
            Self::Shared(shared) => shared.connect(env),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn located(
        config: &StateConfig,
        vars: &[(&str, &str)],
    ) -> Result<ConfiguredStore, StoreConfigError> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let env = move |name: &str| vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        config.location(&env, Path::new("/home/me/.local/share/tau/state.db"))
    }

    fn url(url: &str) -> StateConfig {
        StateConfig {
            url: Some(url.to_owned()),
            password_file: None,
        }
    }

    #[test]
    fn without_a_url_the_store_is_the_home_s_file() {
        assert_eq!(
            located(&StateConfig::default(), &[]),
            Ok(ConfiguredStore::Home(
                "/home/me/.local/share/tau/state.db".into()
            ))
        );
        assert_eq!(
            located(&StateConfig::default(), &[("TAU_STATE_URL", "")]),
            Ok(ConfiguredStore::Home(
                "/home/me/.local/share/tau/state.db".into()
            )),
            "an empty variable is no url"
        );
    }

    #[test]
    fn the_variable_names_the_store_over_the_file() {
        let shared = |url: &str, password| {
            Ok(ConfiguredStore::Shared(SharedStore {
                url: url.to_owned(),
                password,
            }))
        };
        assert_eq!(
            located(&url("postgres://tau@db:5432/tau"), &[]),
            shared("postgres://tau@db:5432/tau", PasswordSource::None)
        );
        assert_eq!(
            located(
                &url("postgres://tau@db:5432/tau"),
                &[("TAU_STATE_URL", "postgresql://hub@other/tau")]
            ),
            shared("postgresql://hub@other/tau", PasswordSource::None)
        );
        let with_file = StateConfig {
            url: Some("postgres://tau@db/tau".into()),
            password_file: Some("/etc/tau/db-password".into()),
        };
        assert_eq!(
            located(&with_file, &[]),
            shared(
                "postgres://tau@db/tau",
                PasswordSource::File("/etc/tau/db-password".into())
            )
        );
        assert_eq!(
            located(&with_file, &[("TAU_STATE_PASSWORD", "s3cret")]),
            shared("postgres://tau@db/tau", PasswordSource::Variable),
            "the variable over the file"
        );
    }

    #[test]
    fn a_password_in_a_url_is_refused_without_repeating_it() {
        let refused = [
            ("postgres://tau:s3cret@db:5432/tau", "state.url"),
            (
                "postgresql://tau:s3cret@db/tau?sslmode=require",
                "state.url",
            ),
            (
                "postgres://tau@db/tau?sslmode=require&password=s3cret",
                "state.url",
            ),
            ("postgres://tau@db/tau?PASSWORD=s3cret", "state.url"),
            // Not even PostgreSQL's, but it may hold a password: not repeated either.
            ("mysql://tau:s3cret@db/tau", "state.url"),
        ];
        for (given, source_name) in refused {
            let error = located(&url(given), &[]).unwrap_err();
            assert_eq!(
                error,
                StoreConfigError::PasswordInUrl { source_name },
                "{given}"
            );
            assert!(!error.to_string().contains("s3cret"), "{given}");
        }
        let error = located(
            &StateConfig::default(),
            &[("TAU_STATE_URL", "postgres://tau:s3cret@db/tau")],
        )
        .unwrap_err();
        insta::assert_snapshot!(error.to_string(), @"TAU_STATE_URL: the url holds a password, and tau keeps none in a url: write it as postgres://USER@HOST:PORT/DATABASE and put the password in TAU_STATE_PASSWORD or in a file named by [state] password_file");
    }

    #[test]
    fn other_urls_and_a_lone_password_file_are_refused() {
        let error = located(&url("sqlite:///var/lib/tau.db"), &[]).unwrap_err();
        insta::assert_snapshot!(error.to_string(), @"state.url: 'sqlite:///var/lib/tau.db' is not a PostgreSQL url; write postgres://USER@HOST:PORT/DATABASE (leave [state] url out to keep state.db in the home)");
        let lone = StateConfig {
            url: None,
            password_file: Some("/etc/tau/db-password".into()),
        };
        insta::assert_snapshot!(located(&lone, &[]).unwrap_err().to_string(), @"state.password_file: it is read only with a url ([state] url or TAU_STATE_URL)");
    }

    #[test]
    fn a_user_with_an_at_sign_and_no_password_is_kept() {
        assert!(check_url("postgres://me%40home@db:5432/tau", "state.url").is_ok());
        assert!(check_url("postgres://db/tau", "state.url").is_ok());
        assert!(check_url("postgres://[::1]:5432/tau", "state.url").is_ok());
    }

    #[test]
    fn the_password_is_handed_over_as_an_encoded_parameter() {
        assert_eq!(
            with_password("postgres://tau@db/tau", "p@ss word&=ü"),
            "postgres://tau@db/tau?password=p%40ss%20word%26%3D%C3%BC"
        );
        assert_eq!(
            with_password("postgres://tau@db/tau?sslmode=require", "x"),
            "postgres://tau@db/tau?sslmode=require&password=x"
        );
    }

    #[test]
    fn the_password_is_the_file_s_first_line() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("password");
        std::fs::write(&file, "s3cret\n").unwrap();
        let shared = SharedStore {
            url: "postgres://tau@db/tau".into(),
            password: PasswordSource::File(file),
        };
        assert_eq!(
            shared.password(&|_: &str| None).unwrap(),
            Some("s3cret".into())
        );
    }
}
