//! The HTML report of `reproduce mobius`: Figs. 7 and 8 redrawn from our
//! data (the paper gives no values in its text for them), its tables and its
//! introduction.

use super::print::{fig10_rows, fig11_rows, fig7_rows, fig8_rows, fig9_rows};
use super::{Interface, Pattern, Report};
use crate::html::{self, Bars, Figure, Lines};

pub fn intro(r: &Report) -> String {
    let p = &r.params;
    format!(
        "{}. Devices: {} (Figs. 7, 8); {} (Fig. 11); metadata only. All times simulated (device clock). Scaled down: {}.",
        html::escape(&r.paper),
        html::escape(&p.head.device),
        html::escape(&p.recovery_device),
        html::escape(&p.scaled_down.join("; "))
    )
}

pub fn tables(r: &Report) -> String {
    let mut out = String::new();
    for pattern in Pattern::ALL {
        let (h, rows) = fig7_rows(r, pattern);
        out += &html::table(&h, &rows);
    }
    let (h, rows) = fig8_rows(r);
    out += &html::table(&h, &rows);
    let (h, rows) = fig9_rows(r);
    out += &html::table(&h, &rows);
    let (h, rows) = fig10_rows(r);
    out += &html::table(&h, &rows);
    let (h, rows) = fig11_rows(r);
    out + &html::table(&h, &rows)
}

pub fn figures(r: &Report) -> Vec<Figure> {
    let mut out = Vec::new();
    for pattern in Pattern::ALL {
        out.push(Figure::Lines(Lines {
            title: format!("Fig. 7: {} compound writes, mean latency", pattern.key()),
            x_desc: "pages per compound write".into(),
            y_desc: "latency (us, simulated)".into(),
            series: Interface::ALL
                .iter()
                .map(|&i| {
                    let pts = r
                        .params
                        .sizes
                        .iter()
                        .filter_map(|&s| r.figures.point(i.key(), pattern.key(), s).map(|p| (s as f64, p.latency_us)))
                        .collect();
                    (i.label().to_string(), pts)
                })
                .collect(),
        }));
    }
    let n = r.params.sizes.iter().copied().max().unwrap_or(0);
    for pattern in Pattern::ALL {
        out.push(Figure::Bars(Bars {
            title: format!("Fig. 8: bandwidth of {n}-page {} compound writes", pattern.key()),
            y_desc: "MB/s (simulated)".into(),
            groups: Interface::ALL.iter().map(|i| i.label().to_string()).collect(),
            segments: vec!["bandwidth".into()],
            ours: Interface::ALL
                .iter()
                .map(|&i| vec![r.figures.point(i.key(), pattern.key(), n).map_or(0.0, |p| p.bandwidth_mb_s)])
                .collect(),
            paper: vec![None; Interface::ALL.len()],
            decimals: 1,
        }));
    }
    for (workload, runs) in super::checks::fig9_workloads(&r.figures) {
        let aw = super::checks::tps_of(runs, "atomic-write");
        let tps: Vec<(&str, &str, f64)> = super::tpcc::FIG9
            .iter()
            .filter_map(|&(k, _, _, name)| runs.iter().find(|x| x.key == k).map(|x| (k, name, crate::fmt::ratio(x.tps, aw))))
            .collect();
        out.push(Figure::Bars(Bars {
            title: format!("Fig. 9(b): {workload} transactions per second, normalised to Atomic-Write"),
            y_desc: "x Atomic-Write's".into(),
            groups: tps.iter().map(|t| t.1.to_string()).collect(),
            segments: vec![workload.to_string()],
            ours: tps.iter().map(|t| vec![t.2]).collect(),
            // The paper's one number: A-SWRITE's largest gain, over its three workloads.
            paper: vec![None; tps.len()],
            decimals: 2,
        }));
    }
    let wa: Vec<(&str, f64)> = super::tpcc::PROTOCOLS
        .iter()
        .filter_map(|&(p, name)| r.figures.wa_run(p).map(|x| (name, x.write_amplification)))
        .collect();
    out.push(Figure::Bars(Bars {
        title: "Fig. 10: write amplification of the TPC-C trace, 8 KiB flash".into(),
        y_desc: "flash programs / pages the trace writes".into(),
        groups: wa.iter().map(|w| w.0.to_string()).collect(),
        segments: vec!["write amplification".into()],
        ours: wa.iter().map(|w| vec![w.1]).collect(),
        paper: vec![None; wa.len()],
        decimals: 3,
    }));
    out.push(Figure::Lines(Lines {
        title: "Fig. 11: recovery time against the data written since the last persistence point".into(),
        x_desc: "MiB written since the last persistence point".into(),
        y_desc: "recovery time (ms, simulated)".into(),
        series: super::recovery::PROTOCOLS
            .iter()
            .map(|&(p, name)| {
                let pts = r
                    .params
                    .zones_mib
                    .iter()
                    .filter_map(|&z| r.figures.recovered(p, z).map(|x| (z as f64, x.recovery_ms)))
                    .collect();
                (name.to_string(), pts)
            })
            .collect(),
    }));
    out
}
