//! `txftl reproduce <paper>`: reruns a seed paper's evaluation on txftl and
//! puts the paper's figures beside ours (docs/reproduce/README.md). The
//! reproductions are the `txftl-reproduce` library's; this command parses
//! the arguments, picks the paper, and maps the outcome to an exit code
//! (bad arguments 2, a failed run 1).

use crate::CliError;
use clap::builder::PossibleValuesParser;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;
use txftl_reproduce::flow::{self, Output};
use txftl_reproduce::Options;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// The paper (each is listed in docs/reproduce/).
    #[arg(value_parser = PossibleValuesParser::new(flow::paper_names()))]
    pub paper: String,
    /// The same experiments, smaller, in under 60 wall seconds (release build).
    #[arg(long)]
    pub quick: bool,
    /// Print {"paper", "params", "figures", "checks", "deviations", "summary"} as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a self-contained HTML report (SVG figures) to this path.
    #[arg(long)]
    pub html: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// xftl only: the FTL writes its mapping table at every flush, as the
    /// paper's OpenSSD firmware does at a write barrier (its sec. 6.3.4);
    /// off: txftl's roll-forward FTL. Table 1 is also run once with the
    /// other setting, beside it. [default: on]
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"])]
    pub map_at_flush: Option<String>,
    /// xftl only: the host model's prices, a TOML profile as `txftl
    /// calibrate-host` prints it [default: the built-in one,
    /// crates/reproduce/host-profile.toml].
    #[arg(long, value_name = "FILE")]
    pub host_profile: Option<PathBuf>,
    /// Tests only: every experiment at the smallest sizes that still run
    /// them (for debug builds), figures not meant to be read.
    #[arg(long, hide = true, conflicts_with = "quick")]
    pub tiny: bool,
}

impl From<txftl_reproduce::Error> for CliError {
    fn from(e: txftl_reproduce::Error) -> CliError {
        match e {
            txftl_reproduce::Error::Usage(m) => CliError::Usage(m),
            txftl_reproduce::Error::Failed(m) => CliError::Failed(m),
        }
    }
}

pub fn run(args: ReproduceArgs) -> Result<ExitCode, CliError> {
    let opts = Options {
        quick: args.quick,
        seed: args.seed,
        tiny: args.tiny,
        map_at_flush: args.map_at_flush.as_deref().map(|v| v == "on"),
        host_profile: args.host_profile,
    };
    let out = Output {
        json: args.json,
        html: args.html,
        show_progress: !args.json,
    };
    let outcome = flow::reproduce_named(&args.paper, &opts, &out)?;
    Ok(if outcome.failed { ExitCode::from(1) } else { ExitCode::SUCCESS })
}
