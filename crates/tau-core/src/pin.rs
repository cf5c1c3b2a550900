//! What a grant of a tool that runs the workspace's files pins (`run_command`: `sh
//! setup.sh`, `python3 -m job`, `make -s` and `npm run test` run whatever the workspace
//! holds when they run). A tool says so in its spec ([`TauToolSpec::runs_workspace`]); a
//! [`WorkspacePinner`] registered on the catalog reads the tree, and the gate covers such a
//! call with a grant only while the tree is what the grant was last pinned to.
//!
//! [`TauToolSpec::runs_workspace`]: crate::TauToolSpec::runs_workspace

use tau_protocol::{TreeError, WorkspaceTree};

/// Reads the workspace's tree: every entry beneath it, never through a symlink, bounded by
/// [`tau_protocol::MAX_PINNED_ENTRIES`] and [`tau_protocol::MAX_PINNED_BYTES`].
pub trait WorkspacePinner: Send + Sync {
    fn tree(&self) -> Result<WorkspaceTree, TreeError>;
}

/// What the gate writes on a card when a grant did not cover a call because the
/// workspace changed since it was pinned: `changed` are the paths that differ (empty when
/// tau cannot say which).
pub fn asked_again_text(changed: &[String]) -> String {
    const NAMED: usize = 3;
    let named: Vec<&str> = changed.iter().take(NAMED).map(String::as_str).collect();
    let what = match (named.as_slice(), changed.len()) {
        ([], _) => "the workspace's files".to_owned(),
        ([one], 1) => (*one).to_owned(),
        ([first, second], 2) => format!("{first} and {second}"),
        ([first, second, third], 3) => format!("{first}, {second} and {third}"),
        (some, count) => format!("{} and {} more", some.join(", "), count - some.len()),
    };
    format!("asked again: {what} changed since you allowed this")
}

/// The card's words when the workspace could not be read to check a grant.
pub fn unpinned_text(error: &TreeError) -> String {
    format!("asked again: {error}, so the grant could not be checked")
}

/// The card's words when no grant can be offered because the workspace cannot be pinned.
pub fn no_grant_text(error: &TreeError) -> String {
    format!("no grant offered: {error}; this call is asked every time")
}

/// The label of the gate's notes about grants.
pub const GRANT_LABEL: &str = "grant";

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn paths(names: &[&str]) -> Vec<String> {
        names.iter().map(|n| (*n).to_owned()).collect()
    }

    #[test]
    fn the_card_names_what_changed_since_the_grant() {
        let cases = [
            (
                paths(&[]),
                "asked again: the workspace's files changed since you allowed this",
            ),
            (
                paths(&["job.py"]),
                "asked again: job.py changed since you allowed this",
            ),
            (
                paths(&["Makefile", "job.py"]),
                "asked again: Makefile and job.py changed since you allowed this",
            ),
            (
                paths(&["a.py", "b.py", "c.py"]),
                "asked again: a.py, b.py and c.py changed since you allowed this",
            ),
            (
                paths(&["a.py", "b.py", "c.py", "d.py", "e.py"]),
                "asked again: a.py, b.py, c.py and 2 more changed since you allowed this",
            ),
        ];
        for (changed, text) in cases {
            assert_eq!(asked_again_text(&changed), text);
        }
        assert_eq!(
            unpinned_text(&TreeError::Unreadable("job.py: permission denied".into())),
            "asked again: the workspace could not be read: job.py: permission denied, so the \
             grant could not be checked"
        );
        assert_eq!(
            no_grant_text(&TreeError::TooBig),
            "no grant offered: the workspace is too big to pin: over 20000 files and \
             directories, or over 256 MiB; this call is asked every time"
        );
    }
}
