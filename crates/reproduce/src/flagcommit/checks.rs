//! The checks of `reproduce flagcommit`: every number of sec. 5.2 the
//! experiments speak to, beside ours (REPRODUCE.md), each with its kind.

use super::paper as P;
use super::results::{Figures, Run};
use super::{protocol, Params, PROTOCOLS};
use crate::check::{ordering, Check, Unit};
use crate::fmt::pct;

/// A protocol's run at the default fill and `delta`.
pub fn at(params: &Params, f: &Figures, name: &str, delta: u32) -> Option<Run> {
    f.run(name, params.fill_pct, delta).cloned()
}

/// The default point's run.
pub fn base(params: &Params, f: &Figures, name: &str) -> Option<Run> {
    at(params, f, name, params.abort_pct)
}

/// Throughput of `a` over `b` at `delta`, percent.
pub fn lead(params: &Params, f: &Figures, a: &str, b: &str, delta: u32) -> Option<f64> {
    Some(pct(at(params, f, a, delta)?.throughput, at(params, f, b, delta)?.throughput))
}

fn label(name: &str) -> &'static str {
    protocol(name).label
}

pub fn checks(params: &Params, f: &Figures) -> Vec<Check> {
    let mut v = Vec::new();
    fig12(params, f, &mut v);
    fig13(params, f, &mut v);
    fig14(params, f, &mut v);
    table3(f, &mut v);
    structural(params, f, &mut v);
    super::ex_checks::checks(params, f, &mut v);
    v
}

/// Fig. 12a: the ordering, and AFC's and CFC's leads over BPCC and SCC.
fn fig12(params: &Params, f: &Figures, v: &mut Vec<Check>) {
    let items: Vec<(&str, f64)> = PROTOCOLS
        .iter()
        .filter_map(|p| Some((p.label, base(params, f, p.name)?.throughput)))
        .collect();
    v.push(Check::order(
        "fig12.order",
        "throughput, committed transactions per second, largest first",
        P::FIG12_ORDER,
        &ordering(&items),
    ));
    for (a, b, paper) in [
        ("afc", "bpcc", P::AFC_OVER_BPCC),
        ("afc", "scc", P::AFC_OVER_SCC),
        ("cfc", "bpcc", P::CFC_OVER_BPCC),
        ("cfc", "scc", P::CFC_OVER_SCC),
    ] {
        if let Some(m) = lead(params, f, a, b, params.abort_pct) {
            v.push(Check::value(
                &format!("fig12.{a}_over_{b}"),
                &format!("throughput of {} over {}", label(a), label(b)),
                paper,
                m,
                Unit::Percent,
            ));
        }
    }
}

/// Fig. 13a: AFC's GC time against the others', GC's share for BPCC and
/// SCC; Fig. 13b: recovery.
fn fig13(params: &Params, f: &Figures, v: &mut Vec<Check>) {
    let Some(afc) = base(params, f, "afc") else { return };
    for (b, paper) in [("cfc", P::AFC_GC_VS_CFC), ("bpcc", P::AFC_GC_VS_BPCC), ("scc", P::AFC_GC_VS_SCC)] {
        if let Some(r) = base(params, f, b) {
            v.push(Check::value(
                &format!("fig13a.afc_gc_vs_{b}"),
                &format!("GC time (die time of GC's operations) of AFC against {}", label(b)),
                paper,
                pct(afc.gc_s, r.gc_s),
                Unit::Percent,
            ));
        }
    }
    for (b, paper) in [("bpcc", P::BPCC_GC_SHARE_OVER), ("scc", P::SCC_GC_SHARE_OVER)] {
        if let Some(r) = base(params, f, b) {
            v.push(Check::at_least(
                &format!("fig13a.{b}_gc_share"),
                &format!("{}: GC's share of the flash's die time", label(b)),
                paper,
                r.gc_share_pct(),
                Unit::Percent,
            ));
        }
    }
    let rec: Vec<(&str, f64)> = PROTOCOLS
        .iter()
        .filter_map(|p| Some((p.label, f.recovery(p.name)?.time_ms)))
        .collect();
    if rec.len() == PROTOCOLS.len() {
        let slowest = ordering(&rec).split(" > ").next().unwrap_or_default().to_string();
        v.push(Check::order(
            "fig13b.slowest",
            "the protocol whose recovery after a power cut takes longest",
            "AFC",
            &slowest,
        ));
        let get = |l: &str| rec.iter().find(|(n, _)| *n == l).map_or(0.0, |x| x.1);
        let others = (get("BPCC") + get("SCC")) / 2.0;
        v.push(Check::value(
            "fig13b.cfc_comparable",
            "CFC's recovery time over the mean of BPCC's and SCC's (\"comparable\" read as 1.0)",
            1.0,
            crate::fmt::ratio(get("CFC"), others),
            Unit::Factor,
        ));
    }
}

/// The ordering of CFC and AFC at each delta, as "AFC > CFC at ..., CFC >
/// AFC at ...": the paper's crossing is "greater than 15 percent".
pub fn crossing(params: &Params, f: &Figures) -> String {
    let (mut afc, mut cfc) = (Vec::new(), Vec::new());
    for &d in &params.deltas {
        if let Some(l) = lead(params, f, "cfc", "afc", d) {
            if l > 0.0 {
                cfc.push(d)
            } else {
                afc.push(d)
            }
        }
    }
    let list = |v: &[u32]| v.iter().map(|d| format!("{d}%")).collect::<Vec<_>>().join(", ");
    format!("AFC >= CFC at delta {}; CFC > AFC at {}", list(&afc), list(&cfc))
}

