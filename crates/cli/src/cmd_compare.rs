//! `txftl compare`: the synthetic SQLite workload in RBJ, WAL and X-FTL modes.

use crate::open::check_fits;
use crate::setup::{describe, resolve_device};
use crate::table::{fitted, sim_time, thousands};
use crate::{CliError, DeviceArgs};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use txftl_nand::{DataMode, ViolationPolicy};
use txftl_reproduce::wrapln;
use txftl_reproduce::xftl::compare::{restart, restart_points, run_mode, CompareSpec, ModeRun, Restart};
use txftl_sqlite::Mode;

#[derive(Args, Debug)]
pub struct CompareArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Workload run in every mode: partsupp (the X-FTL paper's synthetic
    /// workload: Table 1, Figure 5, Table 5), tpcc, ycsb-a .. ycsb-f (or ycsb
    /// with --ycsb-workload), sqlite-bench.
    #[arg(long, default_value = "partsupp")]
    pub workload: String,
    /// partsupp: tuples read and updated per transaction (Table 1) [default: 5].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub k: Option<u32>,
    /// partsupp: K values for the elapsed-time figure (Figure 5); empty to skip [default: 1,5,10,15,20].
    #[arg(long)]
    pub ks: Option<String>,
    /// Transactions per run (partsupp, tpcc).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..))]
    pub transactions: u32,
    /// partsupp: tuples in partsupp [default: 60000].
    #[arg(long, value_parser = clap::value_parser!(u32).range(10..))]
    pub rows: Option<u32>,
    /// partsupp: target share of valid pages in GC victims, percent (30, 50, 70 in the paper; 0: no aging) [default: 50].
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=90))]
    pub validity: Option<u32>,
    /// Modes, comma-separated (`txftl protocols` lists each protocol's)
    /// [default: the paper's rbj, wal, xftl].
    #[arg(long)]
    pub modes: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// partsupp: skip the restart-after-power-cut measurement.
    #[arg(long)]
    pub no_restart: bool,
    /// tpcc: warehouses [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub warehouses: Option<u32>,
    /// tpcc: divide the item, customer and order counts by this [default: 1].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=900))]
    pub scale: Option<u32>,
    /// tpcc: percent of New-Order, Payment, Order-Status, Delivery, Stock-Level [default: 45,43,4,4,4].
    #[arg(long)]
    pub mix: Option<String>,
    /// ycsb: the core workload letter (a..f) for --workload ycsb.
    #[arg(long, value_parser = ["a", "b", "c", "d", "e", "f"])]
    pub ycsb_workload: Option<String>,
    /// ycsb: records loaded [default: 100000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub records: Option<u64>,
    /// ycsb: operations run [default: 100000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub operations: Option<u64>,
    /// sqlite-bench: benchmarks, comma-separated [default: fillseq,fillrandom,overwrite,readseq,readrandom].
    #[arg(long)]
    pub benchmarks: Option<String>,
    /// sqlite-bench: entries [default: 100000].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub num: Option<u64>,
    /// sqlite-bench: bytes of a value [default: 100].
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1 << 20))]
    pub value_size: Option<u32>,
    /// Print the results as JSON.
    #[arg(long)]
    pub json: bool,
    /// Write an HTML report with SVG plots to this path.
    #[arg(long)]
    pub html: Option<PathBuf>,
}

#[derive(Serialize)]
struct CompareReport {
    device: String,
    spec: SpecOut,
    table1: Vec<ModeRun>,
    figure5: Vec<ModeRun>,
    restart: Vec<Restart>,
}

#[derive(Serialize)]
struct SpecOut {
    /// The FTL wrote its mapping table at every flush (`--map-at-flush`).
    map_at_flush: bool,
    k: u32,
    transactions: u32,
    rows: u32,
    validity_pct: u32,
    seed: u64,
}

