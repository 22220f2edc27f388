//! The HTML report of `reproduce xftl`: its figures (the paper's Table 1,
//! Figures 5 and 6, Tables 4 and 5 redrawn from our data, the paper's value
//! beside ours), its tables and its introduction.

use super::compare::{map_at_flush_line, ModeRun};
use super::results::{host_writes, programs, scale_tx, speedup, Figure5};
use super::tables::{ablation_header, ablation_rows, mode_pair_header, table1_rows, whole_map_table};
use super::{modes, paper, rbj, wal, xftl, Report};
use crate::html::{self, Bars, Figure, Lines};

/// The introduction: the paper, the device, the FTL's behaviour at a flush, what was scaled down.
pub fn intro(r: &Report) -> String {
    let p = &r.params;
    let mut intro = format!(
        "{}. Device: {}. All times simulated (device clock). ",
        html::escape(&r.paper),
        html::escape(&p.head.device)
    );
    intro += &html::escape(map_at_flush_line(p.map_at_flush));
    intro += ". Scaled down: ";
    intro += &html::escape(&p.scaled_down.join("; "));
    intro
}

/// Table 1 at every validity, and its ablation.
pub fn tables(r: &Report) -> String {
    let p = &r.params;
    let mut tables = String::new();
    for fig in &r.figures.figure5 {
        let h = mode_pair_header(&format!("Table 1 (K={}, {}% validity, per 1,000 tx)", p.table1_k, fig.validity_pct));
        tables += &html::table(&h, &table1_rows(p, fig));
    }
    let (h, rows) = whole_map_table(p, &r.figures);
    tables + &html::table(&ablation_header(p), &ablation_rows(p, &r.figures)) + &html::table(&h, &rows)
}

/// The figures, in the paper's order.
pub fn figures(r: &Report) -> Vec<Figure> {
    let mut figs = Vec::new();
    if let Some(t1) = r.figures.fig5(50) {
        figs.extend(table1(r, t1));
    }
    for fig in &r.figures.figure5 {
        figs.push(figure5(r, fig));
    }
    if let Some(t1) = r.figures.fig5(50) {
        let ks = &r.params.ks;
        figs.push(Figure::Bars(Bars {
            title: "Figure 5(b): X-FTL's speed-up (elapsed-time ratio on device + host time, mean over K)".into(),
            y_desc: "factor (x)".into(),
            groups: vec!["over WAL".into(), "over RBJ".into()],
            segments: vec!["ours".into()],
            ours: vec![
                vec![speedup(t1, ks, wal(), xftl(), &r.params.head)],
                vec![speedup(t1, ks, rbj(), xftl(), &r.params.head)],
            ],
            paper: vec![Some(paper::FIG5_XFTL_OVER_WAL), Some(paper::FIG5_XFTL_OVER_RBJ)],
            decimals: 1,
        }));
    }
    figs.push(table5(r));
    figs.extend(table4(r));
    figs
}

fn mode_names() -> Vec<String> {
    modes().iter().map(|m| m.name().to_string()).collect()
}

