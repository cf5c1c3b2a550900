use super::*;
use pretty_assertions::assert_eq;
use std::io::Read;
use std::os::unix::fs::symlink;

/// A workspace for each way of resolving: every rule must hold for both.
fn workspaces() -> Vec<(tempfile::TempDir, Workspace)> {
    let kernel = tempfile::tempdir().unwrap();
    let walking = tempfile::tempdir().unwrap();
    let first = Workspace::open(kernel.path()).unwrap();
    let second = Workspace::open(walking.path()).unwrap().walking();
    vec![(kernel, first), (walking, second)]
}

fn refusal(workspace: &Workspace, path: &str) -> String {
    match workspace.open_file(path, OFlags::RDONLY, Mode::empty()) {
        Err(OpenError::Refused(error)) => error.to_string(),
        Err(OpenError::Missing) => "missing".to_owned(),
        Err(OpenError::Io(error)) => format!("io: {error}"),
        Ok(_) => "opened".to_owned(),
    }
}

fn read(workspace: &Workspace, path: &str) -> String {
    let fd = workspace
        .open_file(path, OFlags::RDONLY, Mode::empty())
        .unwrap_or_else(|e| panic!("{path}: {e:?}"));
    let mut text = String::new();
    std::fs::File::from(fd).read_to_string(&mut text).unwrap();
    text
}

#[test]
fn escapes_and_symlinks_are_refused_with_the_reason() {
    for (dir, workspace) in workspaces() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("a")).unwrap();
        std::fs::write(dir.path().join("file"), "x").unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        symlink("/etc/passwd", dir.path().join("passwd")).unwrap();
        symlink(outside.path().join("missing"), dir.path().join("dangling")).unwrap();
        symlink("a", dir.path().join("inner")).unwrap();
        for (path, expected) in [
            (
                "../x",
                "path '../x' leaves the workspace ('..' is not allowed)",
            ),
            (
                "a/../../b",
                "path 'a/../../b' leaves the workspace ('..' is not allowed)",
            ),
            (
                "a/..",
                "path 'a/..' leaves the workspace ('..' is not allowed)",
            ),
            (
                "/etc/passwd",
                "path '/etc/passwd' leaves the workspace (absolute paths are not allowed)",
            ),
            (
                "out",
                "path 'out' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "out/new.txt",
                "path 'out/new.txt' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "passwd",
                "path 'passwd' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "dangling",
                "path 'dangling' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "inner/x",
                "path 'inner/x' goes through a symlink; tools do not follow symlinks",
            ),
            (
                "file/x",
                "path 'file/x' goes through a file, not a directory",
            ),
            ("a\0b", "path 'a?b' contains a NUL byte"),
            ("", "path is empty; use '.' for the workspace itself"),
            ("nope/x", "missing"),
        ] {
            assert_eq!(refusal(&workspace, path), expected, "{path:?}");
        }
    }
}

#[test]
fn paths_inside_open_beneath_the_root() {
    for (dir, workspace) in workspaces() {
        std::fs::create_dir_all(dir.path().join("a/b")).unwrap();
        std::fs::write(dir.path().join("a/b/c.txt"), "deep").unwrap();
        std::fs::write(dir.path().join("top.txt"), "top").unwrap();
        for (path, expected) in [
            ("top.txt", "top"),
            ("./top.txt", "top"),
            ("a/b/c.txt", "deep"),
            ("a//b/./c.txt", "deep"),
        ] {
            assert_eq!(read(&workspace, path), expected, "{path:?}");
        }
        let root = workspace
            .open_file(".", OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty())
            .unwrap();
        let own = rustix::fs::fstat(&root).unwrap();
        let expected = rustix::fs::stat(dir.path()).unwrap();
        assert_eq!((own.st_dev, own.st_ino), (expected.st_dev, expected.st_ino));
    }
}

#[test]
fn a_parent_is_made_on_the_way_and_never_through_a_symlink() {
    for (dir, workspace) in workspaces() {
        let outside = tempfile::tempdir().unwrap();
        symlink(outside.path(), dir.path().join("out")).unwrap();
        let (parent, name) = workspace.parent("new/deep/file.txt", true).unwrap();
        assert_eq!(name, Some(OsString::from("file.txt")));
        let made = rustix::fs::fstat(&parent).unwrap();
        let expected = rustix::fs::stat(dir.path().join("new/deep")).unwrap();
        assert_eq!(
            (made.st_dev, made.st_ino),
            (expected.st_dev, expected.st_ino)
        );
        assert!(matches!(
            workspace.parent("other/file.txt", false),
            Err(OpenError::Missing)
        ));
        match workspace.parent("out/sub/file.txt", true) {
            Err(OpenError::Refused(error)) => assert_eq!(
                error.to_string(),
                "path 'out/sub/file.txt' goes through a symlink; tools do not follow symlinks"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
        let (_, name) = workspace.parent(".", true).unwrap();
        assert_eq!(name, None);
    }
}

#[test]
fn long_paths_are_cut_in_messages() {
    let (_dir, workspace) = workspaces().remove(0);
    let long = format!("/{}", "x".repeat(500));
    let expected = format!(
        "path '/{}…' leaves the workspace (absolute paths are not allowed)",
        "x".repeat(199)
    );
    assert_eq!(refusal(&workspace, &long), expected);
}

#[test]
fn a_missing_workspace_is_a_config_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope");
    let file = dir.path().join("file");
    std::fs::write(&file, "x").unwrap();
    assert_eq!(
        Workspace::open(&missing).unwrap_err(),
        ToolsConfigError::WorkspaceMissing {
            path: missing.display().to_string()
        }
    );
    assert_eq!(
        Workspace::open(&file).unwrap_err(),
        ToolsConfigError::WorkspaceNotADirectory {
            path: file.display().to_string()
        }
    );
}
