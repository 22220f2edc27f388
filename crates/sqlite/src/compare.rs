//! `txftl compare`: the synthetic workload in every mode on identical devices,
//! measured as the X-FTL paper's Table 1 (host and device I/O), Figure 5
//! (elapsed time per K) and Table 5 (restart time after a power cut).
//!
//! Each run: a fresh device of the preset (full data), the file system on it,
//! aged with a filler file (sized so that greedy GC finds about the target share
//! of valid pages in its victims: utilization u = (v - 1) / ln v from the LFS
//! cleaning analysis, then one random overwrite of the filler), the `partsupp`
//! table loaded, counters reset, then the transactions. The victim validity GC
//! actually saw is measured and reported.

use crate::workload::{costs, integrity_check, load, run_tx, TxWorkload};
use crate::{Mode, Stack, StackError};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use txftl_fs::{FileClass, FsStats};
use txftl_ftl::{DeviceStats, FtlConfig, RecoveryReport};
use txftl_nand::{Nand, NandConfig};
use txftl_protocols::ProtocolOptions;

#[derive(Clone, Debug)]
pub struct CompareSpec {
    pub nand: NandConfig,
    pub ftl: FtlConfig,
    /// Options of the modes' protocols: each mode's device takes those its
    /// protocol's entry declares.
    pub opts: ProtocolOptions,
    pub rows: u32,
    pub transactions: u32,
    pub seed: u64,
    /// Target share of valid pages in GC victims, percent (0: no aging).
    pub validity_pct: u32,
}

/// One mode, one K.
#[derive(Clone, Debug, Serialize)]
pub struct ModeRun {
    pub mode: Mode,
    pub k: u32,
    pub transactions: u32,
    /// Host side (file system): page writes by kind, fsyncs, barriers, commits.
    pub host: FsStats,
    /// Device side: flash operations, GC, erases, simulated time.
    pub device: DeviceStats,
    /// Simulated elapsed time of the transactions, seconds (device clock).
    pub elapsed_s: f64,
    pub tx_per_sim_second: f64,
    /// Valid pages per GC victim, as measured during the run (percent of a block).
    pub gc_victim_validity_pct: Option<f64>,
    pub integrity: String,
}

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

fn device(spec: &CompareSpec, mode: Mode) -> Result<Stack, StackError> {
    let nand = Nand::new(spec.nand).map_err(|e| StackError::Other(e.to_string()))?;
    let dev = txftl_protocols::format(mode.protocol(), nand, spec.ftl.clone(), &spec.opts.for_entry(mode.entry()))
        .map_err(|e| StackError::Other(e.to_string()))?;
    Stack::format(dev, mode)
}

/// Utilization at which greedy GC under uniform random writes finds a share
/// `v` of valid pages in victims (Rosenblum & Ousterhout's LFS analysis).
pub fn utilization_for_validity(v: f64) -> f64 {
    if v <= 0.0 {
        return 0.0;
    }
    (v - 1.0) / v.ln()
}

/// Fills and scrambles a filler file so GC works at the target victim validity.
fn age(stack: &Stack, spec: &CompareSpec) -> Result<(), StackError> {
    if spec.validity_pct == 0 {
        return Ok(());
    }
    let u = utilization_for_validity(spec.validity_pct as f64 / 100.0);
    stack.with_fs_mut(|fs| -> Result<(), StackError> {
        let ps = fs.page_size();
        let info = fs.device().info();
        // Physical data pages: logical capacity plus the over-provisioned share.
        let physical =
            info.logical_pages as f64 / (1.0 - spec.ftl.overprovision_pct.unwrap_or(txftl_ftl::DEFAULT_OVERPROVISION_PCT) as f64 / 100.0);
        let db_pages = (spec.rows as f64 * 230.0 / ps as f64) * 1.3;
        let target = ((u * physical) - db_pages).max(0.0).min(info.logical_pages as f64 * 0.95) as u64;
        let filler = fs.create("aging.bin", FileClass::Other)?;
        let page = vec![0xA5u8; ps];
        for p in 0..target {
            fs.write(None, filler, p * ps as u64, &page)?;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0xA6E);
        for _ in 0..target {
            let p = rng.gen_range(0..target.max(1));
            fs.write(None, filler, p * ps as u64, &page)?;
        }
        fs.fsync(None, filler)?;
        Ok(())
    })??;
    Ok(())
}

