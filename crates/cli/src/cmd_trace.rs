//! `txftl trace`: replay block traces on any protocol.
//!
//! - `txftl` traces (recorded with `run --record`): N closed-loop clients, an
//!   isolation level, abort injection;
//! - public traces (MQSim/DiskSim ASCII, MSR Cambridge CSV, blkparse text):
//!   open loop at the trace's arrival times, or as fast as possible with a
//!   queue depth.

use crate::cmd_run::{add_counters, add_latency, add_speed, record_file, HostArgs};
use crate::open::ram;
use crate::setup::{describe, nand_config, resolve_with_protocol};
use crate::table::{pair, sim_time, thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::{Args, Subcommand};
use indicatif::{ProgressBar, ProgressStyle};
use std::io::BufReader;
use std::path::PathBuf;
use std::process::ExitCode;
use txftl_host::block_replay::{replay_block, BlockReplayOptions, BlockReplayReport};
use txftl_host::blocktrace::gen::{generate, GenSpec};
use txftl_host::blocktrace::{blkparse, read_requests_with, AddressMap, Devices, Overflow, ParseOptions, TraceFormat};
use txftl_host::replay::{replay, Isolation, ReplayOptions, ReplayReport};
use txftl_host::trace::read_trace;
use txftl_nand::DataMode;
use txftl_protocols::AnyDevice;
use txftl_reproduce::wrapln;

#[derive(Subcommand, Debug)]
pub enum TraceCommand {
    /// Replay a block trace on a protocol and report counters, throughput and latency.
    Replay(Box<ReplayArgs>),
    /// Write a synthetic trace in MQSim's ASCII format shaped like MQSim's
    /// `tpcc-small.trace` (37% writes, 8 KiB requests, skewed addresses).
    Gen(GenArgs),
}

#[derive(Args, Debug)]
pub struct GenArgs {
    /// Where to write it (refused if it exists).
    #[arg(long)]
    pub out: PathBuf,
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: u64,
    /// Address space the trace covers, GiB.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=1 << 20))]
    pub capacity_gib: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
}

#[derive(Args, Debug)]
pub struct ReplayArgs {
    /// The trace file.
    pub file: PathBuf,
    /// Trace format: txftl (recorded by `run --record`), mqsim or disksim
    /// (ASCII), msr (MSR Cambridge / SNIA CSV), blkparse (text output).
    #[arg(long, default_value = "txftl", value_parser = ["txftl", "mqsim", "disksim", "msr", "blkparse"])]
    pub format: String,
    /// Public traces: submit as fast as possible (ignore arrival times), with
    /// --queue-depth requests outstanding.
    #[arg(long)]
    pub as_fast_as_possible: bool,
    /// Public traces: requests outstanding at most [default: unbounded at the
    /// trace's arrival times; 32 with --as-fast-as-possible].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub queue_depth: Option<u32>,
    /// Public traces: write this percent of the logical pages sequentially before the replay.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub precondition: Option<u32>,
    /// Public traces: after the precondition, overwrite this percent of the
    /// logical pages at random within the preconditioned ones (from --seed),
    /// so GC runs in the replay as on an aged device.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub age: Option<u32>,
    /// Public traces: fold addresses past the device's end modulo its capacity
    /// (counted) instead of refusing the trace.
    #[arg(long)]
    pub wrap: bool,
    /// Public traces: replay only this device number of the trace (blkparse:
    /// MAJOR,MINOR); others are dropped (counted). Default: the trace must name one device.
    #[arg(long, conflicts_with = "merge_devices")]
    pub trace_device: Option<String>,
    /// Public traces: replay every device of the trace on one address space.
    #[arg(long)]
    pub merge_devices: bool,
    /// blkparse: replay the queue (Q) or the issue (D) events.
    #[arg(long, value_parser = ["queue", "issue"])]
    pub blkparse_events: Option<String>,
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
    /// trace order where transactions conflict) [default: strict].
    #[arg(long, value_parser = Isolation::NAMES)]
    pub isolation: Option<String>,
    /// Percent of transactions that end in abort instead of commit (txftl
    /// traces; drawn from the seed) [default: 0].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub abort_pct: Option<u32>,
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
        TraceCommand::Replay(args) if args.format == "txftl" => replay_cmd(*args),
        TraceCommand::Replay(args) => replay_public(*args),
        TraceCommand::Gen(args) => gen_cmd(args),
    }
}

