//! `txftl run`: a workload on one device, with counters, times and speed.

use crate::open::{check_device_fits, create_image, open_image, ram, refuse_options_fixed_by_image, refuse_pending_host_log, SyncArgs};
use crate::setup::{check_protocol_config, describe, ftl_config, nand_config, protocol_options, resolve_device};

/// Bytes per logical page of the workload's reference model on full data
/// (the value each page held at the last flush, and its latest one).
const MODEL_BYTES: u64 = 32;
use crate::table::{pair, sim_time, thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::path::PathBuf;
use std::process::ExitCode;
use txftl_ftl::{DeviceStats, Group, ProtocolCounters, RecoveryReport, Row, StatSpec};
use txftl_harness::{OpStream, WorkloadKind, WorkloadSpec, WORKLOAD_NAMES};
use txftl_host::trace::{TraceRecord, TraceWriter};
use txftl_host::{run_workload, HostOptions, LatencyReport, RunError, RunReport};
use txftl_nand::{DataMode, Nand, Torn};
use txftl_protocols::AnyDevice;
use txftl_reproduce::wrapln;

#[derive(Args, Debug)]
pub struct RunArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    #[command(flatten)]
    pub faults: crate::FaultArgs,
    #[command(flatten)]
    pub workload: WorkloadArgs,
    /// Store page data (full) or only OOB metadata (meta: faster, same counts and times).
    /// Defaults to meta, or full with --image.
    #[arg(long, value_parser = ["full", "meta"])]
    pub data: Option<String>,
    /// Create a device image file: the device survives the process. An existing
    /// file is refused (the workload would overwrite its data) unless --reuse.
    #[arg(long)]
    pub image: Option<PathBuf>,
    /// Run on the existing image at --image, mounted through recovery: its wear
    /// carries over, and the workload overwrites its logical pages (and any file
    /// system on it). The image fixes the geometry, endurance and data mode.
    #[arg(long, requires = "image")]
    pub reuse: bool,
    #[command(flatten)]
    pub sync: SyncArgs,
    /// Cut power at this flash operation of the measured phase, then recover and
    /// report the recovery cost.
    #[arg(long)]
    pub cut_at: Option<u64>,
    /// How the operation at --cut-at is torn [default: garbage].
    #[arg(long, value_parser = ["none", "garbage", "partial"])]
    pub torn: Option<String>,
    #[command(flatten)]
    pub host: HostArgs,
    /// Record every operation the host sends (fill included) as a txftl
    /// transactional block trace (docs/traces.md has the format).
    #[arg(long)]
    pub record: Option<PathBuf>,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

/// The concurrent host.
#[derive(Args, Debug, Clone)]
pub struct HostArgs {
    /// Concurrent closed-loop clients sending the workload; operations of
    /// different clients overlap on the device clock wherever dies and
    /// channels are free.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    pub clients: u32,
    /// Think time of each client between an operation's completion and its
    /// next submission, microseconds of simulated time.
    #[arg(long, default_value_t = 0)]
    pub think_us: u64,
}

impl HostArgs {
    pub fn options(&self) -> Result<HostOptions, CliError> {
        let think_ns = self
            .think_us
            .checked_mul(1000)
            .ok_or_else(|| CliError::Usage(format!("--think-us {} is too large", self.think_us)))?;
        Ok(HostOptions {
            clients: self.clients,
            think_ns,
        })
    }
}

/// Opens `path` for a trace record (refusing to overwrite an existing file).
pub fn record_file(path: &std::path::Path) -> Result<TraceRecord, CliError> {
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| CliError::Usage(format!("cannot create the trace record {}: {e}", path.display())))?;
    let w: Box<dyn std::io::Write + Send> = Box::new(std::io::BufWriter::new(f));
    TraceWriter::new(w).map_err(|e| CliError::Failed(format!("writing {}: {e}", path.display())))
}

#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    #[arg(long, default_value = "randwrite", value_parser = clap::builder::PossibleValuesParser::new(WORKLOAD_NAMES))]
    pub workload: String,
    /// Operations after the fill.
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: u64,
    /// Working set: percent of the logical pages, written once before the measured ops.
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub fill: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// A flush after every N writes (0: never).
    #[arg(long, default_value_t = 64)]
    pub flush_every: u32,
    #[command(flatten)]
    pub tx: crate::TxArgs,
}

