//! `txftl compare --workload W` for the workloads other than partsupp: the
//! workload in every mode on identical devices (the same preset, options and
//! seed; a fresh device per mode), one table of the measured phase.

use crate::cmd_compare::CompareArgs;
use crate::open::check_fits;
use crate::setup::{describe, resolve_device};
use crate::table::{fitted, thousands};
use crate::CliError;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::process::ExitCode;
use txftl_nand::{DataMode, ViolationPolicy};
use txftl_reproduce::wrapln;
use txftl_reproduce::xftl::compare::{run_workload, CompareSpec, Workload, WorkloadRun};
use txftl_sqlite::sqlitebench::{BenchSpec, Benchmark};
use txftl_sqlite::tpcc::TpccSpec;
use txftl_sqlite::ycsb::{self, YcsbSpec};

#[derive(Serialize)]
struct Report {
    device: String,
    /// The FTL wrote its mapping table at every flush (`--map-at-flush`).
    map_at_flush: bool,
    workload: Workload,
    seed: u64,
    runs: Vec<WorkloadRun>,
}

/// The options of `compare` that belong to another workload than `w`.
fn refuse_others(args: &CompareArgs, w: &str) -> Result<(), CliError> {
    let tpcc = w == "tpcc";
    let ycsb = w.starts_with("ycsb");
    let bench = w == "sqlite-bench";
    let checks = [
        (args.k.is_some(), "--k", false),
        (args.ks.is_some(), "--ks", false),
        (args.rows.is_some(), "--rows", false),
        (args.validity.is_some(), "--validity", false),
        (args.no_restart, "--no-restart", false),
        (args.html.is_some(), "--html", false),
        (args.warehouses.is_some(), "--warehouses", tpcc),
        (args.scale.is_some(), "--scale", tpcc),
        (args.mix.is_some(), "--mix", tpcc),
        (args.ycsb_workload.is_some(), "--ycsb-workload", w == "ycsb"),
        (args.records.is_some(), "--records", ycsb),
        (args.operations.is_some(), "--operations", ycsb),
        (args.benchmarks.is_some(), "--benchmarks", bench),
        (args.num.is_some(), "--num", bench),
        (args.value_size.is_some(), "--value-size", bench),
    ];
    for (given, name, applies) in checks {
        if given && !applies {
            return Err(CliError::Usage(format!("{name} does not apply to --workload {w}")));
        }
    }
    // --transactions has a default; an explicit other value is refused where it does not apply.
    if !tpcc && args.transactions != 1000 {
        return Err(CliError::Usage(format!(
            "--transactions does not apply to --workload {w} (ycsb: --operations; sqlite-bench: --num)"
        )));
    }
    Ok(())
}

fn parse_mix(s: &str) -> Result<[u32; 5], CliError> {
    let v: Vec<u32> = s
        .split(',')
        .map(|x| x.trim().parse::<u32>())
        .collect::<Result<_, _>>()
        .map_err(|_| CliError::Usage(format!("--mix `{s}` is not five percentages")))?;
    v.try_into().map_err(|_| {
        CliError::Usage(format!(
            "--mix `{s}` needs five percentages (New-Order, Payment, Order-Status, Delivery, Stock-Level)"
        ))
    })
}

fn workload(args: &CompareArgs) -> Result<Workload, CliError> {
    let w = args.workload.as_str();
    refuse_others(args, w)?;
    let ycsb_letter = match w {
        "ycsb" => Some(
            args.ycsb_workload
                .clone()
                .ok_or_else(|| CliError::Usage("--workload ycsb needs --ycsb-workload a..f (or use ycsb-a .. ycsb-f)".into()))?,
        ),
        _ => w.strip_prefix("ycsb-").map(str::to_string),
    };
    if let Some(letter) = ycsb_letter {
        let wl = ycsb::Workload::parse(&letter).ok_or_else(|| CliError::Usage(format!("unknown YCSB workload `{letter}` (a..f)")))?;
        let mut s = YcsbSpec::preset(wl);
        s.recordcount = args.records.unwrap_or(100_000);
        s.operationcount = args.operations.unwrap_or(100_000);
        s.seed = args.seed;
        s.validate().map_err(|e| CliError::Usage(e.to_string()))?;
        return Ok(Workload::Ycsb(s));
    }
    match w {
        "tpcc" => {
            let s = TpccSpec {
                warehouses: args.warehouses.unwrap_or(1),
                scale: args.scale.unwrap_or(1),
                mix: match &args.mix {
                    Some(m) => parse_mix(m)?,
                    None => txftl_sqlite::tpcc::STANDARD_MIX,
                },
                transactions: args.transactions as u64,
                seed: args.seed,
                ..TpccSpec::default()
            };
            s.validate().map_err(|e| CliError::Usage(e.to_string()))?;
            Ok(Workload::Tpcc(s))
        }
        "sqlite-bench" => {
            let s = BenchSpec {
                benchmarks: Benchmark::parse_list(
                    args.benchmarks
                        .as_deref()
                        .unwrap_or("fillseq,fillrandom,overwrite,readseq,readrandom"),
                )
                .map_err(CliError::Usage)?,
                num: args.num.unwrap_or(100_000),
                value_size: args.value_size.unwrap_or(100),
                seed: args.seed,
                ..BenchSpec::default()
            };
            s.validate().map_err(|e| CliError::Usage(e.to_string()))?;
            Ok(Workload::SqliteBench(s))
        }
        other => Err(CliError::Usage(format!(
            "unknown workload `{other}` (partsupp, tpcc, ycsb-a .. ycsb-f, ycsb, sqlite-bench)"
        ))),
    }
}

