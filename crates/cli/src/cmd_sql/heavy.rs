//! `txftl sql heavy`: SQLite's heavy statements (`txftl_sqlite::heavy`) on
//! every SQLite mode, or those named, each on a fresh device in RAM (the
//! README's image by default: `jasmine` with 16 blocks per plane): a table
//! of mode x statement (completed, rows, integrity, wall seconds, or why
//! not), and JSON for scripts. Exits 1 if any statement failed.

use crate::cmd_compare::refuse_protocol;
use crate::open::ram;
use crate::setup::{nand_config, parse_modes, protocol_options_for, resolve_device};
use crate::table::fitted;
use crate::{CliError, DeviceArgs};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::process::ExitCode;
use txftl_nand::DataMode;
use txftl_protocols::PROTOCOLS;
use txftl_reproduce::wrapln;
use txftl_sqlite::heavy::{self, HeavySpec, Outcome, Statement};
use txftl_sqlite::{Mode, Stack};

#[derive(Args, Debug)]
pub struct HeavyArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Modes, comma-separated, or `all`: every SQLite mode of the registry.
    #[arg(long, default_value = "all")]
    pub modes: String,
    /// Rows of the table the statements work on (100 to 300 bytes each).
    #[arg(long, default_value_t = 100_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub rows: u32,
    /// Inserts of the one transaction into a table with three indexes.
    #[arg(long, default_value_t = 50_000, value_parser = clap::value_parser!(u32).range(1..))]
    pub insert_rows: u32,
    /// SQLite page size (SQLite's default, what a user gets).
    #[arg(long, default_value = "4096", value_parser = ["512", "1024", "2048", "4096", "8192", "16384", "32768", "65536"])]
    pub page_size: String,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(long)]
    pub json: bool,
}

/// One mode's run: its outcomes, or why it did not run.
#[derive(Serialize)]
struct ModeRun {
    mode: Mode,
    /// The database could not be opened or loaded (the mode refused, typed).
    refused: Option<String>,
    outcomes: Vec<Outcome>,
}

pub(super) fn run(args: HeavyArgs) -> Result<ExitCode, CliError> {
    refuse_protocol(&args.device)?;
    let modes = if args.modes == "all" {
        Mode::all(PROTOCOLS).collect()
    } else {
        parse_modes(&args.modes)?
    };
    let spec = HeavySpec {
        rows: args.rows,
        insert_rows: args.insert_rows,
        page_size: args.page_size.parse().expect("a listed page size"),
        seed: args.seed,
    };
    let bar = progress(args.json, (modes.len() * Statement::ALL.len()) as u64);
    let mut runs = Vec::new();
    for &mode in &modes {
        bar.set_message(mode.cli().to_string());
        let stack = stack(&args.device, mode)?;
        let r = heavy::run(&stack, &spec, |_| bar.inc(1));
        bar.set_position(bar.position().next_multiple_of(Statement::ALL.len() as u64));
        runs.push(match r {
            Ok(outcomes) => ModeRun {
                mode,
                refused: None,
                outcomes,
            },
            Err(e) => ModeRun {
                mode,
                refused: Some(format!("{e}{}", stack.last_error().map(|w| format!(" ({w})")).unwrap_or_default())),
                outcomes: Vec::new(),
            },
        });
    }
    bar.finish_and_clear();
    // A statement the device had no room for, the database intact after
    // it, is an outcome of the device's size; anything else that did not
    // complete whole fails the run.
    let outcomes = || runs.iter().flat_map(|r| &r.outcomes);
    let full = outcomes().filter(|o| o.full_intact()).count();
    let failed = outcomes().filter(|o| !o.ok() && !o.full_intact()).count()
        + runs.iter().filter(|r| r.refused.is_some()).count()
        + runs.iter().map(|r| Statement::ALL.len() - r.outcomes.len()).sum::<usize>();
    let done = outcomes().filter(|o| o.ok()).count();
    if args.json {
        let out = serde_json::json!({ "spec": spec, "device": device_line(&args.device, &modes)?, "modes": runs });
        println!("{}", serde_json::to_string_pretty(&out).map_err(CliError::failed)?);
    } else {
        print(&runs, &spec, &device_line(&args.device, &modes)?);
        wrapln!(
            "{done} completed; {full} refused for space (SQLITE_FULL, the database intact and unchanged); \
             {failed} failed or not run"
        );
    }
    match failed {
        0 => Ok(ExitCode::SUCCESS),
        n => Err(CliError::Failed(format!("{n} statements did not complete whole (see the table)"))),
    }
}