impl WorkloadArgs {
    pub fn spec(&self, tx_defaults: crate::TxDefaults) -> Result<WorkloadSpec, CliError> {
        let kind = WorkloadKind::parse(&self.workload).ok_or_else(|| CliError::Usage(format!("unknown workload `{}`", self.workload)))?;
        Ok(WorkloadSpec {
            kind,
            ops: self.ops,
            fill_pct: self.fill,
            seed: self.seed,
            flush_every: self.flush_every,
            tx: self.tx.shape(kind, tx_defaults)?,
        })
    }
}

/// Refuses a workload that trims on a protocol that takes no trims (it
/// would fail at its first trim).
pub fn refuse_trims(protocol: &txftl_protocols::ProtocolEntry, spec: &WorkloadSpec) -> Result<(), CliError> {
    let trims = spec.kind == WorkloadKind::Mixed || (spec.kind == WorkloadKind::TxWrite && spec.tx.trim_pct > 0);
    if trims && !protocol.trims {
        return Err(CliError::Usage(format!(
            "protocol `{}` takes no trims: use another workload than mixed, or --trim-pct 0",
            protocol.name
        )));
    }
    Ok(())
}

/// The device and how to describe it, and the FTL options it was built
/// with (a remount after a power cut takes the same).
fn open_device(args: &RunArgs) -> Result<(Box<dyn AnyDevice>, String, txftl_ftl::FtlConfig), CliError> {
    let faults = args.faults.model()?;
    let with_faults = |mut nand: Nand| -> Result<Nand, CliError> {
        nand.set_fault_model(faults).map_err(CliError::Usage)?;
        Ok(nand)
    };
    let opts = protocol_options(&args.device)?;
    let protocol = args.device.protocol();
    let sync = args.sync.mode();
    match &args.image {
        Some(path) if args.reuse => {
            if !path.exists() {
                return Err(CliError::Usage(format!(
                    "{} does not exist; drop --reuse to create it",
                    path.display()
                )));
            }
            refuse_options_fixed_by_image(&args.device, args.data.as_deref())?;
            let cfg = ftl_config(&args.device)?;
            refuse_pending_host_log(path)?;
            let nand = with_faults(open_image(path, sync)?)?;
            let dev = txftl_protocols::mount(protocol, nand, cfg.clone(), &opts)
                .map_err(|e| CliError::Failed(format!("mounting {}: {e}", path.display())))?;
            let what = format!("image {} (mounted through recovery)", path.display());
            Ok((dev, what, cfg))
        }
        Some(path) => {
            // Checked before anything is built, so the refusal costs nothing.
            if path.exists() {
                return Err(CliError::Usage(format!(
                    "{} already exists; the workload would overwrite its data (and any file system on it): \
                     pass --reuse to run on it anyway, or give a new path",
                    path.display()
                )));
            }
            if args.data.as_deref() == Some("meta") {
                return Err(CliError::Usage("an image always stores full data; drop --data meta".into()));
            }
            let d = resolve_device(&args.device, crate::setup::full_preset_for(&[protocol]))?;
            check_protocol_config(protocol, &d.ftl, &d.preset.geometry, &opts)?;
            check_device_fits(protocol, &nand_config(&d.preset, DataMode::Full), &d.ftl, &opts, MODEL_BYTES)?;
            let nand = with_faults(create_image(path, nand_config(&d.preset, DataMode::Full), sync)?)?;
            let dev = txftl_protocols::format(protocol, nand, d.ftl.clone(), &opts).map_err(crate::open::device_error)?;
            Ok((dev, format!("new image {} on {}", path.display(), describe(&d.preset)), d.ftl))
        }
        None => {
            if args.sync.sync.is_some() {
                return Err(CliError::Usage("--sync applies to an image file; add --image".into()));
            }
            let d = resolve_device(&args.device, crate::setup::full_preset_for(&[protocol]))?;
            let mode = if args.data.as_deref() == Some("full") {
                DataMode::Full
            } else {
                DataMode::MetaOnly
            };
            let model = if mode == DataMode::Full { MODEL_BYTES } else { 0 };
            check_protocol_config(protocol, &d.ftl, &d.preset.geometry, &opts)?;
            check_device_fits(protocol, &nand_config(&d.preset, mode), &d.ftl, &opts, model)?;
            let nand = with_faults(ram(nand_config(&d.preset, mode))?)?;
            let dev = txftl_protocols::format(protocol, nand, d.ftl.clone(), &opts).map_err(crate::open::device_error)?;
            Ok((
                dev,
                format!(
                    "{} in RAM, {} data",
                    describe(&d.preset),
                    if mode == DataMode::Full { "full" } else { "metadata-only" }
                ),
                d.ftl,
            ))
        }
    }
}

