//! What can go wrong with the home and its files.

use std::io;
use std::path::PathBuf;

/// The home or one of its files could not be found, made, read or written. The cases a
/// person causes and can fix (a planted link, a shared folder, a session open elsewhere, a
/// unit that is not tau's) are [`HomeError::is_usage`]: the binary exits 2 on them.
#[derive(Debug, thiserror::Error)]
pub enum HomeError {
    #[error("cannot find a home for tau's state: pass --home DIR or set TAU_HOME")]
    NoHome,
    #[error(
        "cannot keep tau's state in {}: it is a shared folder (sticky bit); pass --home with a folder of your own",
        .0.display()
    )]
    SharedFolder(PathBuf),
    /// An entry tau owns in the home is a symbolic link (see `Home::refuse_links`).
    #[error(
        "{entry} is a symbolic link (to {target}): tau never follows a link in its home, where someone who could once write the folder may have planted it; {remedy}"
    )]
    PlantedLink {
        /// The entry, as the display function shows it.
        entry: String,
        /// Where it points, as the display function shows it.
        target: String,
        remedy: &'static str,
    },
    /// A folder could not be made (the error names it).
    #[error("cannot create {error}")]
    CreateDir { error: io::Error },
    #[error("cannot create {}: {error}", .path.display())]
    Create { path: PathBuf, error: io::Error },
    /// A file of the home would have been opened through a symbolic link.
    #[error(
        "{} is a symbolic link, and tau never opens a file of its home through one; remove it",
        .0.display()
    )]
    LinkRefused(PathBuf),
    #[error("session '{0}' is already open in another tau (chat or serve); close that one first")]
    SessionBusy(tau_protocol::SessionId),
    #[error("cannot open {}: {error}", .path.display())]
    Open { path: PathBuf, error: io::Error },
    #[error("cannot lock {}: {error}", .path.display())]
    Lock { path: PathBuf, error: io::Error },
    #[error("cannot read {}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot read {}: {error}", .path.display())]
    ReadSaid { path: PathBuf, error: io::Error },
    #[error("cannot protect {}", .path.display())]
    Protect {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("cannot write {}: {error}{hint}", .path.display())]
    WriteSaid {
        path: PathBuf,
        error: io::Error,
        /// What to do instead, when there is something (starts with `; `).
        hint: &'static str,
    },
    #[error("cannot write a token in {}", .dir.display())]
    WriteToken {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a regular file; remove it and start again", .0.display())]
    NotAFile(PathBuf),
    #[error("{} does not hold a token tau made; remove it and start again", .0.display())]
    NotAToken(PathBuf),
    #[error("{} vanished while it was read", .0.display())]
    Vanished(PathBuf),
    #[error("the operating system gave no random bytes: {0}")]
    NoRandom(getrandom::Error),
    #[error("cannot open the log: {0}")]
    OpenLog(io::Error),
    #[error("cannot open the log in {}: {error}", .dir.display())]
    StartLog {
        dir: PathBuf,
        error: tracing_appender::rolling::InitError,
    },
    #[error("cannot make the log private: {0}")]
    TightenLog(io::Error),
    /// A path or word the systemd unit cannot hold.
    #[error("cannot name {what} ({shown}) in a systemd unit: {why}")]
    UnitWord {
        what: String,
        shown: String,
        why: &'static str,
    },
    #[error(
        "{} exists and is not the unit this tau writes; `tau service unit{flag}` shows the new one, and `tau service install{flag} --force` replaces it",
        .path.display()
    )]
    UnitExists { path: PathBuf, flag: &'static str },
    #[error("cannot find where systemd keeps user units: set HOME or XDG_CONFIG_HOME")]
    NoUnitFolder,
    #[error(
        "a system unit runs tau as the person whose home it is, never as root: run `tau service unit --system` as that user, and save what it prints as /etc/systemd/system/tau.service as root"
    )]
    RootUnit,
    #[error("{} has no folder", .0.display())]
    NoFolder(PathBuf),
}

impl HomeError {
    /// A mistake in how tau was called or set up, which the person fixes (exit 2).
    pub fn is_usage(&self) -> bool {
        match self {
            Self::NoHome
            | Self::SharedFolder(_)
            | Self::PlantedLink { .. }
            | Self::SessionBusy(_)
            | Self::UnitWord { .. }
            | Self::UnitExists { .. }
            | Self::NoUnitFolder
            | Self::RootUnit => true,
            Self::CreateDir { .. }
            | Self::Create { .. }
            | Self::LinkRefused(_)
            | Self::Open { .. }
            | Self::Lock { .. }
            | Self::Read { .. }
            | Self::ReadSaid { .. }
            | Self::Protect { .. }
            | Self::Write { .. }
            | Self::WriteSaid { .. }
            | Self::WriteToken { .. }
            | Self::NotAFile(_)
            | Self::NotAToken(_)
            | Self::Vanished(_)
            | Self::NoRandom(_)
            | Self::OpenLog(_)
            | Self::StartLog { .. }
            | Self::TightenLog(_)
            | Self::NoFolder(_) => false,
        }
    }
}