/// `compare` and `reproduce xftl` rerun the X-FTL paper's experiments on a
/// model of its OpenSSD board, whose firmware stores its mapping table at
/// every write barrier: "On a flash based storage device including OpenSSD, a
/// write barrier command stores the mapping table as well as data pages
/// persistently in flash memory chips" (X-FTL, sec. 6.3.4). So the FTL
/// checkpoints at every flush there unless `--map-at-flush off` asks for
/// txftl's own FTL (a flush made durable by roll-forward over the spare areas).
pub fn paper_map_at_flush(device: &DeviceArgs) -> bool {
    device.map_at_flush().unwrap_or(true)
}

/// The `--protocol-opt`s for the modes' protocols, with the X-FTL paper's
/// one-page table unless another size is asked for.
fn paper_options(device: &DeviceArgs, modes: &[Mode]) -> Result<txftl_protocols::ProtocolOptions, CliError> {
    let protocols: Vec<&str> = modes.iter().map(|m| m.protocol()).collect();
    Ok(txftl_reproduce::xftl::paper_options(crate::setup::protocol_options_for(
        device, &protocols,
    )?))
}

/// `--modes`, or the paper's.
pub fn modes(list: Option<&str>) -> Result<Vec<Mode>, CliError> {
    match list {
        Some(list) => crate::setup::parse_modes(list),
        None => Ok(txftl_reproduce::xftl::modes().to_vec()),
    }
}

/// The line that says which FTL behaviour at a flush a run had.
pub use txftl_reproduce::xftl::compare::map_at_flush_line;

/// Restart runs per mode, as in the paper (five), spread by
/// `txftl_reproduce::xftl::compare::restart_points`.
const RESTART_CUTS: u32 = 5;

/// Mean of a restart figure over a mode's runs.
fn mean_over(runs: &[&Restart], f: impl Fn(&Restart) -> u64) -> u64 {
    if runs.is_empty() {
        return 0;
    }
    runs.iter().map(|r| f(r)).sum::<u64>() / runs.len() as u64
}

fn restart_modes(r: &[Restart]) -> Vec<Mode> {
    let mut modes = Vec::new();
    for x in r {
        if !modes.contains(&x.mode) {
            modes.push(x.mode);
        }
    }
    modes
}

