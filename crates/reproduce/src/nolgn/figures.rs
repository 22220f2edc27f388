//! The HTML report of `reproduce nolgn`: Figs. 6 to 11 redrawn from our
//! data, the paper's means beside ours where it states them, its tables
//! and its introduction.

use super::checks::{gc_share, latency, lock_share, throughput, writes, Metric, MEAN_CHECKS};
use super::print::{aging_rows, costs_rows, fig10_rows, fig11_rows, fig6_rows, fig7_rows, fig8_rows, fig9_rows};
use super::results::BenchRun;
use super::{Report, System, SYNCS};
use crate::fmt::ratio;
use crate::html::{self, Bars, Figure, Lines};

pub fn intro(r: &Report) -> String {
    let p = &r.params;
    format!(
        "{}. Device: {}, full data (SQLite reads its pages back), aged by random 4 KiB writes before each experiment. Times: the device clock, and device + host time where the paper measured a real host (Figs. 7, 8, 10, 11: the host model, docs/reproduce/README.md). Scaled down: {}.",
        html::escape(&r.paper),
        html::escape(&p.head.device),
        html::escape(&p.scaled_down.join("; "))
    )
}

pub fn tables(r: &Report) -> String {
    let mut out = String::new();
    let (h, rows) = aging_rows(r);
    out += &html::table(&h, &rows);
    for sync in SYNCS {
        let s = sync.name();
        for (h, rows) in [fig6_rows(r, s), fig7_rows(r, s), fig8_rows(r, s), fig9_rows(r, s), costs_rows(r, s)] {
            out += &html::table(&h, &rows);
        }
    }
    for (h, rows) in [fig10_rows(r), fig11_rows(r)] {
        out += &html::table(&h, &rows);
    }
    out
}

/// One line per system over the value sizes: `metric` against Base-WAL's.
fn normalised(r: &Report, sync: &str, title: &str, y: &str, metric: Metric) -> Figure {
    let head = &r.params.head;
    Figure::Lines(Lines {
        title: format!("{title} ({sync}), normalised to Base-WAL"),
        x_desc: "value size, log2 of bytes (8: 256 B, 14: 16 KiB)".into(),
        y_desc: y.into(),
        series: System::ALL
            .iter()
            .map(|&s| {
                let pts = r
                    .params
                    .sizes
                    .iter()
                    .filter_map(|&size| {
                        let x = r.figures.bench_run(s.key(), sync, size)?;
                        let b = r.figures.bench_run(System::BaseWal.key(), sync, size)?;
                        Some(((size as f64).log2(), ratio(metric(x, head), metric(b, head))))
                    })
                    .collect();
                (s.label().to_string(), pts)
            })
            .collect(),
    })
}

/// Fig. `fig`'s means over the sizes, ours beside the paper's (hollow
/// bars), drawn as the paper draws the figure: normalised to the baseline
/// (1 + the mean change).
fn means(r: &Report, fig: &str, quantity: &str) -> Figure {
    let checks: Vec<_> = MEAN_CHECKS.iter().filter(|m| m.id.starts_with(fig)).collect();
    let short = |s: System| match s {
        System::BaseWal => "Base",
        System::SwWal => "SW",
        System::NoLgn => "NoLgn",
    };
    Figure::Bars(Bars {
        title: format!("{quantity}: mean over the value sizes, normalised, ours and the paper's"),
        y_desc: "x the baseline's".into(),
        groups: checks.iter().map(|m| format!("{} {}/{}", m.sync, short(m.a), short(m.b))).collect(),
        segments: vec!["mean".into()],
        ours: checks
            .iter()
            .map(|m| vec![1.0 + m.measured(&r.params, &r.figures) / 100.0])
            .collect(),
        paper: checks.iter().map(|m| Some(1.0 + m.paper / 100.0)).collect(),
        decimals: 2,
    })
}

pub fn figures(r: &Report) -> Vec<Figure> {
    let mut out = Vec::new();
    for sync in SYNCS {
        let s = sync.name();
        out.push(normalised(r, s, "Fig. 6: flash page writes", "x Base-WAL's writes", writes));
        out.push(normalised(
            r,
            s,
            "Fig. 7: overwrite throughput",
            "x Base-WAL's ops per s (device + host time)",
            throughput,
        ));
        out.push(normalised(
            r,
            s,
            "Fig. 8: overwrite latency",
            "x Base-WAL's mean latency (device + host time)",
            latency,
        ));
    }
    out.push(means(r, "fig6.", "Fig. 6, flash page writes"));
    out.push(means(r, "fig7.", "Fig. 7, throughput"));
    out.push(means(r, "fig8.", "Fig. 8, latency"));
    for sync in SYNCS {
        let s = sync.name();
        let runs: Vec<&BenchRun> = r
            .params
            .sizes
            .iter()
            .filter_map(|&size| r.figures.bench_run(System::NoLgn.key(), s, size))
            .collect();
        out.push(Figure::Bars(Bars {
            title: format!("Fig. 9 ({s}): NoLgn-FTL's flash page writes by source"),
            y_desc: "percent of the flash page writes".into(),
            groups: runs.iter().map(|x| format!("{} B", x.value_size)).collect(),
            segments: vec![
                "host".into(),
                "GC migration".into(),
                "lock-induced GC".into(),
                "FTL metadata".into(),
            ],
            ours: runs
                .iter()
                .map(|x| {
                    let t = x.flash_programs.max(1) as f64;
                    vec![
                        100.0 * x.host_writes as f64 / t,
                        gc_share(x) - lock_share(x),
                        lock_share(x),
                        100.0 * x.ftl_programs as f64 / t,
                    ]
                })
                .collect(),
            paper: vec![None; runs.len()],
            decimals: 1,
        }));
    }
    let mut groups = Vec::new();
    let mut ours = Vec::new();
    let head = &r.params.head;
    // The workloads every system spent time on (`ycsb_timed`).
    for w in super::checks::ycsb_timed(&r.figures, head) {
        for s in [System::SwWal, System::NoLgn] {
            if let (Some(x), Some(b)) = (r.figures.ycsb_run(s.key(), w), r.figures.ycsb_run(System::BaseWal.key(), w)) {
                groups.push(format!("{w} {}", s.label()));
                ours.push(vec![ratio(x.ops_per_s(head), b.ops_per_s(head))]);
            }
        }
    }
    let n = groups.len();
    out.push(Figure::Bars(Bars {
        title: "Fig. 10: YCSB throughput (NORMAL), normalised to Base-WAL".into(),
        y_desc: "x Base-WAL's ops per s (device + host time)".into(),
        groups,
        segments: vec!["throughput".into()],
        ours,
        paper: vec![None; n],
        decimals: 2,
    }));
    out.push(Figure::Lines(Lines {
        title: "Fig. 11: TPC-C tpmC against the device's free space (NORMAL)".into(),
        x_desc: "free space (% of the logical pages)".into(),
        y_desc: "tpmC (device + host time)".into(),
        series: System::ALL
            .iter()
            .map(|&s| {
                let pts = r
                    .params
                    .free_pct
                    .iter()
                    .filter_map(|&f| r.figures.tpcc_run(s.key(), f).map(|x| (f as f64, x.tpm(head))))
                    .collect();
                (s.label().to_string(), pts)
            })
            .collect(),
    }));
    out
}
