//! `txftl trace`: replay block traces on any protocol.
//!
//! - `txftl` traces (recorded with `run --record`): N closed-loop clients, an
//!   isolation level, abort injection;
//! - public traces (MQSim/DiskSim ASCII, MSR Cambridge CSV, blkparse text):
//!   open loop at the trace's arrival times, or as fast as possible with a
//!   queue depth.

use crate::cmd_run::{add_counters, add_latency, record_file, HostArgs};
use crate::open::ram;
use crate::setup::{describe, ftl_config, nand_config, protocol_options, resolve_preset};
use crate::table::{pair, sim_time, thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;
use txftl_host::replay::{replay, Isolation, ReplayOptions, ReplayReport};
use txftl_host::trace::read_trace;
use txftl_nand::DataMode;
use txftl_protocols::AnyDevice;

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Replay a block trace on a protocol and report counters, throughput and latency.
    Replay(ReplayArgs),
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file.
    pub file: PathBuf,
    /// Trace format: txftl (recorded by `run --record`; see the README).
    #[arg(long, default_value = "txftl", value_parser = ["txftl"])]
    pub format: String,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Store page data (full) or only OOB metadata (meta: faster, same counts and times).
    #[arg(long, default_value = "meta", value_parser = ["full", "meta"])]
    pub data: String,
    #[command(flatten)]
    pub host: HostArgs,
    /// Isolation level of the transactions (txftl traces): strict (a barrier
    /// after each commit or abort), no-page-conflict (segments in which no two
    /// transactions write the same page), serializable (no barriers; commits in
    /// trace order where transactions conflict).
    #[arg(long, default_value = "strict", value_parser = Isolation::NAMES)]
    pub isolation: String,
    /// Percent of transactions that end in abort instead of commit (from the seed).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub abort_pct: u32,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Record what the replay sent to the device, as a txftl trace.
    #[arg(long)]
    pub record: Option<PathBuf>,
    #[arg(long)]
    pub json: bool,
}

pub fn run(cmd: TraceCommand) -> Result<ExitCode, CliError> {
    match cmd {
        TraceCommand::Replay(args) => replay_cmd(args),
    }
}

/// A fresh device in RAM for a replay.
fn ram_device(device: &DeviceArgs, data: &str) -> Result<(Box<dyn AnyDevice>, String), CliError> {
    let p = resolve_preset(device, "jasmine")?;
    let mode = if data == "full" { DataMode::Full } else { DataMode::MetaOnly };
    let nand = ram(nand_config(&p, mode))?;
    let dev = txftl_protocols::format(device.protocol(), nand, ftl_config(device)?, &protocol_options(device)).map_err(CliError::failed)?;
    Ok((dev, format!("{} in RAM, {data} data", describe(&p))))
}

fn replay_cmd(args: ReplayArgs) -> Result<ExitCode, CliError> {
    let host = args.host.options()?;
    let isolation =
        Isolation::parse(&args.isolation).ok_or_else(|| CliError::Usage(format!("unknown isolation level `{}`", args.isolation)))?;
    let file = std::fs::File::open(&args.file).map_err(|e| CliError::Usage(format!("cannot open {}: {e}", args.file.display())))?;
    let trace = read_trace(BufReader::new(file)).map_err(|e| CliError::Usage(format!("{}: {e}", args.file.display())))?;
    let record = args.record.as_deref().map(record_file).transpose()?;
    let (mut dev, what) = ram_device(&args.device, &args.data)?;
    let opts = ReplayOptions {
        clients: host.clients,
        think_ns: host.think_ns,
        isolation,
        abort_pct: args.abort_pct,
        seed: args.seed,
    };
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(trace.ops.len() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} replay [{bar:40}] {pos}/{len} trace operations ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    let r = replay(&mut *dev, &trace, opts, record, &mut |done, total| {
        bar.set_length(total);
        bar.set_position(done);
    })
    .map_err(|e| match e {
        txftl_host::replay::ReplayError::Trace(t) => CliError::Usage(format!("{}: {t}", args.file.display())),
        e => CliError::Failed(format!("{}: {e}", args.file.display())),
    })?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(CliError::failed)?);
    } else {
        print_replay(&what, &args, &r);
    }
    if r.counts.wrong_reads > 0 {
        return Err(CliError::Failed(format!(
            "{} reads returned stale or wrong data",
            r.counts.wrong_reads
        )));
    }
    Ok(ExitCode::SUCCESS)
}

fn print_replay(what: &str, args: &ReplayArgs, r: &ReplayReport) {
    println!("device: {what}");
    let o = &r.options;
    let mut t = Figures::new(&format!(
        "txftl trace replay: {} | {} clients, {}, {}% aborts injected, seed {}",
        r.protocol,
        o.clients,
        o.isolation.name(),
        o.abort_pct,
        o.seed
    ));
    t.section("trace");
    t.row("file", args.file.display());
    t.row("operations", thousands(r.trace.ops));
    t.row(
        "transactions / non-transactional operations",
        pair(r.trace.transactions, r.trace.non_tx_ops),
    );
    t.row(
        "pages per transaction: mean / max",
        format!("{:.1} / {}", r.trace.tx_pages_mean, r.trace.tx_pages_max),
    );
    t.row("aborts in the trace / injected", pair(r.trace.trace_aborts, r.injected_aborts));
    if r.trace.unfinished > 0 {
        t.row(
            "transactions left open by the trace (replayed as aborts)",
            thousands(r.trace.unfinished),
        );
    }
    t.row("segments (barriers + 1) / commits that waited", pair(r.segments, r.commit_waits));
    if r.host_journal_writes > 0 {
        t.row("host journal page writes (in host writes)", thousands(r.host_journal_writes));
    }
    add_counters(&mut t, &r.measured);
    if r.counts.table_full_aborts > 0 {
        t.row("aborted by the host on `table full`", thousands(r.counts.table_full_aborts));
    }
    t.section("derived (simulated)");
    t.row("write amplification", format!("{:.3}", r.write_amplification));
    t.row("simulated time", sim_time(r.measured.sim_time_ns));
    t.row("requests per simulated second", format!("{:.0}", r.throughput_per_sim_s));
    t.row(
        "transactions committed per simulated second",
        format!("{:.1}", r.transactions_per_sim_s),
    );
    add_latency(&mut t, &r.latency);
    t.section("emulator (wall clock)");
    t.row("wall time", format!("{:.3} s", r.wall_seconds));
    t.row("requests per wall second", thousands(r.requests_per_wall_second as u64));
    t.row("flash ops per wall second", thousands(r.flash_ops_per_wall_second as u64));
    t.print();
}