fn reset_counters(stack: &Stack) -> Result<u64, StackError> {
    stack.with_fs_mut(|fs| {
        fs.reset_stats();
        fs.device_mut().reset_stats();
        fs.device().now_ns()
    })
}

/// Runs the workload with `k` tuples per transaction in one mode.
pub fn run_mode(spec: &CompareSpec, mode: Mode, k: u32) -> Result<ModeRun, StackError> {
    let stack = device(spec, mode)?;
    age(&stack, spec)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size())?;
    let conn = stack.open("partsupp.db", page_size)?;
    load(&conn, spec.rows, spec.seed)?;
    let start = reset_counters(&stack)?;
    let w = TxWorkload {
        rows: spec.rows,
        k,
        transactions: spec.transactions,
        seed: spec.seed,
    };
    for i in 0..w.transactions {
        run_tx(&conn, &w.updates(i))?;
    }
    let integrity = integrity_check(&conn)?;
    drop(conn);
    let (host, device, end, ppb) = stack.with_fs_mut(|fs| {
        let ppb = fs.device().nand().geometry().pages_per_block as f64;
        (fs.stats(), fs.device().stats(), fs.device().now_ns(), ppb)
    })?;
    let elapsed_s = (end - start) as f64 / 1e9;
    Ok(ModeRun {
        mode,
        k,
        transactions: spec.transactions,
        host,
        device,
        elapsed_s,
        tx_per_sim_second: if elapsed_s > 0.0 {
            spec.transactions as f64 / elapsed_s
        } else {
            0.0
        },
        gc_victim_validity_pct: (device.gc_runs > 0).then(|| 100.0 * device.gc_copies as f64 / (device.gc_runs as f64 * ppb)),
        integrity,
    })
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

