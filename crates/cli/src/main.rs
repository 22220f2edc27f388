//! `txftl`: run workloads on an emulated transactional SSD, enumerate crash
//! points, and manage device images.
//!
//! Exit codes: 0 success; 1 the run failed or found violations; 2 bad arguments.

mod cmd_calibrate;
mod cmd_compare;
mod cmd_compare_workload;
mod cmd_crash;
mod cmd_filebench;
mod cmd_image;
mod cmd_nbd;
mod cmd_protocols;
mod cmd_run;
mod cmd_sql;
mod cmd_sqlcrash;
mod cmd_trace;
mod device_file;
mod open;
mod reproduce;
mod setup;
mod sweep;
mod table;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

/// mimalloc: see the workspace manifest for why.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Parser)]
#[command(
    name = "txftl",
    version,
    about = "A transactional SSD in software: NAND model, FTL protocols, crash harness"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a block-level workload and print the device counters.
    Run(cmd_run::RunArgs),
    /// Cut power at every flash operation of a workload, recover, check the contract.
    Crashtest(cmd_crash::CrashArgs),
    /// Real SQLite on the device: the X-FTL paper's synthetic workload in every
    /// journal mode on identical devices (Table 1, Figure 5, Table 5).
    Compare(cmd_compare::CompareArgs),
    /// Rerun a paper's evaluation and put its figures beside ours, with the
    /// checks (see docs/reproduce/README.md).
    Reproduce(reproduce::ReproduceArgs),
    /// Measure the host model's prices on this machine (SQLite's cost per
    /// statement and per VM operation, a system call, a KiB copied) and
    /// print them as a TOML host profile for `reproduce --host-profile`.
    CalibrateHost(cmd_calibrate::CalibrateArgs),
    /// End-to-end crash test: real SQLite on each mode, power cut at every flash
    /// operation of a scenario (with a cache spill and a ROLLBACK), restart, check.
    Sqlcrash(cmd_sqlcrash::SqlCrashArgs),
    /// Block traces: replay txftl traces (recorded with `run --record`) with
    /// concurrent clients and an isolation level.
    #[command(subcommand)]
    Trace(cmd_trace::TraceCommand),
    /// Database workloads on real SQLite through the VFS in one journal mode
    /// (TPC-C), with tpmC, pages written per transaction type and latency.
    #[command(subcommand)]
    Sql(cmd_sql::SqlCommand),
    /// Filebench's fileserver and webserver personalities on the file system
    /// (journaled, or one device transaction per fsync on a transactional
    /// protocol): flowops per simulated second and the device's counters.
    Filebench(cmd_filebench::FilebenchArgs),
    /// The device as a Network Block Device export (fio, qemu, nbdcopy, a
    /// file system through nbdfuse), with power cuts on command.
    #[command(subcommand)]
    Nbd(cmd_nbd::NbdCommand),
    /// A grid of protocols x parameters x seeds, each cell one txftl command,
    /// on every core: resumable results, a CSV and an HTML page.
    Sweep(sweep::SweepArgs),
    /// What each protocol offers: device calls, isolation levels, options
    /// (--protocol-opt), counters, SQLite modes, canary.
    Protocols {
        #[arg(long)]
        json: bool,
    },
    /// List the device presets, or print one as a device file for --config.
    Presets {
        #[arg(long, conflicts_with = "toml")]
        json: bool,
        /// Print this preset as a TOML device file (loads back with --config
        /// FILE to the identical device).
        #[arg(long, value_name = "NAME", value_parser = setup::preset_parser())]
        toml: Option<String>,
    },
    /// Create and format a device image file.
    Format(cmd_image::FormatArgs),
    /// Write a file's bytes to consecutive logical pages of an image.
    Put(cmd_image::PutArgs),
    /// Read logical pages of an image to a file or standard output.
    Get(cmd_image::GetArgs),
    /// Mount an image (through recovery) and describe it.
    Info {
        #[arg(long)]
        image: PathBuf,
        /// The image's protocol [default: the one the image was formatted for;
        /// another is refused].
        #[arg(long, value_parser = setup::protocol_parser())]
        protocol: Option<String>,
        #[arg(long)]
        json: bool,
    },
}

