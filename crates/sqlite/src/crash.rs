//! End-to-end crash tests: real SQLite on the device, power cut at every flash
//! operation (with torn variants) of a scenario of several transactions.
//!
//! The scenario, after `partsupp` is loaded (and a second database, `side.db`,
//! created) and the stack cleanly closed (that image is the starting point of
//! every run): `transactions` transactions of K updates; one of them (the
//! `rollback_at`-th) first shrinks the page cache so its updates spill to the
//! device; while it is open, a second connection commits a row to `side.db`
//! (its own device transaction on X-FTL, which must not carry the first one's
//! spilled pages); then the first rolls back. After each cut the FTL is
//! recovered from the NAND alone, the file system mounted, SQLite reopened, and:
//! `PRAGMA integrity_check` must say ok on both databases, `partsupp` must hold
//! exactly the transactions whose COMMIT returned, plus the one in flight at
//! the cut either whole or not at all, and `side.db` its row if that commit
//! returned (either way if it was in flight).

use crate::workload::{costs, integrity_check, load, run_tx, TxUpdates, TxWorkload};
use crate::{Mode, Stack, StackError};
use serde::Serialize;
use txftl_ftl::FtlConfig;
use txftl_nand::{Nand, NandConfig, OpKind, PowerCut, Torn};
use txftl_protocols::ProtocolOptions;

#[derive(Clone, Debug)]
pub struct SqlCrashSpec {
    pub nand: NandConfig,
    pub ftl: FtlConfig,
    pub opts: ProtocolOptions,
    pub mode: Mode,
    pub rows: u32,
    pub k: u32,
    pub transactions: u32,
    /// Index of the transaction that spills its cache and rolls back.
    pub rollback_at: u32,
    pub seed: u64,
    pub torn: Vec<Torn>,
}

#[derive(Clone, Debug, Serialize)]
pub struct SqlCrashReport {
    pub mode: Mode,
    /// NAND operations of the scenario (after the load), and how many change the array.
    pub flash_ops: u64,
    pub mutating_ops: u64,
    pub crash_points: u64,
    pub violations: Vec<String>,
    /// Crash points where the transaction in flight turned out applied (whole).
    pub in_flight_applied: u64,
}

fn page_size(nand: &NandConfig) -> usize {
    nand.geometry.page_size as usize
}

/// The loaded database, cleanly closed: the image every run starts from.
fn loaded_image(spec: &SqlCrashSpec) -> Result<Nand, StackError> {
    let nand = Nand::new(spec.nand).map_err(|e| StackError::Other(e.to_string()))?;
    let dev =
        txftl_protocols::format(spec.mode.protocol(), nand, spec.ftl.clone(), &spec.opts).map_err(|e| StackError::Other(e.to_string()))?;
    let stack = Stack::format(dev, spec.mode)?;
    let conn = stack.open("crash.db", page_size(&spec.nand))?;
    load(&conn, spec.rows, spec.seed)?;
    drop(conn);
    let side = stack.open(SIDE_DB, page_size(&spec.nand))?;
    side.execute_batch("CREATE TABLE side(k INTEGER PRIMARY KEY)")?;
    drop(side);
    let fs = stack.into_fs()?;
    let dev = fs.into_device();
    dev.close().map_err(|e| StackError::Other(e.to_string()))
}

fn mount(spec: &SqlCrashSpec, nand: Nand) -> Result<Stack, StackError> {
    let dev = txftl_protocols::mount(spec.mode.protocol(), nand, spec.ftl.clone(), &spec.opts)
        .map_err(|e| StackError::Other(format!("FTL recovery: {e}")))?;
    Stack::mount(dev, spec.mode)
}

/// The second database, committed to while the rolled-back transaction is open.
const SIDE_DB: &str = "side.db";

/// What a run left committed (the model the restarted database is checked against).
#[derive(Default)]
struct ScenarioOutcome {
    /// `partsupp` costs after the transactions whose commit returned.
    costs: Vec<f64>,
    /// The updates of the transaction in flight at the cut.
    in_flight: Option<TxUpdates>,
    /// Rows of `side.db` whose commit returned.
    side_rows: i64,
    /// A `side.db` commit was in flight at the cut (its row may or may not be there).
    side_in_flight: bool,
}

/// Runs the scenario until it ends or the power cut stops it.
fn scenario(spec: &SqlCrashSpec, stack: &Stack, initial: &[f64]) -> Result<ScenarioOutcome, StackError> {
    let mut out = ScenarioOutcome {
        costs: initial.to_vec(),
        ..Default::default()
    };
    // A cut can land while a connection opens (its PRAGMAs write).
    let Ok(conn) = stack.open("crash.db", page_size(&spec.nand)) else {
        return Ok(out);
    };
    let Ok(side) = stack.open(SIDE_DB, page_size(&spec.nand)) else {
        return Ok(out);
    };
    let w = TxWorkload {
        rows: spec.rows,
        k: spec.k,
        transactions: spec.transactions,
        seed: spec.seed,
    };
    for i in 0..spec.transactions {
        if i == spec.rollback_at {
            // A transaction whose cache spills to the device; while it is open
            // another connection commits to another database; then it rolls back.
            let spill = (|| -> rusqlite::Result<()> {
                conn.pragma_update(None, "cache_size", 2)?;
                conn.execute_batch("BEGIN; UPDATE partsupp SET ps_supplycost = -1;")
            })();
            if spill.is_err() {
                return Ok(out);
            }
            if side.execute("INSERT INTO side VALUES (?1)", [i]).is_err() {
                out.side_in_flight = true;
                return Ok(out);
            }
            out.side_rows += 1;
            let r = (|| -> rusqlite::Result<()> {
                conn.execute_batch("ROLLBACK")?;
                conn.pragma_update(None, "cache_size", -2000)
            })();
            if r.is_err() {
                return Ok(out);
            }
            continue;
        }
        let u = w.updates(i);
        match run_tx(&conn, &u) {
            Ok(()) => {
                for &(id, c) in &u {
                    out.costs[id as usize] = c;
                }
            }
            Err(_) => {
                out.in_flight = Some(u);
                return Ok(out);
            }
        }
    }
    Ok(out)
}

