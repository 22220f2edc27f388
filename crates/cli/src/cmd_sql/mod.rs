//! `txftl sql`: database workloads on real SQLite through the VFS, in one
//! journal mode, with the device's counters, throughput per simulated second
//! and latency per transaction type on the device clock.

use crate::cmd_compare::refuse_protocol;
use crate::cmd_run::{add_counters, add_latency};
use crate::open::ram;
use crate::setup::{describe, nand_config, protocol_options_for, resolve_device};
use crate::table::{pair, sim_time, thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use txftl_fs::FsStats;
use txftl_ftl::DeviceStats;
use txftl_host::latency::Latency;
use txftl_host::record::Recorder;
use txftl_host::{per_second, LatencyReport, LatencySummary};
use txftl_nand::DataMode;
use txftl_reproduce::wrapln;
use txftl_sqlite::sqlitebench::{self, BenchEvent, BenchSpec, Benchmark};
use txftl_sqlite::tpcc::clients::{Begin, BusyCounts, ClientsSpec};
use txftl_sqlite::tpcc::{self, TpccSpec, TxKind};
use txftl_sqlite::workload::{self as partsupp, TxWorkload};
use txftl_sqlite::ycsb::{self, Distribution, OpEvent, OpKind, Workload, YcsbSpec};
use txftl_sqlite::{Mode, Snapshot as Snap, Stack, Synchronous};

mod bench_cmd;
mod heavy;
mod partsupp_cmd;
mod tpcc_cmd;
mod ycsb_cmd;

use bench_cmd::*;
use partsupp_cmd::*;
use tpcc_cmd::*;
use ycsb_cmd::*;

#[derive(Subcommand, Debug)]
pub enum SqlCommand {
    /// TPC-C (rev. 5.11): the nine tables, the five transactions, a mix; tpmC,
    /// pages written per transaction type, the consistency check.
    Tpcc(TpccArgs),
    /// YCSB core workloads A to F (one table `usertable`, YCSB's key chooser,
    /// zipfian / uniform / latest), operations per simulated second and latency.
    Ycsb(YcsbArgs),
    /// sqlite-bench (LevelDB's db_bench_sqlite3): fillseq, fillrandom,
    /// overwrite, readseq, readrandom...; throughput and pages per benchmark.
    SqliteBench(BenchArgs),
    /// The X-FTL paper's synthetic workload: a TPC-H `partsupp` table; each
    /// transaction reads K random tuples by key and updates their supply cost.
    /// On a fresh device (`txftl compare` ages it first and runs every mode).
    Partsupp(PartsuppArgs),
    /// SQLite's heavy statements on every SQLite mode (or --modes): one
    /// transaction of 50,000 inserts into a table with three indexes, CREATE
    /// INDEX over 100,000 rows and five in one transaction, ORDER BY over the
    /// unindexed table, VACUUM, DELETE of the whole table in one transaction;
    /// each checked (rows, integrity_check). Default device: the README's
    /// image (jasmine, 16 blocks per plane).
    Heavy(heavy::HeavyArgs),
}

/// Options every SQL workload takes.
#[derive(Args, Debug)]
pub struct SqlCommon {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Journal mode and device: rbj, wal (the plain FTL, SQLite's journal on
    /// it); P, P-memory, P-batch on a transactional protocol P (journal off,
    /// in memory, or SQLite's batch atomic writes mapped to the device's
    /// transactions).
    #[arg(long, default_value = txftl_protocols::DEFAULT_TRANSACTIONAL_PROTOCOL, value_parser = crate::setup::mode_parser())]
    pub mode: String,
    /// Record what the file system sent to the device during the run (not the
    /// load), with its transaction ids, as a txftl trace (docs/traces.md).
    #[arg(long)]
    pub record: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
    /// `PRAGMA synchronous` of the connections [default: full; sqlite-bench:
    /// db_bench's own, OFF or FULL by benchmark]. Under normal, a protocol
    /// that groups SQLite's transactions (nolgn) groups them.
    #[arg(long, value_parser = ["off", "normal", "full"])]
    pub synchronous: Option<String>,
    /// Clean file pages the host's page cache keeps, as an OS's does (0:
    /// none, every read of a page not dirty goes to the device).
    #[arg(long, default_value_t = 0)]
    pub read_cache: usize,
}

impl SqlCommon {
    fn synchronous(&self) -> Option<Synchronous> {
        self.synchronous.as_deref().and_then(Synchronous::parse)
    }
}

pub fn run(cmd: SqlCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SqlCommand::Tpcc(args) => tpcc_cmd(args),
        SqlCommand::Ycsb(args) => ycsb_cmd(args),
        SqlCommand::SqliteBench(args) => bench_cmd(args),
        SqlCommand::Heavy(args) => heavy::run(args),
        SqlCommand::Partsupp(args) => partsupp_cmd(args),
    }
}

/// Counters and latency attributed to the kinds of operation of a workload,
/// from snapshots taken at each operation's begin and end.
struct Attribution {
    costs: Vec<KindCost>,
    lat: Vec<Latency>,
    all: Latency,
    begin: Option<Snap>,
}

impl Attribution {
    fn new(kinds: &[&str]) -> Attribution {
        Attribution {
            costs: kinds
                .iter()
                .map(|k| KindCost {
                    kind: k.to_string(),
                    ..KindCost::default()
                })
                .collect(),
            lat: vec![Latency::default(); kinds.len()],
            all: Latency::default(),
            begin: None,
        }
    }

    fn begin(&mut self, s: Snap) {
        self.begin = Some(s);
    }

    /// `ops` operations of kind `i` ended at `s` (latency from their begin).
    fn end(&mut self, i: usize, s: Snap, ops: u64) {
        let Some(b) = self.begin else { return };
        self.end_with(i, s, ops, s.now_ns - b.now_ns);
    }

    /// [`Attribution::end`] with the latency given (a client that waited
    /// before its begin counts the wait).
    fn end_with(&mut self, i: usize, s: Snap, ops: u64, latency_ns: u64) {
        let Some(b) = self.begin.take() else { return };
        let c = &mut self.costs[i];
        c.count += ops;
        c.host_page_writes += s.fs.host_page_writes() - b.fs.host_page_writes();
        c.flash_programs += s.dev.flash_programs - b.dev.flash_programs;
        self.lat[i].record(latency_ns);
        self.all.record(latency_ns);
    }

    /// `ops` operations of kind `i` whose costs the caller summed.
    fn add(&mut self, i: usize, host_page_writes: u64, flash_programs: u64, latency_ns: u64) {
        let c = &mut self.costs[i];
        c.count += 1;
        c.host_page_writes += host_page_writes;
        c.flash_programs += flash_programs;
        self.lat[i].record(latency_ns);
        self.all.record(latency_ns);
    }

    fn finish(mut self) -> (Vec<KindCost>, LatencyReport) {
        for (c, l) in self.costs.iter_mut().zip(&self.lat) {
            let n = c.count.max(1) as f64;
            c.host_page_writes_per_tx = c.host_page_writes as f64 / n;
            c.flash_programs_per_tx = c.flash_programs as f64 / n;
            c.latency = l.summary();
        }
        let by_op = self
            .costs
            .iter()
            .filter(|c| c.count > 0)
            .map(|c| (c.kind.clone(), c.latency))
            .collect();
        let report = LatencyReport {
            request: self.all.summary(),
            transaction: LatencySummary::default(),
            by_op,
        };
        (self.costs, report)
    }
}

/// The run's measured counters, after a load: resets them, records from here.
fn start_measuring(stack: &Stack, on: &AtomicBool) -> Result<(), CliError> {
    stack
        .with_fs_mut(|fs| {
            fs.reset_stats();
            fs.device_mut().reset_stats();
        })
        .map_err(CliError::failed)?;
    on.store(true, Ordering::Relaxed);
    Ok(())
}

/// Closes the stack (flushing a trace record) after the run.
fn close(stack: Stack, recording: bool) -> Result<(), CliError> {
    if recording {
        let fs = stack.into_fs().map_err(CliError::failed)?;
        fs.unmount()
            .map_err(|e| CliError::Failed(format!("unmounting the file system: {e}")))?
            .close()
            .map_err(|e| CliError::Failed(format!("closing the device: {e}")))?;
    }
    Ok(())
}

/// A progress bar for `len` steps (hidden with --json).
fn progress(json: bool, len: u64, msg: &str) -> Result<ProgressBar, CliError> {
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(len) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    bar.set_message(msg.to_string());
    Ok(bar)
}

fn add_kinds(t: &mut Figures, kinds: &[KindCost], what: &str) {
    t.section(&format!(
        "per {what} (simulated): count | host pages / flash programs per {what} | latency mean / p99 us"
    ));
    for c in kinds {
        t.row(
            &format!("  {}", c.kind),
            format!(
                "{} | {:.2} / {:.2} | {:.0} / {:.0}",
                thousands(c.count),
                c.host_page_writes_per_tx,
                c.flash_programs_per_tx,
                c.latency.mean_ns / 1000.0,
                us(c.latency.p99_ns)
            ),
        );
    }
}

fn add_fs(t: &mut Figures, h: &FsStats) {
    t.section("file system (simulated)");
    t.row(
        "database / journal / WAL page writes",
        format!(
            "{} / {} / {}",
            thousands(h.database_page_writes),
            thousands(h.journal_page_writes),
            thousands(h.wal_page_writes)
        ),
    );
    t.row(
        "metadata page writes: in place / journal",
        pair(h.metadata_page_writes, h.metadata_journal_writes),
    );
    t.row("fsyncs / device flushes", pair(h.fsyncs, h.flushes));
    t.row("device commits / aborts", pair(h.tx_commits, h.tx_aborts));
    t.row("page reads: device / host page cache", pair(h.page_reads, h.cached_reads));
}

fn add_wall(t: &mut Figures, load: f64, run: f64, ops: u64) {
    t.section("emulator (wall clock)");
    t.row("load / run wall time", format!("{load:.1} s / {run:.1} s"));
    t.row("operations per wall second", format!("{:.0}", ops as f64 / run.max(1e-9)));
}

/// A device in RAM with the file system and the VFS of `mode`, recording the
/// device calls to `record` while the returned flag is set.
fn stack(common: &SqlCommon) -> Result<(Stack, Mode, String, Arc<AtomicBool>), CliError> {
    refuse_protocol(&common.device)?;
    let mode = crate::setup::parse_mode(&common.mode)?;
    let d = resolve_device(&common.device, crate::setup::full_preset_for(&[mode.protocol()]))?;
    let p = d.preset;
    let opts = protocol_options_for(&common.device, &[mode.protocol()])?;
    crate::setup::check_protocol_config(mode.protocol(), &d.ftl, &p.geometry, &opts)?;
    crate::open::check_device_fits(mode.protocol(), &nand_config(&p, DataMode::Full), &d.ftl, &opts, 0)?;
    let nand = ram(nand_config(&p, DataMode::Full))?;
    let mut dev = txftl_protocols::format(mode.protocol(), nand, d.ftl, &opts).map_err(crate::open::device_error)?;
    let on = Arc::new(AtomicBool::new(false));
    if let Some(path) = &common.record {
        dev = Recorder::wrap(dev, crate::cmd_run::record_file(path)?, on.clone());
    }
    let mut stack = Stack::format(dev, mode).map_err(CliError::failed)?;
    if let Some(s) = common.synchronous() {
        stack.synchronous = s;
    }
    stack
        .with_fs_mut(|fs| fs.set_read_cache(common.read_cache))
        .map_err(CliError::failed)?
        .map_err(CliError::failed)?;
    Ok((stack, mode, format!("{} in RAM, full data", describe(&p)), on))
}

fn snap(stack: &Stack) -> Snap {
    stack.snapshot().expect("file system lock")
}

/// What one transaction type cost, summed over its transactions.
#[derive(Clone, Debug, Default, Serialize)]
pub struct KindCost {
    pub kind: String,
    pub count: u64,
    pub committed: u64,
    pub rolled_back: u64,
    /// Host page writes (file system: data, journal, WAL, metadata).
    pub host_page_writes: u64,
    pub flash_programs: u64,
    pub host_page_writes_per_tx: f64,
    pub flash_programs_per_tx: f64,
    /// Begin to end on the device clock.
    pub latency: LatencySummary,
}

/// Why the VFS last failed, if it said.
fn why(stack: &Stack) -> String {
    stack.last_error().map(|e| format!(" ({e})")).unwrap_or_default()
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}
