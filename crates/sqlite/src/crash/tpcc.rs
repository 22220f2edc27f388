//! The TPC-C scenario of the crash test (`txftl sqlcrash --workload tpcc`).
//!
//! The image every run starts from: a TPC-C population of one warehouse at a
//! scale divisor ([`crate::tpcc::TpccSpec::scale`], 900 by default: 111
//! items and stock rows, 3 customers and 3 orders per district, one of them
//! undelivered), loaded from the seed into `tpcc.db` through the VFS in the
//! mode under test, the stack then cleanly closed.
//!
//! The scenario: `transactions` TPC-C transactions on one connection, their
//! types in the fixed order of [`KINDS`] (repeated), so every run holds
//! New-Order, Payment, Delivery, Order-Status and Stock-Level whatever the
//! seed; their inputs drawn from the seed as `txftl sql tpcc` draws them
//! (NURand customer and item numbers, amounts, carriers), their dates from the
//! workload's clock ([`crate::tpcc::RUN_EPOCH`] + the transaction's index), never the
//! wall clock. Transaction `rollback_at` (a New-Order) is made one of the
//! specification's 1% that roll back (its last item number unused), and runs
//! with a 2-page cache, so its order, stock and order-line writes spill to the
//! device (X-FTL: pages of an open device transaction; WAL: frames without a
//! commit mark; rollback journal: a hot journal) before SQLite rolls it back.
//! `wal_autocheckpoint` is small ([`WAL_AUTOCHECKPOINT`] pages), so WAL
//! checkpoints run inside the scenario and the WAL fits a small device.
//!
//! # The oracle: the state after transaction i
//!
//! Before the dry run, the same load and the same transactions run on
//! SQLite's in-memory database (no VFS, no device), and
//! [`crate::tpcc::fingerprint`] (a hash of every row of the nine tables in
//! primary-key order) is taken after the load and after each transaction:
//! `digests[i]` is the database after the first `i` transactions. The
//! in-memory run shares nothing with the stack under test but SQLite and the
//! TPC-C code, so it is an independent model of "exactly the committed
//! transactions". A restart whose database has `digests[i]` holds exactly the
//! first `i` transactions; the promise says which `i` are allowed (`done`, the
//! transactions whose COMMIT returned before the cut, or `done + 1` with the
//! one in flight, for [`super::Promise::Durable`]; any `i <= done + 1` for
//! [`super::Promise::Prefix`]). Besides, every restart runs `PRAGMA
//! integrity_check` and the specification's consistency conditions 1 to 4
//! ([`crate::tpcc::check`]).

use super::{other, Phase, ScenarioOutcome, Verdict};
use crate::tpcc::{self, NextTx, Outcome, Runner, TpccSpec, TxKind, STANDARD_MIX};
use crate::{Stack, StackError};
use rusqlite::Connection;

/// The database the scenario runs on.
pub const TPCC_DB: &str = "tpcc.db";

/// The scale divisor of the population by default (the largest the
/// specification's counts allow with one undelivered order per district).
pub const SCALE_DEFAULT: u32 = 900;

/// Transaction types in the order the scenario runs them (then again from
/// the start): four New-Orders, three Payments, a Delivery, an Order-Status
/// and a Stock-Level per ten, close to the standard mix's weights but with
/// every type in every ten.
pub const KINDS: [TxKind; 10] = [
    TxKind::NewOrder,
    TxKind::Payment,
    TxKind::NewOrder,
    TxKind::Payment,
    TxKind::Delivery,
    TxKind::NewOrder,
    TxKind::Payment,
    TxKind::OrderStatus,
    TxKind::NewOrder,
    TxKind::StockLevel,
];

/// The transaction forced to roll back by default (the second New-Order).
pub const ROLLBACK_AT_DEFAULT: u32 = 2;

/// `PRAGMA wal_autocheckpoint` of the scenario's connections, in pages.
pub const WAL_AUTOCHECKPOINT: i64 = 16;

/// Cache of the rolled-back transaction, in pages (small, so it spills).
const SPILL_CACHE_PAGES: i64 = 2;

/// The transactions of a run and the database after each (see the module doc).
#[derive(Clone, Debug)]
pub(super) struct Oracle {
    pub(super) spec: TpccSpec,
    pub(super) txs: Vec<NextTx>,
    /// `digests[i]`: the database after the first `i` transactions.
    pub(super) digests: Vec<u64>,
    pub(super) outcomes: Vec<Outcome>,
}

/// The TPC-C spec of a scenario of `transactions` at `scale`.
pub fn tpcc_spec(scale: u32, transactions: u32, seed: u64) -> TpccSpec {
    TpccSpec {
        warehouses: 1,
        scale,
        mix: STANDARD_MIX,
        transactions: transactions as u64,
        seed,
        canary: tpcc::Canary::None,
    }
}

