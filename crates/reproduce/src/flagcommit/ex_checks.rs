//! Sec. 5.3's checks (Figs. 15 to 19) and tables, from the runs of
//! [`super::ex`]. The abstract's "up to 47 percent" and "up to 83 percent"
//! are Fig. 14a's CFC over BPCC at delta 50% and Fig. 19a's lead over WAL
//! at 4,096 pages, checked there once (one check per measurement).

use super::checks::base;
use super::ex::{lineup, ExPoint, ExRun, ALL, LINEUP, LONG, SHORT};
use super::results::Figures;
use super::{paper as P, Params, Report};
use crate::check::{ordering, Check, Unit};
use crate::fmt::{pct, thousands};

/// Fig. 18's split as the tables name it.
pub fn written_label(w: (u32, u32)) -> String {
    match w {
        ALL => "all".into(),
        (lo, u32::MAX) => format!("> {}", lo.saturating_sub(1)),
        (_, hi) => format!("<= {hi}"),
    }
}

fn default_point(p: &Params) -> ExPoint {
    ExPoint {
        max_c: p.max_c,
        buffer_pages: p.buffer_pages,
        written: ALL,
    }
}

/// `name`'s run at the default point changed by `f`.
fn run<'a>(p: &Params, figs: &'a Figures, name: &str, f: impl Fn(&mut ExPoint)) -> Option<&'a ExRun> {
    let mut point = default_point(p);
    f(&mut point);
    figs.ex_run(name, point)
}

fn label(name: &str) -> &'static str {
    lineup(name).label
}

pub fn checks(p: &Params, f: &Figures, v: &mut Vec<Check>) {
    fig15(p, f, v);
    fig16(p, f, v);
    fig17(p, f, v);
    fig18(p, f, v);
    fig19(p, f, v);
    let most = f.ex_runs.iter().map(|r| r.max_programs_per_page as i64 - r.nop as i64).max();
    if let Some(m) = most {
        v.push(Check::structural(
            "structural.ex_programs_per_page",
            "sec. 5.3: the most programs any page took beyond its NOP (max_c + 1 on the extended protocols), every run",
            0.0,
            m.max(0) as f64,
            Unit::Count,
        ));
    }
}

/// Fig. 15: max_c 2 to 3, and the slight drop above 3.
fn fig15(p: &Params, f: &Figures, v: &mut Vec<Check>) {
    for name in ["cfc-ex", "afc-ex"] {
        let (Some(two), Some(three)) = (run(p, f, name, |x| x.max_c = 2), run(p, f, name, |x| x.max_c = 3)) else {
            continue;
        };
        v.push(Check::value(
            &format!("fig15a.{name}_2_to_3"),
            &format!("{}: throughput, max_c 2 to 3", label(name)),
            P::EX_THROUGHPUT_2_TO_3,
            pct(three.throughput, two.throughput),
            Unit::Percent,
        ));
        v.push(Check::value(
            &format!("fig15b.{name}_restarts_2_to_3"),
            &format!("{}: restart ratio, max_c 2 to 3", label(name)),
            P::EX_RESTARTS_2_TO_3,
            pct(three.restart_ratio, two.restart_ratio),
            Unit::Percent,
        ));
        if let Some(four) = run(p, f, name, |x| x.max_c = 4) {
            let items = [("max_c 3", three.throughput), ("max_c 4", four.throughput)];
            v.push(Check::order(
                &format!("fig15a.{name}_above_3"),
                &format!("{}: throughput at max_c 3 and 4 (the paper: a slight drop above 3)", label(name)),
                "max_c 3 > max_c 4",
                &ordering(&items),
            ));
        }
    }
}

/// Fig. 16: the extended protocols over the basic and over WAL.
fn fig16(p: &Params, f: &Figures, v: &mut Vec<Check>) {
    let wal = run(p, f, "wal", |_| {});
    for (ex, basic, over, gain, over_wal) in [
        ("cfc-ex", "cfc", P::CFC_EX_OVER_CFC, P::CFC_EX_COMMIT_GAIN, P::CFC_EX_OVER_WAL),
        ("afc-ex", "afc", P::AFC_EX_OVER_AFC, P::AFC_EX_COMMIT_GAIN, P::AFC_EX_OVER_WAL),
    ] {
        let Some(x) = run(p, f, ex, |_| {}) else { continue };
        if let Some(b) = base(p, f, basic) {
            v.push(Check::value(
                &format!("fig16a.{ex}_over_{basic}"),
                &format!(
                    "throughput of {} over the basic {} (page locks, force)",
                    label(ex),
                    basic.to_uppercase()
                ),
                over,
                pct(x.throughput, b.throughput),
                Unit::Percent,
            ));
            v.push(Check::value(
                &format!("fig16b.{ex}_commit_gain"),
                &format!(
                    "{}: commit response time's improvement over the basic {}",
                    label(ex),
                    basic.to_uppercase()
                ),
                gain,
                -pct(x.mean_commit_ms, b.mean_commit_ms),
                Unit::Percent,
            ));
        }
        if let Some(w) = wal {
            v.push(Check::value(
                &format!("fig16a.{ex}_over_wal"),
                &format!("throughput of {} over WAL (ARIES on plain)", label(ex)),
                over_wal,
                pct(x.throughput, w.throughput),
                Unit::Percent,
            ));
        }
    }
}

