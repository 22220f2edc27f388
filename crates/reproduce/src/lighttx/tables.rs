//! The tables of `reproduce lighttx` that the terminal and the HTML report
//! both show: throughput per level (Fig. 5) and per abort ratio (Figs. 6,
//! 7), recovery time and mapping persistence per zone size (Figs. 8, 9).

use super::results::Run;
use super::{label, Report};
use crate::fmt::thousands;
use txftl_host::replay::Isolation;

/// Fig. 5 rows: protocol, then throughput per level ("-" where it offers none).
pub fn fig5_rows(r: &Report) -> Vec<Vec<String>> {
    let z0 = r.params.zone_blocks_default;
    r.params
        .protocols
        .iter()
        .map(|p| {
            let mut row = vec![label(&p.protocol).to_string()];
            for level in Isolation::NAMES {
                row.push(
                    r.figures
                        .run(&p.protocol, level, 0, (p.protocol == "lighttx").then_some(z0))
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
    r.params
        .protocols
        .iter()
        .map(|p| {
            let mut row = vec![label(&p.protocol).to_string()];
            for &z in &r.params.zone_blocks {
                let x = if p.protocol == "lighttx" {
                    r.figures.recovery_of("lighttx", Some(z))
                } else {
                    r.figures.recovery_of(&p.protocol, None)
                };
                row.push(x.map_or("-".into(), |x| {
                    format!("{:.3} s ({} reads)", x.recovery_s, thousands(x.report.flash_reads))
                }));
            }
            row
        })
        .collect()
}

pub fn fig9_rows(r: &Report) -> Vec<Vec<String>> {
    r.params
        .protocols
        .iter()
        .map(|p| {
            let mut row = vec![label(&p.protocol).to_string()];
            for &z in &r.params.zone_blocks {
                row.push(
                    r.figures
                        .fig9(&p.protocol, z, r.params.zone_blocks_default)
                        .map_or("-".into(), |x| {
                            format!("{:.2}% ({})", x.mapping_ratio_pct, thousands(x.mapping_writes))
                        }),
                );
            }
            row
        })
        .collect()
}
