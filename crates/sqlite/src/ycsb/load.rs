//! The load phase (`CoreWorkload.doInsert` for record numbers 0 to
//! `recordcount - 1`, in order), generated from the seed.

use super::generator::random_field;
use super::schema::{self, Statements};
use super::{stream, InsertOrder, YcsbError, YcsbSpec, STREAM_LOAD};
use rusqlite::{params, params_from_iter, Connection, OptionalExtension};

/// Records inserted per load transaction.
pub const LOAD_ROWS_PER_TX: u64 = 1_000;

/// Creates `usertable` (and `ycsb_load`) and inserts `spec.recordcount`
/// records, each with `fieldcount` random fields of `fieldlength` bytes.
/// Refuses a database that already has the tables.
pub fn load(conn: &Connection, spec: &YcsbSpec) -> Result<(), YcsbError> {
    spec.validate()?;
    let result = insert_all(conn, spec);
    if result.is_err() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    result
}

fn insert_all(conn: &Connection, spec: &YcsbSpec) -> Result<(), YcsbError> {
    let sql = Statements::new(spec.fieldcount);
    conn.execute_batch(&format!("BEGIN; {}", schema::create(spec.fieldcount)))?;
    conn.execute(
        "INSERT INTO ycsb_load VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        params![
            spec.recordcount as i64,
            spec.fieldcount,
            spec.fieldlength,
            spec.insertorder.name(),
            spec.zeropadding,
            spec.seed as i64
        ],
    )?;
    let mut rng = stream(spec.seed, STREAM_LOAD);
    let mut st = conn.prepare_cached(&sql.insert)?;
    for keynum in 0..spec.recordcount {
        let key = spec.key(keynum);
        let values: Vec<String> = (0..spec.fieldcount)
            .map(|_| random_field(&mut rng, spec.fieldlength as usize))
            .collect();
        st.execute(params_from_iter(
            std::iter::once(key.as_str()).chain(values.iter().map(String::as_str)),
        ))?;
        if (keynum + 1) % LOAD_ROWS_PER_TX == 0 {
            conn.execute_batch("COMMIT; BEGIN")?;
        }
    }
    conn.execute_batch("COMMIT")?;
    Ok(())
}

/// What [`load()`] recorded in the database (table `ycsb_load`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    pub recordcount: u64,
    pub fieldcount: u32,
    pub fieldlength: u32,
    pub insertorder: InsertOrder,
    pub zeropadding: u32,
    pub seed: u64,
}

impl Loaded {
    pub fn read(conn: &Connection) -> Result<Loaded, YcsbError> {
        let tables: i64 = conn.query_row(
            "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'ycsb_load'",
            [],
            |r| r.get(0),
        )?;
        let row = if tables == 0 {
            None
        } else {
            conn.query_row(
                "SELECT recordcount, fieldcount, fieldlength, insertorder, zeropadding, seed FROM ycsb_load",
                [],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)? as u64,
                        r.get(1)?,
                        r.get(2)?,
                        r.get::<_, String>(3)?,
                        r.get(4)?,
                        r.get::<_, i64>(5)? as u64,
                    ))
                },
            )
            .optional()?
        };
        let (recordcount, fieldcount, fieldlength, order, zeropadding, seed) =
            row.ok_or_else(|| YcsbError::Data("no YCSB load in this database (table ycsb_load missing or empty): load first".into()))?;
        let insertorder = [InsertOrder::Hashed, InsertOrder::Ordered]
            .into_iter()
            .find(|o| o.name() == order)
            .ok_or_else(|| YcsbError::Data(format!("ycsb_load: unknown insert order {order:?}")))?;
        Ok(Loaded {
            recordcount,
            fieldcount,
            fieldlength,
            insertorder,
            zeropadding,
            seed,
        })
    }

    /// Refuses a run whose record count, fields or key naming differ from the load's.
    pub fn matches(&self, spec: &YcsbSpec) -> Result<(), YcsbError> {
        if (self.recordcount, self.fieldcount, self.insertorder, self.zeropadding)
            != (spec.recordcount, spec.fieldcount, spec.insertorder, spec.zeropadding)
        {
            return Err(YcsbError::Spec(format!(
                "the database holds {} records of {} fields (keys {}, zero padding {}), the run asks for {} of {} ({}, {})",
                self.recordcount,
                self.fieldcount,
                self.insertorder.name(),
                self.zeropadding,
                spec.recordcount,
                spec.fieldcount,
                spec.insertorder.name(),
                spec.zeropadding
            )));
        }
        Ok(())
    }
}