/// Enumerates every crash point of the scenario.
pub fn sql_crashtest(spec: &SqlCrashSpec, progress: &dyn Fn(u64, u64)) -> Result<SqlCrashReport, StackError> {
    let image = loaded_image(spec)?;
    // The table as loaded (read on a copy, so the dry run below issues exactly
    // the operations every crash run issues).
    let initial = {
        let mut copy = image.snapshot();
        copy.power_on();
        let stack = mount(spec, copy)?;
        let conn = stack.open("crash.db", page_size(&spec.nand))?;
        costs(&conn)?
    };
    // Dry run: learn the scenario's NAND operations.
    let mut probe = image.snapshot();
    probe.power_on(); // restart the op counter at 0 for this boot
    let stack = mount(spec, probe)?;
    let base = stack.with_fs_mut(|fs| fs.device().nand().op_count())?;
    stack.with_fs_mut(|fs| fs.device_mut().nand_mut().set_op_log(true))?;
    let dry = scenario(spec, &stack, &initial)?;
    if dry.in_flight.is_some() || dry.side_in_flight || dry.side_rows != 1 {
        return Err(StackError::Other("the uncut dry run failed".into()));
    }
    let log: Vec<OpKind> = stack.with_fs_mut(|fs| fs.device().nand().op_log().to_vec())?;
    drop(stack);
    let mut points: Vec<(u64, Torn)> = Vec::new();
    for (i, k) in log.iter().enumerate() {
        if k.mutates() {
            points.extend(spec.torn.iter().map(|&t| (i as u64, t)));
        }
    }
    points.push((log.len() as u64, Torn::None));
    let total = points.len() as u64;
    let mut violations = Vec::new();
    let mut in_flight_applied = 0;
    for (n, &(at, torn)) in points.iter().enumerate() {
        progress(n as u64 + 1, total);
        let mut nand = image.snapshot();
        nand.power_on();
        let stack = mount(spec, nand)?;
        stack.with_fs_mut(|fs| {
            fs.device_mut().nand_mut().arm_power_cut(PowerCut {
                at_op: base + at,
                torn,
                seed: spec.seed,
            })
        })?;
        let outcome = scenario(spec, &stack, &initial)?;
        let (expect, in_flight) = (&outcome.costs, &outcome.in_flight);
        // The cut: drop SQLite, the file system and the FTL; keep the NAND.
        let mut nand = match stack.into_fs() {
            Ok(fs) => fs.into_device().into_nand(),
            Err(e) => return Err(e),
        };
        nand.power_off();
        nand.power_on();
        let label = format!("cut at scenario flash op {at} (torn {})", torn.name());
        let check = (|| -> Result<(), String> {
            let stack = mount(spec, nand).map_err(|e| format!("restart failed: {e}"))?;
            let conn = stack
                .open("crash.db", page_size(&spec.nand))
                .map_err(|e| format!("reopen failed: {e}"))?;
            let ic = integrity_check(&conn).map_err(|e| format!("integrity_check failed: {e}"))?;
            if ic != "ok" {
                return Err(format!("integrity_check: {ic}"));
            }
            let side = stack
                .open(SIDE_DB, page_size(&spec.nand))
                .map_err(|e| format!("reopening {SIDE_DB} failed: {e}"))?;
            let ic = integrity_check(&side).map_err(|e| format!("{SIDE_DB}: integrity_check failed: {e}"))?;
            if ic != "ok" {
                return Err(format!("{SIDE_DB}: integrity_check: {ic}"));
            }
            let rows: i64 = side
                .query_row("SELECT count(*) FROM side", [], |r| r.get(0))
                .map_err(|e| format!("reading {SIDE_DB} failed: {e}"))?;
            let side_ok = rows == outcome.side_rows || (outcome.side_in_flight && rows == outcome.side_rows + 1);
            if !side_ok {
                return Err(format!(
                    "{SIDE_DB} holds {rows} rows where {} committed{}",
                    outcome.side_rows,
                    if outcome.side_in_flight { " (and one was in flight)" } else { "" }
                ));
            }
            let got = costs(&conn).map_err(|e| format!("reading the table failed: {e}"))?;
            if &got == expect {
                return Ok(());
            }
            if let Some(u) = in_flight {
                let mut with = expect.clone();
                for &(id, c) in u {
                    with[id as usize] = c;
                }
                if got == with {
                    in_flight_applied += 1;
                    return Ok(());
                }
            }
            let diff = got.iter().zip(expect).position(|(a, b)| a != b).unwrap_or(0);
            Err(format!(
                "tuple {diff} holds cost {} where the committed state says {}",
                got[diff], expect[diff]
            ))
        })();
        if let Err(msg) = check {
            violations.push(format!("{label}: {msg}"));
        }
    }
    Ok(SqlCrashReport {
        mode: spec.mode,
        flash_ops: log.len() as u64,
        mutating_ops: log.iter().filter(|k| k.mutates()).count() as u64,
        crash_points: total,
        violations,
        in_flight_applied,
    })
}