/// Table 1 (K = 5, 50%): host writes by kind, flash writes, GC runs, flash
/// writes per host write and fsyncs, per mode beside the paper's.
fn table1(r: &Report, t1: &Figure5) -> Vec<Figure> {
    let p = &r.params;
    let ours: Vec<Vec<f64>> = modes()
        .iter()
        .map(|&m| {
            t1.run(m, p.table1_k).map_or(vec![0.0; 3], |r| {
                vec![
                    scale_tx(r.host.database_page_writes as f64, p),
                    scale_tx((r.host.journal_page_writes + r.host.wal_page_writes) as f64, p),
                    scale_tx((r.host.metadata_page_writes + r.host.metadata_journal_writes) as f64, p),
                ]
            })
        })
        .collect();
    let mut figs = vec![Figure::Bars(Bars {
        title: "Table 1: host page writes by kind (K=5, 50% validity, per 1,000 tx)".into(),
        y_desc: "page writes".into(),
        groups: mode_names(),
        segments: ["database", "journal / WAL", "file-system metadata"].map(String::from).to_vec(),
        ours,
        paper: paper::TABLE1.iter().map(|x| Some(x.total)).collect(),
        decimals: 0,
    })];
    let one = |title: &str, y: &str, get: &dyn Fn(&ModeRun) -> f64, getp: &dyn Fn(&paper::Table1Row) -> f64, decimals: usize| {
        Figure::Bars(Bars {
            title: title.into(),
            y_desc: y.into(),
            groups: mode_names(),
            segments: vec!["ours".into()],
            ours: modes().iter().map(|&m| vec![t1.run(m, p.table1_k).map_or(0.0, get)]).collect(),
            paper: paper::TABLE1.iter().map(|x| Some(getp(x))).collect(),
            decimals,
        })
    };
    figs.push(one(
        "Table 1 / Figure 6(a): flash pages written (per 1,000 tx)",
        "pages",
        &|r| scale_tx(programs(r) as f64, p),
        &|x| x.flash_writes,
        0,
    ));
    figs.push(one(
        "Table 1 / Figure 6(b): garbage collections (per 1,000 tx)",
        "GC runs",
        &|r| scale_tx(r.device.gc_runs as f64, p),
        &|x| x.gc,
        0,
    ));
    figs.push(one(
        "Table 1: flash pages written per host page write",
        "factor (x)",
        &|r| programs(r) as f64 / host_writes(r).max(1) as f64,
        &|x| x.flash_writes / x.total,
        2,
    ));
    figs.push(one(
        "Table 1: fsync calls (per 1,000 tx)",
        "fsync calls",
        &|r| scale_tx(r.host.fsyncs as f64, p),
        &|x| x.fsyncs,
        0,
    ));
    figs
}

/// Figure 5 at one validity: elapsed time over K, a line per mode.
fn figure5(r: &Report, fig: &Figure5) -> Figure {
    let p = &r.params;
    Figure::Lines(Lines {
        title: format!(
            "Figure 5: elapsed time over K ({}% validity, {} tx)",
            fig.validity_pct, p.transactions
        ),
        x_desc: "K (tuples updated per transaction)".into(),
        y_desc: "elapsed, simulated s".into(),
        series: modes()
            .iter()
            .map(|&m| {
                (
                    m.name().to_string(),
                    p.ks.iter().filter_map(|&k| Some((k as f64, fig.run(m, k)?.elapsed_s))).collect(),
                )
            })
            .collect(),
    })
}

/// Table 5: restart time per mode beside the paper's.
fn table5(r: &Report) -> Figure {
    let s = &r.figures.table5.summary;
    Figure::Bars(Bars {
        title: "Table 5: restart time (SQLite's recovery; X-FTL: X-L2P table)".into(),
        y_desc: "ms (device clock)".into(),
        groups: s.iter().map(|x| x.mode.name().to_string()).collect(),
        segments: vec!["ours".into()],
        ours: s.iter().map(|x| vec![x.paper_comparable_ms]).collect(),
        paper: s
            .iter()
            .map(|x| modes().iter().position(|m| *m == x.mode).map(|i| paper::TABLE5_MS[i]))
            .collect(),
        decimals: 1,
    })
}

/// Table 4: transactions per simulated minute per mode, a chart per mix.
fn table4(r: &Report) -> Vec<Figure> {
    r.figures
        .tpcc
        .iter()
        .enumerate()
        .map(|(i, mix)| {
            Figure::Bars(Bars {
                title: format!("Table 4: TPC-C {} ({:?}), device + host time", mix.name, mix.mix),
                y_desc: "transactions per minute".into(),
                groups: mode_names(),
                segments: vec!["ours".into()],
                ours: modes().iter().map(|&m| vec![mix.tpm(m, &r.params.head)]).collect(),
                paper: vec![None, Some(paper::TABLE4_WAL[i]), Some(paper::TABLE4_XFTL[i])],
                decimals: 0,
            })
        })
        .collect()
}
