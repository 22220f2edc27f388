//! The HTML report of `reproduce lighttx`: its figures (the paper's Figs. 5
//! to 9 redrawn from our data, the paper's numbers beside ours where its
//! text gives one), its tables and its introduction.

use super::params::ProtocolLevels;
use super::results::Run;
use super::tables::{
    abort_cost_header, abort_cost_rows, abort_header, abort_rows, fig5_rows, fig8_rows, fig9_rows, gc_cell, onset_header, onset_rows,
    onset_summary, sweep_checks_header, sweep_checks_rows, sweep_header, sweep_rows, zone_header,
};
use super::{label, paper, top_abort, Report};
use crate::fmt::{largest, pct, ratio};
use crate::html::{self, Bars, Figure, Lines};
use txftl_host::replay::Isolation;

/// The introduction: the paper, the devices, what was scaled down.
pub fn intro(r: &Report) -> String {
    let p = &r.params;
    format!(
        "{}. Devices: {} (Figs. 5-7, 9); {} (Fig. 8). All times simulated (device clock). Scaled down: {}",
        html::escape(&r.paper),
        html::escape(&p.head.device),
        html::escape(&p.recovery_device),
        html::escape(&p.scaled_down.join("; "))
    )
}

/// The tables of Figs. 5 to 9.
pub fn tables(r: &Report) -> String {
    let mut h = vec!["Fig. 5: transactions per simulated s".to_string()];
    h.extend(Isolation::NAMES.iter().map(|s| s.to_string()));
    let mut tables = html::table(&h, &fig5_rows(r));
    tables += &html::table(
        &abort_header(r, "Fig. 6: strict, transactions ended / committed per simulated s"),
        &abort_rows(r, &|x| format!("{:.1} / {:.1}", x.tx_per_sim_s, x.committed_per_sim_s)),
    );
    tables += &html::table(&abort_cost_header(r), &abort_cost_rows(r));
    tables += &html::table(
        &abort_header(r, "Fig. 7: GC overhead, ms"),
        &abort_rows(r, &|x| format!("{:.0}", x.gc_overhead_ms)),
    );
    tables += &format!(
        "<p>Fill before the trace: {}% (Figs. 5-9). Why: {}</p>",
        r.params.precondition_pct,
        html::escape(&r.params.fill_default_reason)
    );
    tables += &html::table(
        &sweep_header(r, "Fig. 6 by fill: ended / committed tx per simulated s"),
        &sweep_rows(r, &|x| format!("{:.1} / {:.1}", x.tx_per_sim_s, x.committed_per_sim_s)),
    );
    tables += &html::table(
        &sweep_header(r, "Fig. 7 by fill: GC copies, overhead (x LightTx's)"),
        &sweep_rows(r, &|x| gc_cell(r, x)),
    );
    tables += &html::table(&onset_header(r), &onset_rows(r));
    tables += &format!("<p>{}</p>", html::escape(&onset_summary(r)));
    tables += &html::table(&sweep_checks_header(r), &sweep_checks_rows(r));
    tables += &html::table(&zone_header(r, "Fig. 8: recovery time"), &fig8_rows(r));
    tables + &html::table(&zone_header(r, "Fig. 9: mapping persistence"), &fig9_rows(r))
}

/// The figures, in the paper's order.
pub fn figures(r: &Report) -> Vec<Figure> {
    let f = &r.figures;
    let mut figs = vec![Figure::Bars(Bars {
        title: "TPC-C trace: pages a transaction updates".into(),
        y_desc: "pages".into(),
        groups: vec!["mean".into(), "max".into()],
        segments: vec!["ours".into()],
        ours: vec![vec![f.workload.tx_pages_mean], vec![f.workload.tx_pages_max as f64]],
        paper: vec![Some(paper::TX_PAGES_MEAN), Some(paper::TX_PAGES_MAX)],
        decimals: 1,
    })];
    figs.extend(fig5(r));
    figs.extend(fig6(r));
    figs.extend(fig7(r));
    figs.extend(fig8(r));
    figs.extend(fig9(r));
    figs
}

