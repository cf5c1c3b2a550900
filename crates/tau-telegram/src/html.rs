//! Telegram's HTML parse mode: escaping, and cutting a message into pieces Telegram takes.
//!
//! Text tau did not write goes through `tau_core::display` (or `display_multiline`) first
//! and through [`escape`] second; nothing else reaches a message.

/// Telegram's limit for one message, in characters after its entities are parsed (counted
/// in UTF-16 code units, as Telegram counts).
pub(crate) const MESSAGE_LIMIT: usize = 4096;

/// Escapes the three characters HTML parse mode gives a meaning to.
pub(crate) fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            other => out.push(other),
        }
    }
    out
}

/// How a line is set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Style {
    Plain,
    Bold,
    Italic,
    Code,
}

/// One line as a person reads it (already through the display function) and its style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Line {
    pub text: String,
    pub style: Style,
}

impl Line {
    pub(crate) fn new(text: impl Into<String>, style: Style) -> Self {
        Self {
            text: text.into(),
            style,
        }
    }

    fn html(&self) -> String {
        let body = escape(&self.text);
        match self.style {
            Style::Plain => body,
            Style::Bold => format!("<b>{body}</b>"),
            Style::Italic => format!("<i>{body}</i>"),
            Style::Code => format!("<code>{body}</code>"),
        }
    }
}

fn width(text: &str) -> usize {
    text.encode_utf16().count()
}

/// Lines packed into messages of at most `limit` characters each (as Telegram counts,
/// after parsing). A line never shares its markup with another message: a line longer
/// than `limit` is cut into pieces, each set in its own style, so no tag or escape is ever
/// cut in two. Blank messages are dropped (Telegram refuses them).
pub(crate) fn pack(lines: &[Line], limit: usize) -> Vec<String> {
    let limit = limit.max(2);
    let mut messages = Vec::new();
    let mut current: Vec<Line> = Vec::new();
    let mut current_width = 0;
    for line in lines {
        for piece in cut(&line.text, limit) {
            let piece_width = width(piece);
            if !current.is_empty() && current_width + 1 + piece_width > limit {
                close(&mut messages, &mut current);
            }
            if current.is_empty() {
                if piece.trim().is_empty() {
                    // A blank line opening a message adds nothing to read.
                    continue;
                }
                current_width = piece_width;
            } else {
                current_width += 1 + piece_width;
            }
            current.push(Line::new(piece, line.style));
        }
    }
    close(&mut messages, &mut current);
    messages
}

fn close(messages: &mut Vec<String>, current: &mut Vec<Line>) {
    while current.last().is_some_and(|l| l.text.trim().is_empty()) {
        current.pop();
    }
    if !current.is_empty() {
        let html: Vec<String> = current.iter().map(Line::html).collect();
        messages.push(html.join("\n"));
    }
    current.clear();
}

/// `text` in pieces of at most `limit` UTF-16 units, cut between characters.
fn cut(text: &str, limit: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut units = 0;
    for (at, c) in text.char_indices() {
        let w = c.len_utf16();
        if units + w > limit {
            pieces.push(text.get(start..at).unwrap_or_default());
            start = at;
            units = 0;
        }
        units += w;
    }
    pieces.push(text.get(start..).unwrap_or_default());
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn escape_covers_what_html_mode_parses() {
        assert_eq!(
            escape("<b>x</b> & <a href=\"y\">"),
            "&lt;b&gt;x&lt;/b&gt; &amp; &lt;a href=\"y\"&gt;"
        );
        assert_eq!(escape("&amp;"), "&amp;amp;");
    }

    #[test]
    fn short_lines_share_one_message() {
        let lines = [
            Line::new("tau <3", Style::Plain),
            Line::new("· [tier 2] run_command", Style::Italic),
        ];
        assert_eq!(pack(&lines, MESSAGE_LIMIT), vec!["tau &lt;3\n<i>· [tier 2] run_command</i>"]);
    }

    #[test]
    fn long_text_is_cut_at_the_limit_without_cutting_markup_or_characters() {
        let text = format!("{}{}", "a&".repeat(3000), "é😀".repeat(10));
        let lines = [Line::new(text.clone(), Style::Bold)];
        let messages = pack(&lines, MESSAGE_LIMIT);
        assert_eq!(messages.len(), 2);
        let mut joined = String::new();
        for message in &messages {
            let inner = message
                .strip_prefix("<b>")
                .and_then(|m| m.strip_suffix("</b>"))
                .unwrap();
            let plain = inner.replace("&amp;", "&");
            assert!(width(&plain) <= MESSAGE_LIMIT);
            joined.push_str(&plain);
        }
        assert_eq!(joined, text);
    }

    #[test]
    fn a_surrogate_pair_is_never_split() {
        let text = "😀".repeat(5);
        let pieces = cut(&text, 3);
        assert_eq!(pieces, vec!["😀", "😀", "😀", "😀", "😀"]);
    }

    #[test]
    fn lines_move_to_the_next_message_whole_when_they_fit_there() {
        let lines = [
            Line::new("x".repeat(6), Style::Plain),
            Line::new("y".repeat(6), Style::Plain),
            Line::new("z".repeat(3), Style::Plain),
        ];
        assert_eq!(pack(&lines, 10), vec!["xxxxxx", "yyyyyy\nzzz"]);
    }

    #[test]
    fn blank_messages_are_dropped() {
        assert_eq!(pack(&[Line::new("  ", Style::Plain)], 10), Vec::<String>::new());
        assert_eq!(pack(&[], 10), Vec::<String>::new());
        assert_eq!(
            pack(&[Line::new("", Style::Plain), Line::new("a", Style::Plain)], 10),
            vec!["a"]
        );
    }
}