pub fn parse_list<T>(s: &str, what: &str, parse: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, CliError> {
    s.split(',')
        .map(str::trim)
        .filter(|x| !x.is_empty())
        .map(|x| parse(x).ok_or_else(|| CliError::Usage(format!("bad {what} `{x}`"))))
        .collect()
}

/// The modes choose the protocol of each run (a mode is a journal mode on a
/// protocol), so an explicit --protocol would be ignored: refuse it.
pub fn refuse_protocol(device: &DeviceArgs) -> Result<(), CliError> {
    match &device.protocol {
        Some(p) => Err(CliError::Usage(format!(
            "--protocol {p} does not apply here: each mode in --modes (or --mode) runs on its own protocol \
             (rbj and wal on plain; P, P-memory and P-batch on a transactional protocol P); drop --protocol"
        ))),
        None => Ok(()),
    }
}

/// Checks that the report can be written before the (long) run, not after
/// it (the reproductions' check: a path that cannot be written is a bad argument).
pub fn check_writable(path: &Path) -> Result<(), CliError> {
    Ok(txftl_reproduce::flow::check_writable(path)?)
}

pub fn run(args: CompareArgs) -> Result<ExitCode, CliError> {
    refuse_protocol(&args.device)?;
    if args.workload != "partsupp" {
        return crate::cmd_compare_workload::run(&args);
    }
    for (given, name) in [
        (args.warehouses.is_some(), "--warehouses"),
        (args.scale.is_some(), "--scale"),
        (args.mix.is_some(), "--mix"),
        (args.ycsb_workload.is_some(), "--ycsb-workload"),
        (args.records.is_some(), "--records"),
        (args.operations.is_some(), "--operations"),
        (args.benchmarks.is_some(), "--benchmarks"),
        (args.num.is_some(), "--num"),
        (args.value_size.is_some(), "--value-size"),
    ] {
        if given {
            return Err(CliError::Usage(format!("{name} does not apply to --workload partsupp")));
        }
    }
    let k = args.k.unwrap_or(5);
    let ks_arg = args.ks.clone().unwrap_or_else(|| "1,5,10,15,20".into());
    let rows = args.rows.unwrap_or(60_000);
    let validity = args.validity.unwrap_or(50);
    if let Some(path) = &args.html {
        check_writable(path)?;
    }
    let chosen = resolve_device(&args.device, "jasmine")?;
    let p = &chosen.preset;
    let modes = modes(args.modes.as_deref())?;
    let ks = parse_list(&ks_arg, "K", |x| x.parse::<u32>().ok().filter(|&k| k > 0))?;
    let nand = p.config(DataMode::Full, ViolationPolicy::Error);
    check_fits(&nand)?;
    let mut ftl = chosen.ftl.clone();
    ftl.checkpoint_at_flush = paper_map_at_flush(&args.device);
    let spec = CompareSpec {
        nand,
        ftl,
        opts: paper_options(&args.device, &modes)?,
        rows,
        transactions: args.transactions,
        seed: args.seed,
        validity_pct: validity,
        read_cache_pages: 0,
    };
    let steps = modes.len() * (1 + ks.len() + usize::from(!args.no_restart));
    let bar = if args.json {
        ProgressBar::hidden()
    } else {
        ProgressBar::new(steps as u64)
    };
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{bar:30}] {pos}/{len} runs")
            .map_err(CliError::failed)?
            .progress_chars("=> "),
    );
    let mut table1 = Vec::new();
    let mut figure5 = Vec::new();
    let mut restarts = Vec::new();
    for &mode in &modes {
        bar.set_message(format!("{} K={}", mode.name(), k));
        table1.push(run_mode(&spec, mode, k).map_err(|e| CliError::Failed(format!("{}: {e}", mode.name())))?);
        bar.inc(1);
        for &k in &ks {
            bar.set_message(format!("{} K={k}", mode.name()));
            figure5.push(run_mode(&spec, mode, k).map_err(|e| CliError::Failed(format!("{} K={k}: {e}", mode.name())))?);
            bar.inc(1);
        }
        if !args.no_restart {
            // Five runs, as in the paper, the cut spread through the transaction.
            for (tx, fraction) in restart_points(args.transactions, RESTART_CUTS) {
                bar.set_message(format!("{} restart (tx {tx}, {:.0}%)", mode.name(), fraction * 100.0));
                restarts
                    .push(restart(&spec, mode, k, tx, fraction).map_err(|e| CliError::Failed(format!("{} restart: {e}", mode.name())))?);
            }
            bar.inc(1);
        }
    }
    bar.finish_and_clear();
    let report = CompareReport {
        device: describe(p),
        spec: SpecOut {
            map_at_flush: spec.ftl.checkpoint_at_flush,
            k,
            transactions: args.transactions,
            rows,
            validity_pct: validity,
            seed: args.seed,
        },
        table1,
        figure5,
        restart: restarts,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report).map_err(CliError::failed)?);
    } else {
        print_tables(&report);
    }
    if let Some(path) = &args.html {
        std::fs::write(path, html(&report)).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
        if !args.json {
            wrapln!("HTML report: {}", path.display());
        }
    }
    let broken = report.table1.iter().chain(&report.figure5).any(|r| r.integrity != "ok")
        || report.restart.iter().any(|r| r.integrity != "ok" || !r.committed_state_ok);
    Ok(if broken { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

fn table1_rows(runs: &[ModeRun]) -> Vec<(String, Vec<String>)> {
    let f = |name: &str, g: &dyn Fn(&ModeRun) -> String| (name.to_string(), runs.iter().map(g).collect());
    vec![
        f("host: database page writes", &|r| thousands(r.host.database_page_writes)),
        f("host: rollback journal page writes", &|r| thousands(r.host.journal_page_writes)),
        f("host: WAL page writes", &|r| thousands(r.host.wal_page_writes)),
        f("host: FS metadata writes (in place)", &|r| thousands(r.host.metadata_page_writes)),
        f("host: FS metadata journal writes", &|r| thousands(r.host.metadata_journal_writes)),
        f("host: page writes, total", &|r| {
            thousands(r.host.host_page_writes() - r.host.other_page_writes)
        }),
        f("host: fsync calls", &|r| thousands(r.host.fsyncs)),
        f("host: write barriers (device flushes)", &|r| thousands(r.host.flushes)),
        f("device: commits", &|r| thousands(r.device.commits)),
        f("device: flash programs", &|r| thousands(r.device.flash_programs)),
        f("device: flash reads", &|r| thousands(r.device.flash_reads)),
        f("device: GC runs", &|r| thousands(r.device.gc_runs)),
        f("device: erases", &|r| thousands(r.device.flash_erases)),
        f("device: protocol log pages (X-FTL: X-L2P table pages)", &|r| {
            thousands(r.device.protocol_meta_writes)
        }),
        f("device: mapping checkpoints (map + superblock pages)", &|r| {
            format!(
                "{} ({})",
                thousands(r.device.checkpoints),
                thousands(r.device.map_writes + r.device.superblock_writes)
            )
        }),
        f("device: of which L2P table pages (mapping persistence)", &|r| {
            thousands(r.device.map_l2p_writes)
        }),
        f("device: valid pages per GC victim", &|r| {
            r.gc_victim_validity_pct.map_or("-".into(), |v| format!("{v:.1}%"))
        }),
        f("elapsed (simulated)", &|r| format!("{:.3} s", r.elapsed_s)),
        f("transactions per simulated second", &|r| format!("{:.1}", r.tx_per_sim_second)),
        f("integrity_check", &|r| r.integrity.clone()),
    ]
}

fn print_tables(r: &CompareReport) {
    wrapln!("device: {}", r.device);
    wrapln!("{}", map_at_flush_line(r.spec.map_at_flush));
    wrapln!(
        "workload: {} transactions of K={} on partsupp ({} tuples), GC victim validity target {}%, seed {}",
        r.spec.transactions,
        r.spec.k,
        r.spec.rows,
        r.spec.validity_pct,
        r.spec.seed
    );
    let mut t = fitted();
    let mut header = vec![format!("Table 1 (K={})", r.spec.k)];
    header.extend(r.table1.iter().map(|x| x.mode.name().to_string()));
    t.set_header(header);
    for (name, vals) in table1_rows(&r.table1) {
        let mut row = vec![name];
        row.extend(vals);
        t.add_row(row);
    }
    println!("{t}");
    if !r.figure5.is_empty() {
        let mut t = fitted();
        let mut ks: Vec<u32> = r.figure5.iter().map(|x| x.k).collect();
        ks.dedup();
        ks.sort();
        ks.dedup();
        let mut header = vec!["Figure 5: elapsed (simulated)".to_string()];
        header.extend(ks.iter().map(|k| format!("K={k}")));
        t.set_header(header);
        let mut modes: Vec<Mode> = Vec::new();
        for x in &r.figure5 {
            if !modes.contains(&x.mode) {
                modes.push(x.mode);
            }
        }
        for m in modes {
            let mut row = vec![m.name().to_string()];
            for &k in &ks {
                row.push(
                    r.figure5
                        .iter()
                        .find(|x| x.mode == m && x.k == k)
                        .map_or("-".into(), |x| format!("{:.3} s", x.elapsed_s)),
                );
            }
            t.add_row(row);
        }
        println!("{t}");
    }
    if !r.restart.is_empty() {
        let mut t = fitted();
        let modes = restart_modes(&r.restart);
        let mut header = vec!["Table 5: restart after a power cut (device clock, mean of 5 cuts)".to_string()];
        header.extend(modes.iter().map(|m| m.name().to_string()));
        t.set_header(header);
        let per_mode: Vec<Vec<&Restart>> = modes.iter().map(|m| r.restart.iter().filter(|x| x.mode == *m).collect()).collect();
        let rows: Vec<(&str, RestartCell)> = vec![
            (
                "SQLite recovery (journal / WAL / nothing)",
                Box::new(|v| sim_time(mean_over(v, |x| x.sqlite_recovery_ns))),
            ),
            (
                "  its page reads / writes (mean)",
                Box::new(|v| {
                    format!(
                        "{} / {}",
                        mean_over(v, |x| x.sqlite_recovery_page_reads),
                        mean_over(v, |x| x.sqlite_recovery_page_writes)
                    )
                }),
            ),
            (
                "  per cut (10%, 30%, 50%, 70%, 90% in)",
                Box::new(|v| v.iter().map(|x| sim_time(x.sqlite_recovery_ns)).collect::<Vec<_>>().join(", ")),
            ),
            ("file system mount", Box::new(|v| sim_time(mean_over(v, |x| x.fs_mount_ns)))),
            ("FTL recovery", Box::new(|v| sim_time(mean_over(v, |x| x.ftl_recovery.time_ns)))),
            (
                "  of which the protocol log read (X-FTL: X-L2P table)",
                Box::new(|v| sim_time(mean_over(v, |x| x.ftl_recovery.protocol_read_ns))),
            ),
            (
                "integrity_check ok",
                Box::new(|v| format!("{} of {}", v.iter().filter(|x| x.integrity == "ok").count(), v.len())),
            ),
            (
                "exactly the committed transactions",
                Box::new(|v| format!("{} of {}", v.iter().filter(|x| x.committed_state_ok).count(), v.len())),
            ),
        ];
        for (name, g) in rows {
            let mut row = vec![name.to_string()];
            row.extend(per_mode.iter().map(|v| g(v)));
            t.add_row(row);
        }
        println!("{t}");
    }
}

/// How one row of the restart table is computed from a mode's result.
type RestartCell = Box<dyn Fn(&[&Restart]) -> String>;

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn html_table(header: &[String], rows: &[(String, Vec<String>)]) -> String {
    let mut s = String::from("<table><tr>");
    for h in header {
        s += &format!("<th>{}</th>", escape(h));
    }
    s += "</tr>";
    for (name, vals) in rows {
        s += &format!("<tr><td>{}</td>", escape(name));
        for v in vals {
            s += &format!("<td class=n>{}</td>", escape(v));
        }
        s += "</tr>";
    }
    s + "</table>"
}

/// Elapsed time per K, one line per mode (Figure 5).
fn figure5_svg(runs: &[ModeRun]) -> String {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (720, 420)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let kmax = runs.iter().map(|r| r.k).max().unwrap_or(1) as f64;
        let tmax = runs.iter().map(|r| r.elapsed_s).fold(0.0, f64::max) * 1.1 + 1e-9;
        let chart = ChartBuilder::on(&root)
            .caption("Elapsed time per K (simulated, device clock)", ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(60)
            .build_cartesian_2d(0.0..kmax + 1.0, 0.0..tmax);
        if let Ok(mut chart) = chart {
            let _ = chart
                .configure_mesh()
                .x_desc("K (tuples updated per transaction)")
                .y_desc("seconds")
                .draw();
            let colors = [RED, BLUE, GREEN, MAGENTA];
            let mut modes: Vec<Mode> = Vec::new();
            for r in runs {
                if !modes.contains(&r.mode) {
                    modes.push(r.mode);
                }
            }
            for (i, m) in modes.iter().enumerate() {
                let c = colors[i % colors.len()];
                let mut pts: Vec<(f64, f64)> = runs.iter().filter(|r| r.mode == *m).map(|r| (r.k as f64, r.elapsed_s)).collect();
                pts.sort_by(|a, b| a.0.total_cmp(&b.0));
                if let Ok(series) = chart.draw_series(LineSeries::new(pts.clone(), c.stroke_width(2))) {
                    series
                        .label(m.name())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], c.stroke_width(2)));
                }
                let _ = chart.draw_series(pts.into_iter().map(|p| Circle::new(p, 4, c.filled())));
            }
            let _ = chart
                .configure_series_labels()
                .background_style(WHITE.mix(0.8))
                .border_style(BLACK)
                .draw();
        }
        let _ = root.present();
    }
    svg
}

