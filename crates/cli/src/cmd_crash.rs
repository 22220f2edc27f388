//! `txftl crashtest`: enumerate every crash point of a workload.

use crate::cmd_run::WorkloadArgs;
use crate::setup::{resolve_with_protocol, DeviceChoice};
use crate::table::{pair, thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;
use txftl_harness::{crashtest, CrashReport, CrashSpec, DeviceSpec, Exercised, Expect, InFlight, SecondCuts, WorkloadKind, WorkloadSpec};
use txftl_nand::{DataMode, Torn, ViolationPolicy};
use txftl_protocols::{Protocol, ProtocolEntry};
use txftl_reproduce::terminal::{width, wrap_command};
use txftl_reproduce::wrapln;

#[derive(Args, Debug)]
pub struct CrashArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    #[command(flatten)]
    pub faults: crate::FaultArgs,
    /// Workload (defaults sized for the `tiny` preset: 300 ops at 90% fill, flush
    /// every 8 writes). Default: txwrite on a transactional protocol, else randwrite;
    /// a canary takes only the workload that shows its bug.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(txftl_harness::WORKLOAD_NAMES))]
    pub workload: Option<String>,
    #[arg(long, default_value_t = 300, value_parser = clap::value_parser!(u64).range(1..))]
    pub ops: u64,
    #[arg(long, default_value_t = 90, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub fill: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long, default_value_t = 8)]
    pub flush_every: u32,
    #[command(flatten)]
    pub tx: crate::TxArgs,
    /// Torn variants to try at each operation: comma-separated of none, garbage,
    /// partial, data (OOB whole, data torn), oob (data whole, OOB torn).
    #[arg(long, default_value = "none,garbage,partial,data,oob")]
    pub torn: String,
    /// Do not cut recovery itself.
    #[arg(long)]
    pub no_recovery_cuts: bool,
    /// Replay one crash point: the flash operation index (needs a single --torn).
    #[arg(long)]
    pub at: Option<u64>,
    /// Also cut at every distinct instant of the device clock with programs
    /// or erases in flight: each in flight then is torn or lost, on every die.
    #[arg(long)]
    pub in_flight: bool,
    /// With --in-flight: replay one cut at an instant (ns, as a violation's
    /// replay line gives it; needs a single --torn).
    #[arg(long, requires = "in_flight", conflicts_with = "at")]
    pub at_ns: Option<u64>,
    /// With --at-ns: bit i set, the i-th started operation in flight (in
    /// issue order) finishes instead of being torn.
    #[arg(long, default_value_t = 0, requires = "at_ns")]
    pub finish: u64,
    /// Two-cut runs: after each point's recovery, continue the workload and
    /// cut again at `every` mutating operation of the continuation, at a
    /// seeded sample of N of them, or `off`.
    #[arg(long, default_value = "2", value_parser = parse_second_cuts)]
    pub second_cuts: SecondCuts,
    /// Host operations of each continuation [default: 30]; refused with
    /// `--second-cuts off` unless a second cut is replayed (`--then-at`).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub second_ops: Option<u64>,
    /// Replay one second cut of the point `--at` names: the continuation's
    /// flash operation index (from the end of the first recovery).
    #[arg(long, requires = "at", requires = "then_torn")]
    pub then_at: Option<u64>,
    /// The torn variant of the second cut `--then-at` names.
    #[arg(long, requires = "then_at")]
    pub then_torn: Option<String>,
    /// Replay the workload from a fresh device to every crash point instead
    /// of forking one run (the slow reference path, for checking the fork).
    #[arg(long, hide = true)]
    pub from_scratch: bool,
    /// Worker threads (default: every core). Crash points are independent
    /// forked runs, so every thread count gives the same points and verdicts.
    #[arg(long, default_value_t = crate::every_core().min(64) as u32, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub threads: u32,
    #[arg(long)]
    pub json: bool,
}

/// One crash point: the flash operation and how it is torn.
type Point = (u64, Torn);

fn parse_second_cuts(s: &str) -> Result<SecondCuts, String> {
    SecondCuts::parse(s).ok_or_else(|| format!("`{s}`: off, every, or a number of second cuts per crash point"))
}

/// Host operations of each continuation: `--second-ops`, refused where no
/// continuation runs (it would be ignored).
fn second_ops(args: &CrashArgs) -> Result<u64, CliError> {
    match args.second_ops {
        Some(_) if args.second_cuts == SecondCuts::Off && args.then_at.is_none() => Err(CliError::Usage(
            "--second-ops sets the continuations of two-cut runs, which --second-cuts off turns off".into(),
        )),
        Some(n) => Ok(n),
        None => Ok(30),
    }
}