/// Draws the scenario's transactions and runs them on the in-memory database.
pub(super) fn oracle(spec: TpccSpec, rollback_at: u32) -> Result<Oracle, String> {
    let n = spec.transactions as usize;
    if KINDS[rollback_at as usize % KINDS.len()] != TxKind::NewOrder || rollback_at as usize >= n {
        return Err(format!(
            "transaction {rollback_at} must be a New-Order of the scenario's {n} (types in the order {})",
            KINDS.iter().map(|k| k.name()).collect::<Vec<_>>().join(", ")
        ));
    }
    let sql = |e: rusqlite::Error| format!("the in-memory oracle: {e}");
    let mem = Connection::open_in_memory().map_err(sql)?;
    tpcc::load(&mem, &spec).map_err(|e| format!("the in-memory oracle's load: {e}"))?;
    let mut runner = Runner::new(&mem, &spec).map_err(|e| e.to_string())?;
    let mut txs = Vec::with_capacity(n);
    let mut digests = vec![tpcc::fingerprint(&mem).map_err(sql)?];
    let mut outcomes = Vec::with_capacity(n);
    for i in 0..n {
        let mut tx = runner.draw(KINDS[i % KINDS.len()]);
        if i == rollback_at as usize && !runner.force_rollback(&mut tx) {
            return Err(format!("transaction {i} could not be made to roll back"));
        }
        let outcome = runner
            .execute(&mem, &tx)
            .map_err(|e| format!("the in-memory oracle, transaction {i} ({}): {e}", tx.kind.name()))?;
        digests.push(tpcc::fingerprint(&mem).map_err(sql)?);
        outcomes.push(outcome);
        txs.push(tx);
    }
    if outcomes[rollback_at as usize] != Outcome::RolledBack {
        return Err(format!("transaction {rollback_at} did not roll back in the in-memory run"));
    }
    tpcc::check(&mem).map_err(|e| format!("the in-memory oracle breaks the consistency conditions: {e}"))?;
    Ok(Oracle {
        spec,
        txs,
        digests,
        outcomes,
    })
}

/// A connection to `tpcc.db` as the scenario uses it.
pub(super) fn open(stack: &Stack, page_size: usize) -> Result<Connection, StackError> {
    let conn = stack.open(TPCC_DB, page_size)?;
    // A no-op outside WAL mode.
    conn.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT)?;
    Ok(conn)
}

/// Loads the population into `tpcc.db` (the image's content).
pub(super) fn load(stack: &Stack, page_size: usize, oracle: &Oracle) -> Result<(), StackError> {
    let conn = open(stack, page_size)?;
    tpcc::load(&conn, &oracle.spec).map_err(|e| other(format!("loading TPC-C: {e}")))?;
    Ok(())
}

/// What a TPC-C run got through before the cut.
#[derive(Clone, Debug, Default)]
pub(super) struct Progress {
    /// Transactions whose COMMIT (or ROLLBACK) returned, with their outcomes.
    pub(super) outcomes: Vec<Outcome>,
    /// A transaction was running at the cut.
    pub(super) in_flight: bool,
}

/// Runs the scenario until it ends or the power cut stops it (any error is
/// the cut: the dry run, which must finish, catches the others).
pub(super) fn run(stack: &Stack, page_size: usize, oracle: &Oracle, rollback_at: u32, out: &mut ScenarioOutcome) -> Result<(), StackError> {
    let ops = |stack: &Stack| super::op_count(stack);
    out.marks.push((Phase::Open, ops(stack)?));
    let Ok(conn) = open(stack, page_size) else {
        return Ok(());
    };
    let Ok(mut runner) = Runner::new(&conn, &oracle.spec) else {
        return Ok(());
    };
    for (i, tx) in oracle.txs.iter().enumerate() {
        let rollback = i == rollback_at as usize;
        let at = ops(stack)?;
        if rollback {
            out.marks.push((Phase::Rollback, at));
        } else if i == 0 || i == rollback_at as usize + 1 {
            out.marks.push((Phase::Commit, at));
        }
        out.kind_marks.push((at, Some(tx.kind)));
        if rollback && conn.pragma_update(None, "cache_size", SPILL_CACHE_PAGES).is_err() {
            return Ok(());
        }
        match runner.execute(&conn, tx) {
            Ok(outcome) => out.tpcc.outcomes.push(outcome),
            Err(_) => {
                out.tpcc.in_flight = true;
                return Ok(());
            }
        }
        if rollback && conn.pragma_update(None, "cache_size", -2000).is_err() {
            return Ok(());
        }
    }
    // The transactions are over: what follows (closing the connection, which
    // checkpoints a WAL) belongs to the end.
    out.kind_marks.push((ops(stack)?, None));
    Ok(())
}

/// Reads a restarted `tpcc.db` (integrity already checked): the consistency
/// conditions, then the digest. `Err` says what is inconsistent.
pub(super) fn observe(conn: &Connection) -> Result<u64, String> {
    tpcc::check(conn).map_err(|e| format!("{TPCC_DB}: TPC-C {e}"))?;
    tpcc::fingerprint(conn).map_err(|e| format!("{TPCC_DB}: reading the tables failed: {e}"))
}

/// Which prefix of the transactions a restart's digest is (see the module doc).
pub(super) fn judge(oracle: &Oracle, out: &Progress, digest: u64) -> Verdict {
    super::judge_digests(TPCC_DB, &oracle.digests, out.outcomes.len(), out.in_flight, digest, |i| {
        oracle.txs[i].kind.name().to_string()
    })
}

/// The transaction a digest is the state after (for messages).
pub(super) fn position(oracle: &Oracle, digest: u64) -> String {
    match oracle.digests.iter().rposition(|&d| d == digest) {
        Some(i) => format!("the state after {i} transactions"),
        None => format!("digest {digest:016x}, no state of the run"),
    }
}