/// One bar per mode for a figure of Table 1.
fn bars_svg(title: &str, runs: &[ModeRun], value: impl Fn(&ModeRun) -> f64) -> String {
    use plotters::prelude::*;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (480, 320)).into_drawing_area();
        let _ = root.fill(&WHITE);
        let vmax = runs.iter().map(&value).fold(0.0, f64::max) * 1.15 + 1.0;
        let n = runs.len() as u32;
        if let Ok(mut chart) = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 16))
            .margin(12)
            .x_label_area_size(30)
            .y_label_area_size(70)
            .build_cartesian_2d((0..n.saturating_sub(1)).into_segmented(), 0.0..vmax)
        {
            let names: Vec<&str> = runs.iter().map(|r| r.mode.name()).collect();
            let _ = chart
                .configure_mesh()
                .disable_x_mesh()
                .x_label_formatter(&|x| match x {
                    SegmentValue::CenterOf(i) => names.get(*i as usize).map(|s| s.to_string()).unwrap_or_default(),
                    _ => String::new(),
                })
                .y_label_formatter(&|y| format!("{y:.0}"))
                .draw();
            let _ = chart.draw_series(
                Histogram::vertical(&chart)
                    .style(BLUE.mix(0.6).filled())
                    .margin(16)
                    .data(runs.iter().enumerate().map(|(i, r)| (i as u32, value(r)))),
            );
        }
        let _ = root.present();
    }
    svg
}