/// The paper's crossing on the run's deltas.
pub fn paper_crossing(params: &Params) -> String {
    let (afc, cfc): (Vec<u32>, Vec<u32>) = params.deltas.iter().partition(|&&d| d <= P::DELTA_CROSSING);
    let list = |v: &[u32]| v.iter().map(|d| format!("{d}%")).collect::<Vec<_>>().join(", ");
    format!("AFC >= CFC at delta {}; CFC > AFC at {}", list(&afc), list(&cfc))
}

/// Whether `y` rises or falls from the first delta to the last.
pub fn trend(params: &Params, f: &Figures, name: &str, y: fn(&Run) -> f64) -> String {
    let (lo, hi) = (params.deltas[0], *params.deltas.last().expect("deltas"));
    match (at(params, f, name, lo), at(params, f, name, hi)) {
        (Some(a), Some(b)) if y(&b) > y(&a) => "rises".into(),
        (Some(_), Some(_)) => "falls".into(),
        _ => "-".into(),
    }
}

/// Fig. 14: CFC's leads at delta 1 and 50, the crossing, the trends, and
/// GC per commit's growth.
fn fig14(params: &Params, f: &Figures, v: &mut Vec<Check>) {
    for (b, d, paper) in [
        ("bpcc", P::DELTA_LOW, P::CFC_OVER_BPCC_LOW),
        ("bpcc", P::DELTA_HIGH, P::CFC_OVER_BPCC_HIGH),
        ("scc", P::DELTA_LOW, P::CFC_OVER_SCC_LOW),
        ("scc", P::DELTA_HIGH, P::CFC_OVER_SCC_HIGH),
    ] {
        if let Some(m) = lead(params, f, "cfc", b, d) {
            v.push(Check::value(
                &format!("fig14a.cfc_over_{b}_delta{d}"),
                &format!("throughput of CFC over {} at delta {d}%", label(b)),
                paper,
                m,
                Unit::Percent,
            ));
        }
    }
    v.push(Check::order(
        "fig14a.crossing",
        "which of CFC and AFC is faster at each delta (the paper: CFC above beyond 15%)",
        &paper_crossing(params),
        &crossing(params, f),
    ));
    for p in PROTOCOLS {
        let paper = if p.name == "cfc" { "rises" } else { "falls" };
        v.push(Check::order(
            &format!("fig14a.trend.{}", p.name),
            &format!(
                "{}'s throughput from the first delta to the last (the paper: all fall but CFC)",
                p.label
            ),
            paper,
            &trend(params, f, p.name, |r| r.throughput),
        ));
    }
    for (b, paper) in [("bpcc", P::BPCC_GC_PER_COMMIT_GROWTH), ("scc", P::SCC_GC_PER_COMMIT_GROWTH)] {
        if let (Some(lo), Some(hi)) = (at(params, f, b, P::DELTA_LOW), at(params, f, b, P::DELTA_HIGH)) {
            v.push(Check::value(
                &format!("fig14b.{b}_gc_per_commit_growth"),
                &format!("{}: GC time per committed transaction, delta 1% to 50%", label(b)),
                paper,
                pct(hi.gc_ms_per_commit(), lo.gc_ms_per_commit()),
                Unit::Percent,
            ));
        }
    }
}

/// Table 3: each protocol's tables at 32 GB. The paper gives CFC and AFC
/// the same figure, and ours share their tables (one code path): one check
/// for both while they are equal.
fn table3(f: &Figures, v: &mut Vec<Check>) {
    let mb = |name: &str| f.memory.iter().find(|m| m.protocol == name).map(|m| m.mb);
    let same = mb("afc").is_some() && mb("afc") == mb("cfc");
    for (name, paper) in P::TABLE3_MB {
        if name == "afc" && same {
            continue;
        }
        if let Some(m) = f.memory.iter().find(|m| m.protocol == name) {
            let who = if name == "cfc" && same { "CFC (= AFC)" } else { label(name) };
            v.push(Check::value(
                &format!("table3.{name}"),
                &format!("{who}: memory of its tables at 32 GB, MB"),
                paper,
                m.mb,
                Unit::Ratio,
            ));
        }
    }
}

/// What holds by construction: CFC's abort programs nothing; a commit
/// clears one flag (CFC, AFC); no page takes more programs than the NAND's
/// NOP.
fn structural(params: &Params, f: &Figures, v: &mut Vec<Check>) {
    if let Some((_, n)) = f.abort_programs.iter().find(|(p, _)| p == "cfc") {
        v.push(Check::structural(
            "structural.cfc_abort_programs",
            "CFC: flash programs (whole and partial) of one abort",
            0.0,
            *n as f64,
            Unit::Count,
        ));
    }
    for name in ["cfc", "afc"] {
        if let Some(r) = base(params, f, name) {
            v.push(Check::structural(
                &format!("structural.{name}_partial_programs_per_commit"),
                &format!("{}: partial programs per commit (GC's apart)", label(name)),
                1.0,
                r.partial_programs_per_commit(),
                Unit::Ratio,
            ));
        }
    }
    let nop = params.preset().geometry.nop as f64;
    let most = f.runs.iter().map(|r| r.max_programs_per_page).max().unwrap_or(0);
    v.push(Check::structural(
        "structural.programs_per_page",
        "the most programs any page took since its erase, every run from its format (at most the NOP, Table 2's level 2)",
        nop,
        most as f64,
        Unit::Count,
    ));
}
