//! Any workload of `compare --workload` in one mode on an identical device
//! (TPC-C for Table 4, YCSB, sqlite-bench, the synthetic one): throughput
//! and latency on the device clock.

use super::{open_aged, reset_counters, CompareSpec};
use serde::Serialize;
use txftl_fs::FsStats;
use txftl_ftl::DeviceStats;
use txftl_sqlite::workload::{integrity_check, load, run_tx, TxWorkload};
use txftl_sqlite::{sqlitebench, tpcc, ycsb, Mode, Stack, StackError};

/// A workload `compare --workload` (and `reproduce`) runs in each mode on an
/// identical device: the same spec, seed and device for every mode.
#[derive(Clone, Debug, Serialize)]
pub enum Workload {
    /// The paper's synthetic workload with `k` tuples per transaction
    /// (rows and transactions from the [`CompareSpec`]).
    Partsupp {
        k: u32,
    },
    Tpcc(txftl_sqlite::tpcc::TpccSpec),
    Ycsb(txftl_sqlite::ycsb::YcsbSpec),
    SqliteBench(txftl_sqlite::sqlitebench::BenchSpec),
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
    /// The host's work in the measured phase, priced by the host model apart.
    pub host_work: txftl_sqlite::host_cost::HostWork,
    /// Units of work measured: transactions (partsupp, TPC-C), operations
    /// (YCSB), transactions of the benchmarks (sqlite-bench).
    pub units: u64,
    pub unit: &'static str,
    pub throughput_per_sim_s: f64,
    /// Latency of a unit, begin to end on the device clock, ns.
    pub latency_mean_ns: f64,
    pub latency_p99_ns: u64,
    /// TPC-C only: the run's report (New-Orders and counts per type).
    pub tpcc: Option<txftl_sqlite::tpcc::TpccReport>,
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

/// Runs `w` in `mode` on a fresh device of the spec (aged to its validity
/// target), loads it, resets the counters and measures the run.
pub fn run_workload(spec: &CompareSpec, mode: Mode, w: &Workload) -> Result<WorkloadRun, StackError> {
    let (stack, conn, _) = open_aged(spec, mode, w.db())?;
    match w {
        Workload::Partsupp { .. } => load(&conn, spec.rows, spec.seed)?,
        Workload::Tpcc(t) => tpcc::load(&conn, t).map_err(|e| other(&stack, &e))?,
        Workload::Ycsb(y) => ycsb::load(&conn, y).map_err(|e| other(&stack, &e))?,
        Workload::SqliteBench(_) => {}
    }
    let start = reset_counters(&stack)?;
    let host0 = stack.host_work();
    let (mut lat, tpcc) = measure(&stack, &conn, spec, w)?;
    let host_work = stack.host_work() - host0;
    // The measured phase ends here: the checks below read the whole
    // database, and closing the connection checkpoints a WAL.
    let (host, device, end) = stack.with_fs_mut(|fs| (fs.stats(), fs.device().stats(), fs.device().now_ns()))?;
    let consistency = matches!(w, Workload::Tpcc(_)).then(|| match tpcc::check(&conn) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    });
    let integrity = integrity_check(&conn)?;
    drop(conn);
    let elapsed_s = (end - start) as f64 / 1e9;
    let units = lat.len() as u64;
    let (latency_mean_ns, latency_p99_ns) = latency(&mut lat);
    Ok(WorkloadRun {
        mode,
        workload: w.name(),
        host,
        device,
        elapsed_s,
        host_work,
        units,
        unit: match w {
            Workload::Ycsb(_) => "operations",
            _ => "transactions",
        },
        throughput_per_sim_s: if elapsed_s > 0.0 { units as f64 / elapsed_s } else { 0.0 },
        latency_mean_ns,
        latency_p99_ns,
        tpcc,
        consistency,
        integrity,
    })
}

/// A workload's error, with the VFS's last one (why SQLite's call failed).
fn other(stack: &Stack, e: &dyn std::fmt::Display) -> StackError {
    StackError::Other(format!("{e}{}", stack.last_error().map(|x| format!(" ({x})")).unwrap_or_default()))
}

/// Runs the measured phase: the begin-to-end latency of each unit on the
/// device clock, and TPC-C's report.
fn measure(
    stack: &Stack,
    conn: &rusqlite::Connection,
    spec: &CompareSpec,
    w: &Workload,
) -> Result<(Vec<u64>, Option<tpcc::TpccReport>), StackError> {
    let mut lat: Vec<u64> = Vec::new();
    let mut began = 0u64;
    let mut report = None;
    match w {
        Workload::Partsupp { k } => {
            let tw = TxWorkload {
                rows: spec.rows,
                k: *k,
                transactions: spec.transactions,
                seed: spec.seed,
            };
            for i in 0..tw.transactions {
                let b = stack.now_ns()?;
                run_tx(conn, &tw.updates(i))?;
                lat.push(stack.now_ns()? - b);
            }
        }
        Workload::Tpcc(t) => {
            let r = tpcc::run_with(conn, t, |ev| {
                let n = stack.now_ns().unwrap_or(0);
                match ev {
                    tpcc::TxEvent::Begin { .. } => began = n,
                    tpcc::TxEvent::End { .. } => lat.push(n.saturating_sub(began)),
                }
            })
            .map_err(|e| other(stack, &e))?;
            report = Some(r);
        }
        Workload::Ycsb(y) => {
            // A unit is an operation; with batches, the commit is timed apart
            // and not counted as a unit.
            ycsb::run_with(conn, y, |ev| {
                let n = stack.now_ns().unwrap_or(0);
                match ev {
                    ycsb::OpEvent::Begin { .. } => began = n,
                    ycsb::OpEvent::End { .. } => lat.push(n.saturating_sub(began)),
                    _ => {}
                }
            })
            .map_err(|e| other(stack, &e))?;
        }
        Workload::SqliteBench(b) => {
            sqlitebench::run_with(conn, b, |ev| {
                let n = stack.now_ns().unwrap_or(0);
                match ev {
                    sqlitebench::BenchEvent::Begin { .. } => began = n,
                    sqlitebench::BenchEvent::End { .. } => lat.push(n.saturating_sub(began)),
                    _ => {}
                }
            })
            .map_err(|e| other(stack, &e))?;
        }
    }
    Ok((lat, report))
}

/// Mean and nearest-rank p99 of the latencies, ns (0 when there are none).
fn latency(lat: &mut [u64]) -> (f64, u64) {
    if lat.is_empty() {
        return (0.0, 0);
    }
    lat.sort_unstable();
    let p99 = lat[((lat.len() as f64 * 0.99).ceil() as usize).clamp(1, lat.len()) - 1];
    let mean = lat.iter().map(|&x| x as f64).sum::<f64>() / lat.len() as f64;
    (mean, p99)
}
