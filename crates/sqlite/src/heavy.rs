//! SQLite's heavy statements, the ones a user meets within minutes of
//! running ordinary SQLite on a device: a transaction of many inserts into
//! a table with three indexes, CREATE INDEX over a large table and five of
//! them in one transaction, ORDER BY over an unindexed table larger than the
//! cache (sorter spills to temporary files), VACUUM, and DELETE of a whole
//! large table in one transaction.
//!
//! Each statement runs on one connection, in this order, on the database a
//! load made (`t`: `rows` rows of 100 to 300 bytes, loaded in transactions
//! of [`LOAD_ROWS_PER_TX`] rows): ORDER BY first (no index yet), then the
//! indexes, the inserts into a table of their own (`u`), VACUUM, DELETE.
//! After each, `PRAGMA integrity_check` and the rows the statement must
//! leave are checked. A statement that fails is reported with SQLite's
//! error and the VFS's reason ([`crate::Stack::last_error`]), its
//! transaction rolled back, and the next statement runs. Values come from
//! ChaCha8 seeded with `seed`: a run is the same every time.

use crate::{Stack, StackError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{params, Connection};
use serde::Serialize;
use std::time::Instant;

/// Rows per transaction of the load (small enough for every protocol's
/// transaction: the load is not what is measured).
pub const LOAD_ROWS_PER_TX: u32 = 2_000;

/// The statements, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Statement {
    /// `SELECT * FROM t ORDER BY c` over the unindexed table.
    OrderBy,
    /// `CREATE INDEX` over `t`.
    CreateIndex,
    /// Five `CREATE INDEX` over `t` in one transaction.
    CreateIndex5,
    /// One transaction of `insert_rows` inserts into a table with three indexes.
    Insert3,
    /// `VACUUM`.
    Vacuum,
    /// `DELETE FROM t` in one transaction.
    DeleteAll,
}

impl Statement {
    pub const ALL: [Statement; 6] = [
        Statement::OrderBy,
        Statement::CreateIndex,
        Statement::CreateIndex5,
        Statement::Insert3,
        Statement::Vacuum,
        Statement::DeleteAll,
    ];

    /// The column name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Statement::OrderBy => "order-by",
            Statement::CreateIndex => "create-index",
            Statement::CreateIndex5 => "5-indexes-1-tx",
            Statement::Insert3 => "insert-3-idx",
            Statement::Vacuum => "vacuum",
            Statement::DeleteAll => "delete-all",
        }
    }
}

/// The suite's sizes.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct HeavySpec {
    /// Rows of `t` (the 100,000).
    pub rows: u32,
    /// Inserts of the one transaction into `u` (the 50,000).
    pub insert_rows: u32,
    /// SQLite page size (4,096: SQLite's default, what a user gets).
    pub page_size: usize,
    pub seed: u64,
}

impl Default for HeavySpec {
    fn default() -> HeavySpec {
        HeavySpec {
            rows: 100_000,
            insert_rows: 50_000,
            page_size: 4096,
            seed: 1,
        }
    }
}

/// What one statement did.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub statement: Statement,
    /// None: it completed; else SQLite's error and the VFS's reason.
    pub error: Option<String>,
    /// The rows it must leave, as counted after it (ORDER BY: rows returned
    /// in order; the index statements: indexes on `t`).
    pub rows: i64,
    pub rows_expected: i64,
    /// `PRAGMA integrity_check` after it.
    pub integrity: String,
    /// Wall seconds of the statement (not the checks).
    pub wall_s: f64,
    /// The same count before it (what a failed statement must leave).
    pub rows_before: i64,
    /// It failed, and the rows and integrity were read on a new connection
    /// (as a user would reopen the database: the failed one may hold a hot
    /// journal it cannot roll back while the device is full).
    pub reopened: bool,
}

impl Outcome {
    /// Completed, with the expected rows and an intact database.
    pub fn ok(&self) -> bool {
        self.error.is_none() && self.rows == self.rows_expected && self.integrity == "ok"
    }

    /// Failed with SQLITE_FULL, and the database reopened is intact and as
    /// it was before the statement: nothing was lost.
    pub fn full_intact(&self) -> bool {
        self.error.as_deref().is_some_and(|e| e.starts_with("database or disk is full"))
            && self.integrity == "ok"
            && self.rows == self.rows_before
    }
}