/// Device options shared by the commands that build a device.
///
/// The device comes from a preset (`--preset`, or the command's default), a
/// TOML device file (`--config`) or MQSim's `ssdconfig.xml` (`--mqsim-config`),
/// one of the three; the other flags override what it sets.
#[derive(Args, Clone, Debug)]
pub struct DeviceArgs {
    /// Device preset.
    #[arg(long, value_parser = setup::preset_parser())]
    pub preset: Option<String>,
    /// Device file (TOML): geometry, timing, endurance and FTL options, as
    /// `txftl presets --toml NAME` prints them. Flags given beside it override it.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["preset", "mqsim_config"])]
    pub config: Option<PathBuf>,
    /// MQSim's ssdconfig.xml: its device, imported (the fields with no
    /// counterpart are listed on standard error). Flags given beside it override it.
    #[arg(long, value_name = "FILE", conflicts_with = "preset")]
    pub mqsim_config: Option<PathBuf>,
    /// Commit protocol (FTL) [default: plain]; `txftl protocols` describes each.
    #[arg(long, value_parser = setup::protocol_parser())]
    pub protocol: Option<String>,
    /// Scale the capacity: blocks per plane (overrides the preset's or file's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub blocks_per_plane: Option<u32>,
    /// Erase cycles a block survives (overrides the preset's or file's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub endurance: Option<u32>,
    /// Over-provisioning, percent of the data blocks hidden from the host
    /// (default: the file's, else 10, or the geometry's minimum for GC if
    /// larger; a value below that minimum is refused).
    // An `Option` so that an explicit value on an existing image (fixed when it
    // was formatted) can be refused.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..100))]
    pub overprovision: Option<u32>,
    /// GC victim selection [default: the file's, else greedy].
    #[arg(long, value_parser = ["greedy", "cost-benefit"])]
    pub gc: Option<String>,
    /// Static wear leveling moves the coldest block's data when the erase-count
    /// spread exceeds this [default: the file's, else 64].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub wear_spread_max: Option<u32>,
    /// Mapping checkpoint every N page programs [default: the file's, else 0:
    /// the FTL's default].
    #[arg(long)]
    pub checkpoint_every: Option<u64>,
    /// Blocks per checkpoint ring stripe, each on its own die, so a
    /// checkpoint's pages program in parallel [default: 0, the most dies up
    /// to 8 that keep the ring within 1/32 of the blocks]. Fixed at format.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=64))]
    pub checkpoint_stripe: Option<u32>,
    /// A protocol option, KEY=VALUE (repeatable): each protocol lists its
    /// own in `txftl protocols`. An option the protocol does not take is refused.
    #[arg(long = "protocol-opt", value_name = "KEY=VALUE")]
    pub protocol_opt: Vec<String>,
    /// Write the FTL's mapping table (a checkpoint of the table pages that
    /// changed) at every flush that follows programs, as the X-FTL paper's
    /// OpenSSD firmware does at a write barrier (its sec. 6.3.4); off, a flush
    /// is made durable by roll-forward over the pages' spare areas
    /// [default: on for `compare` and `reproduce xftl`, which model that
    /// board; off elsewhere].
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    pub map_at_flush: Option<String>,
}

/// Flash faults: bit errors growing with wear and retention, ECC with a
/// correction limit, read retry, program and erase failures (see docs/testing.md,
/// "Flash faults"). Off unless `--faults` names a profile.
#[derive(Args, Clone, Debug)]
pub struct FaultArgs {
    /// Fault model profile: typical (MLC-class rates) or stress (rates raised
    /// so small runs meet every kind of fault). Default: no faults.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(txftl_nand::FAULT_PROFILES))]
    pub faults: Option<String>,
    /// Seed of the fault model's draws (which pages carry how many errors,
    /// which programs and erases fail). Needs --faults.
    #[arg(long)]
    pub fault_seed: Option<u64>,
    /// Days the data sat unpowered before the run (raises the bit-error rate
    /// of every page). Needs --faults.
    #[arg(long)]
    pub retention_days: Option<f64>,
}

