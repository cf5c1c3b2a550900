//! The SQL every table module speaks, the same over both stores: [`Sql`] runs a statement
//! on the embedded SQLite file or on PostgreSQL, [`Row`] reads a column as the same Rust
//! type either way. Statements are written once, in the dialect both accept (`?1`
//! placeholders, `ON CONFLICT`, `RETURNING`); the few that cannot be ask [`Sql::store`].
//! Parameters are rusqlite's (`params![..]`), turned into plain values for PostgreSQL;
//! columns read from PostgreSQL are turned into SQLite's values first, so every `FromSql`
//! a module uses reads a PostgreSQL row exactly as it reads a SQLite one.

use rusqlite::ToSql;
use rusqlite::types::{FromSql, Value, ValueRef};

use crate::error::StateError;
use crate::pg::PgConnection;

/// Which kind of store a statement runs on: for the few statements whose text differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum StoreKind {
    Sqlite,
    Postgres,
}

/// One connection, inside a read or a write transaction of [`crate::StateDb`].
#[derive(Clone, Copy)]
pub(crate) enum Sql<'a> {
    Sqlite(&'a rusqlite::Connection),
    Postgres(&'a PgConnection),
}

/// Parameters, in placeholder order (`?1` is the first).
pub(crate) type Params<'p> = &'p [&'p dyn ToSql];

impl Sql<'_> {
    pub(crate) fn store(&self) -> StoreKind {
        match self {
            Self::Sqlite(_) => StoreKind::Sqlite,
            Self::Postgres(_) => StoreKind::Postgres,
        }
    }

    /// Runs one statement; the number of rows it changed.
    pub(crate) fn execute(&self, sql: &str, params: Params<'_>) -> Result<usize, StateError> {
        match self {
            Self::Sqlite(c) => Ok(c.execute(sql, params)?),
            Self::Postgres(c) => c.execute(sql, &values(params)?),
        }
    }

    /// Runs statements without parameters, one after the other (a schema step).
    pub(crate) fn execute_batch(&self, sql: &str) -> Result<(), StateError> {
        match self {
            Self::Sqlite(c) => Ok(c.execute_batch(sql)?),
            Self::Postgres(c) => c.execute_batch(sql),
        }
    }

    /// The first row `sql` returns, read by `read`; an error when it returns none.
    pub(crate) fn query_row<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<T, StateError> {
        self.query_optional(sql, params, read)?
            .ok_or(StateError::Sqlite(rusqlite::Error::QueryReturnedNoRows))
    }

    /// The first row `sql` returns, read by `read`, when it returns one.
    pub(crate) fn query_optional<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        read: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Option<T>, StateError> {
        match self {
            Self::Sqlite(c) => {
                let mut statement = c.prepare_cached(sql)?;
                let mut rows = statement.query(params)?;
                match rows.next()? {
                    Some(row) => Ok(Some(read(&Row::Sqlite(row))?)),
                    None => Ok(None),
                }
            }
            Self::Postgres(c) => match c.query(sql, &values(params)?)?.first() {
                Some(row) => Ok(Some(read(&Row::Values(row))?)),
                None => Ok(None),
            },
        }
    }

    /// Whether `sql` returns any row.
    pub(crate) fn exists(&self, sql: &str, params: Params<'_>) -> Result<bool, StateError> {
        Ok(self.query_optional(sql, params, |_| Ok(()))?.is_some())
    }

    /// Every row `sql` returns, each read by `read`.
    pub(crate) fn query_map<T>(
        &self,
        sql: &str,
        params: Params<'_>,
        mut read: impl FnMut(&Row<'_>) -> rusqlite::Result<T>,
    ) -> Result<Vec<T>, StateError> {
        match self {
            Self::Sqlite(c) => {
                let mut statement = c.prepare_cached(sql)?;
                let rows = statement.query_map(params, |row| read(&Row::Sqlite(row)))?;
                Ok(rows.collect::<Result<Vec<_>, _>>()?)
            }
            Self::Postgres(c) => c
                .query(sql, &values(params)?)?
                .iter()
                .map(|row| read(&Row::Values(row)).map_err(StateError::from))
                .collect(),
        }
    }
}

/// One row of a result, from either store.
pub(crate) enum Row<'a> {
    Sqlite(&'a rusqlite::Row<'a>),
    /// A PostgreSQL row, its columns turned into SQLite's values.
    Values(&'a [Value]),
}

impl Row<'_> {
    /// Column `index` (from 0) read as `T`; the first type parameter is kept so the
    /// rusqlite spelling `row.get::<_, i64>(0)` reads the same.
    pub(crate) fn get<I: ColumnIndex, T: FromSql>(&self, index: I) -> rusqlite::Result<T> {
        let index = index.position();
        match self {
            Self::Sqlite(row) => row.get(index),
            Self::Values(values) => {
                let value = values
                    .get(index)
                    .ok_or(rusqlite::Error::InvalidColumnIndex(index))?;
                T::column_result(ValueRef::from(value)).map_err(|error| match error {
                    rusqlite::types::FromSqlError::InvalidType => {
                        rusqlite::Error::InvalidColumnType(index, String::new(), value.data_type())
                    }
                    other => rusqlite::Error::FromSqlConversionFailure(
                        index,
                        value.data_type(),
                        Box::new(other),
                    ),
                })
            }
        }
    }
}

/// A column's position; a trait of one impl so that `row.get(0)` infers `usize`.
pub(crate) trait ColumnIndex {
    fn position(self) -> usize;
}

impl ColumnIndex for usize {
    fn position(self) -> usize {
        self
    }
}

/// The parameters as plain values, for PostgreSQL.
pub(crate) fn values(params: Params<'_>) -> Result<Vec<Value>, StateError> {
    use rusqlite::types::ToSqlOutput;
    params
        .iter()
        .map(|param| match param.to_sql()? {
            ToSqlOutput::Borrowed(value) => Ok(Value::from(value)),
            ToSqlOutput::Owned(value) => Ok(value),
            other => Err(StateError::unreadable(
                "a parameter",
                format!("{other:?} has no PostgreSQL form"),
            )),
        })
        .collect()
}

/// `sql` with its `?N` placeholders written `$N`, as PostgreSQL numbers them; a `?` in a
/// string literal or a quoted name is left as it is.
pub(crate) fn numbered_placeholders(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut quote: Option<char> = None;
    for c in sql.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '?' => {
                out.push('$');
                continue;
            }
            Some(_) | None => {}
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn placeholders_are_numbered_outside_quotes_only() {
        assert_eq!(
            numbered_placeholders("SELECT a FROM t WHERE b = ?1 AND c LIKE '?2' AND \"?x\" = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c LIKE '?2' AND \"?x\" = $12"
        );
        assert_eq!(
            numbered_placeholders("VALUES ('it''s ?', ?2)"),
            "VALUES ('it''s ?', $2)"
        );
    }
}
