//! `txftl`: run workloads on an emulated transactional SSD, enumerate crash
//! points, and manage device images.
//!
//! Exit codes: 0 success; 1 the run failed or found violations; 2 bad arguments.

mod cmd_compare;
mod cmd_crash;
mod cmd_image;
mod cmd_run;
mod durable;
mod open;
mod setup;
mod table;

use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

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
    /// End-to-end crash test: real SQLite on each mode, power cut at every flash
    /// operation of a scenario (with a cache spill and a ROLLBACK), restart, check.
    Sqlcrash(cmd_compare::SqlCrashArgs),
    /// List the device presets.
    Presets {
        #[arg(long)]
        json: bool,
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
        #[arg(long, default_value = "plain", value_parser = setup::protocol_parser())]
        protocol: String,
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        sync: open::SyncArgs,
    },
}

/// Device options shared by the commands that build a device.
#[derive(Args, Clone, Debug)]
pub struct DeviceArgs {
    /// Device preset.
    #[arg(long, value_parser = setup::preset_parser())]
    pub preset: Option<String>,
    /// Commit protocol (FTL) [default: plain].
    #[arg(long, value_parser = setup::protocol_parser())]
    pub protocol: Option<String>,
    /// Scale the capacity: blocks per plane (overrides the preset's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub blocks_per_plane: Option<u32>,
    /// Erase cycles a block survives (overrides the preset's).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub endurance: Option<u32>,
    /// Over-provisioning, percent of the data blocks hidden from the host
    /// (default: 10, or the geometry's minimum for GC if larger; a value below
    /// that minimum is refused).
    // An `Option` so that an explicit value on an existing image (fixed when it
    // was formatted) can be refused.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..100))]
    pub overprovision: Option<u32>,
    /// GC victim selection.
    #[arg(long, default_value = "greedy", value_parser = ["greedy", "cost-benefit"])]
    pub gc: String,
    /// Static wear leveling moves the coldest block's data when the erase-count
    /// spread exceeds this.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u32).range(1..))]
    pub wear_spread_max: u32,
    /// Mapping checkpoint every N page programs (0: the FTL's default).
    #[arg(long, default_value_t = 0)]
    pub checkpoint_every: u64,
    /// X-FTL: entries in the X-L2P table (the paper uses 500 or 1000).
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub xl2p_entries: u32,
}

impl DeviceArgs {
    /// Over-provisioning percent: the one given, or the default 10.
    /// The protocol named, or `plain`. (An `Option` so that commands whose
    /// protocol is chosen otherwise can refuse an explicit `--protocol`.)
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or("plain")
    }
}

/// Shape of the `txwrite` workload.
#[derive(Args, Clone, Debug)]
pub struct TxArgs {
    /// Page writes per transaction.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub pages_per_tx: u32,
    /// Share of transactions that abort, 0.0 to 1.0.
    #[arg(long, default_value_t = 0.1)]
    pub abort_ratio: f64,
    /// Transactions open at once, at most.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: u32,
    /// Percent of operations that are non-transactional writes mixed in.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub nontx_pct: u32,
    /// Percent of operations that are trims mixed in.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub trim_pct: u32,
    /// Run exactly this many transactions (txwrite; overrides --ops).
    #[arg(long, default_value_t = 0)]
    pub txs: u64,
}

impl TxArgs {
    pub fn shape(&self) -> Result<txftl_harness::TxShape, CliError> {
        if !(0.0..=1.0).contains(&self.abort_ratio) {
            return Err(CliError::Usage(format!(
                "--abort-ratio {} is not between 0 and 1",
                self.abort_ratio
            )));
        }
        if self.nontx_pct + self.trim_pct > 100 {
            return Err(CliError::Usage(format!(
                "--nontx-pct {} and --trim-pct {} add up to more than 100",
                self.nontx_pct, self.trim_pct
            )));
        }
        Ok(txftl_harness::TxShape {
            pages_per_tx: self.pages_per_tx,
            abort_pct: (self.abort_ratio * 100.0).round() as u32,
            concurrency: self.concurrency,
            nontx_pct: self.nontx_pct,
            trim_pct: self.trim_pct,
            transactions: self.txs,
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

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => cmd_run::run(args),
        Command::Crashtest(args) => cmd_crash::run(args),
        Command::Compare(args) => cmd_compare::run(args),
        Command::Sqlcrash(args) => cmd_compare::sqlcrash(args),
        Command::Presets { json } => setup::print_presets(json),
        Command::Format(args) => cmd_image::format(args),
        Command::Put(args) => cmd_image::put(args),
        Command::Get(args) => cmd_image::get(args),
        Command::Info {
            image,
            protocol,
            json,
            sync,
        } => cmd_image::info(&image, &protocol, json, sync.mode()),
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