/// Fig. 5: one chart per level (the protocols offering it), and LightTx's gains.
fn fig5(r: &Report) -> Vec<Figure> {
    let (p, f) = (&r.params, &r.figures);
    let z0 = p.zone_blocks_default;
    let mut figs = Vec::new();
    for level in Isolation::NAMES {
        let offered: Vec<&ProtocolLevels> = p.protocols.iter().filter(|x| x.levels.iter().any(|l| l == level)).collect();
        let lacking: Vec<&str> = p
            .protocols
            .iter()
            .filter(|x| !x.levels.iter().any(|l| l == level))
            .map(|x| label(&x.protocol))
            .collect();
        figs.push(Figure::Bars(Bars {
            title: format!(
                "Fig. 5, {level}: transactions per simulated s{}",
                if lacking.is_empty() {
                    String::new()
                } else {
                    format!(" (not offered: {})", lacking.join(", "))
                }
            ),
            y_desc: "transactions / simulated s".into(),
            groups: offered.iter().map(|x| label(&x.protocol).to_string()).collect(),
            segments: vec!["ours".into()],
            ours: offered
                .iter()
                .map(|x| {
                    vec![f
                        .run(&x.protocol, level, 0, (x.protocol == "lighttx").then_some(z0))
                        .map_or(0.0, |r| r.tx_per_sim_s)]
                })
                .collect(),
            paper: vec![None; offered.len()],
            decimals: 0,
        }));
    }
    let lt = |l: &str| f.run("lighttx", l, 0, Some(z0)).map(|r| r.tx_per_sim_s);
    if let (Some(s), Some(n), Some(z)) = (lt("strict"), lt("no-page-conflict"), lt("serializable")) {
        figs.push(Figure::Bars(Bars {
            title: "Fig. 5: LightTx's throughput over strict isolation".into(),
            y_desc: "percent".into(),
            groups: vec!["no-page-conflict".into(), "serializable".into()],
            segments: vec!["ours".into()],
            ours: vec![vec![pct(n, s).max(0.0)], vec![pct(z, s).max(0.0)]],
            paper: vec![Some(paper::FIG5_NPC_OVER_STRICT_PCT), Some(paper::FIG5_SER_OVER_STRICT_PCT)],
            decimals: 1,
        }));
    }
    figs
}

/// A line per protocol over the abort ratios (strict runs).
fn abort_series(r: &Report, get: &dyn Fn(&Run) -> f64) -> Vec<(String, Vec<(f64, f64)>)> {
    let p = &r.params;
    p.protocols
        .iter()
        .map(|x| {
            (
                label(&x.protocol).to_string(),
                p.abort_pcts
                    .iter()
                    .filter_map(|&a| Some((a as f64, get(r.figures.strict(&x.protocol, a, p.zone_blocks_default)?))))
                    .collect(),
            )
        })
        .collect()
}

/// Fig. 6: throughput over the abort ratios, and LightTx over Atomic-Write.
fn fig6(r: &Report) -> Vec<Figure> {
    let (f, z0) = (&r.figures, r.params.zone_blocks_default);
    let mut figs = vec![Figure::Lines(Lines {
        title: "Fig. 6: throughput against abort ratio (strict)".into(),
        x_desc: "abort ratio, %".into(),
        y_desc: "transactions / simulated s".into(),
        series: abort_series(r, &|r| r.tx_per_sim_s),
    })];
    if let (Some(l), Some(a)) = (f.strict("lighttx", 0, z0), f.strict("atomic-write", 0, z0)) {
        figs.push(Figure::Bars(Bars {
            title: "Fig. 6: LightTx over Atomic-Write, no aborts".into(),
            y_desc: "percent".into(),
            groups: vec!["LightTx over Atomic-Write".into()],
            segments: vec!["ours".into()],
            ours: vec![vec![pct(l.tx_per_sim_s, a.tx_per_sim_s).max(0.0)]],
            paper: vec![Some(paper::FIG6_LIGHTTX_OVER_AW_PCT)],
            decimals: 1,
        }));
    }
    figs
}

/// Fig. 7: GC overhead normalised to LightTx's, over the abort ratios and at the largest.
fn fig7(r: &Report) -> Vec<Figure> {
    let (f, z0) = (&r.figures, r.params.zone_blocks_default);
    let mut figs = vec![Figure::Lines(Lines {
        title: "Fig. 7: GC overhead against abort ratio, normalised to LightTx's".into(),
        x_desc: "abort ratio, %".into(),
        y_desc: "GC overhead / LightTx's".into(),
        series: abort_series(r, &|r| {
            ratio(
                r.gc_overhead_ms,
                f.strict("lighttx", r.abort_pct, z0).map_or(0.0, |l| l.gc_overhead_ms),
            )
        }),
    })];
    let top = top_abort(&r.params);
    let gc = |q: &str| f.strict(q, top, z0).map(|r| r.gc_overhead_ms);
    if let Some(l) = gc("lighttx") {
        let rows = [
            ("scc", paper::FIG7_SCC_OVER_LIGHTTX),
            ("bpcc", paper::FIG7_BPCC_OVER_LIGHTTX),
            ("atomic-write", 1.0 + paper::FIG7_AW_OVER_LIGHTTX_PCT / 100.0),
        ]
        .map(|(q, v)| (label(q).to_string(), gc(q).map(|x| ratio(x, l)), v));
        figs.push(bars_beside_paper(
            format!("Fig. 7: GC overhead over LightTx's at {top}% aborts"),
            "factor (x)",
            2,
            rows,
        ));
    }
    figs
}

