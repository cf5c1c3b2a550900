//! What a conversation is called: the name a person gave it (`tau sessions rename`,
//! TauBar's rename), else its first prompt's first line, cut short. Every channel lists
//! sessions by it, and search looks in it and in the messages. Titles are the person's
//! (or the first prompt's) text: channels show them through the display function.

use rusqlite::params;
use tau_protocol::SessionId;

use crate::error::{StateError, TitleError};
use crate::handles::Sessions;
use crate::sql::StoreKind;

/// The longest title taken from a first prompt, in characters (then `…`).
pub const TITLE_CHARS: usize = 60;

/// The longest title a person may give, in characters.
pub const MAX_TITLE_CHARS: usize = 120;

/// Step 7 of the schema: a session's own title, when a person named it.
pub(crate) const SESSION_TITLE: &str = "ALTER TABLE sessions ADD COLUMN title TEXT;";

/// [`Sessions::search_sessions`] on PostgreSQL: a message body is JSON text there too, read
/// as JSON where it is (`pg_input_is_valid` is PostgreSQL 16's; a body tau did not write as
/// an object is left out before the cast), its `content` blocks' `text` matched with
/// `ILIKE` (SQLite's `LIKE` ignores the case of ASCII letters).
const SEARCH_POSTGRES: &str = "SELECT s.id FROM sessions s
     WHERE s.title ILIKE ?1 ESCAPE '\\'
        OR EXISTS (
            SELECT 1
            FROM (SELECT body::jsonb AS body FROM messages
                  WHERE session_id = s.id AND body LIKE '{%}') AS m,
                 jsonb_array_elements(CASE jsonb_typeof(m.body -> 'content')
                                      WHEN 'array' THEN m.body -> 'content'
                                      ELSE jsonb_build_array(m.body -> 'content') END) AS block
            WHERE jsonb_typeof(block) = 'object' AND block ->> 'text' ILIKE ?1 ESCAPE '\\')
     ORDER BY s.updated_at DESC, s.id";

/// The title a first prompt gives: its first non-empty line, trimmed, cut at
/// [`TITLE_CHARS`] with `…`; `None` for a prompt of blanks.
pub fn title_from_prompt(prompt: &str) -> Option<String> {
    let line = prompt.lines().map(str::trim).find(|l| !l.is_empty())?;
    Some(tau_protocol::ellipsized(line, TITLE_CHARS))
}

/// A title a person typed, made one line and trimmed; `Err` with why it is not one.
fn checked_title(title: &str) -> Result<String, StateError> {
    let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.is_empty() {
        return Err(TitleError::Empty.into());
    }
    if one_line.chars().count() > MAX_TITLE_CHARS {
        return Err(TitleError::TooLong {
            max: MAX_TITLE_CHARS,
        }
        .into());
    }
    if one_line.chars().any(char::is_control) {
        return Err(TitleError::ControlCharacters.into());
    }
    Ok(one_line)
}