impl FaultArgs {
    /// The model asked for; options that need `--faults` are refused without it.
    pub fn model(&self) -> Result<Option<txftl_nand::FaultModel>, CliError> {
        let Some(name) = &self.faults else {
            if self.fault_seed.is_some() || self.retention_days.is_some() {
                return Err(CliError::Usage("--fault-seed and --retention-days need --faults".into()));
            }
            return Ok(None);
        };
        let mut m = txftl_nand::FaultModel::profile(name, self.fault_seed.unwrap_or(1))
            .ok_or_else(|| CliError::Usage(format!("unknown fault profile {name}")))?;
        if let Some(d) = self.retention_days {
            m.retention_days = d;
        }
        m.validate().map_err(|e| CliError::Usage(format!("fault model: {e}")))?;
        Ok(Some(m))
    }

    /// The options as given, for a command line that reproduces a run.
    pub fn replay(&self) -> String {
        let mut s = String::new();
        if let Some(f) = &self.faults {
            s += &format!(" --faults {f}");
        }
        if let Some(x) = self.fault_seed {
            s += &format!(" --fault-seed {x}");
        }
        if let Some(d) = self.retention_days {
            s += &format!(" --retention-days {d}");
        }
        s
    }
}

impl DeviceArgs {
    /// The protocol named, or the default. (An `Option` so that commands
    /// whose protocol is chosen otherwise can refuse an explicit `--protocol`.)
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or(txftl_protocols::DEFAULT_PROTOCOL)
    }

    /// `--map-at-flush` as given: Some(true) for on, Some(false) for off.
    pub fn map_at_flush(&self) -> Option<bool> {
        self.map_at_flush.as_deref().map(|v| v == "on")
    }
}

/// Shape of the `txwrite` workload. Every option is refused with another
/// workload (it would be ignored); unset ones take the command's defaults.
#[derive(Args, Clone, Debug)]
pub struct TxArgs {
    /// Page writes per transaction [default: 5].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub pages_per_tx: Option<u32>,
    /// Share of transactions that abort, 0.0 to 1.0 [default: 0.1].
    #[arg(long)]
    pub abort_ratio: Option<f64>,
    /// Transactions open at once, at most [default: 1 on run, 2 on
    /// crashtest, 1 on a protocol that runs one at a time].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: Option<u32>,
    /// Percent of operations that are non-transactional writes mixed in
    /// [default: 0 on run, 10 on crashtest].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub nontx_pct: Option<u32>,
    /// Percent of operations that are trims mixed in [default: 0 on run, 5 on crashtest].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub trim_pct: Option<u32>,
    /// Run exactly this many transactions (overrides --ops).
    #[arg(long)]
    pub txs: Option<u64>,
    /// Percent of transactional writes that go to a page another open
    /// transaction wrote (needs --concurrency above 1) [default: 0].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub cross_tx_pct: Option<u32>,
    /// Writes outside transactions and trims only while no transaction is
    /// open (Möbius's dynamic transactions, `--protocol-opt dynamic-pct=N`,
    /// take no other write while open).
    #[arg(long)]
    pub tx_exclusive: bool,
    /// A committing transaction's last write goes end-flagged (NoLgn's
    /// `write_end`: the commit then programs nothing); a protocol without
    /// end-flagged writes refuses it.
    #[arg(long)]
    pub tx_end_flag: bool,
    /// Transactions go through Möbius's own calls, DYNAMIC_PCT percent of
    /// them dynamic (dwrite: HEAD, BODY..., REAR), the rest static (pages
    /// staged, then one swrite, S-SWRITE or A-SWRITE half and half); a
    /// protocol without static and dynamic transactions refuses it.
    #[arg(long, value_name = "DYNAMIC_PCT", value_parser = clap::value_parser!(u32).range(0..=100))]
    pub tx_static_dynamic: Option<u32>,
}