/// The second cut to replay (`--then-at`, `--then-torn`).
fn then_point(args: &CrashArgs) -> Result<Option<Point>, CliError> {
    match (args.then_at, &args.then_torn) {
        (Some(j), Some(t)) => Torn::parse(t.trim())
            .map(|t| Some((j, t)))
            .ok_or_else(|| CliError::Usage(format!("unknown torn variant `{t}` (none, garbage, partial, data, oob)"))),
        _ => Ok(None),
    }
}

/// The torn variants asked for, and the one crash point to replay (`--at`).
fn torn_and_point(args: &CrashArgs) -> Result<(Vec<Torn>, Option<Point>), CliError> {
    let torn: Vec<Torn> = args
        .torn
        .split(',')
        .map(|s| {
            Torn::parse(s.trim()).ok_or_else(|| CliError::Usage(format!("unknown torn variant `{s}` (none, garbage, partial, data, oob)")))
        })
        .collect::<Result<_, _>>()?;
    let only = match args.at.or(args.at_ns) {
        Some(at) if torn.len() == 1 => Some((at, torn[0])),
        Some(_) => return Err(CliError::Usage("--at and --at-ns need exactly one --torn variant".into())),
        None => None,
    };
    Ok((torn, only))
}

/// The workload's name: the one asked for, or the one a canary's bug shows
/// with (any other is refused for it), or txwrite on a transactional protocol.
fn workload_name(args: &CrashArgs, protocol: &Protocol) -> Result<String, CliError> {
    Ok(match (&args.workload, protocol.canary_workload()) {
        (Some(w), Some(shows)) if w != shows => {
            return Err(CliError::Usage(format!(
                "{} is a canary whose bug only shows with --workload {shows}: a {w} run would report 0 violations and test nothing",
                protocol.name()
            )))
        }
        (Some(w), _) => w.clone(),
        (None, Some(shows)) => shows.to_string(),
        (None, None) if protocol.entry.transactional => "txwrite".to_string(),
        (None, None) => "randwrite".to_string(),
    })
}

/// The command line that replays this run, without `--at`/`--torn`.
fn replay_base(args: &CrashArgs, chosen: &DeviceChoice, workload: &WorkloadSpec, workload_name: &str) -> String {
    let d = &args.device;
    let mut s = format!(
        "txftl crashtest --protocol {} {} --workload {} --ops {} --fill {} --seed {} --flush-every {}",
        d.protocol(),
        chosen.replay_option(),
        workload_name,
        args.ops,
        args.fill,
        args.seed,
        args.flush_every,
    );
    s += &crate::setup::replay_ftl_flags(d);
    s += &args.faults.replay();
    if let Some(b) = d.blocks_per_plane {
        s += &format!(" --blocks-per-plane {b}");
    }
    if workload.kind == WorkloadKind::TxWrite {
        let t = &workload.tx;
        s += &format!(
            " --pages-per-tx {} --abort-ratio {} --concurrency {} --nontx-pct {} --trim-pct {}",
            t.pages_per_tx,
            t.abort_pct as f64 / 100.0,
            t.concurrency,
            t.nontx_pct,
            t.trim_pct
        );
        if t.transactions > 0 {
            s += &format!(" --txs {}", t.transactions);
        }
        if t.cross_pct > 0 {
            s += &format!(" --cross-tx-pct {}", t.cross_pct);
        }
        if t.end_flag {
            s += " --tx-end-flag";
        }
        if let Some(pct) = t.static_dynamic {
            s += &format!(" --tx-static-dynamic {pct}");
        }
        if t.exclusive {
            s += " --tx-exclusive";
        }
    }
    if args.no_recovery_cuts {
        s += " --no-recovery-cuts";
    }
    // The continuations' length goes with the second cut a replay names
    // (the harness adds it there); the mode, so a first cut replays with
    // the same second cuts.
    s += &format!(" --second-cuts {}", args.second_cuts.name());
    s
}

/// What the options mean the run to exercise: it fails if one stays at zero.
fn expectations(torn: &[Torn], workload: &WorkloadSpec, transactional: bool) -> Vec<Expect> {
    let mut expect = Vec::new();
    if torn.contains(&Torn::Data) {
        expect.push(Expect::TornDataIntactOob);
    }
    if workload.kind == WorkloadKind::TxWrite {
        expect.push(Expect::Device("commits"));
        // Static transactions never abort (`TxShape::static_dynamic`).
        if workload.tx.abort_pct > 0 && workload.tx.static_dynamic != Some(0) {
            expect.push(Expect::Device("aborts"));
        }
        if workload.tx.trim_pct > 0 {
            expect.push(Expect::Device("host_trims"));
        }
        // Static transactions the host holds until their swrite are never
        // open on the device.
        if workload.tx.concurrency > 1 && transactional && workload.tx.static_dynamic.is_none() {
            expect.push(Expect::Device("protocol_records_with_open_tx"));
        }
        if workload.tx.cross_pct > 0 {
            expect.push(Expect::CrossTxUpdates);
        }
    }
    if workload.kind == WorkloadKind::Mixed {
        expect.push(Expect::Device("host_trims"));
    }
    expect
}

