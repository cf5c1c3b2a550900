use super::*;
use pretty_assertions::assert_eq;
use std::os::unix::fs::PermissionsExt;

fn pinner(dir: &std::path::Path) -> TreePinner {
    TreePinner {
        workspace: Workspace::open(dir).unwrap(),
    }
}

fn sha(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes()))
}

#[test]
fn the_tree_lists_every_entry_and_follows_no_symlink() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.py"), "print('x')\n").unwrap();
    std::fs::write(dir.path().join("job.py"), "print(1)\n").unwrap();
    std::fs::create_dir(dir.path().join("lib")).unwrap();
    std::fs::write(dir.path().join("lib/run.sh"), "echo\n").unwrap();
    std::fs::set_permissions(
        dir.path().join("lib/run.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("out")).unwrap();
    std::os::unix::fs::symlink("job.py", dir.path().join("alias.py")).unwrap();
    let tree = pinner(dir.path()).tree().unwrap();
    let expected: BTreeMap<String, String> = [
        ("alias.py", "link job.py".to_owned()),
        ("job.py", format!("file {}", sha("print(1)\n"))),
        ("lib", "dir".to_owned()),
        ("lib/run.sh", format!("file {} x", sha("echo\n"))),
        ("out", format!("link {}", outside.path().display())),
    ]
    .into_iter()
    .map(|(p, e)| (p.to_owned(), e))
    .collect();
    assert_eq!(tree.entries, expected);
    assert_eq!(tree.bytes, 14);
    // The same tree hashes the same; any change to a file, a bit, a link or a name shows.
    let again = pinner(dir.path()).tree().unwrap();
    assert_eq!(again.sha256, tree.sha256);
    std::fs::write(dir.path().join("job.py"), "print(2)\n").unwrap();
    let changed = pinner(dir.path()).tree().unwrap();
    assert_ne!(changed.sha256, tree.sha256);
    assert_eq!(tree.changed_paths(&changed), vec!["job.py".to_owned()]);
    std::fs::write(dir.path().join("job.py"), "print(1)\n").unwrap();
    assert_eq!(pinner(dir.path()).tree().unwrap().sha256, tree.sha256);
    std::fs::set_permissions(
        dir.path().join("lib/run.sh"),
        std::fs::Permissions::from_mode(0o644),
    )
    .unwrap();
    assert_ne!(pinner(dir.path()).tree().unwrap().sha256, tree.sha256);
}

#[test]
fn a_name_that_is_not_utf8_is_its_own_key() {
    let dir = tempfile::tempdir().unwrap();
    let name = OsStr::from_bytes(b"a\xffb");
    std::fs::write(dir.path().join(name), "x").unwrap();
    std::fs::write(dir.path().join("a\\xffb"), "y").unwrap();
    let tree = pinner(dir.path()).tree().unwrap();
    let keys: Vec<&str> = tree.entries.keys().map(String::as_str).collect();
    // The byte 0xff reads `\xff`; a name that is those four characters has its
    // backslash doubled.
    assert_eq!(keys, vec![r"a\\xffb", r"a\xffb"]);
}

#[test]
fn a_workspace_past_the_bounds_is_not_pinned() {
    let dir = tempfile::tempdir().unwrap();
    for n in 0..=MAX_PINNED_ENTRIES {
        std::fs::write(dir.path().join(format!("f{n}")), "").unwrap();
    }
    assert_eq!(pinner(dir.path()).tree(), Err(TreeError::TooBig));
}

#[test]
fn an_unreadable_directory_fails_the_tree() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("locked")).unwrap();
    std::fs::write(dir.path().join("locked/x"), "x").unwrap();
    std::fs::set_permissions(
        dir.path().join("locked"),
        std::fs::Permissions::from_mode(0o000),
    )
    .unwrap();
    let tree = pinner(dir.path()).tree();
    std::fs::set_permissions(
        dir.path().join("locked"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // Root reads it all the same; anyone else cannot, and then nothing is pinned.
    if rustix::process::geteuid().is_root() {
        assert!(tree.is_ok());
    } else {
        assert!(
            matches!(&tree, Err(TreeError::Unreadable(why)) if why.starts_with("locked")),
            "{tree:?}"
        );
    }
}