/// The README's image unless told otherwise (`heavy::device_preset`:
/// `jasmine`, 16 blocks per plane, or `flagcommit` of its size for a
/// protocol that needs SLC cells).
fn device_args(device: &DeviceArgs, protocol: &str) -> Result<crate::setup::DeviceChoice, CliError> {
    let needs = txftl_protocols::entry(protocol).map_err(crate::open::device_error)?.nand;
    let image = txftl_sqlite::heavy::device_preset(needs);
    let mut d = resolve_device(device, &image.name)?;
    if device.blocks_per_plane.is_none() && device.preset.is_none() && device.config.is_none() && device.mqsim_config.is_none() {
        d.preset.geometry.blocks_per_plane = image.geometry.blocks_per_plane;
    }
    Ok(d)
}

/// The device of each protocol the modes run on.
fn device_line(device: &DeviceArgs, modes: &[Mode]) -> Result<String, CliError> {
    let mut lines: Vec<String> = Vec::new();
    for m in modes {
        let line = crate::setup::describe(&device_args(device, m.protocol())?.preset);
        if !lines.contains(&line) {
            lines.push(line);
        }
    }
    Ok(format!("{} in RAM, full data", lines.join("; ")))
}

fn stack(device: &DeviceArgs, mode: Mode) -> Result<Stack, CliError> {
    let d = device_args(device, mode.protocol())?;
    let opts = protocol_options_for(device, &[mode.protocol()])?;
    crate::setup::check_protocol_config(mode.protocol(), &d.ftl, &d.preset.geometry, &opts)?;
    let nand = ram(nand_config(&d.preset, DataMode::Full))?;
    let dev = txftl_protocols::format(mode.protocol(), nand, d.ftl, &opts).map_err(crate::open::device_error)?;
    Stack::format(dev, mode).map_err(CliError::failed)
}

fn progress(json: bool, len: u64) -> ProgressBar {
    if json {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len);
    if let Ok(style) = ProgressStyle::with_template("{bar:40} {pos}/{len} statements  {msg}") {
        bar.set_style(style);
    }
    bar
}

fn cell(o: &Outcome) -> String {
    match (&o.error, o.ok()) {
        (None, true) => format!("ok {:.1} s", o.wall_s),
        (Some(_), _) if o.full_intact() => "full, intact".into(),
        (Some(_), _) if o.integrity.starts_with("cannot reopen") => "full, stuck".into(),
        (Some(_), _) => "FAILED".into(),
        (None, false) => format!("WRONG ({} rows, {})", o.rows, o.integrity),
    }
}

fn print(runs: &[ModeRun], spec: &HeavySpec, device: &str) {
    wrapln!(
        "SQLite's heavy statements: {} rows (100-300 B), {} inserts in one transaction, page size {}",
        spec.rows,
        spec.insert_rows,
        spec.page_size
    );
    wrapln!("Device: {device}");
    wrapln!("Each cell: completed with the expected rows and integrity_check ok, in wall seconds.");
    let mut t = fitted();
    let mut header = vec!["mode".to_string()];
    header.extend(Statement::ALL.iter().map(|s| s.name().to_string()));
    t.set_header(header);
    for r in runs {
        let mut row = vec![r.mode.cli().to_string()];
        match &r.refused {
            Some(_) => row.push("refused (below)".into()),
            None => {
                row.extend(r.outcomes.iter().map(cell));
                row.extend((r.outcomes.len()..Statement::ALL.len()).map(|_| "not run".to_string()));
            }
        }
        t.add_row(row);
    }
    println!("{t}");
    for r in runs {
        if let Some(why) = &r.refused {
            wrapln!("{}: {why}", r.mode.cli());
        }
        for o in r.outcomes.iter().filter(|o| !o.ok()) {
            wrapln!(
                "{} {}: {} (after{}: rows {}, expected {}, before {}; integrity {})",
                r.mode.cli(),
                o.statement.name(),
                o.error.as_deref().unwrap_or("wrong result"),
                if o.reopened { ", reopened" } else { "" },
                o.rows,
                o.rows_expected,
                o.rows_before,
                o.integrity
            );
        }
    }
}