/// A command's defaults for the transactional mix: `run` measures one
/// transaction at a time; `crashtest` defaults to what shakes out the most
/// bugs (two transactions open, plain writes and trims mixed in).
#[derive(Clone, Copy, Debug)]
pub struct TxDefaults {
    pub concurrency: u32,
    pub nontx_pct: u32,
    pub trim_pct: u32,
    /// The extension calls the protocol offers (`--tx-end-flag`,
    /// `--tx-static-dynamic` need theirs); None with no protocol known yet:
    /// the device's own refusal stands.
    pub extensions: Option<&'static [txftl_ftl::Extension]>,
}

impl TxDefaults {
    pub const RUN: TxDefaults = TxDefaults {
        concurrency: 1,
        nontx_pct: 0,
        trim_pct: 0,
        extensions: None,
    };
    pub const CRASH: TxDefaults = TxDefaults {
        concurrency: 2,
        nontx_pct: 10,
        trim_pct: 5,
        extensions: None,
    };
}

impl TxDefaults {
    /// The defaults for `protocol`: no trims mixed in on a protocol that
    /// takes none, one transaction open at a time on a protocol that runs
    /// them one at a time (strict isolation only: Atomic-Write), which
    /// would refuse a second.
    pub fn for_protocol(self, protocol: &txftl_protocols::ProtocolEntry) -> TxDefaults {
        let one_at_a_time = protocol.isolation.iter().all(|&level| level == "strict");
        TxDefaults {
            trim_pct: if protocol.trims { self.trim_pct } else { 0 },
            concurrency: if one_at_a_time { 1 } else { self.concurrency },
            extensions: Some(protocol.extensions),
            ..self
        }
    }
}

impl TxArgs {
    /// The options given, by flag name.
    fn given(&self) -> Vec<&'static str> {
        [
            ("--pages-per-tx", self.pages_per_tx.is_some()),
            ("--abort-ratio", self.abort_ratio.is_some()),
            ("--concurrency", self.concurrency.is_some()),
            ("--nontx-pct", self.nontx_pct.is_some()),
            ("--trim-pct", self.trim_pct.is_some()),
            ("--txs", self.txs.is_some()),
            ("--cross-tx-pct", self.cross_tx_pct.is_some()),
            ("--tx-exclusive", self.tx_exclusive),
            ("--tx-end-flag", self.tx_end_flag),
            ("--tx-static-dynamic", self.tx_static_dynamic.is_some()),
        ]
        .into_iter()
        .filter_map(|(name, set)| set.then_some(name))
        .collect()
    }

    /// The shape for `workload`: refused options of another workload.
    pub fn shape(&self, workload: txftl_harness::WorkloadKind, d: TxDefaults) -> Result<txftl_harness::TxShape, CliError> {
        let given = self.given();
        if workload != txftl_harness::WorkloadKind::TxWrite && !given.is_empty() {
            return Err(CliError::Usage(format!(
                "{} only apply to --workload txwrite, not {}",
                given.join(", "),
                workload.name()
            )));
        }
        let abort_ratio = self.abort_ratio.unwrap_or(0.1);
        if !(0.0..=1.0).contains(&abort_ratio) {
            return Err(CliError::Usage(format!("--abort-ratio {abort_ratio} is not between 0 and 1")));
        }
        let (nontx_pct, trim_pct) = (self.nontx_pct.unwrap_or(d.nontx_pct), self.trim_pct.unwrap_or(d.trim_pct));
        if nontx_pct + trim_pct > 100 {
            return Err(CliError::Usage(format!(
                "--nontx-pct {nontx_pct} and --trim-pct {trim_pct} add up to more than 100"
            )));
        }
        use txftl_ftl::Extension;
        let lacks = |ext: Extension| d.extensions.is_some_and(|offered| !offered.contains(&ext));
        if self.tx_end_flag && lacks(Extension::TxEnd) {
            return Err(CliError::Usage(
                "--tx-end-flag needs a protocol with end-flagged transactional writes (write_end), such as nolgn".into(),
            ));
        }
        if self.tx_static_dynamic.is_some() && (lacks(Extension::StaticTx) || lacks(Extension::DynamicTx)) {
            return Err(CliError::Usage(
                "--tx-static-dynamic needs a protocol with static and dynamic transactions (swrite, dwrite), such as mobius".into(),
            ));
        }
        if self.tx_static_dynamic.is_some() && self.tx_end_flag {
            return Err(CliError::Usage(
                "--tx-static-dynamic and --tx-end-flag choose two ways to issue transactions: give one".into(),
            ));
        }
        let concurrency = self.concurrency.unwrap_or(d.concurrency);
        if self.cross_tx_pct.is_some_and(|p| p > 0) && concurrency < 2 {
            return Err(CliError::Usage(
                "--cross-tx-pct needs --concurrency 2 or more: with one transaction open there is no other to share pages with".into(),
            ));
        }
        Ok(txftl_harness::TxShape {
            pages_per_tx: self.pages_per_tx.unwrap_or(5),
            abort_pct: (abort_ratio * 100.0).round() as u32,
            concurrency,
            nontx_pct,
            trim_pct,
            transactions: self.txs.unwrap_or(0),
            cross_pct: self.cross_tx_pct.unwrap_or(0),
            exclusive: self.tx_exclusive,
            end_flag: self.tx_end_flag,
            static_dynamic: self.tx_static_dynamic,
        })
    }
}

