//! What `tau serve` says once it is ready: the model it talks to, where TauBar is and how
//! to get in, and what it found at start. Every count is said with its noun.

use std::path::Path;

/// Where TauBar is and how to get in: the address, the address with the token (only for
/// a terminal: a log or a journal that keeps stdout must not keep the token) and where
/// the token is.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Entry<'a> {
    pub url: &'a str,
    pub token_path: &'a Path,
    /// The token, when stdout is a terminal.
    pub token: Option<&'a str>,
}

/// What `tau serve` says when it is ready: the model it talks to, where to go, where the
/// token is, what waits.
pub(crate) fn announce(
    model: &str,
    entry: Option<Entry<'_>>,
    telegram: bool,
    recovery: &tau_hub::Recovery,
) -> String {
    let mut out = format!("tau serve: model {}\n", tau_core::display(model));
    if let Some(Entry {
        url,
        token_path,
        token,
    }) = entry
    {
        out.push_str(&format!("tau serve: TauBar at {url}\n"));
        match token {
            Some(token) => out.push_str(&format!(
                "tau serve: open {url}#token={token}\n\
                 tau serve: the token is in {} (`tau serve --print-token` prints it)\n",
                token_path.display()
            )),
            None => out.push_str(&format!(
                "tau serve: the token is in {} (`tau serve --print-token` prints it); open {url}#token=TOKEN\n",
                token_path.display()
            )),
        }
    }
    if telegram {
        out.push_str("tau serve: Telegram: answering the owners named in [telegram]\n");
    }
    for refused in &recovery.refused {
        out.push_str(&format!(
            "tau serve: question {} ({}) refused, never run: {}\n",
            refused.row.id,
            tau_core::display(&refused.row.tool),
            refused.why
        ));
    }
    for refused in &recovery.refused_grants {
        out.push_str(&format!(
            "tau serve: grant {} ({} {}) refused, never used: {}\n",
            refused.grant.id,
            tau_core::display(&refused.grant.tool),
            tau_core::display(&tau_core::sorted_json(&refused.grant.arguments)),
            refused.why
        ));
    }
    let said = |count: usize, one: &str, many: &str| {
        let text = if count == 1 { one } else { many };
        format!("tau serve: {count} {text}\n")
    };
    if recovery.uncertain > 0 {
        out.push_str(&said(
            recovery.uncertain,
            "approved call was running when tau stopped: it may or may not have run, and is not run again",
            "approved calls were running when tau stopped: they may or may not have run, and are not run again",
        ));
    }
    if recovery.cancelled > 0 {
        out.push_str(&said(
            recovery.cancelled,
            "question cancelled: its turn was given up while tau was not running",
            "questions cancelled: their turn was given up while tau was not running",
        ));
    }
    if recovery.expired > 0 {
        out.push_str(&said(
            recovery.expired,
            "question expired while tau was not running",
            "questions expired while tau was not running",
        ));
    }
    if !recovery.pending.is_empty() {
        out.push_str(&said(
            recovery.pending.len(),
            "question still waits for an answer",
            "questions still wait for an answer",
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    #[test]
    fn the_banner_names_the_model_links_a_terminal_in_and_counts_in_words() {
        let path = PathBuf::from("/home/me/.local/share/tau/web-token");
        let entry = |token| {
            Some(Entry {
                url: "http://127.0.0.1:7878/",
                token_path: &path,
                token,
            })
        };
        let one = tau_hub::Recovery {
            uncertain: 1,
            cancelled: 1,
            expired: 1,
            ..tau_hub::Recovery::default()
        };
        let many = tau_hub::Recovery {
            uncertain: 2,
            cancelled: 3,
            expired: 4,
            ..tau_hub::Recovery::default()
        };
        let shown = [
            announce("ollama:llama3.2", entry(Some("5f0c9a")), false, &one),
            announce("replay:demo\u{202e}.json", entry(None), true, &many),
            announce("ollama:llama3.2", None, true, &tau_hub::Recovery::default()),
        ];
        insta::assert_snapshot!(shown.join("---\n"));
    }
}