/// Runs `cut_tx` transactions, then cuts power inside the next one at
/// `fraction` of the flash operations the previous transaction took, then
/// restarts every layer (FTL, file system, SQLite) and times each.
/// [`restart_points`] says where a series of cuts falls.
pub fn restart(spec: &CompareSpec, mode: Mode, k: u32, cut_tx: u32, fraction: f64) -> Result<Restart, StackError> {
    let stack = device(spec, mode)?;
    age(&stack, spec)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size())?;
    let conn = stack.open("partsupp.db", page_size)?;
    load(&conn, spec.rows, spec.seed)?;
    let w = TxWorkload {
        rows: spec.rows,
        k,
        transactions: spec.transactions,
        seed: spec.seed,
    };
    let mut expect = costs(&conn)?;
    // The name is kept from when every cut fell after half the run.
    let half = cut_tx.max(1);
    let mut last_tx_ops = 0;
    for i in 0..half {
        let u = w.updates(i);
        let before = stack.with_fs_mut(|fs| fs.device().nand().op_count())?;
        run_tx(&conn, &u)?;
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
    let cut_result = run_tx(&conn, &w.updates(half));
    let committed_last = cut_result.is_ok();
    // The transaction in flight at the cut: whole or absent (if its COMMIT
    // returned, it must be whole).
    let mut with_last = expect.clone();
    for (id, c) in w.updates(half) {
        with_last[id as usize] = c;
    }
    if committed_last {
        expect = with_last.clone();
    }
    drop(conn);
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
    let in_flight_applied = state == with_last;
    let committed_state_ok = state == expect || (!committed_last && in_flight_applied);
    Ok(Restart {
        mode,
        cut_after_transactions: half,
        cut_fraction: fraction,
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

/// A workload `compare --workload` (and `reproduce`) runs in each mode on an
/// identical device: the same spec, seed and device for every mode.
#[derive(Clone, Debug, Serialize)]
pub enum Workload {
    /// The paper's synthetic workload with `k` tuples per transaction
    /// (rows and transactions from the [`CompareSpec`]).
    Partsupp {
        k: u32,
    },
    Tpcc(crate::tpcc::TpccSpec),
    Ycsb(crate::ycsb::YcsbSpec),
    SqliteBench(crate::sqlitebench::BenchSpec),
}

impl Workload {
    /// The database file the workload uses.
    fn db(&self) -> &'static str {
        match self {
            Workload::Partsupp { .. } => "partsupp.db",
            Workload::Tpcc(_) => "tpcc.db",
            Workload::Ycsb(_) => "ycsb.db",
            Workload::SqliteBench(_) => "bench.db",
        }
    }

    pub fn name(&self) -> String {
        match self {
            Workload::Partsupp { k } => format!("partsupp K={k}"),
            Workload::Tpcc(s) => format!("tpcc mix {:?}", s.mix),
            Workload::Ycsb(s) => format!("ycsb-{}", s.workload.name()),
            Workload::SqliteBench(s) => {
                let names: Vec<&str> = s.benchmarks.iter().map(|b| b.name()).collect();
                format!("sqlite-bench {}", names.join(","))
            }
        }
    }
}

/// One workload in one mode: host and device counters of the measured phase
/// (after the load), throughput and latency on the device clock.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadRun {
    pub mode: Mode,
    pub workload: String,
    pub host: FsStats,
    pub device: DeviceStats,
    /// Simulated elapsed time of the measured phase, seconds (device clock).
    pub elapsed_s: f64,
    /// Units of work measured: transactions (partsupp, TPC-C), operations
    /// (YCSB), transactions of the benchmarks (sqlite-bench).
    pub units: u64,
    pub unit: &'static str,
    pub throughput_per_sim_s: f64,
    /// Latency of a unit, begin to end on the device clock, ns.
    pub latency_mean_ns: f64,
    pub latency_p99_ns: u64,
    /// TPC-C only: the run's report (New-Orders and counts per type).
    pub tpcc: Option<crate::tpcc::TpccReport>,
    /// TPC-C only: consistency conditions 1-4 ("ok" or what failed).
    pub consistency: Option<String>,
    pub integrity: String,
}

impl WorkloadRun {
    /// Flash programs (full and partial) per host page write.
    pub fn write_amplification(&self) -> f64 {
        let h = self.host.host_page_writes();
        if h == 0 {
            return 0.0;
        }
        (self.device.flash_programs + self.device.flash_partial_programs) as f64 / h as f64
    }

    /// TPC-C: every transaction committed per simulated minute (the X-FTL
    /// paper's "tpmC", which it reports for mixes without New-Order too).
    pub fn transactions_per_sim_minute(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.units as f64 * 60.0 / self.elapsed_s
        } else {
            0.0
        }
    }

    /// TPC-C: New-Orders committed per simulated minute (the specification's tpmC).
    pub fn new_orders_per_sim_minute(&self) -> Option<f64> {
        let r = self.tpcc.as_ref()?;
        Some(if self.elapsed_s > 0.0 {
            r.new_orders as f64 * 60.0 / self.elapsed_s
        } else {
            0.0
        })
    }
}

/// Device clock now.
fn now(stack: &Stack) -> Result<u64, StackError> {
    stack.with_fs_mut(|fs| fs.device().now_ns())
}

