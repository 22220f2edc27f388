//! The X-FTL paper's synthetic workload (sec. 6.2): a TPC-H `partsupp` table of
//! 60,000 tuples of about 220 bytes; each transaction reads K random tuples by
//! their key, updates their `ps_supplycost`, and commits.
//!
//! The table is generated here, deterministically from the seed (ChaCha8).
//! Tuples are keyed by `ps_id = (ps_partkey - 1) * 4 + ps_suppkey` (15,000 parts,
//! 4 suppliers each) as the rowid, so reading a tuple "by partkey" is a rowid
//! lookup, and updating one touches one leaf page, as in the paper's setup.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rusqlite::{params, Connection};
use serde::Serialize;

pub const SUPPLIERS_PER_PART: u32 = 4;

/// Creates and fills `partsupp` with `rows` tuples, in transactions of 5,000.
pub fn load(conn: &Connection, rows: u32, seed: u64) -> rusqlite::Result<()> {
    conn.execute_batch(
        "CREATE TABLE IF NOT EXISTS partsupp(
            ps_id INTEGER PRIMARY KEY,
            ps_partkey INTEGER NOT NULL,
            ps_suppkey INTEGER NOT NULL,
            ps_availqty INTEGER NOT NULL,
            ps_supplycost REAL NOT NULL,
            ps_comment TEXT NOT NULL)",
    )?;
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7061_7274);
    let mut id = 0;
    while id < rows {
        let tx = conn.unchecked_transaction()?;
        {
            let mut ins = tx.prepare_cached("INSERT INTO partsupp VALUES (?1, ?2, ?3, ?4, ?5, ?6)")?;
            for _ in 0..5000.min(rows - id) {
                let comment: String = (0..190).map(|_| (b'a' + rng.gen_range(0..26)) as char).collect();
                ins.execute(params![
                    id,
                    id / SUPPLIERS_PER_PART + 1,
                    id % SUPPLIERS_PER_PART,
                    rng.gen_range(1..10_000),
                    rng.gen_range(100..100_000) as f64 / 100.0,
                    comment
                ])?;
                id += 1;
            }
        }
        tx.commit()?;
    }
    Ok(())
}

/// One transaction's updates: (tuple, new supply cost).
pub type TxUpdates = Vec<(u32, f64)>;

#[derive(Clone, Copy, Debug, Serialize)]
pub struct TxWorkload {
    pub rows: u32,
    /// Tuples read and updated per transaction.
    pub k: u32,
    pub transactions: u32,
    pub seed: u64,
}

impl TxWorkload {
    /// The updates of transaction `i` (deterministic from the seed).
    pub fn updates(&self, i: u32) -> TxUpdates {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed.wrapping_mul(0x9E37_79B9).wrapping_add(i as u64));
        (0..self.k)
            .map(|j| (rng.gen_range(0..self.rows), (i as f64) * 1000.0 + j as f64 + 0.25))
            .collect()
    }
}

/// Runs transaction `i`: reads each tuple, updates its cost, commits.
pub fn run_tx(conn: &Connection, updates: &TxUpdates) -> rusqlite::Result<()> {
    let tx = conn.unchecked_transaction()?;
    {
        let mut sel = tx.prepare_cached("SELECT ps_supplycost, ps_comment FROM partsupp WHERE ps_id = ?1")?;
        let mut upd = tx.prepare_cached("UPDATE partsupp SET ps_supplycost = ?2 WHERE ps_id = ?1")?;
        for &(id, cost) in updates {
            let _: (f64, String) = sel.query_row([id], |r| Ok((r.get(0)?, r.get(1)?)))?;
            upd.execute(params![id, cost])?;
        }
    }
    tx.commit()
}

/// Every tuple's supply cost, by id.
pub fn costs(conn: &Connection) -> rusqlite::Result<Vec<f64>> {
    let mut st = conn.prepare("SELECT ps_supplycost FROM partsupp ORDER BY ps_id")?;
    let rows = st.query_map([], |r| r.get(0))?;
    rows.collect()
}

pub fn integrity_check(conn: &Connection) -> rusqlite::Result<String> {
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0))
}
