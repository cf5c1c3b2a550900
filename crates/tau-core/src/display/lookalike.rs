//! Words a reader could take for other words: a word that mixes scripts (`setup.ѕh`, whose
//! `ѕ` is Cyrillic), a word of another script written wholly in letters that look like
//! ASCII (`сор`, all Cyrillic), and a character outside the identifier profile that looks
//! like ASCII (a fullwidth `ｓ`, a small capital `ꜱ`, the hyphen U+2010). The data is
//! Unicode's own (UTS #39: the augmented script sets, the confusable skeletons and the
//! General Security Profile, through `unicode-security`, and its script data,
//! `unicode-script`).
//!
//! Plain text of one script stays unflagged: Turkish (`kırmızı ışık`), Russian (`привет`),
//! Chinese (`中文`), Japanese mixing kana and kanji, Korean mixing Hangul and Hanja. A
//! Latin word with Turkish letters is one script; its dotless `ı` is a letter people read
//! as itself, so it is not flagged.

use serde_json::Value;
use unicode_script::{Script, UnicodeScript};
use unicode_security::mixed_script::AugmentedScriptSet;
use unicode_security::{GeneralSecurityProfile, skeleton};

/// One word a reader could misread, and the characters that make it so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lookalike {
    /// Where the word is: the argument's path (`command`, `list[2]`, `a.b`), or empty for
    /// a top-level string.
    pub path: String,
    /// The word as written (show it only through the display function).
    pub word: String,
    /// The scripts the word mixes, in the order they first appear; empty when it is one
    /// script.
    pub scripts: Vec<&'static str>,
    /// The characters to look at, each once, in the order they appear.
    pub odd: Vec<OddChar>,
}

/// A character of a [`Lookalike`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OddChar {
    pub c: char,
    /// Its script's name (`Cyrillic`, `Common`).
    pub script: &'static str,
    /// The ASCII text it can be taken for, when there is one.
    pub looks_like: Option<String>,
}

impl OddChar {
    /// `U+0455 Cyrillic, looks like "s"`.
    pub fn describe(&self) -> String {
        let mut out = format!("U+{:04X} {}", u32::from(self.c), self.script);
        if let Some(ascii) = &self.looks_like {
            out.push_str(&format!(", looks like {}", Value::String(ascii.clone())));
        }
        out
    }
}

impl Lookalike {
    /// One line for a card: `command: "setup.ѕh" mixes Latin and Cyrillic: U+0455 Cyrillic,
    /// looks like "s"`. The word is quoted data: pass the line through the display
    /// function before showing it.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        if !self.path.is_empty() {
            out.push_str(&self.path);
            out.push_str(": ");
        }
        out.push_str(&Value::String(self.word.clone()).to_string());
        if self.scripts.is_empty() {
            out.push_str(" looks like ASCII: ");
        } else {
            out.push_str(" mixes ");
            out.push_str(&and_list(&self.scripts));
            out.push_str(": ");
        }
        let odd: Vec<String> = self.odd.iter().map(OddChar::describe).collect();
        out.push_str(&odd.join("; "));
        out
    }
}

fn and_list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [rest @ .., last] => format!("{} and {last}", rest.join(", ")),
    }
}

/// Every lookalike word in the strings of `value` (object keys included), in the order of
/// the value's sorted JSON.
pub fn lookalike_arguments(value: &Value) -> Vec<Lookalike> {
    lookalikes_in(value, "")
}

/// [`lookalike_arguments`] with every path under `path` (`arguments.command`).
pub fn lookalikes_in(value: &Value, path: &str) -> Vec<Lookalike> {
    let mut found = Vec::new();
    walk(value, path, &mut found);
    found
}

