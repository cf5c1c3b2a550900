//! The one way tau shortens a text for a line: whole characters, an ellipsis where
//! something was left out.

/// `text` whole when it has at most `max_chars` characters, else its first `max_chars`
/// characters and `…`. Never splits a character.
pub fn ellipsized(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}…", text.get(..cut).unwrap_or(text)),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_text_stays_whole_and_a_long_one_ends_in_an_ellipsis() {
        assert_eq!(ellipsized("lamp", 4), "lamp");
        assert_eq!(ellipsized("lamps", 4), "lamp…");
        assert_eq!(ellipsized("", 0), "");
        assert_eq!(ellipsized("a", 0), "…");
    }

    #[test]
    fn characters_are_never_split() {
        assert_eq!(ellipsized("ışıklar", 3), "ışı…");
        assert_eq!(ellipsized("👩‍👩‍👧 home", 1), "👩…");
    }
}
