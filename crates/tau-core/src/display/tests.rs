use super::*;
use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};

#[test]
fn each_class_is_escaped_in_one_line_fields() {
    let cases = [
        // Shown as they are.
        (
            "plain text, üñí, 中文, Türkçe ığş",
            "plain text, üñí, 中文, Türkçe ığş",
        ),
        // Whitespace other than the ASCII space, tab and newline reads as a space and is
        // not one: `sh setup.sh\u{a0}--dry-run` runs the file `setup.sh --dry-run`.
        ("sh setup.sh\u{a0}--dry-run", "sh setup.sh\\u{a0}--dry-run"),
        (
            "a\u{2000}b\u{2001}c\u{2002}d\u{2003}e\u{2004}f\u{2005}g\u{2006}h\u{2007}i\u{2008}j\u{2009}k\u{200a}l",
            "a\\u{2000}b\\u{2001}c\\u{2002}d\\u{2003}e\\u{2004}f\\u{2005}g\\u{2006}h\\u{2007}i\\u{2008}j\\u{2009}k\\u{200a}l",
        ),
        (
            "ideographic\u{3000}narrow\u{202f}math\u{205f}ogham\u{1680}vt\u{b}ff\u{c}",
            "ideographic\\u{3000}narrow\\u{202f}math\\u{205f}ogham\\u{1680}vt\\u{b}ff\\u{c}",
        ),
        (
            "emoji 🙂 and é (e + \u{301})",
            "emoji 🙂 and é (e + \u{301})",
        ),
        (r#"backslash \u{41} stays"#, r#"backslash \u{41} stays"#),
        // C0 controls, DEL, C1 controls.
        ("\u{1b}[2J\u{1b}]0;t\u{7}", "\\u{1b}[2J\\u{1b}]0;t\\u{7}"),
        ("\0nul\u{7f}del", "\\u{0}nul\\u{7f}del"),
        ("csi\u{9b}31m\u{85}nel", "csi\\u{9b}31m\\u{85}nel"),
        ("line\nbreak\r\ttab", "line\\u{a}break\\u{d}\\u{9}tab"),
        // Format characters: bidi, zero-width, soft hyphen, Arabic letter mark.
        (
            "evil\u{202e}txt.exe\u{2066}",
            "evil\\u{202e}txt.exe\\u{2066}",
        ),
        (
            "zero\u{200b}width\u{200d}joiner\u{feff}\u{ad}\u{61c}",
            "zero\\u{200b}width\\u{200d}joiner\\u{feff}\\u{ad}\\u{61c}",
        ),
        // Default_Ignorable_Code_Point that is not a format character.
        ("setup.sh\u{34f}", "setup.sh\\u{34f}"),
        (
            "vs\u{fe00}\u{fe0f}\u{e0100}\u{e01ef}",
            "vs\\u{fe00}\\u{fe0f}\\u{e0100}\\u{e01ef}",
        ),
        ("khmer\u{17b4}\u{17b5}", "khmer\\u{17b4}\\u{17b5}"),
        (
            "mongolian\u{180b}\u{180e}\u{180f}",
            "mongolian\\u{180b}\\u{180e}\\u{180f}",
        ),
        (
            "hangul\u{115f}\u{1160}\u{3164}\u{ffa0}",
            "hangul\\u{115f}\\u{1160}\\u{3164}\\u{ffa0}",
        ),
        (
            "tags\u{e0001}\u{e0041}\u{e007f}",
            "tags\\u{e0001}\\u{e0041}\\u{e007f}",
        ),
        (
            "unassigned ignorable\u{e0fff}\u{2065}",
            "unassigned ignorable\\u{e0fff}\\u{2065}",
        ),
        // Separators, private use, unassigned, the blank braille pattern.
        ("sep\u{2028}para\u{2029}", "sep\\u{2028}para\\u{2029}"),
        (
            "private\u{e000}\u{f8ff}\u{10fffd}",
            "private\\u{e000}\\u{f8ff}\\u{10fffd}",
        ),
        (
            "unassigned\u{378}\u{ffff}\u{10ffff}",
            "unassigned\\u{378}\\u{ffff}\\u{10ffff}",
        ),
        ("braille\u{2800}blank", "braille\\u{2800}blank"),
        // tau's own marks cannot be forged.
        (
            "⟨20000 spaces⟩ ↩",
            "\\u{27e8}20000 spaces\\u{27e9} \\u{21a9}",
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(display(input), expected, "{input:?}");
    }
}

#[test]
fn long_whitespace_runs_become_markers() {
    let cases = [
        (
            format!("a{}b", " ".repeat(8)),
            format!("a{}b", " ".repeat(8)),
        ),
        (format!("a{}b", " ".repeat(9)), "a⟨9 spaces⟩b".to_owned()),
        (
            format!("sh setup.sh{}; rm -rf ~", " ".repeat(20_000)),
            "sh setup.sh⟨20000 spaces⟩; rm -rf ~".to_owned(),
        ),
        (" ".repeat(12), "⟨12 spaces⟩".to_owned()),
        ("\u{3000}".repeat(12), "⟨12 × \\u{3000}⟩".to_owned()),
        ("\t".repeat(9), "⟨9 × \\u{9}⟩".to_owned()),
        (
            format!("x{} \n{}y", " ".repeat(8), "\u{a0}".repeat(3)),
            "x⟨13 whitespace: 9 spaces, 1 × \\u{a}, 3 × \\u{a0}⟩y".to_owned(),
        ),
        (
            format!("{}\u{2028}", "\u{2003}".repeat(8)),
            "⟨9 whitespace: 8 × \\u{2003}, 1 × \\u{2028}⟩".to_owned(),
        ),
        (
            format!("{} ", "\u{3000}".repeat(8)),
            "⟨9 whitespace: 8 × \\u{3000}, 1 space⟩".to_owned(),
        ),
        // A short run keeps each character, escaped where it must be.
        (
            "a \t\u{2028} b".to_owned(),
            "a \\u{9}\\u{2028} b".to_owned(),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(display(&input), expected, "{input:?}");
    }
}

#[test]
fn multi_line_text_keeps_line_breaks_tabs_and_indentation() {
    let cases = [
        (
            "line one\n\tindented\n    code".to_owned(),
            "line one\n\tindented\n    code".to_owned(),
        ),
        (
            "crlf\r\n\u{1b}[31mred\u{202e}\u{34f}".to_owned(),
            "crlf\\u{d}\n\\u{1b}[31mred\\u{202e}\\u{34f}".to_owned(),
        ),
        (
            format!("{}x", " ".repeat(64)),
            format!("{}x", " ".repeat(64)),
        ),
        (format!("{}x", " ".repeat(65)), "⟨65 spaces⟩x".to_owned()),
        (
            format!("a{}\n{}b", " ".repeat(40), " ".repeat(40)),
            format!("a{}\n{}b", " ".repeat(40), " ".repeat(40)),
        ),
        (
            format!("a{}\t{}b", " ".repeat(40), " ".repeat(40)),
            "a⟨81 whitespace: 80 spaces, 1 × \\u{9}⟩b".to_owned(),
        ),
        ("\u{2028}".to_owned(), "\\u{2028}".to_owned()),
        (
            "prix\u{a0}: 3\u{202f}€\u{3000}end".to_owned(),
            "prix\\u{a0}: 3\\u{202f}€\\u{3000}end".to_owned(),
        ),
    ];
    for (input, expected) in cases {
        assert_eq!(display_multiline(&input), expected, "{input:?}");
    }
}

#[test]
fn sorted_json_sorts_at_every_depth_and_leaves_escaping_to_display() {
    let value = json!({"z": 1, "a": {"y": [{"d": 1, "c": 2}], "b": "\u{202e}x"}});
    assert_eq!(
        sorted_json(&value),
        "{\"a\":{\"b\":\"\u{202e}x\",\"y\":[{\"c\":2,\"d\":1}]},\"z\":1}"
    );
    assert_eq!(
        display(&sorted_json(&value)),
        r#"{"a":{"b":"\u{202e}x","y":[{"c":2,"d":1}]},"z":1}"#
    );
    // serde_json writes C0 controls in strings as \u001b; those stay as they are.
    assert_eq!(
        display(&sorted_json(&json!({"k": "\u{1b}[31m"}))),
        r#"{"k":"\u001b[31m"}"#
    );
}

#[test]
fn json_for_terminal_escapes_what_display_would_and_parses_to_the_same_value() {
    let value = json!({
        "name\u{9b}": "evil\u{1b}]0;t\u{7}\u{202e}\u{34f}\u{7f}\u{e0041}\u{2800}⟨ü中🙂\u{fe0f}",
        "list": ["\u{2028}", 1, true, null],
    });
    let text = json_for_terminal(&serde_json::to_string_pretty(&value).unwrap());
    assert!(text.chars().all(|c| c == '\n' || !is_escaped(c)), "{text}");
    assert!(text.contains(r#""name\u009b""#), "{text}");
    assert!(text.contains(r"\udb40\udc41"), "{text}");
    assert!(text.contains("ü中🙂"), "{text}");
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, value);
}

/// One of each class, named here rather than derived from `is_escaped`, so the properties
/// below do not only check the function against itself.
const HOSTILE: [char; 16] = [
    '\u{1b}',
    '\u{7}',
    '\u{7f}',
    '\u{9b}',
    '\u{202e}',
    '\u{200b}',
    '\u{34f}',
    '\u{fe0f}',
    '\u{e0041}',
    '\u{3164}',
    '\u{2800}',
    '\u{2028}',
    '\u{e000}',
    '\u{378}',
    '\r',
    '↩',
];

/// Text rich in what the display function must catch: any character, the classes above,
/// and long runs of mixed whitespace.
fn hostile_text() -> impl Strategy<Value = String> {
    let mut chosen = HOSTILE.to_vec();
    chosen.extend(['⟨', '⟩', '\n', '\t', 'a', 'ü', '中']);
    let piece = prop_oneof![
        any::<char>().prop_map(String::from),
        prop::sample::select(chosen).prop_map(String::from),
        (
            prop::sample::select(vec![' ', '\t', '\n', '\u{a0}', '\u{3000}', '\u{2003}']),
            1_usize..100
        )
            .prop_map(|(c, n)| c.to_string().repeat(n)),
    ];
    prop::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}

/// The longest run of `in_run` characters in `text`.
fn longest_run(text: &str, in_run: impl Fn(char) -> bool) -> usize {
    text.split(|c: char| !in_run(c))
        .map(|run| run.chars().count())
        .max()
        .unwrap_or(0)
}

fn only_marks_are_escapable(text: &str, kept: &[char]) -> bool {
    text.chars()
        .all(|c| !is_escaped(c) || matches!(c, RUN_OPEN | RUN_CLOSE) || kept.contains(&c))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1000))]

    #[test]
    fn one_line_output_holds_only_allowed_characters(text in hostile_text()) {
        let shown = display(&text);
        prop_assert!(only_marks_are_escapable(&shown, &[]), "{shown:?}");
        prop_assert!(!shown.contains(HOSTILE), "{shown:?}");
        prop_assert!(!shown.contains(['\n', '\t', WRAP_MARK]), "{shown:?}");
        prop_assert!(longest_run(&shown, char::is_whitespace) <= LINE_RUN, "{shown:?}");
        prop_assert!(shown.chars().all(|c| c == ' ' || !c.is_whitespace()), "{shown:?}");
    }

    #[test]
    fn multi_line_output_holds_only_allowed_characters(text in hostile_text()) {
        let shown = display_multiline(&text);
        prop_assert!(only_marks_are_escapable(&shown, &['\n', '\t']), "{shown:?}");
        prop_assert!(!shown.contains(HOSTILE), "{shown:?}");
        prop_assert!(!shown.contains(WRAP_MARK), "{shown:?}");
        prop_assert!(
            longest_run(&shown, |c| c.is_whitespace() && c != '\n') <= TEXT_RUN,
            "{shown:?}"
        );
        prop_assert_eq!(shown.matches('\n').count(), text.matches('\n').count());
        prop_assert!(
            shown.chars().all(|c| matches!(c, ' ' | '\t' | '\n') || !c.is_whitespace()),
            "{shown:?}"
        );
    }

    #[test]
    fn markers_come_only_from_runs(text in hostile_text()) {
        let shown = display(&text);
        let markers = shown.matches(RUN_OPEN).count();
        prop_assert_eq!(markers, shown.matches(RUN_CLOSE).count());
        let runs = text
            .split(|c: char| !c.is_whitespace())
            .filter(|run| run.chars().count() > LINE_RUN)
            .count();
        prop_assert_eq!(markers, runs);
    }

    #[test]
    fn safe_text_is_shown_unchanged(
        text in "[a-zA-Z0-9 üğışçöÜĞİŞÇÖ中文🙂.,;:/{}\\[\\]\"'\\\\-]{0,200}"
    ) {
        prop_assume!(longest_run(&text, char::is_whitespace) <= LINE_RUN);
        prop_assert_eq!(display(&text), text.clone());
        prop_assert_eq!(display_multiline(&text), text);
    }

    #[test]
    fn json_for_terminal_round_trips(text in hostile_text(), key in hostile_text()) {
        let value = json!({ key: [text.clone(), {"nested": text}] });
        let shown = json_for_terminal(&serde_json::to_string_pretty(&value).unwrap_or_default());
        prop_assert!(shown.chars().all(|c| c == '\n' || !is_escaped(c)), "{shown:?}");
        prop_assert!(!shown.contains(HOSTILE), "{shown:?}");
        let parsed: Value = serde_json::from_str(&shown).unwrap_or_default();
        prop_assert_eq!(parsed, value);
    }
}
