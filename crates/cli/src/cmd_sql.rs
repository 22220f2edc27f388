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
    Heavy(crate::cmd_sql_heavy::HeavyArgs),
}

#[derive(Args, Debug)]
pub struct PartsuppArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    /// Tuples read and updated per transaction.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: u32,
    /// Transactions to run after the load.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub transactions: u32,
    /// Tuples in partsupp.
    #[arg(long, default_value_t = 60_000, value_parser = clap::value_parser!(u32).range(10..))]
    pub rows: u32,
}

#[derive(Args, Debug)]
pub struct YcsbArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    /// Workload: a (50% read, 50% update), b (95/5), c (read only), d (read
    /// latest, 5% insert), e (short scans, 5% insert), f (read-modify-write).
    #[arg(long, default_value = "a", value_parser = ["a", "b", "c", "d", "e", "f"])]
    pub workload: String,
    /// Records loaded (recordcount).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: u64,
    /// Operations run (operationcount).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub operations: u64,
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub fieldcount: u32,
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub fieldlength: u32,
    /// Request distribution [default: the workload's].
    #[arg(long, value_parser = ["zipfian", "uniform", "latest"])]
    pub distribution: Option<String>,
    /// Longest scan (workload e).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub maxscanlength: u32,
    /// Operations per SQLite transaction (1: autocommit, as YCSB's JDBC binding).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
}

#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    /// Benchmarks, comma-separated, run in order (fillseq, fillseqsync,
    /// fillseqbatch, fillrandom, fillrandsync, fillrandbatch, overwrite,
    /// overwritebatch, readrandom, readseq, fillrand100K, fillseq100K, readrand100K).
    #[arg(long, default_value = "fillseq,fillrandom,overwrite,readseq,readrandom")]
    pub benchmarks: String,
    /// Entries.
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub num: u64,
    /// Bytes of a value (NoLgn: 256 to 16384).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub value_size: u32,
    /// Entries per transaction of the *batch benchmarks.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub batch: u32,
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

#[derive(Args, Debug)]
pub struct TpccArgs {
    #[command(flatten)]
    pub common: SqlCommon,
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub warehouses: u32,
    /// Divide the item, customer and order counts by this (1: the
    /// specification's cardinalities; larger for quick runs).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=900))]
    pub scale: u32,
    /// Transactions to run after the load.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub transactions: u64,
    /// Percent of New-Order, Payment, Order-Status, Delivery, Stock-Level (sum 100).
    #[arg(long, default_value = "45,43,4,4,4")]
    pub mix: String,
    /// Clients, each its own SQLite connection to the database, interleaved
    /// statement by statement on the device clock; SQLite's locks decide who
    /// waits (SQLITE_BUSY: back off, retry). See docs/host-and-sqlite.md.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub clients: u32,
    /// How the writing transactions (New-Order, Payment, Delivery) begin:
    /// deferred (BEGIN: a write refused mid-transaction restarts it) or
    /// immediate (BEGIN IMMEDIATE: the write lock first).
    #[arg(long, default_value = "deferred", value_parser = ["deferred", "immediate"])]
    pub begin: String,
}

