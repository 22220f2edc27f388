//! The terminal's tables of `reproduce flagcommit`, one per figure of the
//! paper (the checks follow, printed by the flow). The rows are built here
//! once and drawn by the terminal and the HTML report alike.

use super::checks::{at, base};
use super::explain::gc_parts;
use super::results::Run;
use super::{paper, Report, PROTOCOLS};
use crate::fmt::thousands;
use crate::terminal::table;
use crate::wrapln;

pub type Rows = (Vec<String>, Vec<Vec<String>>);

fn header(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

/// Figs. 12 and 13a at the default point: one row per protocol.
pub fn fig12_rows(r: &Report) -> Rows {
    let p = &r.params;
    let h = header(&[
        &format!("Figs. 12, 13a (fill {}%, delta {}%)", p.fill_pct, p.abort_pct),
        "tx/s",
        "execution ms",
        "commit ms",
        "restarts",
        "GC s",
        "GC share %",
        "GC ms / commit",
    ]);
    let rows = PROTOCOLS
        .iter()
        .filter_map(|proto| {
            let x = base(p, &r.figures, proto.name)?;
            Some(vec![
                proto.label.to_string(),
                format!("{:.1}", x.throughput),
                format!("{:.2}", x.mean_execution_ms),
                format!("{:.2}", x.mean_commit_ms),
                thousands(x.restarts),
                format!("{:.2}", x.gc_s),
                format!("{:.1}", x.gc_share_pct()),
                format!("{:.3}", x.gc_ms_per_commit()),
            ])
        })
        .collect();
    (h, rows)
}

/// GC's work at the default point: its operations, counted and timed.
pub fn gc_rows(r: &Report) -> Rows {
    let p = &r.params;
    let h = header(&[
        "GC at the default point",
        "victims",
        "copies",
        "planning reads",
        "flag programs (per victim)",
        "s: planning / copies / flags / erases",
        "blocks borrowed",
    ]);
    let rows = PROTOCOLS
        .iter()
        .filter_map(|proto| {
            let x = base(p, &r.figures, proto.name)?;
            let parts = gc_parts(p, &x)
                .iter()
                .map(|(_, s)| format!("{s:.2}"))
                .collect::<Vec<_>>()
                .join(" / ");
            Some(vec![
                proto.label.to_string(),
                thousands(x.gc_runs),
                thousands(x.gc_copies),
                thousands(x.gc_plan_reads),
                format!("{} ({:.2})", thousands(x.gc_flag_programs), x.flag_programs_per_victim()),
                parts,
                thousands(x.blocks_borrowed),
            ])
        })
        .collect();
    (h, rows)
}

/// Fig. 13b: recovery after a power cut at the end of the default run.
pub fn fig13b_rows(r: &Report) -> Rows {
    let h = header(&[
        "Fig. 13b: recovery",
        "ms",
        "flash reads",
        "roll-forward",
        "protocol scan",
        "of which summary pages",
        "spares off summary",
        "live spares reread",
        "other reads",
    ]);
    let rows = PROTOCOLS
        .iter()
        .filter_map(|proto| {
            let x = r.figures.recovery(proto.name)?;
            Some(vec![
                proto.label.to_string(),
                format!("{:.1}", x.time_ms),
                thousands(x.flash_reads),
                thousands(x.pages_scanned),
                thousands(x.protocol_pages_scanned),
                thousands(x.summary_pages_read),
                thousands(x.summary_spare_reads),
                thousands(x.spare_rereads),
                thousands(x.other_reads),
            ])
        })
        .collect();
    (h, rows)
}

/// One row per protocol over a sweep: `cell` of the run at each point.
fn sweep(title: String, points: &[u32], unit: &str, run: impl Fn(&str, u32) -> Option<Run>, cell: fn(&Run) -> String) -> Rows {
    let mut h = vec![title];
    h.extend(points.iter().map(|x| format!("{x}{unit}")));
    let rows = PROTOCOLS
        .iter()
        .map(|proto| {
            let mut row = vec![proto.label.to_string()];
            row.extend(points.iter().map(|&x| run(proto.name, x).map_or("-".into(), |x| cell(&x))));
            row
        })
        .collect();
    (h, rows)
}

/// Fig. 14a: throughput against delta.
pub fn fig14a_rows(r: &Report) -> Rows {
    let p = &r.params;
    sweep(
        format!("Fig. 14a: tx/s by delta (fill {}%)", p.fill_pct),
        &p.deltas,
        "%",
        |n, d| at(p, &r.figures, n, d),
        |x| format!("{:.0}", x.throughput),
    )
}

/// Fig. 14b: GC time per committed transaction against delta.
pub fn fig14b_rows(r: &Report) -> Rows {
    let p = &r.params;
    sweep(
        "Fig. 14b: GC ms per commit by delta".into(),
        &p.deltas,
        "%",
        |n, d| at(p, &r.figures, n, d),
        |x| format!("{:.3}", x.gc_ms_per_commit()),
    )
}

/// The fill sweep: throughput and GC's share against the fill.
pub fn fill_rows(r: &Report) -> Rows {
    let p = &r.params;
    sweep(
        format!("fill sweep (delta {}%): tx/s (GC share %)", p.abort_pct),
        &p.fills,
        "%",
        |n, fill| r.figures.run(n, fill, p.abort_pct).cloned(),
        |x| format!("{:.0} ({:.0})", x.throughput, x.gc_share_pct()),
    )
}

/// Table 3, and the abort's programs.
pub fn table3_rows(r: &Report) -> Rows {
    let h = header(&["Table 3: memory at 32 GB", "ours MB", "paper MB", "programs of one abort"]);
    let rows = PROTOCOLS
        .iter()
        .map(|proto| {
            let ours = r.figures.memory.iter().find(|m| m.protocol == proto.name);
            let paper = paper::TABLE3_MB.iter().find(|(n, _)| *n == proto.name);
            let abort = r.figures.abort_programs.iter().find(|(n, _)| n == proto.name);
            vec![
                proto.label.to_string(),
                ours.map_or("-".into(), |m| format!("{:.2}", m.mb)),
                paper.map_or("-".into(), |(_, v)| format!("{v:.2}")),
                abort.map_or("-".into(), |(_, n)| n.to_string()),
            ]
        })
        .collect();
    (h, rows)
}

/// Block-based flags against page-based, CFC and AFC at the default point.
pub fn flag_rows(r: &Report) -> Rows {
    let h = header(&[
        "flags (default point)",
        "tx/s",
        "partial programs",
        "per commit",
        "GC flag programs (per victim)",
        "GC s",
    ]);
    let mut rows = Vec::new();
    for name in ["cfc", "afc"] {
        let block = base(&r.params, &r.figures, name);
        let page = r.figures.page_flag_run(name).cloned();
        for (kind, x) in [("block-based", block), ("page-based", page)] {
            let Some(x) = x else { continue };
            rows.push(vec![
                format!("{} {kind}", super::protocol(name).label),
                format!("{:.0}", x.throughput),
                thousands(x.partial_programs),
                format!("{:.2}", x.partial_programs_per_commit()),
                format!("{} ({:.2})", thousands(x.gc_flag_programs), x.flag_programs_per_victim()),
                format!("{:.2}", x.gc_s),
            ]);
        }
    }
    (h, rows)
}

/// The per-page program histogram at the default point, against the NOP.
pub fn programs_rows(r: &Report) -> Rows {
    let nop = r.params.preset().geometry.nop;
    let mut h = vec![format!("pages by programs since erase (NOP {nop}), from the format")];
    h.extend((1..=nop).map(|k| format!("{k} or more")));
    let rows = PROTOCOLS
        .iter()
        .filter_map(|proto| {
            let x = base(&r.params, &r.figures, proto.name)?;
            let mut row = vec![proto.label.to_string()];
            row.extend(x.programs_per_page.iter().map(|&n| thousands(n)));
            Some(row)
        })
        .collect();
    (h, rows)
}

/// Every table, in the paper's order.
pub fn all_rows(r: &Report) -> Vec<Rows> {
    vec![
        fig12_rows(r),
        gc_rows(r),
        fig13b_rows(r),
        fig14a_rows(r),
        fig14b_rows(r),
        fill_rows(r),
        table3_rows(r),
        flag_rows(r),
        programs_rows(r),
        super::ex_checks::rows(r),
        super::ex_checks::programs_rows(r),
    ]
}

pub fn print(r: &Report) {
    let p = &r.params;
    wrapln!(
        "device: {}, metadata only; {} logical pages; database {} pages of {} flash pages, {} clients, {} warehouses, buffer {} pages",
        p.head.device,
        thousands(p.logical_pages as u64),
        thousands(p.db_pages as u64),
        p.flash_pages_per_db_page,
        p.clients,
        p.warehouses,
        p.buffer_pages
    );
    wrapln!("scaled down: {}", p.scaled_down.join("; "));
    for (h, rows) in all_rows(r) {
        println!("{}", table(h, rows));
    }
    wrapln!(
        "paper: Fig. 12a AFC +{}% / +{}% and CFC +{}% / +{}% over BPCC / SCC; Fig. 13a AFC's GC time {}% / {}% / {}% against CFC / BPCC / SCC; Fig. 14a CFC over BPCC +{}% to +{}%, over SCC +{}% to +{}% (delta 1 to 50%)",
        paper::AFC_OVER_BPCC,
        paper::AFC_OVER_SCC,
        paper::CFC_OVER_BPCC,
        paper::CFC_OVER_SCC,
        paper::AFC_GC_VS_CFC,
        paper::AFC_GC_VS_BPCC,
        paper::AFC_GC_VS_SCC,
        paper::CFC_OVER_BPCC_LOW,
        paper::CFC_OVER_BPCC_HIGH,
        paper::CFC_OVER_SCC_LOW,
        paper::CFC_OVER_SCC_HIGH
    );
}
