//! Files and folders only the person running tau may read: the home and its folders 0700,
//! its files 0600. Modes are set explicitly after creating, so the umask never loosens
//! them, and an existing file or folder with a looser mode is tightened. `state.db` is not
//! among them: `tau-state` protects it without a descriptor of its own, and nothing here
//! may open it. A file is never opened through a symbolic link (`O_NOFOLLOW`): see
//! `Home::refuse_links` for why.

use std::fs::{DirBuilder, File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

pub const DIR_MODE: u32 = 0o700;
pub const FILE_MODE: u32 = 0o600;

fn with_path(path: &Path, error: &io::Error) -> io::Error {
    io::Error::new(error.kind(), format!("{}: {error}", path.display()))
}

/// Creates `path` (and missing parents) as private folders; an existing one is tightened.
pub fn create_dir(path: &Path) -> io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
        .map_err(|e| with_path(path, &e))?;
    set_mode(path, DIR_MODE)
}

/// Opens `path` with `options`, creating it 0600; an existing file is tightened to 0600. A
/// symbolic link at `path` is refused, never followed.
pub fn open(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let file = options
        .mode(FILE_MODE)
        .custom_flags(no_follow())
        .open(path)
        .map_err(|e| {
            if is_link(&e) {
                io::Error::other(link_refused(path))
            } else {
                with_path(path, &e)
            }
        })?;
    let mode = file.metadata()?.permissions().mode() & 0o777;
    if mode != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))
            .map_err(|e| with_path(path, &e))?;
    }
    Ok(file)
}

/// Makes sure `path` exists as a private file, without touching what it holds. Never for
/// `state.db`: its descriptor would be closed under SQLite's locks.
pub fn ensure_file(path: &Path) -> io::Result<()> {
    open(path, OpenOptions::new().create(true).append(true)).map(drop)
}

/// Tightens `path` to 0600 when it exists; a missing file is fine.
pub fn tighten_file(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(_) => set_mode(path, FILE_MODE),
        Err(error) if error.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(error) => Err(with_path(path, &error)),
    }
}

/// `O_NOFOLLOW`, as `OpenOptions::custom_flags` takes it.
pub fn no_follow() -> i32 {
    i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or_default()
}

/// True when an open with [`no_follow`] failed because the path is a symbolic link.
pub fn is_link(error: &io::Error) -> bool {
    error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error())
}

/// What tau says when it would have opened `path` through a symbolic link.
pub fn link_refused(path: &Path) -> String {
    format!(
        "{} is a symbolic link, and tau never opens a file of its home through one; remove it",
        path.display()
    )
}

fn set_mode(path: &Path, mode: u32) -> io::Result<()> {
    let current = std::fs::metadata(path)
        .map_err(|e| with_path(path, &e))?
        .permissions()
        .mode()
        & 0o777;
    if current == mode {
        return Ok(());
    }
    std::fs::set_permissions(path, Permissions::from_mode(mode)).map_err(|e| with_path(path, &e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn new_files_and_folders_are_private() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("a/b");
        create_dir(&folder).unwrap();
        let file = folder.join("f");
        open(&file, OpenOptions::new().create(true).append(true)).unwrap();
        assert_eq!(
            (mode(&dir.path().join("a")), mode(&folder), mode(&file)),
            (DIR_MODE, DIR_MODE, FILE_MODE)
        );
    }

    #[test]
    fn a_file_is_never_opened_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        let link = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = open(&link, OpenOptions::new().create(true).append(true)).unwrap_err();
        assert_eq!(
            error.to_string(),
            format!(
                "{} is a symbolic link, and tau never opens a file of its home through one; remove it",
                link.display()
            )
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
        assert_ne!(no_follow(), 0);
    }

    #[test]
    fn looser_modes_are_tightened_and_contents_kept() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("home");
        std::fs::create_dir(&folder).unwrap();
        std::fs::set_permissions(&folder, Permissions::from_mode(0o755)).unwrap();
        let file = folder.join("f");
        std::fs::write(&file, "kept").unwrap();
        std::fs::set_permissions(&file, Permissions::from_mode(0o644)).unwrap();
        let other = folder.join("g");
        std::fs::write(&other, "").unwrap();
        std::fs::set_permissions(&other, Permissions::from_mode(0o666)).unwrap();
        create_dir(&folder).unwrap();
        open(&file, OpenOptions::new().create(true).append(true)).unwrap();
        tighten_file(&other).unwrap();
        tighten_file(&folder.join("missing")).unwrap();
        assert_eq!(
            (mode(&folder), mode(&file), mode(&other)),
            (DIR_MODE, FILE_MODE, FILE_MODE)
        );
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "kept");
        assert!(!folder.join("missing").exists());
    }
}