/// A command failure: bad usage (exit 2) or a failed run (exit 1).
#[derive(Debug)]
pub enum CliError {
    Usage(String),
    Failed(String),
}

impl CliError {
    pub fn failed(e: impl std::fmt::Display) -> CliError {
        CliError::Failed(e.to_string())
    }
}

/// The cores the OS gives this process (1 if it cannot tell): the default
/// worker count of commands whose workers are independent (crashtest, sweep).
pub fn every_core() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// A closed pipe ends the program quietly, as it does `cat` (`txftl run | head`):
/// Rust ignores SIGPIPE, so every later `println!` would panic instead.
fn restore_sigpipe() {
    #[cfg(unix)]
    // SAFETY: setting a signal's disposition to the default, before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

fn main() -> ExitCode {
    restore_sigpipe();
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => cmd_run::run(args),
        Command::Crashtest(args) => cmd_crash::run(args),
        Command::Compare(args) => cmd_compare::run(args),
        Command::Reproduce(args) => reproduce::run(args),
        Command::Sqlcrash(args) => cmd_sqlcrash::run(args),
        Command::Trace(cmd) => cmd_trace::run(cmd),
        Command::Sql(cmd) => cmd_sql::run(cmd),
        Command::Filebench(args) => cmd_filebench::run(args),
        Command::Nbd(cmd) => cmd_nbd::run(cmd),
        Command::Sweep(args) => sweep::run(args),
        Command::CalibrateHost(args) => cmd_calibrate::run(args),
        Command::Protocols { json } => cmd_protocols::run(json),
        Command::Presets { json, toml } => match toml {
            Some(name) => setup::print_preset_toml(&name),
            None => setup::print_presets(json),
        },
        Command::Format(args) => cmd_image::format(args),
        Command::Put(args) => cmd_image::put(args),
        Command::Get(args) => cmd_image::get(args),
        Command::Info { image, protocol, json } => cmd_image::info(&image, protocol.as_deref(), json),
    };
    match result {
        Ok(code) => code,
        Err(CliError::Usage(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(2)
        }
        Err(CliError::Failed(msg)) => {
            eprintln!("error: {msg}");
            ExitCode::from(1)
        }
    }
}
