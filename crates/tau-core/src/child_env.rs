//! The environment of a process tau starts (a shell command, an MCP server): a short
//! allow-list plus the variables the person named for it. tau's own secrets (provider keys,
//! tokens, the MQTT password) live in the same environment, so nothing else passes on.

use std::collections::BTreeMap;

/// What every child gets when tau has it: where programs are, whose home, which language,
/// which time zone and terminal.
pub const INHERITED_ENV: [&str; 19] = [
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "TZ",
    "TERM",
    "LC_ALL",
    "LC_ADDRESS",
    "LC_COLLATE",
    "LC_CTYPE",
    "LC_IDENTIFICATION",
    "LC_MEASUREMENT",
    "LC_MESSAGES",
    "LC_MONETARY",
    "LC_NAME",
    "LC_NUMERIC",
    "LC_PAPER",
    "LC_TELEPHONE",
    "LC_TIME",
];

/// The environment for a child: the allow-list and the names in `pass`, each with its value
/// from `env` when it is set, sorted by name. A child starts from this and nothing else.
pub fn child_env(pass: &[String], env: &dyn Fn(&str) -> Option<String>) -> Vec<(String, String)> {
    let names = INHERITED_ENV
        .iter()
        .copied()
        .chain(pass.iter().map(String::as_str));
    let mut chosen = BTreeMap::new();
    for name in names {
        if let Some(value) = env(name) {
            chosen.insert(name.to_owned(), value);
        }
    }
    chosen.into_iter().collect()
}

/// Why `name` cannot name an environment variable, if it cannot.
pub fn env_name_problem(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        Some("an environment variable name is empty")
    } else if name.contains(['=', '\0']) {
        Some("an environment variable name cannot hold '=' or a NUL byte")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parent(name: &str) -> Option<String> {
        match name {
            "PATH" => Some("/usr/bin".into()),
            "LC_TIME" => Some("tr_TR.UTF-8".into()),
            "OPENAI_API_KEY" => Some("sk-secret".into()),
            "TAU_MCP_TOKEN" => Some("token".into()),
            "GIT_AUTHOR_NAME" => Some("Ada".into()),
            _ => None,
        }
    }

    #[test]
    fn only_the_allow_list_and_named_variables_pass() {
        assert_eq!(
            child_env(&[], &parent),
            vec![
                ("LC_TIME".to_owned(), "tr_TR.UTF-8".to_owned()),
                ("PATH".to_owned(), "/usr/bin".to_owned()),
            ]
        );
        assert_eq!(
            child_env(
                &["GIT_AUTHOR_NAME".into(), "UNSET".into(), "PATH".into()],
                &parent
            ),
            vec![
                ("GIT_AUTHOR_NAME".to_owned(), "Ada".to_owned()),
                ("LC_TIME".to_owned(), "tr_TR.UTF-8".to_owned()),
                ("PATH".to_owned(), "/usr/bin".to_owned()),
            ]
        );
    }

    #[test]
    fn a_secret_passes_only_when_named() {
        let named = child_env(&["OPENAI_API_KEY".into()], &parent);
        assert!(named.contains(&("OPENAI_API_KEY".to_owned(), "sk-secret".to_owned())));
        let unnamed = child_env(&[], &parent);
        assert!(unnamed.iter().all(|(name, _)| name != "OPENAI_API_KEY"));
    }

    #[test]
    fn names_with_equals_or_nul_are_refused() {
        assert_eq!(env_name_problem("GIT_AUTHOR_NAME"), None);
        assert_eq!(
            env_name_problem(""),
            Some("an environment variable name is empty")
        );
        for bad in ["A=B", "A\0"] {
            assert_eq!(
                env_name_problem(bad),
                Some("an environment variable name cannot hold '=' or a NUL byte")
            );
        }
    }
}