/// The suite on one stack: the load, then each statement.
/// `Err`: the database could not be opened (a journal mode the protocol
/// refuses: the message says why) or loaded.
/// The device the heavy statements run on for a protocol of NAND needs
/// `needs` unless told otherwise: the README's image, `jasmine` at 16
/// blocks a plane; for a protocol that needs SLC cells
/// (`NandNeeds::full_preset`), `flagcommit` with as many blocks a plane as
/// give it the same raw capacity.
pub fn device_preset(needs: txftl_ftl::NandNeeds) -> txftl_nand::Preset {
    let mut image = txftl_nand::preset("jasmine").expect("a preset");
    image.geometry.blocks_per_plane = 16;
    let name = needs.full_preset();
    let mut p = txftl_nand::preset(name).expect("a preset");
    if p.name != image.name {
        let per_block_plane = p.geometry.capacity_bytes() / p.geometry.blocks_per_plane as u64;
        p.geometry.blocks_per_plane = image.geometry.capacity_bytes().div_ceil(per_block_plane) as u32;
    } else {
        p = image;
    }
    p
}

pub fn run(stack: &Stack, spec: &HeavySpec, mut each: impl FnMut(&Outcome)) -> Result<Vec<Outcome>, StackError> {
    let mut conn = stack.open("heavy.db", spec.page_size)?;
    load(&conn, spec)?;
    let mut out = Vec::new();
    for s in Statement::ALL {
        let before = after(&conn, s).unwrap_or(-1);
        let mut o = one(stack, &conn, spec, s);
        o.rows_before = before;
        if o.error.is_some() {
            drop(conn);
            o.reopened = true;
            match stack.open("heavy.db", spec.page_size) {
                Ok(c) => conn = c,
                Err(e) => {
                    // The database cannot be opened again on this device:
                    // the statements after this one cannot run.
                    let why = stack.last_error().map(|w| format!(" ({w})")).unwrap_or_default();
                    o.rows = -1;
                    o.integrity = format!("cannot reopen the database: {e}{why}");
                    each(&o);
                    out.push(o);
                    return Ok(out);
                }
            }
            o.rows = after(&conn, s).unwrap_or(-1);
            o.integrity = integrity(&conn);
        }
        each(&o);
        out.push(o);
    }
    Ok(out)
}

/// `t(a INTEGER, b INTEGER, c TEXT)`: a random, b the row number, c 100 to
/// 300 random letters (the crash test's heavy scenario loads its image with
/// it too: `crash::heavy`).
pub fn load(conn: &Connection, spec: &HeavySpec) -> Result<(), StackError> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
    conn.execute_batch("CREATE TABLE t(a INTEGER, b INTEGER, c TEXT)")?;
    let mut i = 0;
    while i < spec.rows {
        conn.execute_batch("BEGIN")?;
        {
            let mut ins = conn.prepare_cached("INSERT INTO t VALUES(?1, ?2, ?3)")?;
            for _ in 0..LOAD_ROWS_PER_TX.min(spec.rows - i) {
                ins.execute(params![rng.gen::<i32>(), i, text(&mut rng, 100, 300)])?;
                i += 1;
            }
        }
        conn.execute_batch("COMMIT")?;
    }
    Ok(())
}

fn text(rng: &mut ChaCha8Rng, min: usize, max: usize) -> String {
    let n = rng.gen_range(min..=max);
    (0..n).map(|_| rng.gen_range(b'a'..=b'z') as char).collect()
}

fn one(stack: &Stack, conn: &Connection, spec: &HeavySpec, s: Statement) -> Outcome {
    let t = Instant::now();
    let r = statement(conn, spec, s);
    let wall_s = t.elapsed().as_secs_f64();
    let error = r.as_ref().err().map(|e| {
        let why = stack.last_error().map(|w| format!(" ({w})")).unwrap_or_default();
        format!("{e}{why}")
    });
    if !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    let (rows, rows_expected) = match r {
        Ok(returned) => (returned.unwrap_or_else(|| after(conn, s).unwrap_or(-1)), expected(spec, s)),
        Err(_) => (after(conn, s).unwrap_or(-1), expected(spec, s)),
    };
    Outcome {
        statement: s,
        error,
        rows,
        rows_expected,
        integrity: integrity(conn),
        wall_s,
        rows_before: -1,
        reopened: false,
    }
}