pub fn run(args: &CompareArgs) -> Result<ExitCode, CliError> {
    let w = workload(args)?;
    let modes = crate::cmd_compare::modes(args.modes.as_deref())?;
    let chosen = resolve_device(&args.device, "jasmine")?;
    let nand = chosen.preset.config(DataMode::Full, ViolationPolicy::Error);
    check_fits(&nand)?;
    let mut ftl = chosen.ftl.clone();
    ftl.checkpoint_at_flush = crate::cmd_compare::paper_map_at_flush(&args.device);
    let spec = CompareSpec {
        nand,
        ftl,
        // A protocol's defaults unless asked (X-FTL's table sized to the
        // array: TPC-C's and the benchmarks' transactions can be larger than
        // the paper's 500-entry table).
        opts: crate::setup::protocol_options_for(&args.device, &modes.iter().map(|m| m.protocol()).collect::<Vec<_>>())?,
        rows: 0,
        transactions: args.transactions,
        seed: args.seed,
        validity_pct: 0,
        read_cache_pages: 0,
    };
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(modes.len() as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} modes ({elapsed})")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    let mut runs = Vec::new();
    for &mode in &modes {
        bar.set_message(format!("{} {}", w.name(), mode.name()));
        runs.push(run_workload(&spec, mode, &w).map_err(|e| CliError::Failed(format!("{}: {e}", mode.name())))?);
        bar.inc(1);
    }
    bar.finish_and_clear();
    let report = Report {
        device: describe(&chosen.preset),
        map_at_flush: spec.ftl.checkpoint_at_flush,
        workload: w,
        seed: args.seed,
        runs,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(CliError::failed)?);
    } else {
        print(&report);
    }
    let broken = report
        .runs
        .iter()
        .any(|r| r.integrity != "ok" || r.consistency.as_deref().is_some_and(|c| c != "ok"));
    Ok(if broken { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn print(r: &Report) {
    wrapln!("device: {} (a fresh one per mode, full data)", r.device);
    wrapln!("{}", crate::cmd_compare::map_at_flush_line(r.map_at_flush));
    wrapln!(
        "workload: {}, seed {}; the measured phase (after the load)",
        r.workload.name(),
        r.seed
    );
    let mut t = fitted();
    let mut header = vec![format!("compare --workload {}", r.workload.name())];
    header.extend(r.runs.iter().map(|x| x.mode.name().to_string()));
    t.set_header(header);
    type Cell = Box<dyn Fn(&WorkloadRun) -> String>;
    let mut rows: Vec<(String, Cell)> = vec![
        (
            "host page writes (file system)".into(),
            Box::new(|x| thousands(x.host.host_page_writes())),
        ),
        ("fsync calls".into(), Box::new(|x| thousands(x.host.fsyncs))),
        ("device flushes".into(), Box::new(|x| thousands(x.device.host_flushes))),
        ("device commits".into(), Box::new(|x| thousands(x.device.commits))),
        (
            "flash programs".into(),
            Box::new(|x| thousands(x.device.flash_programs + x.device.flash_partial_programs)),
        ),
        ("flash erases".into(), Box::new(|x| thousands(x.device.flash_erases))),
        (
            "write amplification (programs / host page writes)".into(),
            Box::new(|x| format!("{:.3}", x.write_amplification())),
        ),
        ("simulated time".into(), Box::new(|x| format!("{:.3} s", x.elapsed_s))),
        ("units measured".into(), Box::new(|x| format!("{} {}", thousands(x.units), x.unit))),
        (
            "throughput (units per simulated s)".into(),
            Box::new(|x| format!("{:.1}", x.throughput_per_sim_s)),
        ),
        (
            "latency per unit mean / p99 (simulated)".into(),
            Box::new(|x| format!("{:.0} / {:.0} us", x.latency_mean_ns / 1e3, x.latency_p99_ns as f64 / 1e3)),
        ),
    ];
    if matches!(r.workload, Workload::Tpcc(_)) {
        rows.push((
            "tpmC (New-Orders per simulated minute)".into(),
            Box::new(|x| format!("{:.0}", x.new_orders_per_sim_minute().unwrap_or(0.0))),
        ));
        rows.push((
            "consistency conditions 1-4".into(),
            Box::new(|x| x.consistency.clone().unwrap_or_default()),
        ));
    }
    rows.push(("integrity_check".into(), Box::new(|x| x.integrity.clone())));
    for (name, g) in rows {
        let mut row = vec![name];
        row.extend(r.runs.iter().map(&g));
        t.add_row(row);
    }
    println!("{t}");
}