/// The run the options describe, checked before anything runs.
fn spec(args: &CrashArgs) -> Result<(CrashSpec, String), CliError> {
    let protocol = Protocol::find(args.device.protocol()).map_err(|e| CliError::Usage(e.to_string()))?;
    let entry = protocol.entry;
    // The small preset the protocol's NAND needs pick (`tiny`, `tiny-slc`).
    let tiny = entry.nand.tiny_preset();
    let (chosen, opts) = resolve_with_protocol(&args.device, tiny)?;
    let p = &chosen.preset;
    if p.geometry.page_count() > 1 << 16 {
        return Err(CliError::Usage(format!(
            "device {} has {} pages: crash enumeration is for small geometries (use --preset {tiny} or --blocks-per-plane)",
            p.name,
            p.geometry.page_count()
        )));
    }
    let (torn, only) = torn_and_point(args)?;
    let name = workload_name(args, &protocol)?;
    let workload = WorkloadArgs {
        workload: name.clone(),
        ops: args.ops,
        fill: args.fill,
        seed: args.seed,
        flush_every: args.flush_every,
        tx: args.tx.clone(),
    }
    .spec(crate::TxDefaults::CRASH.for_protocol(entry))?;
    crate::cmd_run::refuse_trims(entry, &workload)?;
    let spec = CrashSpec {
        device: DeviceSpec {
            protocol: args.device.protocol().to_string(),
            nand: p.config(DataMode::Full, ViolationPolicy::Panic),
            faults: args.faults.model()?,
            ftl: chosen.ftl.clone(),
            opts,
        },
        replay_base: replay_base(args, &chosen, &workload, &name),
        expect: expectations(&torn, &workload, entry.transactional),
        workload,
        torn,
        recovery_cuts: !args.no_recovery_cuts,
        only: only.filter(|_| args.at.is_some()),
        in_flight: match (args.in_flight, only) {
            (false, _) => InFlight::Off,
            (true, Some((at_ns, torn))) if args.at_ns.is_some() => InFlight::Only {
                at_ns,
                torn,
                finish: args.finish,
            },
            (true, _) => InFlight::Every,
        },
        second_cuts: args.second_cuts,
        second_ops: second_ops(args)?,
        then_only: then_point(args)?,
        replay_from_scratch: args.from_scratch,
        threads: args.threads as usize,
    };
    Ok((spec, p.name.to_string()))
}

