//! Bytes into lines, each stamped with the moment its first byte arrived: a line begun
//! before a question was on screen was not typed for it.

use std::collections::VecDeque;

use tokio::time::Instant;

/// Longest line kept; the rest of a longer line is dropped.
pub(crate) const MAX_LINE_BYTES: usize = 1 << 20;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub text: String,
    pub begun_at: Instant,
}

#[derive(Debug, Default)]
pub(crate) struct Lines {
    partial: Vec<u8>,
    begun_at: Option<Instant>,
    ready: VecDeque<Line>,
}

impl Lines {
    /// Takes bytes that arrived at `now`.
    pub fn feed(&mut self, bytes: &[u8], now: Instant) {
        for piece in bytes.split_inclusive(|&b| b == b'\n') {
            let begun_at = *self.begun_at.get_or_insert(now);
            let (body, ended) = match piece.strip_suffix(b"\n") {
                Some(body) => (body, true),
                None => (piece, false),
            };
            let room = MAX_LINE_BYTES.saturating_sub(self.partial.len());
            self.partial.extend(body.iter().take(room).copied());
            if ended {
                self.finish(begun_at);
            }
        }
    }

    /// The input ended: a last line without its newline is still a line.
    pub fn end(&mut self) {
        if let Some(begun_at) = self.begun_at {
            self.finish(begun_at);
        }
    }

    pub fn pop(&mut self) -> Option<Line> {
        self.ready.pop_front()
    }

    fn finish(&mut self, begun_at: Instant) {
        let bytes = std::mem::take(&mut self.partial);
        self.begun_at = None;
        let text = String::from_utf8_lossy(&bytes);
        self.ready.push_back(Line {
            text: text.trim_end_matches('\r').to_owned(),
            begun_at,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn all(lines: &mut Lines) -> Vec<Line> {
        std::iter::from_fn(|| lines.pop()).collect()
    }

    #[test]
    fn a_line_is_stamped_with_its_first_byte() {
        let start = Instant::now();
        let later = start + Duration::from_millis(500);
        let mut lines = Lines::default();
        lines.feed(b"one\r\ntw", start);
        lines.feed(b"o\nthree", later);
        lines.end();
        assert_eq!(
            all(&mut lines),
            vec![
                Line {
                    text: "one".into(),
                    begun_at: start
                },
                Line {
                    text: "two".into(),
                    begun_at: start
                },
                Line {
                    text: "three".into(),
                    begun_at: later
                },
            ]
        );
        lines.end();
        assert_eq!(all(&mut lines), vec![], "nothing is left after the end");
    }

    #[test]
    fn a_line_longer_than_the_limit_is_cut_and_the_next_one_is_whole() {
        let now = Instant::now();
        let mut lines = Lines::default();
        lines.feed(&vec![b'x'; MAX_LINE_BYTES + 10], now);
        lines.feed(b"\nnext\n", now);
        let got = all(&mut lines);
        assert_eq!(got.len(), 2);
        assert_eq!(got.first().map(|l| l.text.len()), Some(MAX_LINE_BYTES));
        assert_eq!(got.get(1).map(|l| l.text.as_str()), Some("next"));
    }
}