pub fn run(cmd: SqlCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SqlCommand::Tpcc(args) => tpcc_cmd(args),
        SqlCommand::Ycsb(args) => ycsb_cmd(args),
        SqlCommand::SqliteBench(args) => bench_cmd(args),
        SqlCommand::Heavy(args) => crate::cmd_sql_heavy::run(args),
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

#[derive(Serialize)]
struct YcsbOut {
    mode: Mode,
    device: String,
    spec: YcsbSpec,
    report: ycsb::YcsbReport,
    kinds: Vec<KindCost>,
    /// Operations per simulated second.
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    host: FsStats,
    measured: DeviceStats,
    integrity: String,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
}

fn ycsb_cmd(args: YcsbArgs) -> Result<ExitCode, CliError> {
    let workload = Workload::parse(&args.workload).ok_or_else(|| CliError::Usage(format!("unknown workload `{}`", args.workload)))?;
    let mut spec = YcsbSpec::preset(workload);
    spec.recordcount = args.records;
    spec.operationcount = args.operations;
    spec.fieldcount = args.fieldcount;
    spec.fieldlength = args.fieldlength;
    spec.maxscanlength = args.maxscanlength;
    spec.batch = args.batch;
    spec.seed = args.common.seed;
    if let Some(d) = &args.distribution {
        spec.distribution = Some(Distribution::parse(d).ok_or_else(|| CliError::Usage(format!("unknown distribution `{d}`")))?);
    }
    spec.validate().map_err(|e| CliError::Usage(e.to_string()))?;
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("ycsb.db", page_size).map_err(CliError::failed)?;
    let bar = progress(
        args.common.json,
        spec.operationcount,
        &format!("{} YCSB {}", mode.name(), workload.name()),
    )?;
    let t0 = std::time::Instant::now();
    ycsb::load(&conn, &spec).map_err(|e| CliError::Failed(format!("loading YCSB: {e}{}", why(&stack))))?;
    let load_wall = t0.elapsed().as_secs_f64();
    start_measuring(&stack, &on)?;
    let mut names: Vec<&str> = OpKind::ALL.iter().map(|k| k.name()).collect();
    names.push("COMMIT");
    let mut att = Attribution::new(&names);
    let t1 = std::time::Instant::now();
    let report = ycsb::run_with(&conn, &spec, |ev| match *ev {
        OpEvent::Begin { .. } | OpEvent::CommitBegin { .. } => att.begin(snap(&stack)),
        OpEvent::End { index, kind, .. } => {
            att.end(kind.index(), snap(&stack), 1);
            if index.is_multiple_of(256) {
                bar.set_position(index + 1);
            }
        }
        OpEvent::CommitEnd { .. } => att.end(OpKind::ALL.len(), snap(&stack), 1),
    })
    .map_err(|e| CliError::Failed(format!("running YCSB: {e}{}", why(&stack))))?;
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let (kinds, latency) = att.finish();
    // Only the kinds the workload has (and COMMIT when batched).
    let kinds: Vec<KindCost> = kinds.into_iter().filter(|c| c.count > 0).collect();
    let sim_s = end.dev.sim_time_ns as f64 / 1e9;
    let ops = report.operations();
    let out = YcsbOut {
        mode,
        device: what,
        spec,
        report,
        kinds,
        throughput_per_sim_s: per_second(ops, sim_s),
        latency,
        host: end.fs,
        measured: end.dev,
        integrity: integrity.clone(),
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        wrapln!("device: {}", out.device);
        let mut t = Figures::new(&format!(
            "txftl sql ycsb: {} | workload {}, {} records, {} operations, seed {}",
            mode.name(),
            workload.name(),
            thousands(out.spec.recordcount),
            thousands(ops),
            out.spec.seed
        ));
        add_kinds(&mut t, &out.kinds, "operation");
        add_fs(&mut t, &out.host);
        add_counters(&mut t, &out.measured);
        t.section("derived (simulated)");
        t.row("simulated time", sim_time(out.measured.sim_time_ns));
        t.row("operations per simulated second", format!("{:.0}", out.throughput_per_sim_s));
        add_latency(&mut t, &out.latency);
        t.section("checks");
        t.row("integrity_check", &out.integrity);
        add_wall(&mut t, load_wall, run_wall, ops);
        t.print();
    }
    if integrity != "ok" {
        return Err(CliError::Failed(format!("integrity_check: {integrity}")));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Serialize)]
struct PartsuppOut {
    mode: Mode,
    device: String,
    workload: TxWorkload,
    /// Host page writes and flash programs per transaction; latency on the device clock.
    kinds: Vec<KindCost>,
    /// Transactions per simulated second.
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    host: FsStats,
    measured: DeviceStats,
    write_amplification: f64,
    integrity: String,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
}

fn partsupp_cmd(args: PartsuppArgs) -> Result<ExitCode, CliError> {
    let w = TxWorkload {
        rows: args.rows,
        k: args.k,
        transactions: args.transactions,
        seed: args.common.seed,
    };
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("partsupp.db", page_size).map_err(CliError::failed)?;
    let bar = progress(
        args.common.json,
        w.transactions as u64,
        &format!("{} partsupp K={}", mode.name(), w.k),
    )?;
    let t0 = std::time::Instant::now();
    partsupp::load(&conn, w.rows, w.seed).map_err(|e| CliError::Failed(format!("loading partsupp: {e}{}", why(&stack))))?;
    let load_wall = t0.elapsed().as_secs_f64();
    start_measuring(&stack, &on)?;
    let mut att = Attribution::new(&["transaction"]);
    let t1 = std::time::Instant::now();
    for i in 0..w.transactions {
        att.begin(snap(&stack));
        partsupp::run_tx(&conn, &w.updates(i))
            .map_err(|e| CliError::Failed(format!("running partsupp, transaction {i}: {e}{}", why(&stack))))?;
        att.end(0, snap(&stack), 1);
        if i.is_multiple_of(64) {
            bar.set_position(i as u64 + 1);
        }
    }
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let integrity = partsupp::integrity_check(&conn).map_err(CliError::failed)?;
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let (kinds, mut latency) = att.finish();
    latency.transaction = latency.request;
    let sim_s = end.dev.sim_time_ns as f64 / 1e9;
    let host_writes = end.fs.host_page_writes();
    let out = PartsuppOut {
        mode,
        device: what,
        workload: w,
        kinds,
        throughput_per_sim_s: per_second(w.transactions as u64, sim_s),
        latency,
        host: end.fs,
        measured: end.dev,
        write_amplification: if host_writes > 0 {
            (end.dev.flash_programs + end.dev.flash_partial_programs) as f64 / host_writes as f64
        } else {
            0.0
        },
        integrity: integrity.clone(),
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        wrapln!("device: {}", out.device);
        let mut t = Figures::new(&format!(
            "txftl sql partsupp: {} | {} transactions of K={} on partsupp ({} tuples), seed {}",
            mode.name(),
            thousands(w.transactions as u64),
            w.k,
            thousands(w.rows as u64),
            w.seed
        ));
        add_kinds(&mut t, &out.kinds, "transaction");
        add_fs(&mut t, &out.host);
        add_counters(&mut t, &out.measured);
        t.section("derived (simulated)");
        t.row("simulated time", sim_time(out.measured.sim_time_ns));
        t.row("transactions per simulated second", format!("{:.1}", out.throughput_per_sim_s));
        t.row(
            "write amplification (flash programs per host page write)",
            format!("{:.3}", out.write_amplification),
        );
        add_latency(&mut t, &out.latency);
        t.section("checks");
        t.row("integrity_check", &out.integrity);
        if let Some(p) = &args.common.record {
            t.row("trace recorded (the run, not the load)", p.display());
        }
        add_wall(&mut t, load_wall, run_wall, w.transactions as u64);
        t.print();
    }
    if integrity != "ok" {
        return Err(CliError::Failed(format!("integrity_check: {integrity}")));
    }
    Ok(ExitCode::SUCCESS)
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

/// One benchmark's figures.
#[derive(Serialize)]
struct BenchOut {
    benchmark: String,
    result: sqlitebench::BenchResult,
    host_page_writes: u64,
    flash_programs: u64,
    sim_seconds: f64,
    operations_per_sim_s: f64,
    /// Per transaction, on the device clock.
    latency: LatencySummary,
}

#[derive(Serialize)]
struct BenchRunOut {
    mode: Mode,
    device: String,
    journal_mode: String,
    locking_mode: String,
    page_size: u32,
    num: u64,
    value_size: u32,
    benchmarks: Vec<BenchOut>,
    host: FsStats,
    measured: DeviceStats,
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    integrity: String,
    run_wall_seconds: f64,
}

fn bench_cmd(args: BenchArgs) -> Result<ExitCode, CliError> {
    let benchmarks = Benchmark::parse_list(&args.benchmarks).map_err(CliError::Usage)?;
    let spec = BenchSpec {
        benchmarks,
        num: args.num,
        value_size: args.value_size,
        batch: args.batch,
        seed: args.common.seed,
        synchronous: args.common.synchronous(),
        ..BenchSpec::default()
    };
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("dbbench.db", page_size).map_err(CliError::failed)?;
    start_measuring(&stack, &on)?;
    let bar = progress(
        args.common.json,
        spec.benchmarks.len() as u64,
        &format!("{} sqlite-bench", mode.name()),
    )?;
    let names: Vec<&str> = spec.benchmarks.iter().map(|b| b.name()).collect();
    let mut att = Attribution::new(&names);
    let mut at_start: Vec<Option<Snap>> = vec![None; names.len()];
    let mut at_finish: Vec<Option<Snap>> = vec![None; names.len()];
    let mut current = 0usize;
    let t1 = std::time::Instant::now();
    let report = sqlitebench::run_with(&conn, &spec, |ev| match *ev {
        BenchEvent::Start { bench } => {
            current = spec.benchmarks.iter().position(|b| *b == bench).unwrap_or(0);
            at_start[current] = Some(snap(&stack));
        }
        BenchEvent::Begin { .. } => att.begin(snap(&stack)),
        BenchEvent::End { ops, .. } => att.end(current, snap(&stack), ops),
        BenchEvent::Finish { .. } => {
            at_finish[current] = Some(snap(&stack));
            bar.inc(1);
        }
    })
    .map_err(|e| CliError::Failed(format!("running sqlite-bench: {e}{}", why(&stack))))?;
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let lat: Vec<LatencySummary> = att.lat.iter().map(|l| l.summary()).collect();
    let latency = LatencyReport {
        request: att.all.summary(),
        transaction: att.all.summary(),
        by_op: names.iter().zip(&lat).map(|(n, l)| (n.to_string(), *l)).collect(),
    };
    let mut outs = Vec::new();
    for (i, r) in report.results.iter().enumerate() {
        let (Some(a), Some(b)) = (at_start[i], at_finish[i]) else {
            continue;
        };
        let sim_s = (b.now_ns.saturating_sub(a.now_ns)) as f64 / 1e9;
        outs.push(BenchOut {
            benchmark: r.benchmark.name().to_string(),
            result: r.clone(),
            host_page_writes: b.fs.host_page_writes() - a.fs.host_page_writes(),
            flash_programs: b.dev.flash_programs - a.dev.flash_programs,
            sim_seconds: sim_s,
            operations_per_sim_s: per_second(r.operations, sim_s),
            latency: lat[i],
        });
    }
    let total_ops: u64 = report.results.iter().map(|r| r.operations).sum();
    let sim_s = end.dev.sim_time_ns as f64 / 1e9;
    let out = BenchRunOut {
        mode,
        device: what,
        journal_mode: report.journal_mode.clone(),
        locking_mode: report.locking_mode.clone(),
        page_size: report.page_size,
        num: spec.num,
        value_size: spec.value_size,
        benchmarks: outs,
        host: end.fs,
        measured: end.dev,
        throughput_per_sim_s: per_second(total_ops, sim_s),
        latency,
        integrity: integrity.clone(),
        run_wall_seconds: run_wall,
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        wrapln!("device: {}", out.device);
        let mut t = Figures::new(&format!(
            "txftl sql sqlite-bench: {} | {} entries of {} B values, journal {}, locking {}, page {} B",
            mode.name(),
            thousands(out.num),
            out.value_size,
            out.journal_mode,
            out.locking_mode,
            out.page_size
        ));
        t.section("per benchmark (simulated): operations | per simulated s | host pages / flash programs | tx latency mean / p99 us");
        for b in &out.benchmarks {
            t.row(
                &format!("  {}", b.benchmark),
                format!(
                    "{} | {:.0} | {} / {} | {:.0} / {:.0}",
                    thousands(b.result.operations),
                    b.operations_per_sim_s,
                    thousands(b.host_page_writes),
                    thousands(b.flash_programs),
                    b.latency.mean_ns / 1000.0,
                    us(b.latency.p99_ns)
                ),
            );
        }
        add_fs(&mut t, &out.host);
        add_counters(&mut t, &out.measured);
        t.section("checks");
        t.row("integrity_check", &out.integrity);
        add_wall(&mut t, 0.0, run_wall, total_ops);
        t.print();
    }
    if integrity != "ok" {
        return Err(CliError::Failed(format!("integrity_check: {integrity}")));
    }
    Ok(ExitCode::SUCCESS)
}

/// A device in RAM with the file system and the VFS of `mode`, recording the
/// device calls to `record` while the returned flag is set.
fn stack(common: &SqlCommon) -> Result<(Stack, Mode, String, Arc<AtomicBool>), CliError> {
    refuse_protocol(&common.device)?;
    let mode = crate::setup::parse_mode(&common.mode)?;
    let d = resolve_device(&common.device, "jasmine")?;
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

#[derive(Serialize)]
struct TpccOut {
    mode: Mode,
    device: String,
    warehouses: u32,
    scale: u32,
    mix: [u32; 5],
    transactions: u64,
    clients: u32,
    seed: u64,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
    kinds: Vec<KindCost>,
    report: tpcc::TpccReport,
    /// SQLITE_BUSY events met by the clients and how they were retried (all, then per type).
    busy: BusyCounts,
    busy_by_kind: [BusyCounts; 5],
    /// How the clients backed off.
    clients_spec: ClientsSpec,
    /// Statements run, and times the token went to another client.
    steps: u64,
    switches: u64,
    /// New-Order transactions committed per simulated minute.
    tpmc: f64,
    transactions_per_sim_s: f64,
    throughput_per_sim_s: f64,
    latency: LatencyReport,
    host: FsStats,
    measured: DeviceStats,
    write_amplification: f64,
    consistency: String,
    integrity: String,
}

fn parse_mix(s: &str) -> Result<[u32; 5], CliError> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| CliError::Usage(format!("--mix `{s}` is not five percentages")))?;
    let mix: [u32; 5] = v.try_into().map_err(|_| {
        CliError::Usage(format!(
            "--mix `{s}` needs five percentages (New-Order, Payment, Order-Status, Delivery, Stock-Level)"
        ))
    })?;
    if mix.iter().sum::<u32>() != 100 {
        return Err(CliError::Usage(format!(
            "--mix `{s}` adds up to {}, not 100",
            mix.iter().sum::<u32>()
        )));
    }
    Ok(mix)
}

fn tpcc_cmd(args: TpccArgs) -> Result<ExitCode, CliError> {
    let mix = parse_mix(&args.mix)?;
    let spec = TpccSpec {
        warehouses: args.warehouses,
        scale: args.scale,
        mix,
        transactions: args.transactions,
        seed: args.common.seed,
        ..TpccSpec::default()
    };
    spec.validate().map_err(|e| CliError::Usage(e.to_string()))?;
    let (stack, mode, what, on) = stack(&args.common)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(CliError::failed)?;
    let conn = stack.open("tpcc.db", page_size).map_err(CliError::failed)?;
    let bar = if args.common.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner()
    };
    bar.set_message(format!(
        "{}: loading TPC-C ({} warehouse(s), scale 1/{})",
        mode.name(),
        spec.warehouses,
        spec.scale
    ));
    bar.enable_steady_tick(std::time::Duration::from_millis(200));
    let t0 = std::time::Instant::now();
    tpcc::load(&conn, &spec).map_err(|e| CliError::Failed(format!("loading TPC-C: {e}{}", why(&stack))))?;
    let load_wall = t0.elapsed().as_secs_f64();
    bar.disable_steady_tick();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} transactions ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    bar.set_length(spec.transactions);
    bar.set_message(format!("{} TPC-C", mode.name()));
    start_measuring(&stack, &on)?;
    let names: Vec<&str> = TxKind::ALL.iter().map(|k| k.name()).collect();
    let mut att = Attribution::new(&names);
    let t1 = std::time::Instant::now();
    // The clients: one connection each (the first one the load's),
    // interleaved statement by statement on the device clock.
    let mut conns = vec![conn];
    for _ in 1..args.clients {
        conns.push(stack.open("tpcc.db", page_size).map_err(CliError::failed)?);
    }
    let how = ClientsSpec {
        begin: Begin::parse(&args.begin).ok_or_else(|| CliError::Usage(format!("unknown --begin `{}`", args.begin)))?,
        ..ClientsSpec::default()
    };
    let mut done_count = 0u64;
    let (clients, mut conns) = tpcc::clients::run_clients(&stack, conns, &spec, &how, |t| {
        att.add(t.kind.index(), t.host_page_writes, t.flash_programs, t.latency_ns());
        done_count += 1;
        if done_count.is_multiple_of(64) {
            bar.set_position(done_count);
        }
    })
    .map_err(|e| CliError::Failed(format!("running TPC-C: {e}{}", why(&stack))))?;
    let report = clients.report.clone();
    let conn = conns.swap_remove(0);
    drop(conns);
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let consistency = match tpcc::check(&conn) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    };
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    let (mut costs, mut latency) = att.finish();
    latency.transaction = latency.request;
    let counts = [
        report.new_order,
        report.payment,
        report.order_status,
        report.delivery,
        report.stock_level,
    ];
    for (c, k) in costs.iter_mut().zip(counts) {
        c.committed = k.committed;
        c.rolled_back = k.rolled_back;
    }
    drop(conn);
    close(stack, args.common.record.is_some())?;
    let measured = end.dev;
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let per_s = |n: u64| per_second(n, sim_s);
    let committed: u64 = costs.iter().map(|c| c.committed).sum();
    let out = TpccOut {
        mode,
        device: what,
        warehouses: spec.warehouses,
        scale: spec.scale,
        mix,
        transactions: spec.transactions,
        clients: args.clients,
        busy: clients.busy,
        busy_by_kind: clients.busy_by_kind,
        clients_spec: how,
        steps: clients.steps,
        switches: clients.switches,
        seed: spec.seed,
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
        tpmc: per_s(report.new_orders) * 60.0,
        transactions_per_sim_s: per_s(committed),
        throughput_per_sim_s: per_s(spec.transactions),
        latency,
        kinds: costs,
        report,
        host: end.fs,
        measured,
        write_amplification: if end.fs.host_page_writes() > 0 {
            (measured.flash_programs + measured.flash_partial_programs) as f64 / end.fs.host_page_writes() as f64
        } else {
            0.0
        },
        consistency: consistency.clone(),
        integrity: integrity.clone(),
    };
    if args.common.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        print_tpcc(&out, args.common.record.as_deref());
    }
    if consistency != "ok" || integrity != "ok" {
        return Err(CliError::Failed(format!(
            "TPC-C consistency: {consistency}; integrity_check: {integrity}"
        )));
    }
    Ok(ExitCode::SUCCESS)
}