/// A line per protocol over the zone sizes.
fn zone_series(r: &Report, get: &dyn Fn(&str, u32) -> Option<f64>) -> Vec<(String, Vec<(f64, f64)>)> {
    let p = &r.params;
    p.protocols
        .iter()
        .map(|x| {
            (
                label(&x.protocol).to_string(),
                p.zone_blocks
                    .iter()
                    .filter_map(|&z| Some((z as f64, get(&x.protocol, z)?)))
                    .collect(),
            )
        })
        .collect()
}

/// A bar's group: LightTx's is its largest over the zone sizes, as the paper's bound.
fn bar_label(q: &str, lighttx: &str) -> String {
    if q == "lighttx" {
        lighttx.to_string()
    } else {
        label(q).to_string()
    }
}

/// Fig. 8: recovery time over the zone sizes, and beside the paper's.
fn fig8(r: &Report) -> Vec<Figure> {
    let f = &r.figures;
    let lines = Figure::Lines(Lines {
        title: format!(
            "Fig. 8: recovery time against zone size ({:.0} GiB)",
            f.recovery.first().map_or(0.0, |r| r.capacity_gib)
        ),
        x_desc: "zone size, blocks".into(),
        y_desc: "recovery, simulated s".into(),
        series: zone_series(r, &|q, z| {
            let zone = (q == "lighttx").then_some(z);
            f.recovery_of(q, zone).map(|r| r.recovery_s)
        }),
    });
    let rows = [
        ("scc", paper::FIG8_CYCLIC_S),
        ("bpcc", paper::FIG8_CYCLIC_S),
        ("lighttx", paper::FIG8_LIGHTTX_MAX_S),
        ("atomic-write", paper::FIG8_AW_S),
    ]
    .map(|(q, v)| {
        let x = largest(f.recovery.iter().filter(|r| r.protocol == q).map(|r| r.recovery_s));
        (bar_label(q, "LightTx (largest zone)"), x, v)
    });
    vec![lines, bars_beside_paper("Fig. 8: recovery time".into(), "simulated s", 3, rows)]
}

/// Fig. 9: mapping persistence writes over the zone sizes, and beside the paper's.
fn fig9(r: &Report) -> Vec<Figure> {
    let (p, f) = (&r.params, &r.figures);
    let z0 = p.zone_blocks_default;
    let lines = Figure::Lines(Lines {
        title: "Fig. 9: mapping persistence writes against zone size".into(),
        x_desc: "zone size, blocks".into(),
        y_desc: "% of host writes".into(),
        series: zone_series(r, &|q, z| f.fig9(q, z, z0).map(|x| x.mapping_ratio_pct)),
    });
    let rows = [
        ("atomic-write", paper::FIG9_AW_PCT),
        ("lighttx", paper::FIG9_LIGHTTX_MAX_PCT),
        ("scc", paper::FIG9_CYCLIC_PCT),
        ("bpcc", paper::FIG9_CYCLIC_PCT),
    ]
    .map(|(q, v)| {
        let x = if q == "lighttx" {
            largest(p.zone_blocks.iter().filter_map(|&z| f.fig9(q, z, z0).map(|x| x.mapping_ratio_pct)))
        } else {
            f.fig9(q, 0, z0).map(|x| x.mapping_ratio_pct)
        };
        (bar_label(q, "LightTx (largest)"), x, v)
    });
    vec![
        lines,
        bars_beside_paper("Fig. 9: mapping persistence writes / host writes".into(), "percent", 2, rows),
    ]
}

/// One bar per (label, ours, paper's) row that has a value of ours: a
/// protocol that did not run has no bar.
fn bars_beside_paper<const N: usize>(title: String, y_desc: &str, decimals: usize, rows: [(String, Option<f64>, f64); N]) -> Figure {
    let rows: Vec<(String, f64, f64)> = rows.into_iter().filter_map(|(g, x, v)| Some((g, x?, v))).collect();
    Figure::Bars(Bars {
        title,
        y_desc: y_desc.into(),
        groups: rows.iter().map(|r| r.0.clone()).collect(),
        segments: vec!["ours".into()],
        ours: rows.iter().map(|r| vec![r.1]).collect(),
        paper: rows.iter().map(|r| Some(r.2)).collect(),
        decimals,
    })
}