fn gen_cmd(args: GenArgs) -> Result<ExitCode, CliError> {
    let capacity = args.capacity_gib << 30;
    let spec = GenSpec::tpcc_like(args.seed, args.requests, capacity);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&args.out)
        .map_err(|e| CliError::Usage(format!("cannot create {}: {e}", args.out.display())))?;
    let mut w = std::io::BufWriter::new(f);
    generate(&mut w, &spec).map_err(|e| CliError::Failed(format!("writing {}: {e}", args.out.display())))?;
    std::io::Write::flush(&mut w).map_err(|e| CliError::Failed(format!("writing {}: {e}", args.out.display())))?;
    wrapln!(
        "wrote {} requests (MQSim ASCII, tpcc-small-like: 37% writes, 8 KiB requests) over {} GiB to {}",
        args.requests,
        args.capacity_gib,
        args.out.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Options of the other kind of trace are refused, not ignored.
fn refuse(given: &[(&str, bool)], format: &str) -> Result<(), CliError> {
    let named: Vec<&str> = given.iter().filter(|(_, set)| *set).map(|(n, _)| *n).collect();
    if named.is_empty() {
        return Ok(());
    }
    Err(CliError::Usage(format!("{} do not apply to --format {format}", named.join(", "))))
}

fn replay_public(args: ReplayArgs) -> Result<ExitCode, CliError> {
    refuse(
        &[
            ("--clients", args.host.clients != 1),
            ("--think-us", args.host.think_us != 0),
            ("--isolation", args.isolation.is_some()),
            ("--abort-pct", args.abort_pct.is_some()),
            ("--record", args.record.is_some()),
        ],
        &format!("{} (open loop: use --queue-depth)", args.format),
    )?;
    if args.age.is_some() && args.precondition.unwrap_or(0) == 0 {
        return Err(CliError::Usage(
            "--age overwrites the preconditioned pages: it needs --precondition".into(),
        ));
    }
    if args.blkparse_events.is_some() && args.format != "blkparse" {
        return Err(CliError::Usage("--blkparse-events applies to --format blkparse".into()));
    }
    let format = TraceFormat::parse(&args.format).map_err(|e| CliError::Usage(e.to_string()))?;
    let devices = match (&args.trace_device, args.merge_devices) {
        (Some(d), _) => {
            let n = match d.split_once(',') {
                Some((maj, min)) if format == TraceFormat::Blkparse => {
                    let (maj, min) = (maj.trim().parse::<u32>(), min.trim().parse::<u32>());
                    match (maj, min) {
                        (Ok(a), Ok(b)) => blkparse::device_number(a, b),
                        _ => None,
                    }
                }
                _ => d.parse::<u32>().ok(),
            };
            Devices::Only(n.ok_or_else(|| CliError::Usage(format!("--trace-device `{d}` is not a device number")))?)
        }
        (None, true) => Devices::Merge,
        (None, false) => Devices::Single,
    };
    let options = ParseOptions {
        blkparse_events: match args.blkparse_events.as_deref() {
            Some("issue") => blkparse::Events::Issue,
            _ => blkparse::Events::Queue,
        },
    };
    let queue_depth = match (args.queue_depth, args.as_fast_as_possible) {
        (Some(q), _) => q,
        (None, true) => 32,
        (None, false) => 0,
    };
    let opts = BlockReplayOptions {
        as_fast_as_possible: args.as_fast_as_possible,
        queue_depth,
        precondition_pct: args.precondition.unwrap_or(0),
        age_pct: args.age.unwrap_or(0),
        age_seed: args.seed,
    };
    let file = std::fs::File::open(&args.file).map_err(|e| CliError::Usage(format!("cannot open {}: {e}", args.file.display())))?;
    let reader = read_requests_with(format, BufReader::with_capacity(1 << 20, file), options).numbered();
    let (mut dev, what) = ram_device(&args.device, &args.data)?;
    let info = dev.info();
    let mut map = AddressMap::new(info.page_size, info.logical_pages as u64)
        .with_overflow(if args.wrap { Overflow::Wrap } else { Overflow::Refuse })
        .with_devices(devices);
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new_spinner()
    };
    bar.set_style(ProgressStyle::with_template("{spinner} replay {pos} requests ({per_sec})").map_err(CliError::failed)?);
    let r = replay_block(&mut *dev, reader, &mut map, opts, &mut |n| bar.set_position(n)).map_err(|e| match e {
        txftl_host::block_replay::BlockReplayError::Trace(t) => CliError::Usage(format!("{}: {t}", args.file.display())),
        e => CliError::Failed(format!("{}: {e}", args.file.display())),
    })?;
    bar.finish_and_clear();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&r).map_err(CliError::failed)?);
    } else {
        print_block(&what, &args, &r);
    }
    Ok(ExitCode::SUCCESS)
}