fn walk(value: &Value, path: &str, found: &mut Vec<Lookalike>) {
    match value {
        Value::String(text) => found.extend(lookalikes(text, path)),
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                walk(item, &format!("{path}[{i}]"), found);
            }
        }
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            for key in keys {
                let inner = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                found.extend(lookalikes(key, &format!("{inner} (the key)")));
                if let Some(item) = map.get(key) {
                    walk(item, &inner, found);
                }
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The lookalike words of `text` (split at whitespace), each reported under `path`.
pub fn lookalikes(text: &str, path: &str) -> Vec<Lookalike> {
    // ASCII punctuation around a word (`;`, quotes, brackets) is not part of what it says.
    text.split(char::is_whitespace)
        .map(|word| word.trim_matches(|c: char| c.is_ascii_punctuation()))
        .filter(|word| !word.is_ascii())
        .filter_map(|word| lookalike(word, path))
        .collect()
}

fn lookalike(word: &str, path: &str) -> Option<Lookalike> {
    // 1. The word mixes scripts (UTS #39: its resolved script set is empty).
    let mixed = AugmentedScriptSet::for_str(word).is_empty();
    // 2. A word of one script other than Latin written wholly in letters whose skeleton
    //    is ASCII (a whole-script confusable of an ASCII word).
    let main = main_script(word);
    let all_ascii_skeleton = skeleton(word).all(|c| c.is_ascii());
    let whole_word = !mixed && main != Some(Script::Latin) && all_ascii_skeleton;
    let cjk = main.is_some_and(is_cjk);
    let mut odd: Vec<OddChar> = Vec::new();
    for c in word.chars().filter(|c| !c.is_ascii()) {
        if odd.iter().any(|o| o.c == c) {
            continue;
        }
        let looks_like = ascii_lookalike(c);
        let foreign = mixed && !in_script(c, main);
        // 3. A character that looks like ASCII and is not a letter or digit of the
        //    identifier profile: a fullwidth letter, a small capital, a hyphen or a quote
        //    that is not the ASCII one.
        //    CJK text keeps its own punctuation (`，`, `：`).
        let odd_confusable = looks_like.is_some()
            && !(c.is_alphanumeric() && c.identifier_allowed())
            && !(cjk && is_cjk_punctuation(c));
        if foreign || odd_confusable || whole_word {
            odd.push(OddChar {
                c,
                script: script_name(c),
                looks_like,
            });
        }
    }
    if odd.is_empty() {
        return None;
    }
    let scripts = if mixed { scripts_of(word) } else { Vec::new() };
    Some(Lookalike {
        path: path.to_owned(),
        word: word.to_owned(),
        scripts,
        odd,
    })
}

fn script_of(c: char) -> Script {
    c.script()
}

fn script_name(c: char) -> &'static str {
    script_of(c).full_name()
}

/// The script a reader takes the word to be in: Latin when it has an ASCII letter, else
/// the script of its first letter of a real script.
fn main_script(word: &str) -> Option<Script> {
    if word.chars().any(|c| c.is_ascii_alphabetic()) {
        return Some(Script::Latin);
    }
    word.chars()
        .map(script_of)
        .find(|script| !matches!(*script, Script::Common | Script::Inherited))
}

fn is_cjk(script: Script) -> bool {
    matches!(
        script,
        Script::Han | Script::Hiragana | Script::Katakana | Script::Hangul | Script::Bopomofo
    )
}

/// CJK symbols and punctuation, and the fullwidth forms, where they are not letters.
fn is_cjk_punctuation(c: char) -> bool {
    !c.is_alphanumeric() && matches!(u32::from(c), 0x3000..=0x303f | 0xff00..=0xffef)
}

fn in_script(c: char, main: Option<Script>) -> bool {
    let set = AugmentedScriptSet::for_char(c);
    set.is_all() || main.is_none_or(|script| set.base.contains_script(script))
}

/// The ASCII text `c` can be taken for, by its UTS #39 skeleton.
fn ascii_lookalike(c: char) -> Option<String> {
    let mut buffer = [0_u8; 4];
    let shown: String = skeleton(c.encode_utf8(&mut buffer)).collect();
    (!shown.is_empty() && shown.is_ascii() && shown.chars().any(|s| !s.is_ascii_whitespace()))
        .then_some(shown)
}

