//! A bearer token kept in a private file of the home (`mcp-token` for `tau mcp --http`):
//! 32 bytes from the operating system's CSPRNG, hex-encoded. Created once, 0600, and read
//! again on every start, so a client configured with it keeps working.

use std::fmt::Write as _;
use std::io::{ErrorKind, Write as _};
use std::path::Path;

use crate::error::HomeError;
use crate::private;

const TOKEN_BYTES: usize = 32;

/// The token in `path`, created when the file does not exist yet. The folder must exist.
pub fn load_or_create(path: &Path) -> Result<String, HomeError> {
    match read(path)? {
        Some(token) => Ok(token),
        None => create(path),
    }
}

/// The token in `path`, or `None` (nothing created) when there is no file.
pub fn load(path: &Path) -> Result<Option<String>, HomeError> {
    read(path)
}

/// The token in `path` (tightened to 0600), or `None` when there is no file.
fn read(path: &Path) -> Result<Option<String>, HomeError> {
    let cannot_read = |source| HomeError::Read {
        path: path.to_owned(),
        source,
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(cannot_read(error)),
    };
    if !meta.is_file() {
        return Err(HomeError::NotAFile(path.to_owned()));
    }
    private::tighten_file(path).map_err(|source| HomeError::Protect {
        path: path.to_owned(),
        source,
    })?;
    let text = std::fs::read_to_string(path).map_err(cannot_read)?;
    let token = text.trim();
    if token.len() < 2 * TOKEN_BYTES || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(HomeError::NotAToken(path.to_owned()));
    }
    Ok(Some(token.to_owned()))
}

/// Writes a new token to a private temporary file and links it into place, so a second
/// process starting at the same time reads a whole token: the first link wins.
fn create(path: &Path) -> Result<String, HomeError> {
    let token = generate()?;
    let dir = path.parent().unwrap_or_else(|| Path::new("."));
    let cannot_write = |source| HomeError::WriteToken {
        dir: dir.to_owned(),
        source,
    };
    // tempfile creates its files 0600.
    let mut file = tempfile::NamedTempFile::new_in(dir).map_err(cannot_write)?;
    file.write_all(format!("{token}\n").as_bytes())
        .map_err(cannot_write)?;
    file.as_file().sync_all().map_err(cannot_write)?;
    match file.persist_noclobber(path) {
        Ok(_) => Ok(token),
        Err(error) if error.error.kind() == ErrorKind::AlreadyExists => {
            read(path)?.ok_or_else(|| HomeError::Vanished(path.to_owned()))
        }
        Err(error) => Err(HomeError::Write {
            path: path.to_owned(),
            source: error.error,
        }),
    }
}

/// A fresh secret as the token file holds one: 256 random bits, in hex. Also a person's
/// own token and an invite's secret.
pub fn generate() -> Result<String, HomeError> {
    let mut bytes = [0u8; TOKEN_BYTES];
    getrandom::fill(&mut bytes).map_err(HomeError::NoRandom)?;
    Ok(bytes.iter().fold(String::new(), |mut hex, b| {
        let _ = write!(hex, "{b:02x}");
        hex
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[test]
    fn a_token_is_made_once_private_and_then_reused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-token");
        let first = load_or_create(&path).unwrap();
        assert_eq!(first.len(), 64);
        assert!(first.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(load_or_create(&path).unwrap(), first);
        let other = load_or_create(&dir.path().join("web-token")).unwrap();
        assert_ne!(other, first, "each file its own token");
    }

    #[test]
    fn a_looser_file_is_tightened_and_a_bad_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-token");
        let token = "ab".repeat(32);
        std::fs::write(&path, format!("{token}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(load_or_create(&path).unwrap(), token);
        assert_eq!(mode(&path), 0o600);

        for bad in ["", "short", &"zz".repeat(32)] {
            std::fs::write(&path, bad).unwrap();
            assert_eq!(
                load_or_create(&path).unwrap_err().to_string(),
                format!(
                    "{} does not hold a token tau made; remove it and start again",
                    path.display()
                ),
                "{bad:?}"
            );
        }
        std::fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink(dir.path().join("elsewhere"), &path).unwrap();
        assert!(load_or_create(&path).is_err(), "a symlink is not followed");
    }

    #[test]
    fn processes_starting_together_agree_on_one_token() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("mcp-token");
        let tokens: Vec<String> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8)
                .map(|_| scope.spawn(|| load_or_create(&path).unwrap()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(tokens.iter().all(|t| *t == tokens[0]), "{tokens:?}");
    }
}