fn html(r: &CompareReport) -> String {
    let mut header = vec![format!("Table 1 (K={})", r.spec.k)];
    header.extend(r.table1.iter().map(|x| x.mode.name().to_string()));
    let modes = restart_modes(&r.restart);
    let per_mode: Vec<Vec<&Restart>> = modes.iter().map(|m| r.restart.iter().filter(|x| x.mode == *m).collect()).collect();
    let mut restart_rows = Vec::new();
    if !r.restart.is_empty() {
        restart_rows.push((
            "SQLite recovery (mean)".to_string(),
            per_mode.iter().map(|v| sim_time(mean_over(v, |x| x.sqlite_recovery_ns))).collect(),
        ));
        restart_rows.push((
            "file system mount (mean)".to_string(),
            per_mode.iter().map(|v| sim_time(mean_over(v, |x| x.fs_mount_ns))).collect(),
        ));
        restart_rows.push((
            "FTL recovery (mean)".to_string(),
            per_mode
                .iter()
                .map(|v| sim_time(mean_over(v, |x| x.ftl_recovery.time_ns)))
                .collect(),
        ));
        restart_rows.push((
            "exactly the committed transactions".to_string(),
            per_mode
                .iter()
                .map(|v| format!("{} of {}", v.iter().filter(|x| x.committed_state_ok).count(), v.len()))
                .collect(),
        ));
    }
    let mut rh = vec!["Table 5: restart (device clock)".to_string()];
    rh.extend(modes.iter().map(|m| m.name().to_string()));
    format!(
        "<!doctype html><html><head><meta charset=utf-8><title>txftl compare</title>\
         <style>body{{font-family:sans-serif;max-width:1000px;margin:2em auto}}table{{border-collapse:collapse;margin:1em 0}}\
         td,th{{border:1px solid #999;padding:3px 8px}}td.n{{text-align:right}}</style></head><body>\
         <h1>txftl compare</h1><p>Device: {}<br>{}<br>Workload: {} transactions of K={} on partsupp ({} tuples); GC victim validity target {}%; seed {}.\
         All times are simulated (device clock).</p>{}<div>{}{}</div><h2>Figure 5</h2>{}<h2>Restart</h2>{}</body></html>",
        escape(&r.device),
        escape(map_at_flush_line(r.spec.map_at_flush)),
        r.spec.transactions,
        r.spec.k,
        r.spec.rows,
        r.spec.validity_pct,
        r.spec.seed,
        html_table(&header, &table1_rows(&r.table1)),
        bars_svg("Flash programs", &r.table1, |x| x.device.flash_programs as f64),
        bars_svg("Host page writes", &r.table1, |x| (x.host.host_page_writes() - x.host.other_page_writes) as f64),
        figure5_svg(&r.figure5),
        html_table(&rh, &restart_rows),
    )
}
