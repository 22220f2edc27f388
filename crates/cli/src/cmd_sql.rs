//! `txftl sql`: database workloads on real SQLite through the VFS, in one
//! journal mode, with the device's counters, throughput per simulated second
//! and latency per transaction type on the device clock.

use crate::cmd_compare::refuse_protocol;
use crate::cmd_run::{add_counters, add_latency};
use crate::open::ram;
use crate::setup::{describe, nand_config, protocol_options, resolve_device};
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
use txftl_host::{LatencyReport, LatencySummary};
use txftl_nand::DataMode;
use txftl_sqlite::tpcc::{self, TpccSpec, TxEvent, TxKind};
use txftl_sqlite::{Mode, Stack};

#[derive(Subcommand, Debug)]
pub enum SqlCommand {
    /// TPC-C (rev. 5.11): the nine tables, the five transactions, a mix; tpmC,
    /// pages written per transaction type, the consistency check.
    Tpcc(TpccArgs),
}

/// Options every SQL workload takes.
#[derive(Args, Debug)]
pub struct SqlCommon {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Journal mode and device: rbj, wal (plain FTL, SQLite's journal), xftl,
    /// xftl-memory (X-FTL, journal off / in memory), xftl-batch (X-FTL,
    /// batch atomic writes).
    #[arg(long, default_value = "xftl")]
    pub mode: String,
    /// Record what the file system sent to the device during the run (not the
    /// load), with its transaction ids, as a txftl trace (see the README).
    #[arg(long)]
    pub record: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
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
}

pub fn run(cmd: SqlCommand) -> Result<ExitCode, CliError> {
    match cmd {
        SqlCommand::Tpcc(args) => tpcc_cmd(args),
    }
}

/// A device in RAM with the file system and the VFS of `mode`, recording the
/// device calls to `record` while the returned flag is set.
fn stack(common: &SqlCommon) -> Result<(Stack, Mode, String, Arc<AtomicBool>), CliError> {
    refuse_protocol(&common.device)?;
    let mode = Mode::parse(&common.mode)
        .ok_or_else(|| CliError::Usage(format!("unknown mode `{}` (rbj, wal, xftl, xftl-memory, xftl-batch)", common.mode)))?;
    let d = resolve_device(&common.device, "jasmine")?;
    let p = d.preset;
    let nand = ram(nand_config(&p, DataMode::Full))?;
    let mut dev = txftl_protocols::format(mode.protocol(), nand, d.ftl, &protocol_options(&common.device)).map_err(CliError::failed)?;
    let on = Arc::new(AtomicBool::new(false));
    if let Some(path) = &common.record {
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(path)
            .map_err(|e| CliError::Usage(format!("cannot create the trace record {}: {e}", path.display())))?;
        let w: Box<dyn std::io::Write + Send> = Box::new(std::io::BufWriter::new(f));
        let writer = txftl_host::trace::TraceWriter::new(w).map_err(|e| CliError::Failed(format!("writing {}: {e}", path.display())))?;
        dev = Recorder::wrap(dev, writer, on.clone());
    }
    let stack = Stack::format(dev, mode).map_err(CliError::failed)?;
    Ok((stack, mode, format!("{} in RAM, full data", describe(&p)), on))
}

/// Counters at one moment: file system, device, device clock.
#[derive(Clone, Copy)]
struct Snap {
    fs: FsStats,
    dev: DeviceStats,
    now_ns: u64,
}

fn snap(stack: &Stack) -> Snap {
    stack
        .with_fs_mut(|fs| Snap {
            fs: fs.stats(),
            dev: fs.device().stats(),
            now_ns: fs.device().now_ns(),
        })
        .expect("file system lock")
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
    seed: u64,
    load_wall_seconds: f64,
    run_wall_seconds: f64,
    kinds: Vec<KindCost>,
    report: tpcc::TpccReport,
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
    trace_lines: Option<u64>,
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
    stack
        .with_fs_mut(|fs| {
            fs.reset_stats();
            fs.device_mut().reset_stats();
        })
        .map_err(CliError::failed)?;
    on.store(true, Ordering::Relaxed);
    let start = snap(&stack);
    let mut costs: Vec<KindCost> = TxKind::ALL
        .iter()
        .map(|k| KindCost {
            kind: k.name().to_string(),
            ..KindCost::default()
        })
        .collect();
    let mut lat: Vec<Latency> = vec![Latency::default(); TxKind::ALL.len()];
    let mut all = Latency::default();
    let mut begin = start;
    let t1 = std::time::Instant::now();
    let report = tpcc::run_with(&conn, &spec, |ev| match *ev {
        TxEvent::Begin { .. } => begin = snap(&stack),
        TxEvent::End { index, kind, .. } => {
            let end = snap(&stack);
            let i = TxKind::ALL.iter().position(|k| *k == kind).unwrap_or(0);
            let c = &mut costs[i];
            c.host_page_writes += end.fs.host_page_writes() - begin.fs.host_page_writes();
            c.flash_programs += end.dev.flash_programs - begin.dev.flash_programs;
            lat[i].record(end.now_ns - begin.now_ns);
            all.record(end.now_ns - begin.now_ns);
            if index % 64 == 0 {
                bar.set_position(index + 1);
            }
        }
    })
    .map_err(|e| CliError::Failed(format!("running TPC-C: {e}{}", why(&stack))))?;
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let end = snap(&stack);
    let consistency = match tpcc::check(&conn) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    };
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(CliError::failed)?;
    let counts = [
        report.new_order,
        report.payment,
        report.order_status,
        report.delivery,
        report.stock_level,
    ];
    for ((c, k), l) in costs.iter_mut().zip(counts).zip(&lat) {
        c.count = k.count;
        c.committed = k.committed;
        c.rolled_back = k.rolled_back;
        let n = k.count.max(1) as f64;
        c.host_page_writes_per_tx = c.host_page_writes as f64 / n;
        c.flash_programs_per_tx = c.flash_programs as f64 / n;
        c.latency = l.summary();
    }
    drop(conn);
    let trace_lines = if args.common.record.is_some() {
        // Closing the device flushes the record.
        let fs = stack.into_fs().map_err(CliError::failed)?;
        fs.into_device()
            .close()
            .map_err(|e| CliError::Failed(format!("closing the device: {e}")))?;
        Some(0)
    } else {
        None
    };
    let measured = end.dev;
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let per_s = |n: u64| if sim_s > 0.0 { n as f64 / sim_s } else { 0.0 };
    let committed: u64 = costs.iter().map(|c| c.committed).sum();
    let out = TpccOut {
        mode,
        device: what,
        warehouses: spec.warehouses,
        scale: spec.scale,
        mix,
        transactions: spec.transactions,
        seed: spec.seed,
        load_wall_seconds: load_wall,
        run_wall_seconds: run_wall,
        tpmc: per_s(report.new_orders) * 60.0,
        transactions_per_sim_s: per_s(committed),
        throughput_per_sim_s: per_s(spec.transactions),
        latency: LatencyReport {
            request: all.summary(),
            transaction: all.summary(),
            by_op: costs.iter().map(|c| (c.kind.clone(), c.latency)).collect(),
        },
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
        trace_lines,
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
    println!("device: {}", o.device);
    let mut t = Figures::new(&format!(
        "txftl sql tpcc: {} | {} warehouse(s), scale 1/{}, mix {:?}, {} transactions, seed {}",
        o.mode.name(),
        o.warehouses,
        o.scale,
        o.mix,
        thousands(o.transactions),
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
    t.section("file system (simulated)");
    let h = &o.host;
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