fn print_block(what: &str, args: &ReplayArgs, r: &BlockReplayReport) {
    wrapln!("device: {what}");
    let o = &r.options;
    let how = match (o.as_fast_as_possible, o.queue_depth) {
        (true, q) => format!("as fast as possible, queue depth {q}"),
        (false, 0) => "open loop at the trace's arrival times".to_string(),
        (false, q) => format!("open loop at the trace's arrival times, queue depth {q}"),
    };
    let mut t = Figures::new(&format!("txftl trace replay: {} | {} trace, {how}", r.protocol, args.format));
    t.section("trace");
    t.row("file", args.file.display());
    let c = &r.counts;
    t.row("requests: reads / writes", pair(c.reads, c.writes));
    t.row("requests: trims / flushes", pair(c.trims, c.flushes));
    t.row(
        "MiB read / written",
        format!("{:.1} / {:.1}", c.bytes_read as f64 / 1048576.0, c.bytes_written as f64 / 1048576.0),
    );
    t.row(
        "page reads / writes / trims sent",
        format!(
            "{} / {} / {}",
            thousands(c.page_reads),
            thousands(c.page_writes),
            thousands(c.page_trims)
        ),
    );
    t.row(
        "partial pages: read-modify-write reads / trims skipped",
        pair(c.rmw_reads, c.partial_trim_pages_skipped),
    );
    t.row("requests wrapped / of other devices dropped", pair(c.wrapped, c.other_device));
    if c.reordered > 0 {
        t.row("requests arriving before the previous submission", thousands(c.reordered));
    }
    if o.precondition_pct > 0 {
        t.row(
            &format!("precondition: {}% written sequentially (page writes)", o.precondition_pct),
            thousands(r.precondition.host_writes),
        );
    }
    if o.age_pct > 0 {
        t.row(
            &format!(
                "  then {}% of the logical pages overwritten at random (seed {})",
                o.age_pct, o.age_seed
            ),
            "",
        );
    }
    add_counters(&mut t, &r.measured);
    t.section("derived (simulated)");
    t.row("write amplification", format!("{:.3}", r.write_amplification));
    t.row("simulated time", sim_time(r.measured.sim_time_ns));
    t.row("requests per simulated second", format!("{:.0}", r.throughput_per_sim_s));
    add_latency(&mut t, &r.latency);
    add_speed(&mut t, r.wall_seconds, r.requests_per_wall_second, r.flash_ops_per_wall_second);
    t.print();
}

/// A fresh device in RAM for a replay.
fn ram_device(device: &DeviceArgs, data: &str) -> Result<(Box<dyn AnyDevice>, String), CliError> {
    let (d, opts) = resolve_with_protocol(device, crate::setup::full_preset_for(&[device.protocol()]))?;
    let mode = if data == "full" { DataMode::Full } else { DataMode::MetaOnly };
    crate::open::check_device_fits(device.protocol(), &nand_config(&d.preset, mode), &d.ftl, &opts, 0)?;
    let nand = ram(nand_config(&d.preset, mode))?;
    let dev = txftl_protocols::format(device.protocol(), nand, d.ftl.clone(), &opts).map_err(crate::open::device_error)?;
    Ok((dev, format!("{} in RAM, {data} data", describe(&d.preset))))
}

fn replay_cmd(args: ReplayArgs) -> Result<ExitCode, CliError> {
    refuse(
        &[
            ("--as-fast-as-possible", args.as_fast_as_possible),
            ("--queue-depth", args.queue_depth.is_some()),
            ("--precondition", args.precondition.is_some()),
            ("--age", args.age.is_some()),
            ("--wrap", args.wrap),
            ("--trace-device", args.trace_device.is_some()),
            ("--merge-devices", args.merge_devices),
            ("--blkparse-events", args.blkparse_events.is_some()),
        ],
        "txftl (closed-loop clients: use --clients)",
    )?;
    let host = args.host.options()?;
    let iso_name = args.isolation.as_deref().unwrap_or("strict");
    let isolation = Isolation::parse(iso_name).ok_or_else(|| CliError::Usage(format!("unknown isolation level `{iso_name}`")))?;
    let file = std::fs::File::open(&args.file).map_err(|e| CliError::Usage(format!("cannot open {}: {e}", args.file.display())))?;
    let trace = read_trace(BufReader::new(file)).map_err(|e| CliError::Usage(format!("{}: {e}", args.file.display())))?;
    let record = args.record.as_deref().map(record_file).transpose()?;
    let (mut dev, what) = ram_device(&args.device, &args.data)?;
    let opts = ReplayOptions {
        clients: host.clients,
        think_ns: host.think_ns,
        isolation,
        abort_pct: args.abort_pct.unwrap_or(0),
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
        e @ txftl_host::replay::ReplayError::Isolation(_) => CliError::Usage(e.to_string()),
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
    wrapln!("device: {what}");
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
    add_speed(&mut t, r.wall_seconds, r.requests_per_wall_second, r.flash_ops_per_wall_second);
    t.print();
}
