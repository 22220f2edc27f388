//! The heavy statements' scenario of the crash test (`txftl sqlcrash
//! --workload heavy`): SQLite's heavy statements ([`crate::heavy`]) as
//! transactions on one connection, cut at every flash operation.
//!
//! The image every run starts from: `heavy.db` holding `t(a INTEGER, b
//! INTEGER, c TEXT)` with `rows` rows ([`ROWS_DEFAULT`]: a random integer,
//! the row number, 100 to 300 random letters, from ChaCha8 seeded with the
//! seed, as [`crate::heavy::load`] makes them), loaded through the VFS in the
//! mode under test, the stack then cleanly closed.
//!
//! The scenario, in the order of [`STEPS`], each its own transaction:
//! `CREATE INDEX` on `t`; five `CREATE INDEX` in one transaction; `SELECT *
//! FROM t ORDER BY c` (read-only) with a 2-page cache; one transaction that
//! creates `u(a, b, c)` with three single-column indexes and inserts
//! `insert_rows` rows ([`INSERT_ROWS_DEFAULT`]) into it; `VACUUM`; `DELETE
//! FROM t` in one transaction. `wal_autocheckpoint` is [`WAL_AUTOCHECKPOINT`]
//! pages, so WAL checkpoints run after each large commit inside the scenario
//! (on SW-WAL they remap).
//!
//! Why these sizes: the ORDER BY's sorter must spill to a temporary file
//! (served from host memory by the VFS, `memfile.rs`), and SQLite's sorter
//! keeps in memory at least `SQLITE_SORTER_PMASZ` (250) pages' worth of
//! records whatever `cache_size` says (`mnPmaSize` in vdbesort.c; a small
//! `cache_size` brings its bound down to that minimum, the default 2 MB
//! cache would keep it above the whole table): 128,000 bytes on 512-byte
//! pages, so `t` must hold more than that. 640 rows of 100 to 300 letters
//! (about 140 KB of sort records) spill once. On the crash geometry
//! ([`super::ScenarioSize::heavy`]) the database is about 570 pages, and
//! each writing statement is one device transaction of more pages than
//! Möbius's inode lists there ([`MOBIUS_ITEMS_MAX`], its `items-max`; 52
//! fit a 512-byte inode): about 19 (CREATE INDEX), 107 (five), 86 (the
//! inserts), 567 (VACUUM) and 12 (DELETE, which only rewrites the roots
//! and the free list's trunk pages), so every commit is a transaction of
//! several inodes bound by the last ([`MOBIUS_ALA_BLOCKS`] make room for
//! VACUUM's 71 between two checkpoints).
//!
//! # The oracle: the database after statement i
//!
//! As in the TPC-C scenario ([`super::tpcc`]): before the dry run the same
//! load and statements run on SQLite's in-memory database, and
//! [`fingerprint`] (every row of `t` and `u` in a fixed order, and every
//! table's and index's name and SQL in `sqlite_schema`) is taken after the
//! load and after each statement: `digests[i]` is the database after the
//! first `i`. A restart must find `digests[done]` or, with a statement in
//! flight, `digests[done + 1]` ([`super::Promise::Durable`]), or any
//! `digests[i]` with `i <= done + 1` ([`super::Promise::Prefix`]); and
//! `PRAGMA integrity_check` must be ok. The ORDER BY's output is checked
//! too: its rows, in the order returned, hashed in the dry run, must be the
//! in-memory run's.

use super::{judge_digests, other, Phase, ScenarioOutcome, Verdict};
use crate::digest::Fnv;
use crate::heavy::{self, HeavySpec, Statement};
use crate::{Stack, StackError};
use rusqlite::Connection;
use serde::Serialize;

/// The database the scenario runs on.
pub const HEAVY_DB: &str = "heavy.db";

/// Rows of `t` by default (enough for the ORDER BY's sorter to spill: the
/// module doc).
pub const ROWS_DEFAULT: u32 = 640;

/// Rows the transaction inserts into `u` by default.
pub const INSERT_ROWS_DEFAULT: u32 = 300;

/// Möbius's `items-max` in the scenario (the module doc).
pub const MOBIUS_ITEMS_MAX: u32 = 8;

/// Möbius's `ala-blocks` in the scenario: a transaction's inodes must fit
/// half the ring less a block (its `tx_pages_max`): 88 inodes here,
/// where VACUUM's take 71 and the default ring (a sixteenth of the blocks,
/// 13) would hold 40.
pub const MOBIUS_ALA_BLOCKS: u32 = 24;

/// `PRAGMA wal_autocheckpoint` of the scenario's connection, in pages.
pub const WAL_AUTOCHECKPOINT: i64 = 64;

/// Cache of the ORDER BY, in pages: the sorter's bound comes down to its
/// minimum (the module doc).
const SORT_CACHE_PAGES: i64 = 2;

