//! `txftl filebench`: Filebench's fileserver and webserver personalities on
//! the file system (`txftl_host::filebench`), on any protocol: journaled on
//! a device without transactions, transactional on one, where an fsync is
//! one device transaction (`--fsync one-tx`, the default: one SWRITE on
//! `mobius`) or data then metadata (`--fsync ordered`).

use crate::cmd_run::add_counters;
use crate::open::ram;
use crate::setup::{describe, nand_config, protocol_options_for, resolve_device};
use crate::table::{pair, sim_time, thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use txftl_fs::{Fs, FsMode, FsStats, FsyncPolicy};
use txftl_ftl::DeviceStats;
use txftl_host::filebench::{Bench, Personality, Report, Spec};
use txftl_host::per_second;
use txftl_host::record::Recorder;
use txftl_nand::DataMode;
use txftl_reproduce::wrapln;

#[derive(Args, Debug)]
pub struct FilebenchArgs {
    /// The personality: fileserver (create, write whole, append, read whole,
    /// delete, stat) or webserver (ten whole-file reads and a log append a loop).
    #[arg(value_parser = ["fileserver", "webserver"])]
    pub personality: String,
    #[command(flatten)]
    pub device: DeviceArgs,
    /// How an fsync reaches a transactional device: one-tx (the file's pages
    /// and the metadata naming them in one device transaction) or ordered
    /// (the pages as plain writes, then the metadata in a transaction)
    /// [default: one-tx; refused on a device without transactions, where the
    /// file system journals its metadata].
    #[arg(long, value_parser = ["one-tx", "ordered"])]
    pub fsync: Option<String>,
    /// Files of the file set [default: fileserver 2,000 (Filebench's 10,000
    /// need 1.25 GB), webserver 1,000 (Filebench's)].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub nfiles: Option<u32>,
    /// Entries per directory [default: 20, Filebench's].
    #[arg(long, value_parser = clap::value_parser!(u32).range(2..))]
    pub meandirwidth: Option<u32>,
    /// Mean file size in bytes, gamma-distributed with shape 1.5 [default:
    /// fileserver 131072, webserver 16384, Filebench's].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub filesize: Option<u64>,
    /// Appends are 1 to this many bytes [default: 16384, Filebench's].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub meanappendsize: Option<u64>,
    /// Iterations of the personality's flowop list.
    #[arg(long, default_value_t = 2000, value_parser = clap::value_parser!(u64).range(1..))]
    pub loops: u64,
    /// Record what the file system sent to the device during the run (not the
    /// file sets' preallocation), as a txftl trace (docs/traces.md).
    #[arg(long)]
    pub record: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

#[derive(Serialize)]
struct Out {
    protocol: String,
    device: String,
    fs_mode: FsMode,
    fsync: Option<FsyncPolicy>,
    spec: Spec,
    report: Report,
    /// Filebench flowops per simulated second.
    ops_per_sim_s: f64,
    /// Device transactions committed per simulated second.
    transactions_per_sim_s: f64,
    host: FsStats,
    measured: DeviceStats,
    prepare_wall_seconds: f64,
    run_wall_seconds: f64,
}

fn spec_of(args: &FilebenchArgs) -> Result<Spec, CliError> {
    let p = Personality::parse(&args.personality).ok_or_else(|| CliError::Usage(format!("unknown personality `{}`", args.personality)))?;
    let base = Spec::of(p);
    let spec = Spec {
        nfiles: args.nfiles.unwrap_or(match p {
            Personality::Fileserver => 2_000,
            Personality::Webserver => base.nfiles,
        }),
        meandirwidth: args.meandirwidth.unwrap_or(base.meandirwidth),
        filesize_mean: args.filesize.unwrap_or(base.filesize_mean),
        meanappendsize: args.meanappendsize.unwrap_or(base.meanappendsize),
        loops: args.loops,
        seed: args.seed,
        ..base
    };
    spec.validate().map_err(CliError::Usage)?;
    Ok(spec)
}

/// The file system on a fresh device in RAM (full data), recording if asked.
fn file_system(args: &FilebenchArgs, on: &Arc<AtomicBool>) -> Result<(Fs, String, String), CliError> {
    let protocol = args.device.protocol.clone().unwrap_or_else(|| "plain".into());
    let d = resolve_device(&args.device, crate::setup::full_preset_for(&[&protocol]))?;
    let opts = protocol_options_for(&args.device, &[&protocol])?;
    crate::setup::check_protocol_config(&protocol, &d.ftl, &d.preset.geometry, &opts)?;
    let cfg = nand_config(&d.preset, DataMode::Full);
    crate::open::check_device_fits(&protocol, &cfg, &d.ftl, &opts, 0)?;
    let mut dev = txftl_protocols::format(&protocol, ram(cfg)?, d.ftl, &opts).map_err(crate::open::device_error)?;
    if let Some(path) = &args.record {
        dev = Recorder::wrap(dev, crate::cmd_run::record_file(path)?, on.clone());
    }
    let (mode, policy) = match (dev.transactional(), args.fsync.as_deref()) {
        (false, Some(f)) => {
            return Err(CliError::Usage(format!(
                "--fsync {f}: `{protocol}` has no transactions (the file system journals its metadata there)"
            )))
        }
        (false, None) => (FsMode::Journaled, None),
        (true, Some("ordered")) => (FsMode::Transactional, Some(FsyncPolicy::Ordered)),
        (true, _) => (FsMode::Transactional, Some(FsyncPolicy::OneTransaction)),
    };
    let mut fs = Fs::format(dev, mode).map_err(|e| CliError::Failed(format!("formatting the file system: {e}")))?;
    if let Some(p) = policy {
        fs.set_fsync_policy(p).map_err(CliError::failed)?;
    }
    Ok((fs, protocol, format!("{} in RAM, full data", describe(&d.preset))))
}

pub fn run(args: FilebenchArgs) -> Result<ExitCode, CliError> {
    let spec = spec_of(&args)?;
    let on = Arc::new(AtomicBool::new(false));
    let (mut fs, protocol, device) = file_system(&args, &on)?;
    let failed = |what: &str| {
        let what = what.to_string();
        move |e: txftl_host::filebench::FilebenchError| CliError::Failed(format!("{what}: {e}"))
    };
    let t0 = std::time::Instant::now();
    let mut bench = Bench::prepare(&mut fs, &spec).map_err(failed("preparing the file sets"))?;
    let prepare_wall = t0.elapsed().as_secs_f64();
    fs.reset_stats();
    fs.device_mut().reset_stats();
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(spec.loops)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:40}] {pos}/{len} loops ({per_sec}, eta {eta})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    bar.set_message(format!("{} on {protocol}", spec.personality.name()));
    on.store(true, Ordering::Relaxed);
    let t1 = std::time::Instant::now();
    let report = bench
        .run(&mut fs, &mut |i| {
            if i.is_multiple_of(16) {
                bar.set_position(i)
            }
        })
        .map_err(failed("running"))?;
    let run_wall = t1.elapsed().as_secs_f64();
    on.store(false, Ordering::Relaxed);
    bar.finish_and_clear();
    let (host, measured) = (fs.stats(), fs.device().stats());
    fs.check()
        .map_err(|e| CliError::Failed(format!("the file system after the run: {e}")))?;
    let (fs_mode, fsync) = (fs.mode(), (fs.mode() == FsMode::Transactional).then(|| fs.fsync_policy()));
    if args.record.is_some() {
        fs.unmount()
            .map_err(|e| CliError::Failed(format!("unmounting the file system: {e}")))?
            .close()
            .map_err(|e| CliError::Failed(format!("closing the device: {e}")))?;
    }
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let out = Out {
        protocol,
        device,
        fs_mode,
        fsync,
        spec,
        ops_per_sim_s: per_second(report.flowops, sim_s),
        transactions_per_sim_s: per_second(host.tx_commits, sim_s),
        report,
        host,
        measured,
        prepare_wall_seconds: prepare_wall,
        run_wall_seconds: run_wall,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        print(&out, args.record.as_deref());
    }
    Ok(ExitCode::SUCCESS)
}