/// Fig. 17: WAL writes more log pages and spends more time in GC.
fn fig17(p: &Params, f: &Figures, v: &mut Vec<Check>) {
    let Some(w) = run(p, f, "wal", |_| {}) else { return };
    for name in ["cfc-ex", "afc-ex"] {
        let Some(x) = run(p, f, name, |_| {}) else { continue };
        for (what, id, of) in [
            ("log pages written", "log_pages", ExRun::log_pages_per_commit as fn(&ExRun) -> f64),
            ("GC time", "gc", |r: &ExRun| r.gc_s),
        ] {
            let items = [("WAL", of(w)), (label(name), of(x))];
            v.push(Check::order(
                &format!("fig17.{id}.{name}"),
                &format!("{what}: WAL against {}, larger first", label(name)),
                &format!("WAL > {}", label(name)),
                &ordering(&items),
            ));
        }
    }
}

/// Fig. 18: short and long transactions.
fn fig18(p: &Params, f: &Figures, v: &mut Vec<Check>) {
    for (w, tag, lead, gc) in [
        (SHORT, "short", P::CFC_EX_OVER_WAL_SHORT, P::EX_GC_VS_WAL_SHORT),
        (LONG, "long", P::CFC_EX_OVER_WAL_LONG, P::EX_GC_VS_WAL_LONG),
    ] {
        let Some(wal) = run(p, f, "wal", |x| x.written = w) else { continue };
        if let Some(c) = run(p, f, "cfc-ex", |x| x.written = w) {
            v.push(Check::value(
                &format!("fig18a.cfc-ex_over_wal_{tag}"),
                &format!(
                    "throughput of CFC_ex over WAL, {tag} transactions (pages written {})",
                    written_label(w)
                ),
                lead,
                pct(c.throughput, wal.throughput),
                Unit::Percent,
            ));
        }
        for (i, name) in ["cfc-ex", "afc-ex"].into_iter().enumerate() {
            if let Some(x) = run(p, f, name, |x| x.written = w) {
                v.push(Check::value(
                    &format!("fig18b.{name}_gc_vs_wal_{tag}"),
                    &format!(
                        "GC time per committed transaction of {} against WAL, {tag} transactions",
                        label(name)
                    ),
                    gc[i],
                    pct(x.gc_ms_per_commit(), wal.gc_ms_per_commit()),
                    Unit::Percent,
                ));
            }
        }
    }
}

/// Fig. 19: the buffer from its smallest to its largest size.
fn fig19(p: &Params, f: &Figures, v: &mut Vec<Check>) {
    let (Some(&lo), Some(&hi)) = (p.buffers.first(), p.buffers.last()) else {
        return;
    };
    let at = |name: &str, b: u32| run(p, f, name, |x| x.buffer_pages = b);
    for (i, l) in LINEUP.iter().enumerate() {
        let (Some(a), Some(b)) = (at(l.name, lo), at(l.name, hi)) else {
            continue;
        };
        let rises = if b.throughput > a.throughput { "rises" } else { "falls" };
        v.push(Check::order(
            &format!("fig19a.trend.{}", l.name),
            &format!("{}: throughput from a buffer of {lo} pages to {hi}", l.label),
            "rises",
            rises,
        ));
        v.push(Check::value(
            &format!("fig19b.{}_gc_{lo}_to_{hi}", l.name),
            &format!("{}: GC time, buffer {lo} to {hi} pages", l.label),
            P::GC_256_TO_4096[i],
            pct(b.gc_s, a.gc_s),
            Unit::Percent,
        ));
    }
    for (i, name) in ["cfc-ex", "afc-ex"].into_iter().enumerate() {
        for (b, paper) in [(lo, P::EX_OVER_WAL_256[i]), (hi, P::EX_OVER_WAL_4096)] {
            if let (Some(x), Some(w)) = (at(name, b), at("wal", b)) {
                v.push(Check::value(
                    &format!("fig19a.{name}_over_wal_{b}"),
                    &format!("throughput of {} over WAL, buffer {b} pages", label(name)),
                    paper,
                    pct(x.throughput, w.throughput),
                    Unit::Percent,
                ));
            }
        }
    }
    if let (Some(c), Some(a)) = (at("cfc-ex", hi), at("afc-ex", hi)) {
        let gap = pct(c.throughput, a.throughput).abs();
        let measured = if gap <= 5.0 {
            "meet".to_string()
        } else {
            format!("apart by {gap:.1}%")
        };
        v.push(Check::order(
            "fig19a.ex_converge",
            &format!("CFC_ex and AFC_ex at a buffer of {hi} pages (the paper: they meet above 2,048; read as within 5%)"),
            "meet",
            &measured,
        ));
    }
}

