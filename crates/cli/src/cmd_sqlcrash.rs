//! `txftl sqlcrash`: the end-to-end crash test, real SQLite on every mode with
//! a power cut at every flash operation of a scenario (partsupp, a short
//! TPC-C run, or SQLite's heavy statements), checked after each restart
//! against what the mode promises.

use crate::cmd_compare::{parse_list, refuse_protocol};
use crate::setup::{describe, parse_modes, protocol_options_for, replay_ftl_flags, resolve_device, DeviceChoice};
use crate::table::{fitted, pair, thousands};
use crate::{CliError, DeviceArgs};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use std::process::ExitCode;
use txftl_nand::{DataMode, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{ProtocolOptions, SqlJournal};
use txftl_reproduce::terminal::{width, wrap_command, Fitted};
use txftl_reproduce::wrapln;
use txftl_sqlite::crash::{heavy, tpcc, ScenarioSize, SqlCrashReport, SqlCrashSpec, SqlWorkload};
use txftl_sqlite::{Canary, Mode, Synchronous};

#[derive(Args, Debug)]
pub struct SqlCrashArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// The scenario: partsupp (the X-FTL paper's table, a spilled rollback
    /// and a second database), tpcc (a short TPC-C run) or heavy (SQLite's
    /// heavy statements: CREATE INDEX, VACUUM, a sort that spills, ...); see
    /// docs/testing.md.
    #[arg(long, default_value = "partsupp", value_parser = ["partsupp", "tpcc", "heavy"])]
    pub workload: String,
    /// Modes, comma-separated (see `txftl sql tpcc --help` for every mode)
    /// [default: the default protocol's journaled modes and every mode of
    /// the default transactional protocol].
    #[arg(long)]
    pub modes: Option<String>,
    /// PRAGMA synchronous settings, comma-separated: off, normal, full (each mode runs under each).
    #[arg(long, default_value = "off,normal,full")]
    pub synchronous: String,
    /// partsupp: tuples in the table [default: 30]; heavy: rows of `t`
    /// [default: 640, enough for the ORDER BY's sorter to spill].
    #[arg(long, value_parser = clap::value_parser!(u32).range(10..))]
    pub rows: Option<u32>,
    /// heavy: rows the one transaction inserts into `u` [default: 300].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub insert_rows: Option<u32>,
    /// partsupp: tuples updated per transaction [default: 3].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub k: Option<u32>,
    /// tpcc: divisor of the item, customer and order counts (one warehouse)
    /// [default: 900: 111 items, 3 customers and 3 orders per district].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=900))]
    pub scale: Option<u32>,
    /// Transactions in the scenario (one of them spills its cache and rolls back);
    /// default per workload and mode, enough for GC and checkpoints inside
    /// transactional writes (X-FTL: its table reclaims). Not for heavy,
    /// whose six statements are the scenario.
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub transactions: Option<u32>,
    /// Torn variants of the cut operation, comma-separated: none, garbage, partial, data, oob.
    #[arg(long, default_value = "none,garbage,partial,data,oob")]
    pub torn: String,
    /// Cuts inside each crash point's restart (recovery, mount, hot-journal
    /// rollback): at most this many of its programs and erases, evenly spaced.
    #[arg(long, default_value_t = 2)]
    pub recovery_cuts: u32,
    /// Try every n-th crash point only (1: every one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    pub sample_every: u64,
    /// Replay one crash point (with --torn naming one variant).
    #[arg(long)]
    pub at: Option<u64>,
    /// A deliberate VFS bug the checker must catch: commit-at-sync (the VFS
    /// of a transactional mode commits at xSync instead of COMMIT_PHASETWO),
    /// no-sync-after-batch-abort (a batch mode does not sync SQLite's journal
    /// after an aborted batch; partsupp only: TPC-C aborts no batch),
    /// wal-skips-sync (xSync of a WAL file does nothing),
    /// wal-checkpoint-in-transaction (a transactional mode's VFS puts a WAL
    /// checkpoint's database writes in a device transaction). Off by default.
    #[arg(long, value_parser = ["commit-at-sync", "no-sync-after-batch-abort", "wal-skips-sync", "wal-checkpoint-in-transaction"])]
    pub canary: Option<String>,
    /// synchronous=NORMAL on a protocol that groups SQLite's transactions
    /// into device transactions (nolgn: one every 1,000 database page
    /// writes, as its paper ran): this many per group instead, so groups
    /// commit inside the scenario. Refused for modes that do not group.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub group_pages: Option<u32>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// The modes run when `--modes` is not given: the default protocol's
/// journaled modes, and every mode of the default transactional protocol.
fn default_modes() -> Vec<Mode> {
    let defaults = [txftl_protocols::DEFAULT_PROTOCOL, txftl_protocols::DEFAULT_TRANSACTIONAL_PROTOCOL];
    Mode::all(PROTOCOLS).filter(|m| defaults.contains(&m.protocol())).collect()
}

/// The scenario's protocol options for `mode`: those given, and the
/// scenario's (a transaction bound; heavy: Möbius's `items-max` and
/// `ala-blocks`) where the protocol has them, unless given.
fn scenario_options(given: &ProtocolOptions, mode: Mode, size: &ScenarioSize) -> ProtocolOptions {
    size.options_beside(&given.for_entry(mode.entry()), mode)
}

/// Rows, K and the workload, with what does not apply to it refused.
fn workload(args: &SqlCrashArgs) -> Result<(SqlWorkload, u32, u32), CliError> {
    let refuse = |flag: &str, w: &str| Err(CliError::Usage(format!("{flag} does not apply to --workload {w}")));
    if args.insert_rows.is_some() && args.workload != "heavy" {
        return refuse("--insert-rows", &format!("{} (it sizes heavy's inserts)", args.workload));
    }
    match args.workload.as_str() {
        "heavy" => {
            if args.k.is_some() {
                return refuse("--k", "heavy (it sizes partsupp's transactions)");
            }
            if args.scale.is_some() {
                return refuse("--scale", "heavy (it scales TPC-C's population; use --rows)");
            }
            if args.transactions.is_some() {
                return refuse("--transactions", "heavy (its six statements are the scenario)");
            }
            if args.canary.as_deref() == Some("no-sync-after-batch-abort") {
                return refuse(
                    "--canary no-sync-after-batch-abort",
                    "heavy (its transaction bound admits VACUUM's, so no batch is aborted)",
                );
            }
            let rows = args.rows.unwrap_or(heavy::ROWS_DEFAULT);
            let insert_rows = args.insert_rows.unwrap_or(heavy::INSERT_ROWS_DEFAULT);
            Ok((SqlWorkload::Heavy { rows, insert_rows }, rows, 0))
        }
        "tpcc" => {
            if args.rows.is_some() {
                return refuse("--rows", "tpcc (it sizes partsupp; use --scale)");
            }
            if args.k.is_some() {
                return refuse("--k", "tpcc (it sizes partsupp's transactions)");
            }
            if args.canary.as_deref() == Some("no-sync-after-batch-abort") {
                return refuse(
                    "--canary no-sync-after-batch-abort",
                    "tpcc (no TPC-C transaction outgrows the device's transaction bound, so no batch is aborted)",
                );
            }
            let scale = args.scale.unwrap_or(tpcc::SCALE_DEFAULT);
            Ok((SqlWorkload::Tpcc { scale }, 0, 0))
        }
        _ => {
            if args.scale.is_some() {
                return refuse("--scale", "partsupp (it scales TPC-C's population; use --rows)");
            }
            Ok((SqlWorkload::Partsupp, args.rows.unwrap_or(30), args.k.unwrap_or(3)))
        }
    }
}

/// What every scenario of the run shares: its workload and sizes, the
/// settings, torn variants, crash point to replay and canary.
struct Plan {
    workload: SqlWorkload,
    rows: u32,
    k: u32,
    modes: Vec<Mode>,
    /// The `--protocol-opt`s given (each mode's protocol takes its own).
    given: ProtocolOptions,
    syncs: Vec<Synchronous>,
    torn: Vec<txftl_nand::Torn>,
    only: Option<(u64, txftl_nand::Torn)>,
    canary: Canary,
    rollback_at: u32,
}

fn plan(args: &SqlCrashArgs) -> Result<Plan, CliError> {
    refuse_protocol(&args.device)?;
    let (workload, rows, k) = workload(args)?;
    let modes = match &args.modes {
        Some(list) => parse_modes(list)?,
        None => default_modes(),
    };
    let protocols: Vec<&str> = modes.iter().map(|m| m.protocol()).collect();
    let given = protocol_options_for(&args.device, &protocols)?;
    let syncs = parse_list(&args.synchronous, "synchronous setting (off, normal, full)", Synchronous::parse)?;
    let torn = parse_list(
        &args.torn,
        "torn variant (none, garbage, partial, data, oob)",
        txftl_nand::Torn::parse,
    )?;
    if torn.is_empty() || syncs.is_empty() {
        return Err(CliError::Usage("--torn and --synchronous need at least one value".into()));
    }
    let only = match args.at {
        Some(at) if torn.len() == 1 => Some((at, torn[0])),
        Some(_) => return Err(CliError::Usage("--at replays one crash point: give one --torn variant".into())),
        None => None,
    };
    let groups = |m: &Mode| m.journal() == SqlJournal::Off && m.entry().sql_normal_group_pages.is_some();
    if args.group_pages.is_some() && !modes.iter().any(groups) {
        return Err(CliError::Usage(
            "--group-pages applies to the modes whose protocol groups SQLite's transactions under synchronous=NORMAL (nolgn): none is given".into(),
        ));
    }
    let canary = match args.canary.as_deref() {
        Some("commit-at-sync") => Canary::CommitAtSync,
        Some("no-sync-after-batch-abort") => Canary::NoSyncAfterBatchAbort,
        Some("wal-skips-sync") => Canary::WalSkipsSync,
        Some("wal-checkpoint-in-transaction") => Canary::WalCheckpointInTransaction,
        _ => Canary::None,
    };
    let rollback_at = match workload {
        SqlWorkload::Tpcc { .. } => tpcc::ROLLBACK_AT_DEFAULT,
        SqlWorkload::Partsupp => 1,
        // Nothing rolls back: past the last statement.
        SqlWorkload::Heavy { .. } => heavy::STEPS.len() as u32,
    };
    if args.transactions.is_some_and(|t| t <= rollback_at) {
        return Err(CliError::Usage(format!(
            "--transactions must exceed {rollback_at}: transaction #{} is the one that rolls back",
            rollback_at + 1
        )));
    }
    Ok(Plan {
        workload,
        rows,
        k,
        modes,
        given,
        syncs,
        torn,
        only,
        canary,
        rollback_at,
    })
}

/// One mode's device: the small preset its protocol's NAND needs pick
/// (`tiny`, `tiny-slc`) at the scenario's default size, unless a preset or a
/// device file fixes the geometry (a file is read once: `file_device`).
fn mode_device(
    args: &SqlCrashArgs,
    mode: Mode,
    size: &ScenarioSize,
    file_device: Option<&DeviceChoice>,
) -> Result<(DeviceArgs, DeviceChoice), CliError> {
    let mut device = args.device.clone();
    let default_geometry = device.preset.is_none() && file_device.is_none();
    if device.blocks_per_plane.is_none() && default_geometry {
        device.blocks_per_plane = Some(size.blocks_per_plane);
    }
    let mut chosen = match file_device {
        Some(c) => c.clone(),
        None => resolve_device(&device, mode.entry().nand.tiny_preset())?,
    };
    // The scenario's page size applies to its default device only.
    if let (Some(ps), true) = (size.page_size, default_geometry) {
        chosen.preset.geometry.page_size = ps;
    }
    if chosen.preset.geometry.page_count() > 1 << 16 {
        return Err(CliError::Usage(format!(
            "device {} is too large for crash enumeration",
            chosen.preset.name
        )));
    }
    device.protocol_opt.clear();
    Ok((device, chosen))
}

/// The command line that replays one scenario.
#[allow(clippy::too_many_arguments)]
fn replay_line(
    args: &SqlCrashArgs,
    plan: &Plan,
    mode: Mode,
    sync: Synchronous,
    transactions: u32,
    device: &DeviceArgs,
    chosen: &DeviceChoice,
    opts: &ProtocolOptions,
) -> String {
    let sized = match plan.workload {
        SqlWorkload::Tpcc { scale } => format!("--workload tpcc --scale {scale} --transactions {transactions}"),
        SqlWorkload::Partsupp => format!("--rows {} --k {} --transactions {transactions}", plan.rows, plan.k),
        SqlWorkload::Heavy { rows, insert_rows } => format!("--workload heavy --rows {rows} --insert-rows {insert_rows}"),
    };
    let mut replay = format!(
        "txftl sqlcrash --modes {} --synchronous {} {sized} --seed {} --recovery-cuts {}",
        mode.cli(),
        sync.name().to_ascii_lowercase(),
        args.seed,
        args.recovery_cuts
    );
    if let Some(b) = device.blocks_per_plane {
        replay.push_str(&format!(" --blocks-per-plane {b}"));
    }
    if device.preset.is_some() || device.config.is_some() || device.mqsim_config.is_some() {
        replay.push_str(&format!(" {}", chosen.replay_option()));
    }
    replay.push_str(&replay_ftl_flags(device));
    replay.push_str(&opts.to_args());
    if let Some(c) = &args.canary {
        replay.push_str(&format!(" --canary {c}"));
    }
    if let Some(n) = args.group_pages {
        replay.push_str(&format!(" --group-pages {n}"));
    }
    replay
}

/// Runs one scenario with a progress bar.
fn run_one(spec: &SqlCrashSpec, json: bool) -> Result<SqlCrashReport, CliError> {
    let bar = if json { ProgressBar::hidden() } else { ProgressBar::new(0) };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} crash points")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    bar.set_message(format!("{} synchronous={}", spec.mode.name(), spec.synchronous.name()));
    let r = txftl_sqlite::crash::sql_crashtest(spec, &|done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .map_err(|e| {
        CliError::Failed(format!(
            "{} synchronous={}: {e} (replay: {})",
            spec.mode.name(),
            spec.synchronous.name(),
            spec.replay_base
        ))
    })?;
    bar.finish_and_clear();
    Ok(r)
}

pub fn run(args: SqlCrashArgs) -> Result<ExitCode, CliError> {
    let plan = plan(&args)?;
    let mut reports = Vec::new();
    let mut described = Vec::new();
    // A device file is read once (its warnings printed once); it fixes the
    // geometry, so the scenario's default size does not apply to it.
    let from_file = args.device.config.is_some() || args.device.mqsim_config.is_some();
    let file_device = if from_file {
        Some(resolve_device(&args.device, "tiny")?)
    } else {
        None
    };
    for &mode in &plan.modes {
        let size = ScenarioSize::for_workload(plan.workload, mode);
        let (device, chosen) = mode_device(&args, mode, &size, file_device.as_ref())?;
        let opts = scenario_options(&plan.given, mode, &size);
        let p = &chosen.preset;
        described.push(format!("{}: {}", mode.name(), describe(p)));
        let transactions = args.transactions.unwrap_or(size.transactions);
        for &synchronous in &plan.syncs {
            let spec = SqlCrashSpec {
                workload: plan.workload,
                nand: p.config(DataMode::Full, ViolationPolicy::Panic),
                ftl: chosen.ftl.clone(),
                opts: opts.clone(),
                mode,
                synchronous,
                rows: plan.rows,
                k: plan.k,
                transactions,
                rollback_at: plan.rollback_at,
                big_at: size.big_at,
                seed: args.seed,
                torn: plan.torn.clone(),
                recovery_cuts: args.recovery_cuts,
                sample_every: args.sample_every,
                only: plan.only,
                canary: plan.canary,
                group_pages: args.group_pages,
                replay_base: replay_line(&args, &plan, mode, synchronous, transactions, &device, &chosen, &opts),
            };
            reports.push(run_one(&spec, args.json)?);
        }
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports).map_err(CliError::failed)?);
    } else {
        print_reports(&plan, &described, &reports, args.recovery_cuts);
    }
    let bad = reports.iter().any(|r| r.violation_count > 0);
    Ok(if bad { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn print_reports(plan: &Plan, described: &[String], reports: &[SqlCrashReport], recovery_cuts: u32) {
    for d in described {
        wrapln!("device {d}");
    }
    print_scenario(plan.workload, plan.rows, plan.k, recovery_cuts);
    for r in reports.iter().filter(|r| r.big_at.is_some()) {
        if let Some(b) = r.big_at {
            wrapln!(
                "{} synchronous={}: transaction #{} updates every tuple (larger than the device's transaction bound: the batch is aborted and committed through the journal)",
                r.mode.name(),
                r.synchronous.name(),
                b + 1
            );
        }
    }
    println!("{}", table(plan.workload, reports));
    for r in reports {
        for v in r.violations.iter().take(10) {
            wrapln!("VIOLATION {} synchronous={}: {}", r.mode.name(), r.synchronous.name(), v.message);
            println!("{}", wrap_command(&format!("  replay: {}", v.replay), width()));
        }
    }
}

fn print_scenario(workload: SqlWorkload, rows: u32, k: u32, recovery_cuts: u32) {
    match workload {
        SqlWorkload::Partsupp => wrapln!(
            "scenario: transactions of K={k} on partsupp ({rows} tuples), transaction #2 spills its cache and rolls back; {recovery_cuts} recovery cuts per crash point"
        ),
        SqlWorkload::Tpcc { scale } => wrapln!(
            "scenario: TPC-C, 1 warehouse at scale 1/{scale}, transactions in the order {} (repeated), transaction #{} a New-Order forced to roll back with a spilled cache; \
             every restart: integrity_check, consistency conditions 1-4, the database equal to the state after an allowed prefix of the transactions; {recovery_cuts} recovery cuts per crash point",
            tpcc::KINDS.iter().map(|k| k.name()).collect::<Vec<_>>().join(", "),
            tpcc::ROLLBACK_AT_DEFAULT + 1
        ),
        SqlWorkload::Heavy { rows, insert_rows } => wrapln!(
            "scenario: SQLite's heavy statements on t ({rows} rows), one transaction each: {} ({insert_rows} rows into u with 3 indexes), the ORDER BY's sorter spilling to a temporary file; \
             on Möbius items-max={} and ala-blocks={} unless given; every restart: integrity_check, the database equal to the state after an allowed prefix of the statements; {recovery_cuts} recovery cuts per crash point",
            heavy::STEPS.iter().map(|s| s.name()).collect::<Vec<_>>().join(", "),
            heavy::MOBIUS_ITEMS_MAX,
            heavy::MOBIUS_ALA_BLOCKS
        ),
    }
}

fn table(workload: SqlWorkload, reports: &[SqlCrashReport]) -> Fitted {
    let is_tpcc = matches!(workload, SqlWorkload::Tpcc { .. });
    let is_heavy = matches!(workload, SqlWorkload::Heavy { .. });
    let mut t = fitted();
    let mut header = vec!["mode", "synchronous", "promise", "crash points tried"];
    if is_heavy {
        header.extend(["in index / 5 indexes / inserts / VACUUM / DELETE", "sort temp files", "part inodes"]);
    } else {
        header.push("in rollback");
    }
    if is_tpcc {
        header.extend(["in New-Order / Payment / Delivery"]);
    }
    header.extend([
        "in GC",
        "recovery cuts",
        "in-flight whole / absent",
        "hot journals",
        "WAL frames",
        "commits lost (allowed)",
        "torn (unjudged)",
        "GC runs",
        "ckpts in tx writes",
    ]);
    if is_heavy {
        header.extend(["ckpts in commits", "pages remapped"]);
    } else if !is_tpcc {
        header.push("batch aborts");
    }
    header.push("violations");
    t.set_header(header);
    for r in reports {
        t.add_row(row(r, is_tpcc, is_heavy));
    }
    t
}

/// One report's row of [`table`].
fn row(r: &SqlCrashReport, is_tpcc: bool, is_heavy: bool) -> Vec<String> {
    let e = &r.exercised;
    let mut row = vec![
        r.mode.name().to_string(),
        r.synchronous.name().to_string(),
        format!("{:?}", r.promise),
        format!("{} of {}", thousands(r.crash_points), thousands(r.crash_points_total)),
    ];
    if is_heavy {
        let s = &e.cuts_in_statements;
        row.push(
            [s.create_index, s.create_index5, s.insert3, s.vacuum, s.delete_all]
                .map(thousands)
                .join(" / "),
        );
        row.push(thousands(r.dry_run.sort_temp_files));
        let parts = r.dry_run.protocol.specs().iter().any(|c| c.key == "mobius_part_inodes");
        row.push(if parts {
            thousands(r.dry_run.protocol.get("mobius_part_inodes"))
        } else {
            "-".into()
        });
    } else {
        row.push(thousands(e.cuts_in_rollback));
    }
    if is_tpcc {
        row.push(format!(
            "{} / {} / {}",
            thousands(e.cuts_in_new_order),
            thousands(e.cuts_in_payment),
            thousands(e.cuts_in_delivery)
        ));
    }
    row.extend([
        thousands(e.cuts_in_gc),
        thousands(e.recovery_cuts),
        pair(e.in_flight_applied, e.in_flight_absent),
        thousands(e.hot_journal_rollbacks),
        thousands(e.wal_frames_recovered),
        thousands(e.committed_lost),
        thousands(e.torn_outcomes + e.corrupt_outcomes),
        thousands(r.dry_run.gc_runs),
        thousands(r.dry_run.table_reclaim_checkpoints),
    ]);
    if is_heavy {
        row.push(thousands(r.dry_run.commit_checkpoints));
        row.push(thousands(r.dry_run.pages_remapped));
    } else if !is_tpcc {
        row.push(if r.mode.journal() == SqlJournal::Batch {
            thousands(r.dry_run.aborts)
        } else {
            "-".into()
        });
    }
    row.push(thousands(r.violation_count));
    row
}