fn print(o: &Out, record: Option<&std::path::Path>) {
    wrapln!("device: {}", o.device);
    let s = &o.spec;
    let mut t = Figures::new(&format!(
        "txftl filebench {}: {} | {:?} file system{} | {} files of {} B mean in directories of {}, {} loops, seed {}",
        s.personality.name(),
        o.protocol,
        o.fs_mode,
        o.fsync.map_or(String::new(), |f| format!(", fsync {f:?}")),
        thousands(s.nfiles as u64),
        thousands(s.filesize_mean),
        s.meandirwidth,
        thousands(s.loops),
        s.seed
    ));
    t.section("Filebench");
    t.row("flowops", thousands(o.report.flowops));
    for (op, n) in &o.report.by_flowop {
        t.row(&format!("  {op}"), thousands(*n));
    }
    t.row("fsyncs", thousands(o.report.fsyncs));
    t.row("bytes written / read", pair(o.report.bytes_written, o.report.bytes_read));
    t.row("files at the end", thousands(o.report.files));
    t.section("file system (simulated)");
    t.row(
        "file page writes / metadata page writes",
        pair(o.host.other_page_writes, o.host.metadata_page_writes),
    );
    t.row(
        "device commits / ordered fallbacks",
        pair(o.host.tx_commits, o.host.one_tx_fallbacks),
    );
    t.row("device flushes / page reads", pair(o.host.flushes, o.host.page_reads));
    add_counters(&mut t, &o.measured);
    t.section("derived (simulated)");
    t.row("simulated time", sim_time(o.measured.sim_time_ns));
    t.row("Filebench ops per simulated second", format!("{:.1}", o.ops_per_sim_s));
    t.row(
        "device transactions per simulated second",
        format!("{:.1}", o.transactions_per_sim_s),
    );
    if let Some(p) = record {
        t.row("trace recorded (the run, not the preallocation)", p.display());
    }
    t.section("emulator (wall clock)");
    t.row(
        "prepare / run wall time",
        format!("{:.1} s / {:.1} s", o.prepare_wall_seconds, o.run_wall_seconds),
    );
    t.print();
}
