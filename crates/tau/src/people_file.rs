//! `[[people]]` entries written into and taken out of `tau.toml` as text, so every other
//! byte of the file (its comments, its order, its spacing) stays as the person wrote it.
//! Each edit is checked by reading the whole file back: what it holds afterwards must be
//! exactly the people before, with the one added or without the one removed.

use std::io::Write;
use std::path::Path;

use tau_core::PersonDef;

/// The `[[people]]` block for `person`, as `add` appends it.
pub(crate) fn block(person: &PersonDef) -> String {
    let mut text = format!("[[people]]\nname = {}\n", quoted(&person.name));
    if let Some(id) = person.telegram {
        text.push_str(&format!("telegram = {id}\n"));
    }
    if let Some(user) = &person.unix_user {
        text.push_str(&format!("unix_user = {}\n", quoted(user)));
    }
    if let Some(language) = &person.language {
        text.push_str(&format!("language = {}\n", quoted(language)));
    }
    text
}

fn quoted(text: &str) -> String {
    toml::Value::String(text.to_owned()).to_string()
}

/// `text` with `person`'s block appended (a blank line before it).
pub(crate) fn with_person(text: &str, person: &PersonDef) -> String {
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str(&block(person));
    out
}

/// Whether a line opens a table (`[x]`, `[[x]]`), which ends the block before it.
fn is_header(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

fn is_people_header(line: &str) -> bool {
    let line = line.trim();
    let line = line
        .split_once('#')
        .map_or(line, |(head, _)| head)
        .trim_end();
    line == "[[people]]"
}

/// `text` without the `[[people]]` block named `name` (and the blank lines before it); `None` when no block of the file is plainly that person's.
pub(crate) fn without_person(text: &str, name: &str) -> Option<String> {
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut start = None;
    for (index, line) in lines.iter().enumerate() {
        if !is_people_header(line) {
            continue;
        }
        let end = lines
            .iter()
            .skip(index + 1)
            .position(|l| is_header(l))
            .map_or(lines.len(), |offset| index + 1 + offset);
        let body: String = lines.get(index + 1..end)?.concat();
        let named = toml::from_str::<toml::Table>(&body)
            .ok()
            .and_then(|t| t.get("name").and_then(|v| v.as_str().map(str::to_owned)));
        if named.as_deref() == Some(name) {
            start = Some((index, end));
            break;
        }
    }
    let (mut from, mut to) = start?;
    // The blank lines after it separate what follows: they stay, those before it go.
    while to > from + 1 && lines.get(to - 1).is_some_and(|l| l.trim().is_empty()) {
        to -= 1;
    }
    while from > 0 && lines.get(from - 1).is_some_and(|l| l.trim().is_empty()) {
        from -= 1;
    }
    let mut out: String = lines.get(..from)?.concat();
    out.push_str(&lines.get(to..)?.concat());
    Some(out)
}

/// The people `text` names, when it reads as tau's config.
pub(crate) fn people_in(text: &str) -> Option<Vec<PersonDef>> {
    #[derive(serde::Deserialize)]
    struct OnlyPeople {
        #[serde(default)]
        people: Vec<PersonDef>,
    }
    toml::from_str::<OnlyPeople>(text).ok().map(|p| p.people)
}

/// Replaces `path` with `text` in one step (a file beside it, renamed over it), keeping
/// the file's mode.
pub(crate) fn replace(path: &Path, text: &str) -> anyhow::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.write_all(text.as_bytes())?;
    if let Ok(meta) = std::fs::metadata(path) {
        std::fs::set_permissions(file.path(), meta.permissions())?;
    }
    file.as_file().sync_all()?;
    file.persist(path).map_err(|e| e.error)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn person(name: &str, telegram: Option<i64>) -> PersonDef {
        PersonDef {
            name: name.into(),
            telegram,
            unix_user: None,
            language: None,
        }
    }

    const FILE: &str = "# my tau\n[model]\nspec = \"replay:x.json\"  # the model\n\n[[people]]\nname = \"ana\"\ntelegram = 11\n\n[[people]] # the flatmate\nname = \"bob\"\n\n[ui]\nlanguage = \"en\"\n";

    #[test]
    fn adding_appends_and_keeps_every_other_byte() {
        let added = with_person(FILE, &person("cyd", Some(33)));
        assert_eq!(
            added,
            format!("{FILE}\n[[people]]\nname = \"cyd\"\ntelegram = 33\n")
        );
        assert_eq!(
            people_in(&added).unwrap(),
            vec![
                person("ana", Some(11)),
                person("bob", None),
                person("cyd", Some(33))
            ]
        );
        assert_eq!(
            with_person("", &person("ana", None)),
            "[[people]]\nname = \"ana\"\n"
        );
        assert_eq!(
            with_person("[ui]\nlanguage = \"en\"", &person("ana", None)),
            "[ui]\nlanguage = \"en\"\n\n[[people]]\nname = \"ana\"\n"
        );
    }

    #[test]
    fn removing_takes_out_that_block_alone() {
        assert_eq!(
            without_person(FILE, "bob").unwrap(),
            "# my tau\n[model]\nspec = \"replay:x.json\"  # the model\n\n[[people]]\nname = \"ana\"\ntelegram = 11\n\n[ui]\nlanguage = \"en\"\n"
        );
        assert_eq!(
            without_person(FILE, "ana").unwrap(),
            "# my tau\n[model]\nspec = \"replay:x.json\"  # the model\n\n[[people]] # the flatmate\nname = \"bob\"\n\n[ui]\nlanguage = \"en\"\n"
        );
        assert_eq!(without_person(FILE, "cyd"), None);
    }
}
