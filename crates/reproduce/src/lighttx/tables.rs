//! The tables of `reproduce lighttx` that the terminal and the HTML report
//! both show: throughput per level (Fig. 5) and per abort ratio (Figs. 6,
//! 7), recovery time and mapping persistence per zone size (Figs. 8, 9).

use super::results::Run;
use super::{has_zones, label, variants, Report};
use crate::fmt::thousands;
use txftl_host::replay::Isolation;

/// The rows of Figs. 5, 8 and 9: the paper's protocols run, then the
/// variants run beside them (a run the device failed shows "-").
fn row_keys(r: &Report) -> Vec<&str> {
    let variants = variants(&r.params).into_iter().map(|v| v.key);
    r.params.protocols.iter().map(|p| p.protocol.as_str()).chain(variants).collect()
}

/// Fig. 5 rows: protocol, then throughput per level ("-" where it offers
/// none, and for a variant, run strict only).
pub fn fig5_rows(r: &Report) -> Vec<Vec<String>> {
    let z0 = r.params.zone_blocks_default;
    row_keys(r)
        .into_iter()
        .map(|p| {
            let mut row = vec![label(p).to_string()];
            for level in Isolation::NAMES {
                row.push(
                    r.figures
                        .run(p, level, 0, has_zones(p).then_some(z0))
                        .map_or("-".into(), |x| format!("{:.1}", x.tx_per_sim_s)),
                );
            }
            row
        })
        .collect()
}

pub fn abort_rows(r: &Report, get: &dyn Fn(&Run) -> String) -> Vec<Vec<String>> {
    let z0 = r.params.zone_blocks_default;
    r.params
        .protocols
        .iter()
        .map(|p| {
            let mut row = vec![label(&p.protocol).to_string()];
            for &a in &r.params.abort_pcts {
                row.push(r.figures.strict(&p.protocol, a, z0).map_or("-".into(), get));
            }
            row
        })
        .collect()
}

pub fn abort_header(r: &Report, first: &str) -> Vec<String> {
    let mut h = vec![first.to_string()];
    h.extend(r.params.abort_pcts.iter().map(|a| format!("{a}% aborts")));
    h
}

pub fn zone_header(r: &Report, first: &str) -> Vec<String> {
    let mut h = vec![first.to_string()];
    h.extend(r.params.zone_blocks.iter().map(|z| format!("zone {z} blocks")));
    h
}

pub fn fig8_rows(r: &Report) -> Vec<Vec<String>> {
    row_keys(r)
        .into_iter()
        .map(|p| {
            let mut row = vec![label(p).to_string()];
            for &z in &r.params.zone_blocks {
                let x = r.figures.recovery_of(p, has_zones(p).then_some(z));
                row.push(x.map_or("-".into(), |x| {
                    format!("{:.3} s ({} reads)", x.recovery_s, thousands(x.report.flash_reads))
                }));
            }
            row
        })
        .collect()
}

pub fn fig9_rows(r: &Report) -> Vec<Vec<String>> {
    row_keys(r)
        .into_iter()
        .map(|p| {
            let mut row = vec![label(p).to_string()];
            for &z in &r.params.zone_blocks {
                row.push(r.figures.fig9(p, z, r.params.zone_blocks_default).map_or("-".into(), |x| {
                    format!("{:.2}% ({})", x.mapping_ratio_pct, thousands(x.mapping_writes))
                }));
            }
            row
        })
        .collect()
}

/// The sweep's header: the fill and the protocol, then the abort ratios.
pub fn sweep_header(r: &Report, first: &str) -> Vec<String> {
    let mut h = vec![first.to_string(), "protocol".to_string()];
    h.extend(r.params.abort_pcts.iter().map(|a| format!("{a}% aborts")));
    h
}

/// The sweep's rows: per fill, per protocol, `get` at every abort ratio
/// ("-" where the run failed).
pub fn sweep_rows(r: &Report, get: &dyn Fn(&Run) -> String) -> Vec<Vec<String>> {
    let p = &r.params;
    let mut rows = Vec::new();
    for &fill in &p.fills_pct {
        for pl in &p.protocols {
            let d = if fill == p.precondition_pct { " (default)" } else { "" };
            let mut row = vec![format!("{fill}%{d}"), label(&pl.protocol).to_string()];
            for &a in &p.abort_pcts {
                row.push(r.figures.swept(&pl.protocol, a, fill).map_or("-".into(), get));
            }
            rows.push(row);
        }
    }
    rows
}

/// A GC overhead beside LightTx's at the same fill and abort ratio:
/// "ms (x LightTx's)", the factor undefined when LightTx's is 0.
pub fn gc_cell(r: &Report, x: &Run) -> String {
    let l = r
        .figures
        .swept("lighttx", x.abort_pct, x.fill_pct)
        .map_or(0.0, |l| l.gc_overhead_ms);
    let times = if l > 0.0 {
        format!("{:.2}x", x.gc_overhead_ms / l)
    } else {
        "undefined".into()
    };
    format!("{} copies, {:.0} ms ({times})", thousands(x.measured.gc_copies), x.gc_overhead_ms)
}

