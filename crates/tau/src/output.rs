//! What tau writes on stdout and stderr. A reader that went away (`tau completions zsh |
//! head -1`, `tau sessions list | head -1`, a closed terminal) ends nothing badly: the
//! write fails with `EPIPE` and the failure is dropped, so the command ends as it would
//! have, with its own exit code. Rust's runtime ignores SIGPIPE, and tau keeps it so: the
//! signal would also kill tau when an MCP server or a command closes a pipe tau writes to.
//! `println!` and `eprintln!` panic on `EPIPE` instead; the crate denies them (clippy's
//! `print_stdout`, `print_stderr`), so every print goes through here.

use std::io::Write;

/// `text` on stdout, as it is.
pub(crate) fn print(text: &str) {
    write_to(&mut std::io::stdout().lock(), text.as_bytes());
}

/// `line` and a line break on stderr.
pub(crate) fn eprint_line(line: &str) {
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    write_to(&mut std::io::stderr().lock(), text.as_bytes());
}

fn write_to(out: &mut impl Write, bytes: &[u8]) {
    // A reader that is gone is not tau's failure; nothing else can fail here that a
    // person could be told about, since this is where tau tells them.
    let _ = out.write_all(bytes);
    let _ = out.flush();
}
