//! The five operations: their inputs drawn as `CoreWorkload.doTransaction*`
//! draws them, and their statements as the JDBC binding runs them.

use super::generator::random_field;
use super::schema::{Statements, KEY, TABLE};
use super::{Gen, OpKind, YcsbError, YcsbSpec};
use rusqlite::types::Value;
use rusqlite::{params_from_iter, Connection, OptionalExtension, Row};

/// What an update or read-modify-write writes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Values {
    /// Every field (`writeallfields=true`, `buildValues`).
    All(Vec<String>),
    /// One random field (`buildSingleValue`).
    One(usize, String),
}

/// One operation with its inputs drawn.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Op {
    /// `field`: `None` reads every field, `Some(i)` field `i` only.
    Read {
        key: String,
        field: Option<usize>,
    },
    Update {
        key: String,
        values: Values,
    },
    Insert {
        key: String,
        values: Vec<String>,
    },
    Scan {
        key: String,
        length: u32,
        field: Option<usize>,
    },
    ReadModifyWrite {
        key: String,
        field: Option<usize>,
        values: Values,
    },
}

/// How an operation went.
pub(crate) struct Done {
    pub found: bool,
    /// Records returned (scans).
    pub records: u64,
}

fn all_values(spec: &YcsbSpec, gen: &mut Gen) -> Vec<String> {
    (0..spec.fieldcount)
        .map(|_| random_field(&mut gen.values_rng, spec.fieldlength as usize))
        .collect()
}

fn write_values(spec: &YcsbSpec, gen: &mut Gen) -> Values {
    if spec.writeallfields {
        Values::All(all_values(spec, gen))
    } else {
        let field = gen.field(spec.fieldcount);
        Values::One(field, random_field(&mut gen.values_rng, spec.fieldlength as usize))
    }
}

fn read_field(spec: &YcsbSpec, gen: &mut Gen) -> Option<usize> {
    (!spec.readallfields).then(|| gen.field(spec.fieldcount))
}

impl Op {
    /// Draws the inputs of an operation of `kind`, in `CoreWorkload`'s order.
    pub fn generate(kind: OpKind, spec: &YcsbSpec, gen: &mut Gen) -> Result<Op, YcsbError> {
        Ok(match kind {
            OpKind::Read => {
                let key = spec.key(gen.keynum()?);
                Op::Read {
                    key,
                    field: read_field(spec, gen),
                }
            }
            OpKind::Update => {
                let key = spec.key(gen.keynum()?);
                Op::Update {
                    key,
                    values: write_values(spec, gen),
                }
            }
            OpKind::Insert => {
                // The insert sequence's next number: the record count.
                let key = spec.key(gen.records);
                Op::Insert {
                    key,
                    values: all_values(spec, gen),
                }
            }
            OpKind::Scan => {
                let key = spec.key(gen.keynum()?);
                let length = gen.scan_length(spec.maxscanlength);
                Op::Scan {
                    key,
                    length,
                    field: read_field(spec, gen),
                }
            }
            OpKind::ReadModifyWrite => {
                let key = spec.key(gen.keynum()?);
                let field = read_field(spec, gen);
                Op::ReadModifyWrite {
                    key,
                    field,
                    values: write_values(spec, gen),
                }
            }
        })
    }

    /// Runs the operation. `autocommit`: no transaction is open around it
    /// (a read-modify-write then brackets its two statements in one).
    pub fn execute(&self, conn: &Connection, sql: &Statements, autocommit: bool) -> Result<Done, YcsbError> {
        Ok(match self {
            Op::Read { key, field } => Done {
                found: read(conn, sql, key, *field)?,
                records: 0,
            },
            Op::Update { key, values } => Done {
                found: update(conn, sql, key, values)?,
                records: 0,
            },
            Op::Insert { key, values } => {
                let mut st = conn.prepare_cached(&sql.insert)?;
                let params = std::iter::once(key.as_str()).chain(values.iter().map(String::as_str));
                let n = st.execute(params_from_iter(params))?;
                assert_eq!(n, 1, "an INSERT of one row changed {n}");
                Done { found: true, records: 0 }
            }
            Op::Scan { key, length, field } => {
                let text = match field {
                    None => &sql.scan_all,
                    Some(i) => &sql.scan_field[*i],
                };
                let mut st = conn.prepare_cached(text)?;
                let mut rows = st.query((key.as_str(), *length as i64))?;
                let mut records = 0u64;
                while let Some(r) = rows.next()? {
                    take(r)?;
                    records += 1;
                }
                assert!(records <= *length as u64);
                Done {
                    found: records > 0,
                    records,
                }
            }
            Op::ReadModifyWrite { key, field, values } => {
                if autocommit {
                    conn.execute_batch("BEGIN")?;
                }
                let result = read(conn, sql, key, *field).and_then(|found| {
                    // YCSB updates only when the read succeeded.
                    Ok(found && update(conn, sql, key, values)?)
                });
                match (&result, autocommit) {
                    (Ok(_), true) => conn.execute_batch("COMMIT")?,
                    (Err(_), true) => {
                        let _ = conn.execute_batch("ROLLBACK");
                    }
                    _ => {}
                }
                Done {
                    found: result?,
                    records: 0,
                }
            }
        })
    }
}

/// Reads every column of a row, as the binding copies each field it returns.
fn take(r: &Row) -> rusqlite::Result<()> {
    for c in 0..r.as_ref().column_count() {
        let _: Value = r.get(c)?;
    }
    Ok(())
}

fn read(conn: &Connection, sql: &Statements, key: &str, field: Option<usize>) -> Result<bool, YcsbError> {
    let text = match field {
        None => &sql.read_all,
        Some(i) => &sql.read_field[i],
    };
    let mut st = conn.prepare_cached(text)?;
    let mut rows = st.query([key])?;
    let found = match rows.next()? {
        Some(r) => {
            take(r)?;
            true
        }
        None => false,
    };
    Ok(found)
}

fn update(conn: &Connection, sql: &Statements, key: &str, values: &Values) -> Result<bool, YcsbError> {
    let n = match values {
        Values::All(v) => {
            let mut st = conn.prepare_cached(&sql.update_all)?;
            st.execute(params_from_iter(v.iter().map(String::as_str).chain(std::iter::once(key))))?
        }
        Values::One(i, v) => conn.prepare_cached(&sql.update_field[*i])?.execute((v.as_str(), key))?,
    };
    // The binding reports NOT_FOUND unless exactly one row changed.
    Ok(n == 1)
}

/// Whether the record of `key` is in the table.
pub(crate) fn exists(conn: &Connection, key: &str) -> Result<bool, YcsbError> {
    let found = conn
        .prepare_cached(&format!("SELECT 1 FROM {TABLE} WHERE {KEY} = ?"))?
        .query_row([key], |_| Ok(()))
        .optional()?;
    Ok(found.is_some())
}