pub fn run(args: RunArgs) -> Result<ExitCode, CliError> {
    let entry = txftl_protocols::entry(args.device.protocol()).map_err(|e| CliError::Usage(e.to_string()))?;
    let spec = args.workload.spec(crate::TxDefaults::RUN.for_protocol(entry))?;
    refuse_trims(entry, &spec)?;
    let torn = match (&args.torn, args.cut_at) {
        (Some(_), None) => {
            return Err(CliError::Usage(
                "--torn only applies with --cut-at N; add --cut-at or drop --torn".into(),
            ))
        }
        (Some(t), Some(_)) => Torn::parse(t).ok_or_else(|| CliError::Usage(format!("unknown torn kind `{t}`")))?,
        (None, _) => Torn::Garbage,
    };
    let host = args.host.options()?;
    if host.clients > 1 && spec.kind == WorkloadKind::Remap {
        return Err(CliError::Usage(
            "--clients: the remap workload runs with one client (a log is written, synced and checkpointed in order)".into(),
        ));
    }
    if args.record.is_some() && spec.kind == WorkloadKind::Remap {
        return Err(CliError::Usage(
            "--record: traces have no word for the remap workload's remaps; drop --record or use another workload".into(),
        ));
    }
    let record = args.record.as_deref().map(record_file).transpose()?;
    // Building the array and formatting (or mounting) it, on the wall clock.
    let setup_started = std::time::Instant::now();
    let (mut dev, what, cfg) = open_device(&args)?;
    let setup_wall_seconds = setup_started.elapsed().as_secs_f64();
    let total = OpStream::new(spec, dev.info().logical_pages).total_ops();
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(total)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} ops ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    bar.set_message(format!("{} {}", args.device.protocol(), spec.kind.name()));
    let result = run_workload(&mut *dev, spec, host, record, args.cut_at.map(|at| (at, torn)), &mut |done| {
        bar.set_position(done)
    });
    bar.finish_and_clear();
    match result {
        Ok(report) => {
            if args.json {
                let out = Timed {
                    report: &report,
                    setup_wall_seconds,
                };
                println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
            } else {
                print_report(&what, &report, setup_wall_seconds);
            }
            if report.counts.wrong_reads > 0 {
                return Err(CliError::Failed(format!(
                    "{} reads returned stale or wrong data",
                    report.counts.wrong_reads
                )));
            }
            if args.image.is_some() {
                dev.close().map_err(|e| CliError::Failed(format!("closing the image: {e}")))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(RunError::PowerCut { host_ops, measured }) => {
            let mut nand = dev.into_nand();
            nand.power_on();
            let dev = txftl_protocols::mount(args.device.protocol(), nand, cfg, &protocol_options(&args.device)?)
                .map_err(|e| CliError::Failed(format!("recovery failed: {e}")))?;
            let report = dev.recovery_report().unwrap_or_default();
            dev.check_invariants()
                .map_err(|e| CliError::Failed(format!("invariant broken after recovery: {e}")))?;
            // The mounted device has done nothing but recover: its protocol
            // counters are what the protocol's recovery read and decided
            // (Möbius's verified pages, say).
            let at_recovery = dev.stats().protocol;
            if args.json {
                let out = serde_json::json!({
                    "cut_after_host_ops": host_ops,
                    "measured_before_cut": measured,
                    "recovery": report,
                    "protocol_at_recovery": at_recovery,
                });
                println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
            } else {
                print_cut(&what, host_ops, &measured, &report, &at_recovery);
            }
            if args.image.is_some() {
                dev.close().map_err(|e| CliError::Failed(format!("closing the image: {e}")))?;
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => Err(CliError::failed(e)),
    }
}

/// The device's counters, group by group as `DeviceStats::SPECS` declares
/// them, the protocol's own among them.
pub fn add_counters(t: &mut Figures, s: &DeviceStats) {
    for group in Group::ALL {
        if group == Group::Protocol {
            add_protocol_counters(t, &s.protocol);
            continue;
        }
        let counters: Vec<(&StatSpec, u64)> = s.iter().filter(|(c, _)| c.group == group).collect();
        if !group.shown_when_zero() && counters.iter().all(|&(_, v)| v == 0) {
            continue;
        }
        let mut rows = Vec::new();
        for (i, &(c, v)) in counters.iter().enumerate() {
            let second = || counters.get(i + 1).map_or(0, |&(_, w)| w);
            match c.row {
                Row::One(label) => rows.push((label, thousands(v))),
                Row::Pair(label) => rows.push((label, pair(v, second()))),
                Row::PairIfNonzero(label) if v > 0 => rows.push((label, pair(v, second()))),
                Row::PairIfNonzero(_) | Row::Second | Row::Unlisted => {}
            }
        }
        if rows.is_empty() {
            continue;
        }
        t.section(&format!("{} (simulated)", group.name()));
        for (label, value) in rows {
            t.row(label, value);
        }
    }
}

/// The protocol's own counters, with the help its entry gives each.
fn add_protocol_counters(t: &mut Figures, p: &ProtocolCounters) {
    if p.specs().is_empty() {
        return;
    }
    t.section(&format!("{} (simulated)", Group::Protocol.name()));
    for c in p.specs() {
        t.row(&format!("{} ({})", c.help, c.key), thousands(p.get(c.key)));
    }
}

fn add_host_reactions(t: &mut Figures, r: &RunReport) {
    if r.counts.table_full_aborts > 0 {
        t.row("aborted by the host on `table full`", thousands(r.counts.table_full_aborts));
    }
    if r.counts.isolation_refusals > 0 {
        t.row(
            "writes the protocol's isolation refused (a page another open transaction wrote)",
            thousands(r.counts.isolation_refusals),
        );
    }
    if r.counts.lost_reads > 0 {
        t.row("reads the device reported lost (bit errors)", thousands(r.counts.lost_reads));
    }
}

/// How fast the emulator ran (wall clock, apart from the simulated figures).
pub fn add_speed(t: &mut Figures, wall_seconds: f64, requests_per_wall_second: f64, flash_ops_per_wall_second: f64) {
    t.section("emulator (wall clock)");
    t.row("wall time", format!("{wall_seconds:.3} s"));
    t.row("requests per wall second", thousands(requests_per_wall_second as u64));
    t.row("flash ops per wall second", thousands(flash_ops_per_wall_second as u64));
}

/// Mean / p50 / p99 / p99.9 in microseconds.
fn latency_row(s: &txftl_host::LatencySummary) -> String {
    let us = |ns: u64| ns as f64 / 1000.0;
    format!(
        "{:.1} / {:.1} / {:.1} / {:.1}",
        s.mean_ns / 1000.0,
        us(s.p50_ns),
        us(s.p99_ns),
        us(s.p999_ns)
    )
}

/// Latency rows: every request, each kind of operation, transactions.
pub fn add_latency(t: &mut Figures, l: &LatencyReport) {
    t.section("latency, us: mean / p50 / p99 / p99.9 (simulated)");
    t.row(&format!("every request ({})", thousands(l.request.count)), latency_row(&l.request));
    for (k, s) in &l.by_op {
        t.row(&format!("  {k} ({})", thousands(s.count)), latency_row(s));
    }
    if l.transaction.count > 0 {
        t.row(
            &format!("transactions, begin to end ({})", thousands(l.transaction.count)),
            latency_row(&l.transaction),
        );
    }
}

/// A run's report with the wall time its device took to be ready.
#[derive(serde::Serialize)]
struct Timed<'a> {
    #[serde(flatten)]
    report: &'a RunReport,
    /// Building the array and formatting (or mounting) the device.
    setup_wall_seconds: f64,
}

fn print_report(what: &str, r: &RunReport, setup_wall_seconds: f64) {
    let w = &r.workload;
    let amount = if w.kind == txftl_harness::WorkloadKind::TxWrite {
        let t = &w.tx;
        let count = if t.transactions > 0 {
            format!("{} transactions", thousands(t.transactions))
        } else {
            format!("{} ops", thousands(w.ops))
        };
        format!(
            "{count} of {} page writes, {}% aborts, {} open at once, {}% non-tx writes{}{}",
            t.pages_per_tx,
            t.abort_pct,
            t.concurrency,
            t.nontx_pct,
            if t.exclusive { " (between transactions)" } else { "" },
            match (t.end_flag, t.static_dynamic) {
                (true, _) => ", the last end-flagged".to_string(),
                (false, Some(p)) => format!(", {p}% dynamic (dwrite), the rest static (swrite)"),
                (false, None) => String::new(),
            }
        )
    } else {
        format!("{} ops", thousands(w.ops))
    };
    let mut t = Figures::new(&format!(
        "txftl run: {} | {} {amount}, fill {}%, seed {}",
        r.protocol,
        w.kind.name(),
        w.fill_pct,
        w.seed
    ));
    wrapln!("device: {what}");
    t.section("device");
    t.row(
        "logical pages / working set",
        pair(r.logical_pages as u64, r.working_set_pages as u64),
    );
    if r.host_journal_writes > 0 {
        t.row("host journal page writes (in host writes)", thousands(r.host_journal_writes));
    }
    add_counters(&mut t, &r.measured);
    add_host_reactions(&mut t, r);
    let s = &r.measured;
    t.section("derived (simulated)");
    t.row("write amplification", format!("{:.3}", r.write_amplification));
    t.row(
        "erase count min / max / spread",
        format!(
            "{} / {} / {}",
            r.erase_count_min,
            r.erase_count_max,
            r.erase_count_max - r.erase_count_min
        ),
    );
    t.row("simulated time", sim_time(s.sim_time_ns));
    let per_sec = if s.sim_time_ns > 0 {
        s.host_writes as f64 / (s.sim_time_ns as f64 / 1e9)
    } else {
        0.0
    };
    t.row("host writes per simulated second", format!("{per_sec:.0}"));
    t.row(
        &format!(
            "requests per simulated second ({} client{})",
            r.host.clients,
            if r.host.clients == 1 { "" } else { "s" }
        ),
        format!("{:.0}", r.throughput_per_sim_s),
    );
    if r.counts.commits > 0 {
        t.row(
            "transactions committed per simulated second",
            format!("{:.1}", r.transactions_per_sim_s),
        );
    }
    add_latency(&mut t, &r.latency);
    add_speed(&mut t, r.wall_seconds, r.requests_per_wall_second, r.flash_ops_per_wall_second);
    t.row(
        "set-up: array built and formatted (or mounted)",
        format!("{setup_wall_seconds:.3} s"),
    );
    t.row("fill", format!("{:.3} s", r.fill_wall_seconds));
    t.print();
    wrapln!(
        "(the measured phase follows a fill of {} pages; its counters are in --json under \"fill\")",
        thousands(r.working_set_pages as u64)
    );
}

pub fn add_recovery(t: &mut Figures, r: &RecoveryReport) {
    t.section("recovery (simulated, device clock)");
    t.row("time", sim_time(r.time_ns));
    t.row("  superblock search + checkpoint load", sim_time(r.load_ns));
    t.row("  protocol log read (and the pages it checks)", sim_time(r.protocol_read_ns));
    t.row("  roll-forward scan", sim_time(r.scan_ns));
    t.row("  sealing checkpoint write", sim_time(r.seal_ns));
    t.row("superblock page reads", thousands(r.superblock_reads));
    t.row("checkpoint pages read", thousands(r.checkpoint_pages_read));
    t.row("blocks scanned / pages scanned", pair(r.blocks_scanned, r.pages_scanned));
    t.row("pages rolled forward", thousands(r.pages_rolled_forward));
    t.row("protocol record pages read", thousands(r.protocol_pages_read));
    t.row("protocol updates applied", thousands(r.protocol_updates_applied));
    t.row("torn pages found", thousands(r.torn_pages_found));
    t.row(
        "flash reads / programs / erases",
        format!(
            "{} / {} / {}",
            thousands(r.flash_reads),
            thousands(r.flash_programs),
            thousands(r.flash_erases)
        ),
    );
}

fn print_cut(what: &str, host_ops: u64, measured: &DeviceStats, r: &RecoveryReport, at_recovery: &ProtocolCounters) {
    wrapln!("device: {what}");
    let mut t = Figures::new(&format!(
        "power cut after {} host operations of the measured phase",
        thousands(host_ops)
    ));
    add_counters(&mut t, measured);
    add_recovery(&mut t, r);
    // Only those the recovery moved: the others count host work.
    let moved: Vec<_> = at_recovery.specs().iter().filter(|c| at_recovery.get(c.key) > 0).collect();
    if !moved.is_empty() {
        t.section("protocol's own, at recovery (simulated)");
        for c in moved {
            t.row(&format!("{} ({})", c.help, c.key), thousands(at_recovery.get(c.key)));
        }
    }
    t.print();
}
