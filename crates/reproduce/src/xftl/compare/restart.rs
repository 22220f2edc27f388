//! Restart after a power cut in the middle of the synthetic workload
//! (Table 5): where the cuts fall, and each layer's recovery on the device
//! clock.

use super::{open_aged, CompareSpec};
use serde::Serialize;
use txftl_ftl::RecoveryReport;
use txftl_sqlite::workload::{costs, integrity_check, load, run_tx, TxWorkload};
use txftl_sqlite::{Mode, Stack, StackError};

/// Restart after a power cut in the middle of the workload, per stage, on the device clock.
#[derive(Clone, Debug, Serialize)]
pub struct Restart {
    pub mode: Mode,
    pub cut_after_transactions: u32,
    /// Where in the transaction the cut fell (share of its flash operations).
    pub cut_fraction: f64,
    pub ftl_recovery: RecoveryReport,
    /// File system mount (metadata journal replay included), ns.
    pub fs_mount_ns: u64,
    /// SQLite's own recovery when the database is first used (hot journal
    /// rollback, WAL recovery; nothing on X-FTL), ns.
    pub sqlite_recovery_ns: u64,
    /// Pages SQLite read and wrote during its recovery.
    pub sqlite_recovery_page_reads: u64,
    pub sqlite_recovery_page_writes: u64,
    /// Device work during SQLite's recovery: flash programs, GC runs and
    /// mapping checkpoints it caused.
    pub sqlite_recovery_flash_programs: u64,
    pub sqlite_recovery_gc_runs: u64,
    pub sqlite_recovery_checkpoints: u64,
    pub integrity: String,
    /// The table holds exactly the transactions whose commit returned, plus
    /// (or not) the one in flight at the cut, whole.
    pub committed_state_ok: bool,
    /// Whether the transaction in flight at the cut is in the table.
    pub in_flight_applied: bool,
}

/// Where `n` restart measurements cut power: cut `i` after transaction
/// `transactions / 2 + i * transactions / (2n)` (spread over the second half
/// of the run), at `(j + 0.5) / n` of the next transaction's flash operations,
/// with `j = 7i mod n` when 7 and `n` are coprime (else `j = i`).
///
/// Why spread: what a restart costs depends on where the device and SQLite
/// stand at the cut, not only on where in the transaction it falls: how many
/// frames the WAL holds since its last checkpoint, and whether a hot
/// journal's rollback writes cross the GC low watermark (GC then runs in the
/// foreground until the high one, a burst of tens of block copies). Cuts that
/// all fall in one transaction sample that state once, so a mean over them
/// follows one draw; the paper's cuts were separate runs (X-FTL sec. 6.4).
/// The stride decorrelates the point in the transaction (which decides
/// whether RBJ leaves a hot journal) from the transaction.
pub fn restart_points(transactions: u32, n: u32) -> Vec<(u32, f64)> {
    let n = n.max(1);
    let half = (transactions / 2).max(1);
    let stride = if gcd(7, n) == 1 { 7 } else { 1 };
    (0..n)
        .map(|i| {
            let tx = (half + (i as u64 * transactions as u64 / (2 * n as u64)) as u32)
                .min(transactions.max(1) - 1)
                .max(1);
            let j = (i * stride) % n;
            (tx, (j as f64 + 0.5) / n as f64)
        })
        .collect()
}

fn gcd(a: u32, b: u32) -> u32 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// The database's state the cut may leave: the committed transactions'
/// costs (`expect`), and those with the transaction in flight at the cut
/// applied (`with_last`), and whether its COMMIT returned.
struct AtCut {
    expect: Vec<f64>,
    with_last: Vec<f64>,
    committed_last: bool,
}

/// Runs `cut_tx` transactions, then cuts power inside the next one at
/// `fraction` of the flash operations the previous transaction took, then
/// restarts every layer (FTL, file system, SQLite) and times each.
/// [`restart_points`] says where a series of cuts falls.
pub fn restart(spec: &CompareSpec, mode: Mode, k: u32, cut_tx: u32, fraction: f64) -> Result<Restart, StackError> {
    let (stack, conn, page_size) = open_aged(spec, mode, "partsupp.db")?;
    load(&conn, spec.rows, spec.seed)?;
    let w = TxWorkload {
        rows: spec.rows,
        k,
        transactions: spec.transactions,
        seed: spec.seed,
    };
    // The name is kept from when every cut fell after half the run.
    let half = cut_tx.max(1);
    let at = run_to_cut(&stack, &conn, spec, &w, half, fraction)?;
    drop(conn);
    recover(stack, spec, mode, page_size, &at, (half, fraction))
}

