//! Before a chat: the session picker over the stored sessions (open, start, rename,
//! delete), and the count of questions waiting on other channels kept current while the
//! TUI runs. Where the sessions and questions are stored is the caller's.

use std::process::ExitCode;
use std::time::Duration;

use tau_core::Language;

use crate::TuiError;
use crate::picker::{Pick, SessionRow};
use crate::run::{Exit, pick_session};
use crate::screen::Screen;

/// How often the count of questions waiting elsewhere is read again.
const ELSEWHERE_EVERY: Duration = Duration::from_secs(1);

/// The stored sessions, as the picker reads and changes them.
pub trait SessionShelf {
    type Error: From<TuiError>;
    /// The sessions to offer, each with its title.
    fn rows(&self) -> Result<Vec<SessionRow>, Self::Error>;
    /// Gives the session `name` the title `title` (`None`: its name again).
    fn rename(&self, name: &str, title: Option<&str>) -> Result<(), Self::Error>;
    /// Deletes the session `name`.
    fn delete(&self, name: &str) -> Result<(), Self::Error>;
}

/// What the person chose in the picker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    /// A new session.
    New,
    /// The stored session of this name.
    Open(String),
    /// No session: the TUI ends so.
    Exit(Exit),
}

/// Offers the sessions until the person opens one, starts one or leaves. Sessions nobody
/// wrote in are not offered; a rename or delete the store refuses leaves the session as
/// it was (said in the log).
pub async fn choose_session<S: SessionShelf>(
    screen: &mut Screen,
    language: Language,
    shelf: &S,
    zone: jiff::tz::TimeZone,
) -> Result<Chosen, S::Error>
where
    S::Error: std::fmt::Display,
{
    loop {
        let rows = shelf
            .rows()?
            .into_iter()
            .filter(|row| row.message_count > 0)
            .collect();
        match pick_session(screen, language, rows, zone.clone()).await? {
            Pick::New => return Ok(Chosen::New),
            Pick::Open(name) => return Ok(Chosen::Open(name)),
            Pick::Rename { name, title } => {
                let wanted = (!title.trim().is_empty()).then_some(title.as_str());
                if let Err(error) = shelf.rename(&name, wanted) {
                    tracing::warn!(%error, "the session was not renamed");
                }
            }
            Pick::Delete(name) => {
                if let Err(error) = shelf.delete(&name) {
                    tracing::warn!(%error, "the session was not deleted");
                }
            }
            Pick::Quit => return Ok(Chosen::Exit(Exit::Quit)),
            Pick::Signal(number) => return Ok(Chosen::Exit(Exit::Signal(number))),
        }
    }
}

impl Exit {
    /// The process's exit code: 0 when the person quit; after a signal 128 + its number,
    /// as a shell reports it.
    pub fn code(self) -> ExitCode {
        match self {
            Exit::Quit => ExitCode::SUCCESS,
            Exit::Signal(number) => ExitCode::from(u8::try_from(128 + number).unwrap_or(1)),
        }
    }
}

/// Keeps a count current from `count` (read in a blocking task every second) until the
/// receiver is gone; a failed read keeps the last value, and the log says why once.
pub fn count_waiting_elsewhere<E>(
    count: impl Fn() -> Result<usize, E> + Clone + Send + 'static,
) -> (
    tokio::sync::watch::Receiver<usize>,
    tokio::task::JoinHandle<()>,
)
where
    E: std::fmt::Display + Send + 'static,
{
    let (shown, waiting) = tokio::sync::watch::channel(0);
    let task = tokio::spawn(async move {
        let mut reported = false;
        while !shown.is_closed() {
            let read = tokio::task::spawn_blocking(count.clone()).await;
            match read {
                Ok(Ok(n)) => {
                    shown.send_if_modified(|was| std::mem::replace(was, n) != n);
                }
                Ok(Err(error)) if !reported => {
                    reported = true;
                    tracing::warn!(%error, "cannot count the questions waiting elsewhere");
                }
                Ok(Err(_)) | Err(_) => {}
            }
            tokio::time::sleep(ELSEWHERE_EVERY).await;
        }
    });
    (waiting, task)
}