fn integrity(conn: &Connection) -> String {
    conn.query_row("PRAGMA integrity_check", [], |r| r.get::<_, String>(0))
        .unwrap_or_else(|e| format!("integrity_check failed: {e}"))
}

/// [`Statement::OrderBy`]'s query.
pub const ORDER_BY_SQL: &str = "SELECT a, b, c FROM t ORDER BY c";

/// [`Statement::CreateIndex`]'s index.
pub const ONE_INDEX_SQL: &str = "CREATE INDEX t_a ON t(a)";

/// [`Statement::CreateIndex5`]'s indexes (run in one transaction). Keys of
/// integers and 8-letter prefixes: the indexes stay a fraction of the table,
/// so VACUUM (a copy of the whole database) fits the README's image on every
/// protocol.
pub const FIVE_INDEXES_SQL: &str = "CREATE INDEX t_b ON t(b); CREATE INDEX t_ab ON t(a, b); CREATE INDEX t_ba ON t(b, a); \
     CREATE INDEX t_c8 ON t(substr(c, 1, 8)); CREATE INDEX t_c8a ON t(substr(c, 1, 8), a)";

/// [`Statement::Insert3`]'s table: the three single-column indexes.
pub const U_SCHEMA_SQL: &str =
    "CREATE TABLE u(a INTEGER, b INTEGER, c TEXT); CREATE INDEX u_a ON u(a); CREATE INDEX u_b ON u(b); CREATE INDEX u_c ON u(c)";

/// [`Statement::Insert3`]'s rows: `spec.insert_rows` inserts into `u` (a
/// random, b the row number, c 10 to 60 random letters), in the caller's
/// transaction.
pub fn insert_u(conn: &Connection, spec: &HeavySpec) -> rusqlite::Result<()> {
    let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0x5EED);
    let mut ins = conn.prepare_cached("INSERT INTO u VALUES(?1, ?2, ?3)")?;
    for i in 0..spec.insert_rows {
        ins.execute(params![rng.gen::<i32>(), i, text(&mut rng, 10, 60)])?;
    }
    Ok(())
}

/// Runs statement `s`; ORDER BY returns the rows it read in order.
fn statement(conn: &Connection, spec: &HeavySpec, s: Statement) -> Result<Option<i64>, rusqlite::Error> {
    match s {
        Statement::OrderBy => {
            let mut q = conn.prepare(ORDER_BY_SQL)?;
            let mut rows = q.query([])?;
            let (mut n, mut last) = (0i64, String::new());
            while let Some(r) = rows.next()? {
                let c: String = r.get(2)?;
                if c >= last {
                    n += 1; // rows out of order are not counted: the check then fails
                }
                last = c;
            }
            Ok(Some(n))
        }
        Statement::CreateIndex => conn.execute_batch(ONE_INDEX_SQL).map(|_| None),
        Statement::CreateIndex5 => conn.execute_batch(&format!("BEGIN; {FIVE_INDEXES_SQL}; COMMIT")).map(|_| None),
        Statement::Insert3 => {
            conn.execute_batch(U_SCHEMA_SQL)?;
            conn.execute_batch("BEGIN")?;
            insert_u(conn, spec)?;
            conn.execute_batch("COMMIT").map(|_| None)
        }
        Statement::Vacuum => conn.execute_batch("VACUUM").map(|_| None),
        Statement::DeleteAll => conn.execute_batch("BEGIN; DELETE FROM t; COMMIT").map(|_| None),
    }
}

/// What the statement must leave.
fn expected(spec: &HeavySpec, s: Statement) -> i64 {
    match s {
        Statement::OrderBy | Statement::Vacuum => spec.rows as i64,
        Statement::CreateIndex => 1,
        Statement::CreateIndex5 => 6,
        Statement::Insert3 => spec.insert_rows as i64,
        Statement::DeleteAll => 0,
    }
}

/// The rows counted after statement `s`.
fn after(conn: &Connection, s: Statement) -> Result<i64, rusqlite::Error> {
    let sql = match s {
        Statement::OrderBy | Statement::Vacuum | Statement::DeleteAll => "SELECT count(*) FROM t",
        Statement::CreateIndex | Statement::CreateIndex5 => "SELECT count(*) FROM sqlite_schema WHERE type = 'index' AND tbl_name = 't'",
        Statement::Insert3 => "SELECT count(*) FROM u",
    };
    conn.query_row(sql, [], |r| r.get(0))
}
