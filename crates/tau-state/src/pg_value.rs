//! Values between rusqlite's and PostgreSQL's types: a parameter given as a SQLite value is
//! written as the type PostgreSQL inferred for its placeholder, and a column PostgreSQL
//! returns is read back as the SQLite value of the same meaning, so one `FromSql` reads
//! both stores.

use std::error::Error;

use bytes::BytesMut;
use rusqlite::types::Value;
use tokio_postgres::Row;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

type BoxError = Box<dyn Error + Sync + Send>;

/// A parameter, written as the type of its placeholder.
#[derive(Debug)]
pub(crate) struct PgValue<'a>(&'a Value);

impl<'a> PgValue<'a> {
    pub(crate) fn all(values: &'a [Value]) -> Vec<Self> {
        values.iter().map(PgValue).collect()
    }

    pub(crate) fn refs(values: &[Self]) -> Vec<&(dyn ToSql + Sync)> {
        values.iter().map(|v| v as &(dyn ToSql + Sync)).collect()
    }
}

fn mismatch(value: &Value, ty: &Type) -> BoxError {
    format!("a {:?} value cannot be written as {ty}", value.data_type()).into()
}

impl ToSql for PgValue<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Integer(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)?.to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)?.to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                #[allow(clippy::cast_precision_loss)]
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR | Type::UNKNOWN => i.to_string().to_sql(ty, out),
                _ => Err(mismatch(self.0, ty)),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                #[allow(clippy::cast_possible_truncation)]
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                _ => Err(mismatch(self.0, ty)),
            },
            Value::Text(text) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::UNKNOWN | Type::NAME | Type::BPCHAR => {
                    text.as_str().to_sql(ty, out)
                }
                _ => Err(mismatch(self.0, ty)),
            },
            Value::Blob(blob) => match *ty {
                Type::BYTEA => blob.as_slice().to_sql(ty, out),
                _ => Err(mismatch(self.0, ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        // Which types a value takes depends on the value: `to_sql` refuses the rest.
        true
    }

    to_sql_checked!();
}

/// A row's columns as SQLite's values: integers of every width as `Integer`, booleans as
/// 0 or 1, floats as `Real`, text as `Text`, bytes as `Blob`, NULL as `Null`.
pub(crate) fn read_row(row: &Row) -> Result<Vec<Value>, String> {
    (0..row.len())
        .map(|index| {
            let ty = row
                .columns()
                .get(index)
                .map(|column| column.type_().clone())
                .ok_or_else(|| format!("column {index} is missing"))?;
            let failed = |error: tokio_postgres::Error| format!("column {index}: {error}");
            let value = match ty {
                Type::INT8 => row
                    .try_get::<_, Option<i64>>(index)
                    .map_err(failed)?
                    .map(Value::Integer),
                Type::INT4 => row
                    .try_get::<_, Option<i32>>(index)
                    .map_err(failed)?
                    .map(|i| Value::Integer(i.into())),
                Type::INT2 => row
                    .try_get::<_, Option<i16>>(index)
                    .map_err(failed)?
                    .map(|i| Value::Integer(i.into())),
                Type::BOOL => row
                    .try_get::<_, Option<bool>>(index)
                    .map_err(failed)?
                    .map(|b| Value::Integer(b.into())),
                Type::FLOAT8 => row
                    .try_get::<_, Option<f64>>(index)
                    .map_err(failed)?
                    .map(Value::Real),
                Type::FLOAT4 => row
                    .try_get::<_, Option<f32>>(index)
                    .map_err(failed)?
                    .map(|f| Value::Real(f.into())),
                Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => row
                    .try_get::<_, Option<String>>(index)
                    .map_err(failed)?
                    .map(Value::Text),
                Type::BYTEA => row
                    .try_get::<_, Option<Vec<u8>>>(index)
                    .map_err(failed)?
                    .map(Value::Blob),
                other => {
                    return Err(format!(
                        "column {index} is of type {other}, which tau does not read"
                    ));
                }
            };
            Ok(value.unwrap_or(Value::Null))
        })
        .collect()
}