/// Why the VFS last failed, if it said.
fn why(stack: &Stack) -> String {
    stack.last_error().map(|e| format!(" ({e})")).unwrap_or_default()
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

fn print_tpcc(o: &TpccOut, record: Option<&std::path::Path>) {
    wrapln!("device: {}", o.device);
    let mut t = Figures::new(&format!(
        "txftl sql tpcc: {} | {} warehouse(s), scale 1/{}, mix {:?}, {} transactions, {} client(s), seed {}",
        o.mode.name(),
        o.warehouses,
        o.scale,
        o.mix,
        thousands(o.transactions),
        o.clients,
        o.seed
    ));
    t.section("per transaction type (simulated): count (rolled back) | host pages / flash programs per tx | latency mean / p99 us");
    for c in &o.kinds {
        t.row(
            &format!("  {}", c.kind),
            format!(
                "{} ({}) | {:.1} / {:.1} | {:.0} / {:.0}",
                thousands(c.count),
                thousands(c.rolled_back),
                c.host_page_writes_per_tx,
                c.flash_programs_per_tx,
                c.latency.mean_ns / 1000.0,
                us(c.latency.p99_ns)
            ),
        );
    }
    add_fs(&mut t, &o.host);
    add_counters(&mut t, &o.measured);
    t.section("derived (simulated)");
    t.row("simulated time", sim_time(o.measured.sim_time_ns));
    t.row("tpmC (New-Order committed per simulated minute)", format!("{:.0}", o.tpmc));
    t.row(
        "transactions committed per simulated second",
        format!("{:.1}", o.transactions_per_sim_s),
    );
    t.row(
        "write amplification (flash programs per host page write)",
        format!("{:.3}", o.write_amplification),
    );
    add_latency(&mut t, &o.latency);
    t.section(&format!(
        "clients (SQLite's locks across connections; writers begin {:?}; backoff {:.0}-{:.0} us simulated)",
        o.clients_spec.begin,
        o.clients_spec.backoff_ns_min as f64 / 1000.0,
        o.clients_spec.backoff_ns_max as f64 / 1000.0
    ));
    t.row(
        "SQLITE_BUSY met: restarts from BEGIN / COMMITs retried",
        format!(
            "{}: {} / {}",
            thousands(o.busy.busy),
            thousands(o.busy.restarts),
            thousands(o.busy.commit_retries)
        ),
    );
    for (k, b) in TxKind::ALL.iter().zip(&o.busy_by_kind) {
        if b.busy > 0 {
            t.row(&format!("  {}", k.name()), format!("{} busy", thousands(b.busy)));
        }
    }
    t.row(
        "statements run / token handed to another client",
        format!("{} / {}", thousands(o.steps), thousands(o.switches)),
    );
    t.section("checks");
    t.row("consistency conditions 1-4", &o.consistency);
    t.row("integrity_check", &o.integrity);
    if let Some(p) = record {
        t.row("trace recorded (the run, not the load)", p.display());
    }
    t.section("emulator (wall clock)");
    t.row(
        "load / run wall time",
        format!("{:.1} s / {:.1} s", o.load_wall_seconds, o.run_wall_seconds),
    );
    t.row(
        "transactions per wall second",
        format!("{:.0}", o.transactions as f64 / o.run_wall_seconds.max(1e-9)),
    );
    t.print();
}
