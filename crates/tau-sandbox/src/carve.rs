//! "Everything is readable but these paths", as Landlock can say it.
//!
//! Landlock only grants: a rule on a directory opens its whole tree, and nothing beneath can
//! be taken back. So the root is granted whole unless a protected path lies below it; then
//! each of its entries is considered in turn, down to the protected paths themselves, which
//! are never granted. The directories on the way to a protected path can be walked through
//! but not listed; their other entries stay readable.
//!
//! Symlinks among the entries are not granted: a rule follows the link, so a link to a
//! protected path would open it. What a link points to is readable (or not) where it lies.
//! A protected path that does not exist yet is protected from its nearest existing
//! directory on, so it stays unreadable when it appears while the program runs.

use std::path::{Component, Path, PathBuf};

/// The paths to grant read access beneath so that nothing in `deny` can be read.
pub(crate) fn readable_roots(deny: &[PathBuf]) -> Vec<PathBuf> {
    let denied = resolve_all(deny);
    let mut roots = Vec::new();
    carve(Path::new("/"), &denied, &mut roots);
    roots
}

/// Each protected path as written and as resolved (symlinks followed), so a link to it
/// protects both.
fn resolve_all(deny: &[PathBuf]) -> Vec<PathBuf> {
    let mut all = Vec::new();
    for path in deny.iter().filter(|p| p.is_absolute()) {
        let lexical = normalize(path);
        let resolved = resolve(&lexical);
        all.push(lexical);
        all.push(resolved);
    }
    all.sort();
    all.dedup();
    all
}

/// `.` and `..` taken out without touching the disk.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for component in path.components() {
        match component {
            Component::Normal(name) => out.push(name),
            Component::ParentDir => {
                out.pop();
            }
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// The path with symlinks followed as far as it exists; the rest appended as written.
fn resolve(path: &Path) -> PathBuf {
    let mut existing = path.to_owned();
    let mut rest = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(&existing) {
            let mut out = real;
            for name in rest.iter().rev() {
                out.push(name);
            }
            return out;
        }
        match (
            existing.file_name().map(ToOwned::to_owned),
            existing.parent(),
        ) {
            (Some(name), Some(parent)) => {
                rest.push(name);
                existing = parent.to_owned();
            }
            _ => return path.to_owned(),
        }
    }
}

fn carve(dir: &Path, denied: &[PathBuf], roots: &mut Vec<PathBuf>) {
    if denied.iter().any(|d| d == dir) {
        return;
    }
    if !denied.iter().any(|d| d.starts_with(dir)) {
        roots.push(dir.to_owned());
        return;
    }
    // A protected path lies below: grant the entries, not the directory.
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut names: Vec<_> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|kind| !kind.is_symlink()))
        .map(|entry| entry.file_name())
        .collect();
    names.sort();
    for name in names {
        carve(&dir.join(name), denied, roots);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn the_protected_path_and_nothing_else_is_left_out() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        for sub in [
            "home/.ssh",
            "home/code/src",
            "home/.local/share/tau/workspace",
        ] {
            std::fs::create_dir_all(root.join(sub)).unwrap();
        }
        std::fs::write(root.join("home/.bashrc"), "x").unwrap();
        std::fs::write(root.join("home/.ssh/id_ed25519"), "secret").unwrap();
        std::os::unix::fs::symlink(root.join("home/.ssh"), root.join("home/keys")).unwrap();
        let denied = [root.join("home/.ssh"), root.join("home/.local/share/tau")];
        let roots = readable_roots(&denied);
        let mine: Vec<PathBuf> = roots
            .iter()
            .filter(|p| p.starts_with(&root))
            .map(|p| p.strip_prefix(&root).unwrap().to_owned())
            .collect();
        assert_eq!(
            mine,
            ["home/.bashrc", "home/code"]
                .iter()
                .map(PathBuf::from)
                .collect::<Vec<_>>()
        );
        // Everything outside the temp dir's ancestors stays granted whole.
        assert!(roots.contains(&PathBuf::from("/usr")) || !Path::new("/usr").exists());
    }

    #[test]
    fn a_link_to_a_protected_path_protects_its_target() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("real/secrets")).unwrap();
        std::fs::create_dir_all(root.join("home")).unwrap();
        std::fs::create_dir_all(root.join("real/other")).unwrap();
        std::os::unix::fs::symlink(root.join("real/secrets"), root.join("home/.ssh")).unwrap();
        let roots = readable_roots(&[root.join("home/.ssh")]);
        assert!(
            !roots
                .iter()
                .any(|p| p.starts_with(root.join("real/secrets")))
        );
        assert!(roots.contains(&root.join("real/other")));
    }

    #[test]
    fn a_protected_path_that_does_not_exist_is_protected_from_its_parent() {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        std::fs::create_dir_all(root.join("home/code")).unwrap();
        let roots = readable_roots(&[root.join("home/.netrc")]);
        assert!(!roots.contains(&root.join("home")));
        assert!(roots.contains(&root.join("home/code")));
    }

    #[test]
    fn dots_in_a_protected_path_are_taken_out() {
        assert_eq!(
            normalize(Path::new("/home/me/./x/../.ssh")),
            PathBuf::from("/home/me/.ssh")
        );
    }
}