fn scripts_of(word: &str) -> Vec<&'static str> {
    let mut names: Vec<&'static str> = Vec::new();
    for c in word.chars() {
        if AugmentedScriptSet::for_char(c).is_all() {
            continue;
        }
        let name = script_name(c);
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn described(text: &str) -> Vec<String> {
        lookalikes(text, "command")
            .iter()
            .map(Lookalike::describe)
            .collect()
    }

    #[test]
    fn words_that_mix_scripts_or_look_like_ascii_are_flagged_with_their_code_points() {
        let cases: [(&str, &[&str]); 7] = [
            (
                "sh setup.\u{455}h",
                &[
                    r#"command: "setup.ѕh" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like "s""#,
                ],
            ),
            (
                "sh setup.sh\u{1100}",
                &[r#"command: "setup.shᄀ" mixes Latin and Hangul: U+1100 Hangul"#],
            ),
            (
                "cat p\u{3bf}rt.txt",
                &[r#"command: "pοrt.txt" mixes Latin and Greek: U+03BF Greek, looks like "o""#],
            ),
            (
                "\u{441}\u{43e}\u{440} -la",
                &[
                    r#"command: "сор" looks like ASCII: U+0441 Cyrillic, looks like "c"; U+043E Cyrillic, looks like "o"; U+0440 Cyrillic, looks like "p""#,
                ],
            ),
            (
                "sh \u{ff53}etup.sh",
                &[r#"command: "ｓetup.sh" looks like ASCII: U+FF53 Latin, looks like "s""#],
            ),
            (
                "rm \u{2010}rf x",
                &[r#"command: "‐rf" looks like ASCII: U+2010 Common, looks like "-""#],
            ),
            (
                "ls Gr\u{fc}\u{df}e.\u{455}h",
                &[
                    r#"command: "Grüße.ѕh" mixes Latin and Cyrillic: U+0455 Cyrillic, looks like "s""#,
                ],
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(described(text), expected, "{text:?}");
        }
    }

    #[test]
    fn plain_text_of_one_script_is_not_flagged() {
        for text in [
            "echo kırmızı ışık yandı; ls Şişli/Ağaç/İğne",
            "Ünlü ördekler gölde yüzüyor",
            "echo привет мир >> заметки",
            "Съешь же ещё этих мягких французских булок",
            "echo 中文 你好，世界：笔记。",
            "echo こんにちは世界 カタカナと漢字",
            "echo 안녕하세요 韓國語",
            "Καλημέρα κόσμε",
            "ls -la /tmp && echo done",
            "price 3 € · naïve café résumé",
        ] {
            assert_eq!(lookalikes(text, ""), Vec::new(), "{text:?}");
        }
    }

    #[test]
    fn a_file_name_of_another_script_with_a_latin_extension_mixes_scripts() {
        let found = lookalikes("заметки.txt", "");
        assert_eq!(
            found.iter().map(Lookalike::describe).collect::<Vec<_>>(),
            [concat!(
                r#""заметки.txt" mixes Cyrillic and Latin: U+0437 Cyrillic; "#,
                r#"U+0430 Cyrillic, looks like "a"; U+043C Cyrillic; U+0435 Cyrillic, "#,
                r#"looks like "e"; U+0442 Cyrillic; U+043A Cyrillic; U+0438 Cyrillic"#
            )]
        );
    }

    #[test]
    fn every_string_and_key_of_the_arguments_is_read() {
        let arguments = json!({
            "command": "sh setup.\u{455}h",
            "env": {"P\u{410}TH": "/bin", "list": ["ok", "\u{441}\u{43e}\u{440}"]},
            "timeout_seconds": 30,
        });
        let paths: Vec<String> = lookalike_arguments(&arguments)
            .into_iter()
            .map(|found| found.path)
            .collect();
        assert_eq!(paths, ["command", "env.PАTH (the key)", "env.list[1]"]);
    }
}
