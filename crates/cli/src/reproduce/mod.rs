//! `txftl reproduce <paper>`: reruns a seed paper's evaluation on txftl and
//! puts the paper's figures beside ours, following ../shared/REPRODUCE.md:
//! a terminal table per figure or table of the paper, the checks table at
//! the end, `--json`, and `--html PATH` (a self-contained report with SVG
//! figures).
//!
//! `checks` (the check type and its summary) and `html` (figures, page) are
//! paper-independent; each paper has its own module (`xftl`, `lighttx`).

pub mod checks;
pub mod html;
pub mod lighttx;
pub mod xftl;

use crate::CliError;
use clap::Args;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ReproduceArgs {
    /// The paper: xftl (X-FTL, SIGMOD 2013), lighttx (LightTx, ICCD 2013).
    /// mobius, flagcommit and nolgn are not reproduced yet.
    #[arg(value_parser = ["xftl", "lighttx", "mobius", "flagcommit", "nolgn"])]
    pub paper: String,
    /// The same experiments, smaller, in under 60 wall seconds (release build).
    #[arg(long)]
    pub quick: bool,
    /// Print {"paper", "params", "figures", "checks"} as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write a self-contained HTML report (SVG figures) to this path.
    #[arg(long)]
    pub html: Option<PathBuf>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// The FTL writes its mapping table at every flush, as the paper's
    /// OpenSSD firmware does at a write barrier (its sec. 6.3.4); off:
    /// txftl's roll-forward FTL. Table 1 is also run once with the other
    /// setting, beside it.
    #[arg(long, value_name = "on|off", value_parser = ["on", "off"], default_value = "on")]
    pub map_at_flush: String,
    /// Tests only: every experiment at the smallest sizes that still run
    /// them (for debug builds), figures not meant to be read.
    #[arg(long, hide = true, conflicts_with = "quick")]
    pub tiny: bool,
}

pub fn run(args: ReproduceArgs) -> Result<ExitCode, CliError> {
    if args.paper != "xftl" && args.paper != "lighttx" {
        return Err(CliError::Usage(format!(
            "reproduce {}: not implemented yet (only xftl and lighttx are)",
            args.paper
        )));
    }
    if let Some(path) = &args.html {
        crate::cmd_compare::check_writable(path)?;
    }
    if args.paper == "lighttx" {
        return run_lighttx(args);
    }
    let wall = std::time::Instant::now();
    let mut params = xftl::Params::new(args.quick, args.seed);
    params.map_at_flush = args.map_at_flush == "on";
    if args.tiny {
        params.tiny();
    }
    let figures = xftl::run(&mut params, !args.json)?;
    let checks = xftl::checks(&params, &figures);
    let (checks, deviations) = xftl::explain(&params, &figures, checks);
    let report = xftl::Report {
        paper: "X-FTL: Transactional FTL for SQLite Databases (Kang, Lee, Moon, Oh, Min; SIGMOD 2013)".into(),
        params,
        figures,
        checks,
        deviations,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(CliError::failed)?);
    } else {
        xftl::print(&report);
        println!("wall time: {:.1} s", wall.elapsed().as_secs_f64());
    }
    if let Some(path) = &args.html {
        let page = xftl::html_page(&report)?;
        std::fs::write(path, page).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
        if !args.json {
            println!("HTML report: {}", path.display());
        }
    }
    // A run that broke SQLite's integrity or TPC-C's consistency is a failure, not a figure.
    let f = &report.figures;
    let broken = f.figure5.iter().flat_map(|x| &x.runs).any(|r| r.integrity != "ok")
        || f.table5.summary.iter().any(|s| !s.all_ok)
        || f.tpcc
            .iter()
            .flat_map(|m| &m.runs)
            .any(|r| r.integrity != "ok" || r.consistency.as_deref() != Some("ok"));
    Ok(if broken { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn run_lighttx(args: ReproduceArgs) -> Result<ExitCode, CliError> {
    let wall = std::time::Instant::now();
    let mut params = lighttx::Params::new(args.quick, args.seed);
    if args.tiny {
        params.tiny();
    }
    let figures = lighttx::run(&mut params, !args.json)?;
    let checks = lighttx::checks(&params, &figures);
    let (checks, deviations) = lighttx::explain(&params, &figures, checks);
    let report = lighttx::Report {
        paper: lighttx::PAPER.into(),
        params,
        figures,
        checks,
        deviations,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(CliError::failed)?);
    } else {
        lighttx::print(&report);
        println!("wall time: {:.1} s", wall.elapsed().as_secs_f64());
    }
    if let Some(path) = &args.html {
        let page = lighttx::html_page(&report)?;
        std::fs::write(path, page).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
        if !args.json {
            println!("HTML report: {}", path.display());
        }
    }
    // A TPC-C run that broke its consistency recorded a trace of a broken
    // database; a replay the device failed leaves a figure without its point.
    Ok(
        if report.figures.workload.consistency != "ok" || !report.figures.failed.is_empty() {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        },
    )
}