pub fn run(args: CrashArgs) -> Result<ExitCode, CliError> {
    let (spec, device_name) = spec(&args)?;
    let bar = if args.json { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} crash points [{bar:40}] {pos}/{len} ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    // Rule violations are caught per crash point and reported; keep their panic messages off the terminal.
    std::panic::set_hook(Box::new(|_| {}));
    let report = crashtest(&spec, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .map_err(|e| match e {
        e @ (txftl_harness::crash::CrashError::NoSuchPoint { .. }
        | txftl_harness::crash::CrashError::NoSuchInstant { .. }
        | txftl_harness::crash::CrashError::NoSuchSecondPoint { .. }) => CliError::Usage(e.to_string()),
        e => CliError::failed(e),
    })?;
    let _ = std::panic::take_hook();
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(CliError::failed)?);
    } else {
        let entry = txftl_protocols::entry(&report.protocol).map_err(CliError::failed)?;
        print_report(&report, &device_name, entry, args.faults.faults.is_some());
    }
    Ok(if report.violation_count == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// The terminal report: the workload, what it exercised, the enumeration,
/// and every violation with the command that replays it.
fn print_report(report: &CrashReport, device_name: &str, entry: &ProtocolEntry, faults: bool) {
    let mut t = Figures::new(&format!(
        "crashtest | {} on {device_name} | {} {} ops, fill {}%, seed {}",
        report.protocol,
        report.workload.kind.name(),
        report.workload.ops,
        report.workload.fill_pct,
        report.workload.seed
    ));
    t.section("workload (uncut dry run)");
    t.row("host operations", thousands(report.host_ops));
    t.row("flash operations", thousands(report.flash_ops));
    t.row("of which programs and erases", thousands(report.mutating_ops));
    t.row(
        "GC runs / checkpoints",
        format!("{} / {}", report.dry_run.gc_runs, report.dry_run.checkpoints),
    );
    t.row(
        "trims / flushes",
        format!("{} / {}", report.dry_run.host_trims, report.dry_run.host_flushes),
    );
    t.row(
        "commits / aborts",
        format!("{} / {}", report.dry_run.commits, report.dry_run.aborts),
    );
    t.row("protocol metadata pages written", thousands(report.dry_run.protocol_meta_writes));
    add_exercised(&mut t, &report.exercised, entry, faults);
    t.section("enumeration");
    t.row("crash points tried", thousands(report.crash_points));
    t.row("recovery crash points tried", thousands(report.recovery_crash_points));
    t.row(
        &format!(
            "second cuts ({}): points continued / second-cut points tried",
            report.second_cuts.name()
        ),
        pair(report.continued_points, report.second_crash_points),
    );
    if let Some(f) = &report.in_flight {
        t.row("instants with programs or erases in flight", thousands(f.instants));
        t.row("cuts at instants tried", thousands(f.points));
        t.row("most in flight at once / of them started", pair(f.max_in_flight, f.max_started));
        t.row(
            "out of issue order: instants / cuts (a later operation done, an earlier cut)",
            pair(f.out_of_order_instants, f.out_of_order_points),
        );
        if f.acked_not_durable > 0 {
            t.row(
                "commits acknowledged before durable at the cuts / of them lost whole",
                pair(f.acked_not_durable, f.acked_lost),
            );
        }
        t.row("violations at instants", thousands(f.violation_count));
    }
    t.row("violations", thousands(report.violation_count));
    t.row(
        "crash points of every kind per wall second",
        format!("{} ({:.1} s wall)", thousands(report.points_per_second as u64), report.wall_seconds),
    );
    t.print();
    for v in &report.violations {
        let at = match v.at_ns {
            Some(ns) => format!("instant {ns} ns, before flash op {}", v.at_op),
            None => format!("flash op {}", v.at_op),
        };
        wrapln!(
            "VIOLATION at {} (torn {}{}{}): {}",
            at,
            v.torn.name(),
            v.recovery_cut
                .map(|(j, t)| format!(", recovery cut at its op {j} torn {}", t.name()))
                .unwrap_or_default(),
            v.second_cut
                .map(|(j, t)| format!(", second cut at continuation op {j} torn {}", t.name()))
                .unwrap_or_default(),
            v.message
        );
        println!("{}", wrap_command(&format!("  replay: {}", v.replay), width()));
    }
}

/// What the run exercised, the protocol's own counters among it.
fn add_exercised(t: &mut Figures, x: &Exercised, entry: &ProtocolEntry, faults: bool) {
    // The dry run's device counters.
    let d = &x.dry_run;
    t.section("exercised");
    t.row("transactions aborted on a full table", thousands(x.table_full_aborts));
    t.row(
        "GC moves of uncommitted pages / records written with a transaction open",
        pair(d.gc_protocol_copies, d.protocol_records_with_open_tx),
    );
    if d.gc_victims_skipped > 0 {
        t.row(
            "GC choices changed by the protocol's skips / extra pages copied",
            pair(d.gc_victims_skipped, d.gc_skip_extra_copies),
        );
    }
    t.row(
        "recoveries: torn pages / of which with an intact OOB",
        pair(x.torn_pages, x.torn_data_intact_oob),
    );
    t.row(
        "recoveries: pages rolled forward / protocol updates applied",
        pair(x.pages_rolled_forward, x.protocol_updates_applied),
    );
    t.row(
        "writes to a page another open transaction wrote / recovery zone pages read",
        pair(x.cross_tx_updates, x.zone_pages_scanned),
    );
    t.row(
        "recoveries: commit records rejected, their transaction missing pages",
        thousands(x.commits_rejected),
    );
    for c in entry.counters {
        t.row(&format!("{} ({})", c.help, c.key), thousands(d.protocol.get(c.key)));
    }
    if faults {
        t.section("flash faults exercised (dry run; recoveries)");
        t.row("bit errors corrected / read retries", pair(d.corrected_bits, d.read_retries));
        t.row("reads uncorrectable after every retry", thousands(d.uncorrectable_reads));
        t.row("failed programs / blocks retired", pair(d.program_failures, d.retired_blocks));
        t.row("blocks gone bad", thousands(d.bad_blocks));
        t.row(
            "losses reported at reads / GC copies marked lost",
            pair(x.reported_losses, d.lost_page_copies),
        );
        t.row("recoveries: unreadable pages met", thousands(x.unreadable_pages));
    }
}
