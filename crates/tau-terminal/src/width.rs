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

/// The columns and rows of the screen a question is drawn on, when there is one that says:
/// stdout when it is a terminal, else the controlling terminal when questions are drawn
/// there too. `None` for a pipe or a file, or a terminal that does not know its size.
pub(crate) fn screen(tty: bool, question_screen: bool) -> Option<(usize, usize)> {
    let size = if tty {
        rustix::termios::tcgetwinsize(std::io::stdout()).ok()
    } else if question_screen {
        let terminal = std::fs::File::open("/dev/tty").ok()?;
        rustix::termios::tcgetwinsize(&terminal).ok()
    } else {
        None
    }?;
    let (columns, rows) = (usize::from(size.ws_col), usize::from(size.ws_row));
    (columns > 0 && rows > 0).then_some((columns, rows))
}