/// The statements in the order the scenario runs them.
pub const STEPS: [Statement; 6] = [
    Statement::CreateIndex,
    Statement::CreateIndex5,
    Statement::OrderBy,
    Statement::Insert3,
    Statement::Vacuum,
    Statement::DeleteAll,
];

/// Crash points inside each statement of the scenario.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct StatementCuts {
    pub create_index: u64,
    pub create_index5: u64,
    pub order_by: u64,
    pub insert3: u64,
    pub vacuum: u64,
    pub delete_all: u64,
}

impl StatementCuts {
    pub(super) fn count(&mut self, s: Statement) {
        *match s {
            Statement::CreateIndex => &mut self.create_index,
            Statement::CreateIndex5 => &mut self.create_index5,
            Statement::OrderBy => &mut self.order_by,
            Statement::Insert3 => &mut self.insert3,
            Statement::Vacuum => &mut self.vacuum,
            Statement::DeleteAll => &mut self.delete_all,
        } += 1;
    }

    /// The fewest crash points any writing statement got (ORDER BY writes nothing).
    pub fn fewest_in_writes(&self) -> u64 {
        [self.create_index, self.create_index5, self.insert3, self.vacuum, self.delete_all]
            .into_iter()
            .min()
            .unwrap_or(0)
    }
}

/// The heavy suite's sizes for the scenario.
pub fn heavy_spec(rows: u32, insert_rows: u32, page_size: usize, seed: u64) -> HeavySpec {
    HeavySpec {
        rows,
        insert_rows,
        page_size,
        seed,
    }
}

/// The database after each statement, and the ORDER BY's output (see the module doc).
#[derive(Clone, Debug)]
pub(super) struct Oracle {
    pub(super) spec: HeavySpec,
    /// `digests[i]`: the database after the first `i` statements.
    pub(super) digests: Vec<u64>,
    /// The ORDER BY's rows, in the order returned, hashed.
    pub(super) sorted: u64,
}

/// Runs the load and the statements on the in-memory database.
pub(super) fn oracle(spec: HeavySpec) -> Result<Oracle, String> {
    let sql = |e: rusqlite::Error| format!("the in-memory oracle: {e}");
    let mem = Connection::open_in_memory().map_err(sql)?;
    mem.pragma_update(None, "page_size", spec.page_size as i64).map_err(sql)?;
    heavy::load(&mem, &spec).map_err(|e| format!("the in-memory oracle's load: {e}"))?;
    let mut digests = vec![fingerprint(&mem).map_err(sql)?];
    let mut sorted = None;
    for s in STEPS {
        if let Some(h) = statement(&mem, &spec, s).map_err(|e| format!("the in-memory oracle, {}: {e}", s.name()))? {
            sorted = Some(h);
        }
        digests.push(fingerprint(&mem).map_err(sql)?);
    }
    // Each writing statement changes the database (VACUUM only its layout,
    // which no digest sees): a cut's outcome is then told apart.
    for (i, s) in STEPS.iter().enumerate() {
        let writes = !matches!(s, Statement::OrderBy | Statement::Vacuum);
        if writes && digests[i] == digests[i + 1] {
            return Err(format!("the in-memory oracle: {} left the database as it was", s.name()));
        }
    }
    Ok(Oracle {
        spec,
        digests,
        sorted: sorted.ok_or("the in-memory oracle ran no ORDER BY")?,
    })
}

/// A connection to `heavy.db` as the scenario uses it.
pub(super) fn open(stack: &Stack, page_size: usize) -> Result<Connection, StackError> {
    let conn = stack.open(HEAVY_DB, page_size)?;
    // A no-op outside WAL mode.
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)?;
    Ok(conn)
}

/// Loads `t` into `heavy.db` (the image's content).
pub(super) fn load(stack: &Stack, page_size: usize, oracle: &Oracle) -> Result<(), StackError> {
    let conn = open(stack, page_size)?;
    heavy::load(&conn, &oracle.spec).map_err(|e| other(format!("loading t: {e}")))
}

/// What a run got through before the cut.
#[derive(Clone, Debug, Default)]
pub(super) struct Progress {
    /// Statements whose COMMIT (ORDER BY: last row) returned.
    pub(super) done: usize,
    /// A statement was running at the cut.
    pub(super) in_flight: bool,
    /// The ORDER BY's output, hashed, if it returned.
    pub(super) sorted: Option<u64>,
    /// Temporary files SQLite opened during the ORDER BY (its sorter's spill).
    pub(super) sort_temp_files: u64,
}