/// `%`, `_` and `\` match themselves in a LIKE pattern with `ESCAPE '\'`.
fn like_pattern(text: &str) -> String {
    let mut pattern = String::with_capacity(text.len() + 2);
    pattern.push('%');
    for c in text.chars() {
        if matches!(c, '%' | '_' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

impl Sessions {
    /// What `id` is called: the title a person gave it, else its first prompt's; `None`
    /// when it has neither (an empty session).
    pub fn session_title(&self, id: &SessionId) -> Result<Option<String>, StateError> {
        let given: Option<String> = self.db.read(|c| {
            Ok(c.query_optional(
                "SELECT title FROM sessions WHERE id = ?1",
                params![id.as_str()],
                |row| row.get(0),
            )?
            .flatten())
        })?;
        if given.is_some() {
            return Ok(given);
        }
        Ok(self
            .first_prompt(id)?
            .as_deref()
            .and_then(title_from_prompt))
    }

    /// Names `id` (`None`: back to its first prompt's title). False when there is no such
    /// session; an empty or overlong title, or one with control characters, is an error.
    pub fn rename_session(&self, id: &SessionId, title: Option<&str>) -> Result<bool, StateError> {
        let title = title.map(checked_title).transpose()?;
        self.db.write(|tx| {
            Ok(tx.execute(
                "UPDATE sessions SET title = ?2 WHERE id = ?1",
                params![id.as_str(), title],
            )? == 1)
        })
    }

    /// The sessions whose title, or the text of any message (the person's prompts, the
    /// model's answers; not tool calls or results), holds `text` (ASCII letters in any
    /// case), most recently updated first.
    pub fn search_sessions(&self, text: &str) -> Result<Vec<SessionId>, StateError> {
        let text = text.trim();
        if text.is_empty() {
            return Ok(Vec::new());
        }
        let ids: Vec<String> = self.db.read(|c| {
            if c.store() == StoreKind::Postgres {
                return c.query_map(SEARCH_POSTGRES, params![like_pattern(text)], |row| {
                    row.get(0)
                });
            }
            c.query_map(
                "SELECT s.id FROM sessions s
                 WHERE s.title LIKE ?1 ESCAPE '\\'
                    OR EXISTS (
                        SELECT 1
                        FROM (SELECT body FROM messages
                              WHERE session_id = s.id AND json_valid(body)) AS m,
                             json_each(m.body, '$.content') AS block
                        WHERE json_extract(block.value, '$.text') LIKE ?1 ESCAPE '\\')
                 ORDER BY s.updated_at DESC, s.id",
                params![like_pattern(text)],
                |row| row.get(0),
            )
        })?;
        Ok(ids
            .iter()
            .filter_map(|id| SessionId::parse(id).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(db: &Sessions, id: &str, prompt: &str) -> SessionId {
        let id = SessionId::parse(id).unwrap_or_else(|e| panic!("{e}"));
        db.ensure_session(&id).unwrap_or_else(|e| panic!("{e}"));
        let message = json!({"role": "user", "content": [{"text": prompt}]});
        db.append_message(&id, 0, &message.to_string())
            .unwrap_or_else(|e| panic!("{e}"));
        id
    }

    #[test]
    fn a_title_comes_from_the_first_prompt_until_a_person_names_the_session() {
        for dir in crate::test_stores::stores() {
            let db = dir.open().sessions();
            let id = stored(&db, "s1", "\n  Water the plants at 7\nand the lawn");
            assert_eq!(
                db.session_title(&id).ok().flatten().as_deref(),
                Some("Water the plants at 7")
            );
            assert_eq!(
                db.rename_session(&id, Some("  Garden \n chores ")).ok(),
                Some(true)
            );
            assert_eq!(
                db.session_title(&id).ok().flatten().as_deref(),
                Some("Garden chores")
            );
            let too_long = "x".repeat(MAX_TITLE_CHARS + 1);
            for (bad, why, words) in [
                ("", TitleError::Empty, "a title cannot be empty"),
                ("   ", TitleError::Empty, "a title cannot be empty"),
                (
                    too_long.as_str(),
                    TitleError::TooLong {
                        max: MAX_TITLE_CHARS,
                    },
                    "a title is at most 120 characters",
                ),
                (
                    "a\u{7}b",
                    TitleError::ControlCharacters,
                    "a title cannot hold control characters",
                ),
            ] {
                match db.rename_session(&id, Some(bad)) {
                    Err(StateError::Title(found)) => {
                        assert_eq!(
                            (found, found.to_string()),
                            (why, words.to_owned()),
                            "{bad:?}"
                        );
                    }
                    other => panic!("{bad:?}: {other:?}"),
                }
            }
            assert_eq!(db.rename_session(&id, None).ok(), Some(true));
            assert_eq!(
                db.session_title(&id).ok().flatten().as_deref(),
                Some("Water the plants at 7")
            );
            let unknown = SessionId::parse("nope").unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(db.rename_session(&unknown, Some("x")).ok(), Some(false));
            let empty = SessionId::parse("empty").unwrap_or_else(|e| panic!("{e}"));
            db.ensure_session(&empty).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(db.session_title(&empty).ok(), Some(None));
        }
    }

    #[test]
    fn a_long_first_line_is_cut_with_an_ellipsis() {
        let long = "a".repeat(TITLE_CHARS + 5);
        let title = title_from_prompt(&long).unwrap_or_default();
        assert_eq!(title.chars().count(), TITLE_CHARS + 1);
        assert!(title.ends_with('…'));
        assert_eq!(title_from_prompt(" \n\t\n"), None);
    }

    #[test]
    fn search_finds_titles_and_messages_and_takes_wildcards_literally() {
        for dir in crate::test_stores::stores() {
            let db = dir.open().sessions();
            let plants = stored(&db, "s1", "water the plants");
            let quoted = stored(&db, "s2", r#"say "100% done" \o/"#);
            let named = stored(&db, "s3", "something else");
            db.rename_session(&named, Some("Kitchen lights"))
                .unwrap_or_else(|e| panic!("{e}"));
            let found = |text: &str| db.search_sessions(text).unwrap_or_default();
            assert_eq!(found("PLANTS"), vec![plants]);
            assert_eq!(found("kitchen"), vec![named]);
            assert_eq!(found("100% done"), vec![quoted.clone()]);
            assert_eq!(found(r#""100"#), vec![quoted.clone()]);
            assert_eq!(found(r"\o/"), vec![quoted]);
            assert_eq!(found("%"), found("100%"));
            // The JSON a message is stored as is not searched, only its text.
            assert!(found("role").is_empty());
            assert!(found("content").is_empty());
            assert!(found("  ").is_empty());
            assert!(found("nothing like it").is_empty());
        }
    }
}
