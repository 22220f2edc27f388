//! The HTML report of `reproduce flagcommit`: Figs. 12 to 14 and Table 3
//! redrawn from our data, the paper's values beside ours where it states
//! them (Fig. 12a normalised to BPCC, Fig. 13a to SCC, as its percentages
//! give them), the tables and the introduction.

use super::checks::{at, base};
use super::print::all_rows;
use super::results::Run;
use super::{paper as P, Report, PROTOCOLS};
use crate::fmt::ratio;
use crate::html::{self, Bars, Figure, Lines};

pub fn intro(r: &Report) -> String {
    let p = &r.params;
    format!(
        "{}. Device: {}, metadata only; the DBMS of crates/dbms (TPC-C page accesses, {} clients, strict 2PL, LRU buffer of {} pages, force at commit). All times simulated (device clock). Scaled down: {}.",
        html::escape(&r.paper),
        html::escape(&p.head.device),
        p.clients,
        p.buffer_pages,
        html::escape(&p.scaled_down.join("; "))
    )
}

pub fn tables(r: &Report) -> String {
    all_rows(r).iter().map(|(h, rows)| html::table(h, rows)).collect()
}

/// The paper's Fig. 12a throughput relative to BPCC, and Fig. 13a's GC
/// time relative to SCC, from its percentages.
fn paper_relative(name: &str) -> (f64, f64) {
    let scc_vs_bpcc = (1.0 + P::AFC_OVER_BPCC / 100.0) / (1.0 + P::AFC_OVER_SCC / 100.0);
    let afc_gc = 1.0 + P::AFC_GC_VS_SCC / 100.0;
    match name {
        "afc" => (1.0 + P::AFC_OVER_BPCC / 100.0, afc_gc),
        "cfc" => (1.0 + P::CFC_OVER_BPCC / 100.0, afc_gc / (1.0 + P::AFC_GC_VS_CFC / 100.0)),
        "bpcc" => (1.0, afc_gc / (1.0 + P::AFC_GC_VS_BPCC / 100.0)),
        _ => (scc_vs_bpcc, 1.0),
    }
}

fn bars(r: &Report, title: &str, y: &str, of: impl Fn(&Run) -> f64, against: &str, paper: impl Fn(&str) -> Option<f64>) -> Figure {
    let p = &r.params;
    let reference = base(p, &r.figures, against).map_or(0.0, |x| of(&x));
    Figure::Bars(Bars {
        title: title.into(),
        y_desc: y.into(),
        groups: PROTOCOLS.iter().map(|x| x.label.to_string()).collect(),
        segments: vec!["ours".into()],
        ours: PROTOCOLS
            .iter()
            .map(|x| vec![base(p, &r.figures, x.name).map_or(0.0, |run| ratio(of(&run), reference))])
            .collect(),
        paper: PROTOCOLS.iter().map(|x| paper(x.name)).collect(),
        decimals: 2,
    })
}

fn lines(title: &str, x_desc: &str, y: &str, xs: &[u32], run: impl Fn(&str, u32) -> Option<Run>, of: fn(&Run) -> f64) -> Figure {
    Figure::Lines(Lines {
        title: title.into(),
        x_desc: x_desc.into(),
        y_desc: y.into(),
        series: PROTOCOLS
            .iter()
            .map(|p| {
                let pts = xs.iter().filter_map(|&x| Some((x as f64, of(&run(p.name, x)?)))).collect();
                (p.label.to_string(), pts)
            })
            .collect(),
    })
}

pub fn figures(r: &Report) -> Vec<Figure> {
    let mut v = basic_figures(r);
    v.extend(super::ex_checks::figures(r));
    v
}

/// Figs. 12 to 14 and Table 3.
fn basic_figures(r: &Report) -> Vec<Figure> {
    let p = &r.params;
    let f = &r.figures;
    let recovery = Figure::Bars(Bars {
        title: "Fig. 13b: recovery after a power cut".into(),
        y_desc: "ms (simulated)".into(),
        groups: PROTOCOLS.iter().map(|x| x.label.to_string()).collect(),
        segments: vec!["ours".into()],
        ours: PROTOCOLS
            .iter()
            .map(|x| vec![f.recovery(x.name).map_or(0.0, |rec| rec.time_ms)])
            .collect(),
        paper: vec![None; PROTOCOLS.len()],
        decimals: 1,
    });
    let memory = Figure::Bars(Bars {
        title: "Table 3: memory of the protocols' tables at 32 GB".into(),
        y_desc: "MB".into(),
        groups: PROTOCOLS.iter().map(|x| x.label.to_string()).collect(),
        segments: vec!["ours".into()],
        ours: PROTOCOLS
            .iter()
            .map(|x| vec![f.memory.iter().find(|m| m.protocol == x.name).map_or(0.0, |m| m.mb)])
            .collect(),
        paper: PROTOCOLS
            .iter()
            .map(|x| P::TABLE3_MB.iter().find(|(n, _)| *n == x.name).map(|(_, v)| *v))
            .collect(),
        decimals: 2,
    });
    vec![
        bars(
            r,
            &format!(
                "Fig. 12a: throughput normalised to BPCC (fill {}%, delta {}%)",
                p.fill_pct, p.abort_pct
            ),
            "throughput / BPCC's",
            |x| x.throughput,
            "bpcc",
            |n| Some(paper_relative(n).0),
        ),
        bars(
            r,
            "Fig. 13a: GC time normalised to SCC",
            "GC die time / SCC's",
            |x| x.gc_s,
            "scc",
            |n| Some(paper_relative(n).1),
        ),
        recovery,
        lines(
            "Fig. 14a: throughput against the abort ratio",
            "delta, % of transactions rolled back",
            "committed tx per simulated s",
            &p.deltas,
            |n, d| at(p, f, n, d),
            |x| x.throughput,
        ),
        lines(
            "Fig. 14b: GC time per committed transaction",
            "delta, % of transactions rolled back",
            "GC ms per commit",
            &p.deltas,
            |n, d| at(p, f, n, d),
            |x| x.gc_ms_per_commit(),
        ),
        lines(
            &format!("the device's fill (not stated by the paper), delta {}%", p.abort_pct),
            "cold data written before the load, % of logical pages",
            "committed tx per simulated s",
            &p.fills,
            |n, fill| f.run(n, fill, p.abort_pct).cloned(),
            |x| x.throughput,
        ),
        memory,
    ]
}
