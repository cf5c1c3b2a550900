//! The terminal while the TUI owns it: raw mode, the alternate screen and bracketed paste,
//! all undone when the [`Screen`] is dropped, when anything panics, and (through the
//! event loop) on SIGTERM and SIGHUP.

use std::io::{Stdout, stdout};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

use crossterm::cursor::Show;
use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use crossterm::execute;
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

use crate::TuiError;

/// True while the terminal is in the TUI's modes and must be restored.
static ACTIVE: AtomicBool = AtomicBool::new(false);
static PANIC_HOOK: Once = Once::new();

/// The terminal, owned by the TUI until dropped.
pub struct Screen {
    pub(crate) terminal: Terminal<CrosstermBackend<Stdout>>,
}

impl Screen {
    /// Takes the terminal over. Restores it again if any step fails.
    pub fn enter() -> Result<Self, TuiError> {
        install_panic_hook();
        ACTIVE.store(true, Ordering::SeqCst);
        let entered = enable_raw_mode()
            .and_then(|()| execute!(stdout(), EnterAlternateScreen, EnableBracketedPaste))
            .and_then(|()| Terminal::new(CrosstermBackend::new(stdout())));
        match entered {
            Ok(terminal) => Ok(Self { terminal }),
            Err(error) => {
                restore();
                Err(TuiError::Terminal(error))
            }
        }
    }
}

impl Screen {
    /// Takes the terminal back after a panic that was caught (a tool or a hook that
    /// panicked fails its call, and the conversation goes on): the panic hook gave the
    /// terminal back to print its message, so the modes are set again and the next frame
    /// is drawn whole.
    pub(crate) fn reenter_if_restored(&mut self) -> Result<(), TuiError> {
        if ACTIVE.swap(true, Ordering::SeqCst) {
            return Ok(());
        }
        enable_raw_mode()?;
        execute!(stdout(), EnterAlternateScreen, EnableBracketedPaste)?;
        self.terminal.clear()?;
        Ok(())
    }
}

impl Drop for Screen {
    fn drop(&mut self) {
        restore();
    }
}

/// Gives the terminal back as it was: the normal screen, line editing and echo, the
/// cursor, no bracketed paste. Does nothing the second time.
pub(crate) fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = execute!(stdout(), DisableBracketedPaste, LeaveAlternateScreen, Show);
        let _ = disable_raw_mode();
    }
}

/// A panic anywhere first restores the terminal, so its message is readable and the shell
/// usable; then the panic goes on as it would have. When it was caught and the TUI goes
/// on, the next frame takes the terminal again ([`Screen::reenter_if_restored`]).
fn install_panic_hook() {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
}
