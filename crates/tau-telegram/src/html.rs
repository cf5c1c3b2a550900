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
    let mut used = 0;
    for line in lines {
        let mut rest = line.text.as_str();
        loop {
            // A line after another starts with the line break between them.
            let joiner = usize::from(!current.is_empty());
            let room = limit.saturating_sub(used + joiner);
            let (head, tail) = split_at_units(rest, room);
            if head.is_empty() && !rest.is_empty() {
                close(&mut messages, &mut current, &mut used);
                continue;
            }
            if current.is_empty() && head.trim().is_empty() && tail.is_empty() {
                // A blank line opening a message adds nothing to read.
                break;
            }
            used += joiner + width(head);
            current.push(Line::new(head, line.style));
            if tail.is_empty() {
                break;
            }
            close(&mut messages, &mut current, &mut used);
            rest = tail;
        }
    }
    close(&mut messages, &mut current, &mut used);
    messages
}

fn close(messages: &mut Vec<String>, current: &mut Vec<Line>, used: &mut usize) {
    while current.last().is_some_and(|l| l.text.trim().is_empty()) {
        current.pop();
    }
    if !current.is_empty() {
        let html: Vec<String> = current.iter().map(Line::html).collect();
        messages.push(html.join("\n"));
    }
    current.clear();
    *used = 0;
}

/// The longest start of `text` of at most `units` UTF-16 units (cut between characters),
/// and the rest.
fn split_at_units(text: &str, units: usize) -> (&str, &str) {
    let mut count = 0;
    for (at, c) in text.char_indices() {
        count += c.len_utf16();
        if count > units {
            return (
                text.get(..at).unwrap_or_default(),
                text.get(at..).unwrap_or_default(),
            );
        }
    }
    (text, "")
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
        assert_eq!(
            pack(&lines, MESSAGE_LIMIT),
            vec!["tau &lt;3\n<i>· [tier 2] run_command</i>"]
        );
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
        let text = "😀".repeat(3);
        assert_eq!(
            pack(&[Line::new(text, Style::Plain)], 3),
            vec!["😀", "😀", "😀"]
        );
        assert_eq!(split_at_units("a😀", 2), ("a", "😀"));
    }

    #[test]
    fn a_long_line_fills_the_rest_of_a_message_first() {
        let lines = [
            Line::new("head", Style::Bold),
            Line::new("x".repeat(12), Style::Code),
        ];
        assert_eq!(
            pack(&lines, 10),
            vec!["<b>head</b>\n<code>xxxxx</code>", "<code>xxxxxxx</code>"]
        );
    }

    #[test]
    fn lines_share_a_message_while_they_fit() {
        let lines = [
            Line::new("x".repeat(6), Style::Plain),
            Line::new("y".repeat(3), Style::Plain),
        ];
        assert_eq!(pack(&lines, 10), vec!["xxxxxx\nyyy"]);
    }

    #[test]
    fn blank_messages_are_dropped() {
        assert_eq!(
            pack(&[Line::new("  ", Style::Plain)], 10),
            Vec::<String>::new()
        );
        assert_eq!(pack(&[], 10), Vec::<String>::new());
        assert_eq!(
            pack(
                &[Line::new("", Style::Plain), Line::new("a", Style::Plain)],
                10
            ),
            vec!["a"]
        );
    }
}
