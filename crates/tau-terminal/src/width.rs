//! How wide the terminal is, for wrapping the approval prompt.

/// The width assumed when stdout is not a terminal (a pipe, a file) or does not say.
pub(crate) const DEFAULT_COLUMNS: usize = 80;

/// The columns of the terminal on stdout when `tty`, else [`DEFAULT_COLUMNS`]. Asked
/// each time, so a resized window gets prompts of its new width.
pub(crate) fn columns(tty: bool) -> usize {
    if !tty {
        return DEFAULT_COLUMNS;
    }
    rustix::termios::tcgetwinsize(std::io::stdout())
        .ok()
        .map(|size| usize::from(size.ws_col))
        .filter(|&columns| columns > 0)
        .unwrap_or(DEFAULT_COLUMNS)
}
