//! `txftl calibrate-host`: measures the host model's prices on this machine
//! (`txftl_sqlite::host_cost::calibrate`) and prints them as a TOML host
//! profile, the file `txftl reproduce --host-profile` reads and
//! `crates/reproduce/host-profile.toml` holds.

use crate::CliError;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct CalibrateArgs {
    /// Write the profile here instead of standard output.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
    /// Timed rounds of each measurement; each price is their median.
    #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u32).range(3..=1000))]
    pub rounds: u32,
}

/// This machine as the profile names it: CPU model, cores, kernel, build.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "an unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map_or_else(|_| std::env::consts::OS.to_string(), |k| format!("Linux {}", k.trim()));
    let build = if cfg!(debug_assertions) { "debug build" } else { "release build" };
    format!("{cpu}, {cores} cores, {kernel}, txftl {} {build}", env!("CARGO_PKG_VERSION"))
}

pub fn run(args: CalibrateArgs) -> Result<ExitCode, CliError> {
    let profile = txftl_sqlite::host_cost::calibrate(args.rounds as usize, &machine()).map_err(CliError::Failed)?;
    let text = format!(
        "# The host model's prices, ns (docs/reproduce/README.md, \"The host model\").\n{}",
        toml::to_string(&profile).map_err(|e| CliError::Failed(format!("host profile: {e}")))?
    );
    match &args.out {
        Some(path) => {
            std::fs::write(path, &text).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
            eprintln!("host profile written to {}", path.display());
        }
        None => print!("{text}"),
    }
    Ok(ExitCode::SUCCESS)
}