/// Runs transactions `0..half`, arms the power cut inside transaction
/// `half` and runs it into the cut.
fn run_to_cut(
    stack: &Stack,
    conn: &rusqlite::Connection,
    spec: &CompareSpec,
    w: &TxWorkload,
    half: u32,
    fraction: f64,
) -> Result<AtCut, StackError> {
    let mut expect = costs(conn)?;
    let mut last_tx_ops = 0;
    for i in 0..half {
        let u = w.updates(i);
        let before = stack.with_fs_mut(|fs| fs.device().nand().op_count())?;
        run_tx(conn, &u)?;
        last_tx_ops = stack.with_fs_mut(|fs| fs.device().nand().op_count())? - before;
        for (id, c) in u {
            expect[id as usize] = c;
        }
    }
    let ops_before = stack.with_fs_mut(|fs| fs.device().nand().op_count())?;
    let at_op = ops_before + ((last_tx_ops as f64 * fraction) as u64).max(1);
    stack.with_fs_mut(|fs| {
        fs.device_mut().nand_mut().arm_power_cut(txftl_nand::PowerCut {
            at_op,
            torn: txftl_nand::Torn::Garbage,
            seed: spec.seed,
        })
    })?;
    let committed_last = run_tx(conn, &w.updates(half)).is_ok();
    // The transaction in flight at the cut: whole or absent (if its COMMIT
    // returned, it must be whole).
    let mut with_last = expect.clone();
    for (id, c) in w.updates(half) {
        with_last[id as usize] = c;
    }
    if committed_last {
        expect = with_last.clone();
    }
    Ok(AtCut {
        expect,
        with_last,
        committed_last,
    })
}

/// Power off and on, then each layer's recovery, timed: the FTL's (mount),
/// the file system's (journal replay), SQLite's (when the database is first
/// read); then the database checked against what the cut may leave. `cut`:
/// the transactions run before the cut, and where in the next one it fell.
fn recover(stack: Stack, spec: &CompareSpec, mode: Mode, page_size: usize, at: &AtCut, cut: (u32, f64)) -> Result<Restart, StackError> {
    let fs = stack.into_fs()?;
    let mut nand = fs.into_device().into_nand();
    nand.power_off();
    nand.power_on();
    // FTL recovery.
    let dev = txftl_protocols::mount(mode.protocol(), nand, spec.ftl.clone(), &spec.opts.for_entry(mode.entry()))
        .map_err(|e| StackError::Other(e.to_string()))?;
    let ftl_recovery = dev.recovery_report().unwrap_or_default();
    let t0 = dev.now_ns();
    // File system mount (journal replay).
    let stack = Stack::mount(dev, mode)?;
    let (t1, fs_before, dev_before) = stack.with_fs_mut(|fs| (fs.device().now_ns(), fs.stats(), fs.device().stats()))?;
    // SQLite's recovery happens when the database is first read (hot journal
    // rollback, WAL recovery): open it and read one tuple.
    let conn = stack.open("partsupp.db", page_size)?;
    let _: f64 = conn.query_row("SELECT ps_supplycost FROM partsupp WHERE ps_id = 0", [], |r| r.get(0))?;
    let (t2, fs_after, dev_after) = stack.with_fs_mut(|fs| (fs.device().now_ns(), fs.stats(), fs.device().stats()))?;
    let integrity = integrity_check(&conn)?;
    let state = costs(&conn)?;
    let in_flight_applied = state == at.with_last;
    let committed_state_ok = state == at.expect || (!at.committed_last && in_flight_applied);
    Ok(Restart {
        mode,
        cut_after_transactions: cut.0,
        cut_fraction: cut.1,
        ftl_recovery,
        fs_mount_ns: t1 - t0,
        sqlite_recovery_ns: t2 - t1,
        sqlite_recovery_page_reads: fs_after.page_reads - fs_before.page_reads,
        sqlite_recovery_page_writes: fs_after.host_page_writes() - fs_before.host_page_writes(),
        sqlite_recovery_flash_programs: dev_after.flash_programs - dev_before.flash_programs,
        sqlite_recovery_gc_runs: dev_after.gc_runs - dev_before.gc_runs,
        sqlite_recovery_checkpoints: dev_after.checkpoints - dev_before.checkpoints,
        integrity,
        committed_state_ok,
        in_flight_applied,
    })
}

#[cfg(test)]
mod tests {
    use super::restart_points;

    #[test]
    fn restart_points_spread_over_the_second_half_and_through_the_transaction() {
        for (t, n) in [(1000, 20), (200, 10), (1000, 5), (20, 20), (7, 4)] {
            let p = restart_points(t, n);
            assert_eq!(p.len(), n as usize);
            assert!(p.iter().all(|&(tx, _)| tx >= (t / 2).max(1) && tx < t), "{t} {n}: {p:?}");
            assert!(p.windows(2).all(|w| w[0].0 <= w[1].0), "transactions in order: {p:?}");
            // Every point in the transaction once: (j + 0.5) / n for each j.
            let mut js: Vec<u32> = p.iter().map(|&(_, f)| (f * n as f64 - 0.5).round() as u32).collect();
            js.sort();
            assert_eq!(js, (0..n).collect::<Vec<_>>(), "{t} {n}: {p:?}");
        }
        // Distinct transactions when there are enough, and the point in the
        // transaction not rising with it.
        let p = restart_points(1000, 20);
        assert!(p.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(p.windows(2).any(|w| w[1].1 < w[0].1));
    }
}