/// GC onset: per fill, per protocol, the GC victims after each prefix of the trace.
pub fn onset_header(r: &Report) -> Vec<String> {
    let mut h = vec!["GC victims without aborts after x% of the trace: fill".to_string()];
    h.extend(r.params.protocols.iter().map(|p| label(&p.protocol).to_string()));
    h
}

pub fn onset_rows(r: &Report) -> Vec<Vec<String>> {
    let p = &r.params;
    p.fills_pct
        .iter()
        .map(|&fill| {
            let d = if fill == p.precondition_pct { " (default)" } else { "" };
            let mut row = vec![format!("{fill}%{d}")];
            for pl in &p.protocols {
                let o = r.figures.gc_onset.iter().find(|o| o.fill_pct == fill && o.protocol == pl.protocol);
                row.push(o.map_or("-".into(), |o| {
                    o.prefixes
                        .iter()
                        .map(|(q, v, _)| format!("{q}%: {}", thousands(*v)))
                        .collect::<Vec<_>>()
                        .join(", ")
                }));
            }
            row
        })
        .collect()
}

/// The checks of Figs. 6 and 7 at every fill.
pub fn sweep_checks_header(r: &Report) -> Vec<String> {
    let mut h = vec!["Figs. 6, 7 checks by fill (paper)".to_string()];
    h.extend(r.params.fills_pct.iter().map(|&f| {
        if f == r.params.precondition_pct {
            format!("fill {f}% (default)")
        } else {
            format!("fill {f}%")
        }
    }));
    h
}

pub fn sweep_checks_rows(r: &Report) -> Vec<Vec<String>> {
    r.figures
        .sweep_checks
        .iter()
        .map(|x| {
            let paper = r.checks.iter().find(|c| c.id == x.id).map_or(String::new(), |c| c.show_paper());
            let mut row = vec![format!("{} ({paper})", x.id)];
            for &fill in &r.params.fills_pct {
                row.push(x.by_fill.iter().find(|c| c.0 == fill).map_or("-".into(), |(_, m, w)| {
                    let v = match w {
                        Some(true) => "yes",
                        Some(false) => "no",
                        None => "not counted",
                    };
                    format!("{m} [{v}]")
                }));
            }
            row
        })
        .collect()
}

/// What an abort saves, per protocol at the default fill: the device time of
/// a commit and an abort request at the largest ratio, the device time per
/// transaction and the GC copies without aborts and at the largest ratio.
pub fn abort_cost_rows(r: &Report) -> Vec<Vec<String>> {
    let p = &r.params;
    let top = super::top_abort(p);
    let fill = p.precondition_pct;
    p.protocols
        .iter()
        .filter_map(|pl| {
            let r0 = r.figures.swept(&pl.protocol, 0, fill)?;
            let r1 = r.figures.swept(&pl.protocol, top, fill)?;
            let per_tx = |x: &Run| 1e3 * x.sim_s / (x.commits + x.aborts).max(1) as f64;
            Some(vec![
                label(&pl.protocol).to_string(),
                format!("{:.3} / {:.3}", r1.commit_mean_ns / 1e6, r1.abort_mean_ns / 1e6),
                format!("{:.3} / {:.3}", per_tx(r0), per_tx(r1)),
                format!("{} / {}", thousands(r0.measured.gc_copies), thousands(r1.measured.gc_copies)),
            ])
        })
        .collect()
}

pub fn abort_cost_header(r: &Report) -> Vec<String> {
    let top = super::top_abort(&r.params);
    vec![
        format!("Fig. 6: what an abort saves (fill {}%)", r.params.precondition_pct),
        format!("commit / abort request at {top}%, ms"),
        format!("device ms per transaction, 0% / {top}%"),
        format!("GC copies, 0% / {top}%"),
    ]
}

/// Where GC starts without aborts at each fill: the first prefix of the
/// trace with a GC victim, the latest over the protocols ("none": no GC).
pub fn onset_summary(r: &Report) -> String {
    let p = &r.params;
    let cells: Vec<String> = p
        .fills_pct
        .iter()
        .map(|&fill| {
            let of: Vec<Option<u32>> = r
                .figures
                .gc_onset
                .iter()
                .filter(|o| o.fill_pct == fill)
                .map(|o| o.first_gc_pct())
                .collect();
            let at = if of.is_empty() || of.iter().any(|x| x.is_none()) {
                "none (for some protocol)".to_string()
            } else {
                format!("by {}% of the trace", of.iter().flatten().max().copied().unwrap_or(0))
            };
            format!("fill {fill}%: {at}")
        })
        .collect();
    format!("GC without aborts runs, for every protocol: {}", cells.join("; "))
}
