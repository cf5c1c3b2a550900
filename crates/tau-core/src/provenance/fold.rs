//! One normal form for matching text a person could read as the same: case folded,
//! compatibility forms composed (NFKC: a fullwidth `ｅ` is `e`), invisible characters
//! dropped (a zero-width space inside an address), and every character mapped to its
//! confusable skeleton (UTS #39: a Cyrillic `е` is a Latin `e`). Both sides of a match go
//! through it, so a lookalike variant of a value is the value.

use unicode_normalization::UnicodeNormalization;
use unicode_security::skeleton;

/// Characters a reader does not see: zero-width spaces and joiners, the word joiner, the
/// byte order mark, the soft hyphen, bidi controls and the variation selectors.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{034F}'
            | '\u{061C}'
            | '\u{115F}'
            | '\u{1160}'
            | '\u{17B4}'
            | '\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// `text` in the normal form, appended to `out`.
pub(crate) fn fold_into(text: &str, out: &mut String) {
    let visible: String = text
        .chars()
        .filter(|c| !is_invisible(*c))
        .flat_map(char::to_lowercase)
        .nfkc()
        .collect();
    // Lowered again after the skeleton: a few of its prototypes are capitals.
    out.extend(skeleton(&visible).flat_map(char::to_lowercase));
}

/// `text` in the normal form.
pub(crate) fn fold(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    fold_into(text, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn variants_a_reader_takes_for_the_same_text_fold_alike() {
        let plain = fold("mark@evil.example");
        for variant in [
            "Mark@Evil.Example",
            "mark@evil\u{200B}.example",
            "m\u{0430}rk@evil.example",
            "ｍａｒｋ@evil.example",
            "mark@evi\u{00AD}l.example",
        ] {
            assert_eq!(fold(variant), plain, "{variant:?}");
        }
        assert_ne!(fold("mark@devil.example"), plain);
    }

    #[test]
    fn other_scripts_keep_their_words() {
        assert_ne!(fold("привет"), fold("hello"));
        assert_eq!(fold("中文"), "中文");
    }
}
