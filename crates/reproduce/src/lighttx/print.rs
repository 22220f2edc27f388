//! The terminal's tables of `reproduce lighttx`, one per figure of the
//! paper, with the paper's numbers beside (the checks follow, printed by the flow).

use super::tables::{
    abort_cost_header, abort_cost_rows, abort_header, abort_rows, fig5_rows, fig8_rows, fig9_rows, gc_cell, onset_header, onset_rows,
    onset_summary, sweep_checks_header, sweep_checks_rows, sweep_header, sweep_rows, zone_header,
};
use super::{paper, Report};
use crate::fmt::{ratio, thousands};
use crate::terminal::table;
use crate::wrapln;
use txftl_host::replay::Isolation;

pub fn print(r: &Report) {
    let p = &r.params;
    wrapln!("device (Figs. 5-7, 9): {}; Fig. 8: {}", p.head.device, p.recovery_device);
    wrapln!("scaled down:");
    for s in &p.scaled_down {
        wrapln!("  - {s}");
    }
    wrapln!("times are simulated (device clock)");
    wrapln!(
        "fill before the trace: {}% of the logical pages (Figs. 5-9); Figs. 6, 7 also at {}. Why: {}",
        p.precondition_pct,
        p.fills_pct.iter().map(|f| format!("{f}%")).collect::<Vec<_>>().join(", "),
        p.fill_default_reason
    );
    print_trace(r);
    let mut h = vec!["Fig. 5: transactions per simulated s".to_string()];
    h.extend(Isolation::NAMES.iter().map(|s| s.to_string()));
    println!("{}", table(h, fig5_rows(r)));
    wrapln!(
        "paper, Fig. 5: LightTx no-page-conflict +{}% and serializable +{}% over strict",
        paper::FIG5_NPC_OVER_STRICT_PCT,
        paper::FIG5_SER_OVER_STRICT_PCT
    );
    println!(
        "{}",
        table(
            abort_header(r, "Fig. 6: strict, transactions ended / committed per simulated s"),
            abort_rows(r, &|x| format!("{:.1} / {:.1}", x.tx_per_sim_s, x.committed_per_sim_s))
        )
    );
    println!("{}", table(abort_cost_header(r), abort_cost_rows(r)));
    println!(
        "{}",
        table(
            abort_header(r, "Fig. 7: GC overhead, ms (x LightTx's)"),
            abort_rows(r, &|x| {
                let l = r
                    .figures
                    .strict("lighttx", x.abort_pct, p.zone_blocks_default)
                    .map_or(0.0, |l| l.gc_overhead_ms);
                format!("{:.0} ({:.2}x)", x.gc_overhead_ms, ratio(x.gc_overhead_ms, l))
            })
        )
    );
    wrapln!(
        "paper, Figs. 6, 7: LightTx +{}% over Atomic-Write at 0%; GC overhead at 50%: SCC {}x, BPCC {}x LightTx's; Atomic-Write +{}%",
        paper::FIG6_LIGHTTX_OVER_AW_PCT,
        paper::FIG7_SCC_OVER_LIGHTTX,
        paper::FIG7_BPCC_OVER_LIGHTTX,
        paper::FIG7_AW_OVER_LIGHTTX_PCT
    );
    print_sweep(r);
    println!("{}", table(zone_header(r, "Fig. 8: recovery time after a power cut"), fig8_rows(r)));
    wrapln!(
        "paper, Fig. 8: SCC/BPCC {} s, LightTx under {} s, Atomic-Write {} s",
        paper::FIG8_CYCLIC_S,
        paper::FIG8_LIGHTTX_MAX_S,
        paper::FIG8_AW_S
    );
    println!(
        "{}",
        table(zone_header(r, "Fig. 9: mapping persistence writes / host writes"), fig9_rows(r))
    );
    wrapln!(
        "paper, Fig. 9: Atomic-Write {}%, LightTx under {}%, SCC/BPCC 0",
        paper::FIG9_AW_PCT,
        paper::FIG9_LIGHTTX_MAX_PCT
    );
}

/// Figs. 6 and 7 at every fill of the sweep, where GC starts, and the
/// checks at every fill.
fn print_sweep(r: &Report) {
    println!(
        "{}",
        table(
            sweep_header(r, "Fig. 6 by fill: ended / committed tx per simulated s"),
            sweep_rows(r, &|x| format!("{:.1} / {:.1}", x.tx_per_sim_s, x.committed_per_sim_s))
        )
    );
    println!(
        "{}",
        table(
            sweep_header(r, "Fig. 7 by fill: GC copies, overhead (x LightTx's)"),
            sweep_rows(r, &|x| gc_cell(r, x))
        )
    );
    println!("{}", table(onset_header(r), onset_rows(r)));
    wrapln!("{}", onset_summary(r));
    println!("{}", table(sweep_checks_header(r), sweep_checks_rows(r)));
}

/// The recorded trace's shape beside the paper's.
fn print_trace(r: &Report) {
    let w = &r.figures.workload;
    println!(
        "{}",
        table(
            vec!["TPC-C trace (recorded in this run)".into(), "ours".into(), "paper".into()],
            vec![
                vec![
                    "TPC-C transactions run / device transactions".into(),
                    format!("{} / {}", thousands(w.tpcc_transactions), thousands(w.device_transactions)),
                    "-".into()
                ],
                vec!["trace operations".into(), thousands(w.trace_ops), "1,328,700 requests".into()],
                vec![
                    "pages per transaction: mean / max".into(),
                    format!("{:.1} / {}", w.tx_pages_mean, w.tx_pages_max),
                    format!("{} / {}", paper::TX_PAGES_MEAN, paper::TX_PAGES_MAX),
                ],
                vec!["TPC-C consistency".into(), w.consistency.clone(), "-".into()],
            ]
        )
    );
}
