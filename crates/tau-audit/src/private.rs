//! The log is opened as every file of tau's home is: created 0600 (an existing file is
//! tightened to it) and never through a symbolic link, which is refused.

use std::fs::{File, OpenOptions, Permissions};
use std::io;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

const FILE_MODE: u32 = 0o600;

/// Opens `path` with `options`, creating it 0600; a symbolic link at `path` is refused.
pub(crate) fn open(path: &Path, options: &mut OpenOptions) -> io::Result<File> {
    let no_follow = i32::try_from(rustix::fs::OFlags::NOFOLLOW.bits()).unwrap_or_default();
    let file = options
        .mode(FILE_MODE)
        .custom_flags(no_follow)
        .open(path)
        .map_err(|error| {
            if error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) {
                io::Error::other(format!(
                    "{} is a symbolic link, and tau never opens a file of its home through one; remove it",
                    path.display()
                ))
            } else {
                io::Error::new(error.kind(), format!("{}: {error}", path.display()))
            }
        })?;
    if file.metadata()?.permissions().mode() & 0o777 != FILE_MODE {
        file.set_permissions(Permissions::from_mode(FILE_MODE))
            .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    }
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_never_opened_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("target");
        std::fs::write(&target, "theirs").unwrap();
        let link = dir.path().join("audit.jsonl");
        std::os::unix::fs::symlink(&target, &link).unwrap();
        let error = open(&link, OpenOptions::new().create(true).append(true)).unwrap_err();
        assert!(
            error.to_string().ends_with(
                "is a symbolic link, and tau never opens a file of its home through one; remove it"
            ),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(&target).unwrap(), "theirs");
    }
}