pub type Rows = super::print::Rows;

/// Every run of sec. 5.3, one row each.
pub fn rows(r: &Report) -> Rows {
    let h = [
        "sec. 5.3 (Figs. 15-19)",
        "fill %",
        "max_c",
        "buffer",
        "written",
        "tx/s",
        "commit ms",
        "restart ratio",
        "GC s",
        "GC ms / commit",
        "log pages / commit",
        "commit records",
        "log pages read back",
        "versions read",
        "shared writes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = r
        .figures
        .ex_runs
        .iter()
        .map(|x| {
            vec![
                label(&x.lineup).to_string(),
                x.fill_pct.to_string(),
                if x.lineup == "wal" { "-".into() } else { x.point.max_c.to_string() },
                x.point.buffer_pages.to_string(),
                written_label(x.point.written),
                format!("{:.1}", x.throughput),
                format!("{:.2}", x.mean_commit_ms),
                format!("{:.3}", x.restart_ratio),
                format!("{:.2}", x.gc_s),
                format!("{:.3}", x.gc_ms_per_commit()),
                format!("{:.3}", x.log_pages_per_commit()),
                thousands(x.commit_records),
                thousands(x.log_pages_read_back),
                thousands(x.versions_read),
                thousands(x.shared_writes),
            ]
        })
        .collect();
    (h, rows)
}

/// One sec. 5.3 run's costs in a sentence.
fn costs(x: &ExRun) -> String {
    format!(
        "{} (max_c {}, buffer {}, written {}, fill {}%): {:.0} tx/s, commit {:.2} ms, restart ratio {:.3}; GC {:.2} s ({} victims, {} copies); {} flash reads ({} versions read); log {} records, {} page writes, {} forces, {} commit records, {} pages read back",
        label(&x.lineup),
        x.point.max_c,
        x.point.buffer_pages,
        written_label(x.point.written),
        x.fill_pct,
        x.throughput,
        x.mean_commit_ms,
        x.restart_ratio,
        x.gc_s,
        thousands(x.gc_runs),
        thousands(x.gc_copies),
        thousands(x.flash_reads),
        thousands(x.versions_read),
        thousands(x.log_records),
        thousands(x.log_page_writes),
        thousands(x.log_forces),
        thousands(x.commit_records),
        thousands(x.log_pages_read_back)
    )
}

/// The note of a sec. 5.3 check that differs: every run it reads, costed
/// (the basic protocol's too for Fig. 16). None: not a sec. 5.3 check.
pub fn note(p: &Params, f: &Figures, id: &str) -> Option<String> {
    let sec53 = ["fig15", "fig16", "fig17", "fig18", "fig19"];
    if !sec53.iter().any(|s| id.starts_with(s)) {
        return None;
    }
    let mut names: Vec<&str> = LINEUP.iter().map(|l| l.name).filter(|n| id.contains(n)).collect();
    if names.is_empty() {
        names = LINEUP.iter().map(|l| l.name).collect();
    } else if id.starts_with("fig17") {
        names.push("wal");
    }
    let runs: Vec<String> = f
        .ex_runs
        .iter()
        .filter(|r| names.contains(&r.lineup.as_str()))
        .filter(|r| match &id[..5] {
            "fig15" => r.point.buffer_pages == p.buffer_pages && r.point.written == ALL,
            "fig18" => r.point.written != ALL,
            "fig19" => r.point.max_c == p.max_c && r.point.written == ALL,
            _ => r.point == default_point(p),
        })
        .map(costs)
        .collect();
    let mut s = runs.join("; ");
    if id.starts_with("fig16") {
        let basic = if id.contains("cfc-ex") { "cfc" } else { "afc" };
        if let Some(r) = base(p, f, basic).filter(|_| !id.contains("over_wal")) {
            s += &format!("; {}", super::explain::costs(p, &r));
        }
    }
    Some(s)
}

/// Sec. 5.3's figures: Fig. 15 (max_c), Fig. 16 and Fig. 18 (bars, the
/// paper's leads over WAL beside ours where it states them), Fig. 19
/// (the buffer swept).
pub fn figures(r: &Report) -> Vec<crate::html::Figure> {
    use crate::html::{Bars, Figure, Lines};
    let (p, f) = (&r.params, &r.figures);
    let labels = |names: &[&str]| names.iter().map(|n| label(n).to_string()).collect::<Vec<_>>();
    let fig15 = Figure::Lines(Lines {
        title: "Fig. 15a: throughput against max_c".into(),
        x_desc: "max_c (update slots a page, partial programs a page)".into(),
        y_desc: "committed tx per simulated s".into(),
        series: ["cfc-ex", "afc-ex"]
            .iter()
            .map(|&n| {
                let pts = p
                    .max_cs
                    .iter()
                    .filter_map(|&m| Some((m as f64, run(p, f, n, |x| x.max_c = m)?.throughput)))
                    .collect();
                (label(n).to_string(), pts)
            })
            .collect(),
    });
    let tput = |name: &str, w: (u32, u32)| run(p, f, name, |x| x.written = w).map_or(0.0, |x| x.throughput);
    let wal_lead = |name: &str, w: (u32, u32), paper: Option<f64>| -> (f64, Option<f64>) {
        (crate::fmt::ratio(tput(name, w), tput("wal", w)), paper.map(|v| 1.0 + v / 100.0))
    };
    let fig16 = {
        let rows = [
            wal_lead("cfc-ex", ALL, Some(P::CFC_EX_OVER_WAL)),
            wal_lead("afc-ex", ALL, Some(P::AFC_EX_OVER_WAL)),
            wal_lead("wal", ALL, Some(0.0)),
        ];
        Figure::Bars(Bars {
            title: "Fig. 16a: throughput normalised to WAL".into(),
            y_desc: "throughput / WAL's".into(),
            groups: labels(&["cfc-ex", "afc-ex", "wal"]),
            segments: vec!["ours".into()],
            ours: rows.iter().map(|r| vec![r.0]).collect(),
            paper: rows.iter().map(|r| r.1).collect(),
            decimals: 2,
        })
    };
    let fig18 = {
        let rows = [
            wal_lead("cfc-ex", SHORT, Some(P::CFC_EX_OVER_WAL_SHORT)),
            wal_lead("cfc-ex", LONG, Some(P::CFC_EX_OVER_WAL_LONG)),
            wal_lead("afc-ex", SHORT, None),
            wal_lead("afc-ex", LONG, None),
        ];
        Figure::Bars(Bars {
            title: "Fig. 18a: throughput normalised to WAL, short (pages written <= 10) and long transactions".into(),
            y_desc: "throughput / WAL's".into(),
            groups: vec![
                "CFC_ex short".into(),
                "CFC_ex long".into(),
                "AFC_ex short".into(),
                "AFC_ex long".into(),
            ],
            segments: vec!["ours".into()],
            ours: rows.iter().map(|r| vec![r.0]).collect(),
            paper: rows.iter().map(|r| r.1).collect(),
            decimals: 2,
        })
    };
    let buffer_lines = |title: &str, y: &str, of: fn(&ExRun) -> f64| {
        Figure::Lines(Lines {
            title: title.into(),
            x_desc: "buffer pool, pages".into(),
            y_desc: y.into(),
            series: LINEUP
                .iter()
                .map(|l| {
                    let pts = p
                        .buffers
                        .iter()
                        .filter_map(|&b| Some((b as f64, of(run(p, f, l.name, |x| x.buffer_pages = b)?))))
                        .collect();
                    (l.label.to_string(), pts)
                })
                .collect(),
        })
    };
    vec![
        fig15,
        fig16,
        fig18,
        buffer_lines(
            "Fig. 19a: throughput against the buffer pool",
            "committed tx per simulated s",
            |x| x.throughput,
        ),
        buffer_lines("Fig. 19b: GC time against the buffer pool", "GC s (die time)", |x| x.gc_s),
    ]
}

/// The extended protocols' per-page program histogram against their NOP
/// (max_c + 1), at each max_c.
pub fn programs_rows(r: &Report) -> Rows {
    let (p, f) = (&r.params, &r.figures);
    let most = p.max_cs.iter().max().copied().unwrap_or(p.max_c) as usize + 1;
    let mut h = vec!["sec. 5.3: pages by programs since erase, from the format".to_string(), "NOP".into()];
    h.extend((1..=most).map(|k| format!("{k} or more")));
    let mut rows = Vec::new();
    for name in ["cfc-ex", "afc-ex"] {
        for &m in &p.max_cs {
            let Some(x) = run(p, f, name, |x| x.max_c = m) else { continue };
            let mut row = vec![format!("{} max_c {m}", label(name)), x.nop.to_string()];
            row.extend((0..most).map(|k| x.programs_per_page.get(k).map_or("-".into(), |&n| thousands(n))));
            rows.push(row);
        }
    }
    (h, rows)
}