/// Runs the scenario until it ends or the power cut stops it (any error is
/// the cut: the dry run, which must finish, catches the others).
pub(super) fn run(stack: &Stack, page_size: usize, oracle: &Oracle, out: &mut ScenarioOutcome) -> Result<(), StackError> {
    let ops = |stack: &Stack| super::op_count(stack);
    out.marks.push((Phase::Open, ops(stack)?));
    let Ok(conn) = open(stack, page_size) else {
        return Ok(());
    };
    for (i, &s) in STEPS.iter().enumerate() {
        let at = ops(stack)?;
        if i == 0 {
            out.marks.push((Phase::Commit, at));
        }
        out.step_marks.push((at, Some(s)));
        let sort = s == Statement::OrderBy;
        let temp0 = stack.vfs.temp_stats().files_opened;
        if sort && conn.pragma_update(None, "cache_size", SORT_CACHE_PAGES).is_err() {
            return Ok(());
        }
        match statement(&conn, &oracle.spec, s) {
            Ok(sorted) => {
                out.heavy.done += 1;
                out.heavy.sorted = out.heavy.sorted.or(sorted);
            }
            Err(_) => {
                out.heavy.in_flight = true;
                return Ok(());
            }
        }
        if sort {
            out.heavy.sort_temp_files += stack.vfs.temp_stats().files_opened - temp0;
            if conn.pragma_update(None, "cache_size", -2000).is_err() {
                return Ok(());
            }
        }
    }
    // The statements are over: what follows (closing the connection, which
    // checkpoints a WAL) belongs to the end.
    out.step_marks.push((ops(stack)?, None));
    Ok(())
}

/// Runs statement `s` as the scenario's transaction; ORDER BY returns its
/// rows, in the order returned, hashed.
fn statement(conn: &Connection, spec: &HeavySpec, s: Statement) -> rusqlite::Result<Option<u64>> {
    match s {
        Statement::OrderBy => {
            let mut h = Fnv::new();
            let mut q = conn.prepare(heavy::ORDER_BY_SQL)?;
            let mut rows = q.query([])?;
            while let Some(r) = rows.next()? {
                h.row(r, 3)?;
            }
            Ok(Some(h.0))
        }
        Statement::CreateIndex => conn.execute_batch(heavy::ONE_INDEX_SQL).map(|_| None),
        Statement::CreateIndex5 => conn
            .execute_batch(&format!("BEGIN; {}; COMMIT", heavy::FIVE_INDEXES_SQL))
            .map(|_| None),
        // The table, its indexes and its rows in one transaction (the heavy
        // suite creates the table first, outside it).
        Statement::Insert3 => {
            conn.execute_batch(&format!("BEGIN; {}", heavy::U_SCHEMA_SQL))?;
            heavy::insert_u(conn, spec)?;
            conn.execute_batch("COMMIT").map(|_| None)
        }
        Statement::Vacuum => conn.execute_batch("VACUUM").map(|_| None),
        Statement::DeleteAll => conn.execute_batch("BEGIN; DELETE FROM t; COMMIT").map(|_| None),
    }
}

/// A 64-bit hash (FNV-1a) of `heavy.db`: every table's and index's type,
/// name, table and SQL in `sqlite_schema` (not its root page, which VACUUM
/// may move), then every row of `t` and of `u` (when it exists) ordered by
/// `b`, the row number, then `a` and `c`. Two databases with the same
/// fingerprint hold the same rows and the same indexes.
pub fn fingerprint(conn: &Connection) -> rusqlite::Result<u64> {
    let mut h = Fnv::new();
    let mut tables = Vec::new();
    {
        let mut st = conn.prepare("SELECT type, name, tbl_name, sql FROM sqlite_schema ORDER BY type, name")?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            h.row(r, 4)?;
            if r.get::<_, String>(0)? == "table" {
                tables.push(r.get::<_, String>(1)?);
            }
        }
    }
    for table in ["t", "u"] {
        h.bytes(table.as_bytes());
        if !tables.iter().any(|t| t == table) {
            continue;
        }
        let mut st = conn.prepare(&format!("SELECT a, b, c FROM {table} ORDER BY b, a, c"))?;
        let mut rows = st.query([])?;
        while let Some(r) = rows.next()? {
            h.row(r, 3)?;
        }
    }
    Ok(h.0)
}

/// Reads a restarted `heavy.db` (integrity already checked): its digest.
pub(super) fn observe(conn: &Connection) -> Result<u64, String> {
    fingerprint(conn).map_err(|e| format!("{HEAVY_DB}: reading the tables failed: {e}"))
}

/// Which prefix of the statements a restart's digest is (see the module doc).
pub(super) fn judge(oracle: &Oracle, out: &Progress, digest: u64) -> Verdict {
    judge_digests(HEAVY_DB, &oracle.digests, out.done, out.in_flight, digest, |i| {
        STEPS[i].name().to_string()
    })
}

/// The statement a digest is the state after (for messages).
pub(super) fn position(oracle: &Oracle, digest: u64) -> String {
    match oracle.digests.iter().rposition(|&d| d == digest) {
        Some(0) => "the database as loaded".into(),
        Some(i) => format!("the state after {}", STEPS[i - 1].name()),
        None => format!("digest {digest:016x}, no state of the run"),
    }
}