/// Runs `w` in `mode` on a fresh device of the spec (aged to its validity
/// target), loads it, resets the counters and measures the run.
pub fn run_workload(spec: &CompareSpec, mode: Mode, w: &Workload) -> Result<WorkloadRun, StackError> {
    let stack = device(spec, mode)?;
    age(&stack, spec)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size())?;
    let conn = stack.open(w.db(), page_size)?;
    let other =
        |e: &dyn std::fmt::Display| StackError::Other(format!("{e}{}", stack.last_error().map(|x| format!(" ({x})")).unwrap_or_default()));
    match w {
        Workload::Partsupp { .. } => load(&conn, spec.rows, spec.seed)?,
        Workload::Tpcc(t) => crate::tpcc::load(&conn, t).map_err(|e| other(&e))?,
        Workload::Ycsb(y) => crate::ycsb::load(&conn, y).map_err(|e| other(&e))?,
        Workload::SqliteBench(_) => {}
    }
    let start = reset_counters(&stack)?;
    // Begin-to-end latency of each unit on the device clock.
    let mut lat: Vec<u64> = Vec::new();
    let mut began = 0u64;
    let mut tpcc = None;
    let mut consistency = None;
    match w {
        Workload::Partsupp { k } => {
            let tw = TxWorkload {
                rows: spec.rows,
                k: *k,
                transactions: spec.transactions,
                seed: spec.seed,
            };
            for i in 0..tw.transactions {
                let b = now(&stack)?;
                run_tx(&conn, &tw.updates(i))?;
                lat.push(now(&stack)? - b);
            }
        }
        Workload::Tpcc(t) => {
            let r = crate::tpcc::run_with(&conn, t, |ev| {
                let n = now(&stack).unwrap_or(0);
                match ev {
                    crate::tpcc::TxEvent::Begin { .. } => began = n,
                    crate::tpcc::TxEvent::End { .. } => lat.push(n.saturating_sub(began)),
                }
            })
            .map_err(|e| other(&e))?;
            tpcc = Some(r);
        }
        Workload::Ycsb(y) => {
            // A unit is an operation; with batches, the commit is timed apart
            // and not counted as a unit.
            crate::ycsb::run_with(&conn, y, |ev| {
                let n = now(&stack).unwrap_or(0);
                match ev {
                    crate::ycsb::OpEvent::Begin { .. } => began = n,
                    crate::ycsb::OpEvent::End { .. } => lat.push(n.saturating_sub(began)),
                    _ => {}
                }
            })
            .map_err(|e| other(&e))?;
        }
        Workload::SqliteBench(b) => {
            crate::sqlitebench::run_with(&conn, b, |ev| {
                let n = now(&stack).unwrap_or(0);
                match ev {
                    crate::sqlitebench::BenchEvent::Begin { .. } => began = n,
                    crate::sqlitebench::BenchEvent::End { .. } => lat.push(n.saturating_sub(began)),
                    _ => {}
                }
            })
            .map_err(|e| other(&e))?;
        }
    }
    // The measured phase ends here: the checks below read the whole
    // database, and closing the connection checkpoints a WAL.
    let (host, device, end) = stack.with_fs_mut(|fs| (fs.stats(), fs.device().stats(), fs.device().now_ns()))?;
    if matches!(w, Workload::Tpcc(_)) {
        consistency = Some(match crate::tpcc::check(&conn) {
            Ok(()) => "ok".to_string(),
            Err(e) => e,
        });
    }
    let integrity = integrity_check(&conn)?;
    drop(conn);
    let elapsed_s = (end - start) as f64 / 1e9;
    let units = lat.len() as u64;
    lat.sort_unstable();
    // Nearest-rank p99.
    let p99 = if lat.is_empty() {
        0
    } else {
        lat[((lat.len() as f64 * 0.99).ceil() as usize).clamp(1, lat.len()) - 1]
    };
    let mean = if lat.is_empty() {
        0.0
    } else {
        lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64
    };
    Ok(WorkloadRun {
        mode,
        workload: w.name(),
        host,
        device,
        elapsed_s,
        units,
        unit: match w {
            Workload::Ycsb(_) => "operations",
            _ => "transactions",
        },
        throughput_per_sim_s: if elapsed_s > 0.0 { units as f64 / elapsed_s } else { 0.0 },
        latency_mean_ns: mean,
        latency_p99_ns: p99,
        tpcc,
        consistency,
        integrity,
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
