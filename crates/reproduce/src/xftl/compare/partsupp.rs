//! The synthetic workload (a TPC-H `partsupp` table, K tuples read and
//! updated per transaction) in one mode: Table 1 and Figure 5.

use super::{open_aged, reset_counters, CompareSpec};
use serde::Serialize;
use txftl_fs::FsStats;
use txftl_ftl::DeviceStats;
use txftl_sqlite::host_cost::HostWork;
use txftl_sqlite::workload::{integrity_check, load, run_tx, TxWorkload};
use txftl_sqlite::{Mode, StackError};

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
    /// The host's work during the transactions (statements, VM operations,
    /// system calls, bytes copied), priced by the host model apart.
    pub host_work: HostWork,
    pub tx_per_sim_second: f64,
    /// Valid pages per GC victim, as measured during the run (percent of a block).
    pub gc_victim_validity_pct: Option<f64>,
    pub integrity: String,
}

/// Runs the workload with `k` tuples per transaction in one mode.
pub fn run_mode(spec: &CompareSpec, mode: Mode, k: u32) -> Result<ModeRun, StackError> {
    let (stack, conn, _) = open_aged(spec, mode, "partsupp.db")?;
    load(&conn, spec.rows, spec.seed)?;
    let start = reset_counters(&stack)?;
    let host0 = stack.host_work();
    let w = TxWorkload {
        rows: spec.rows,
        k,
        transactions: spec.transactions,
        seed: spec.seed,
    };
    for i in 0..w.transactions {
        run_tx(&conn, &w.updates(i))?;
    }
    let host_work = stack.host_work() - host0;
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
        host_work,
        tx_per_sim_second: if elapsed_s > 0.0 {
            spec.transactions as f64 / elapsed_s
        } else {
            0.0
        },
        gc_victim_validity_pct: (device.gc_runs > 0).then(|| 100.0 * device.gc_copies as f64 / (device.gc_runs as f64 * ppb)),
        integrity,
    })
}
