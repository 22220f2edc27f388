//! The terminal's tables of `reproduce xftl`, one per table or figure of
//! the paper, ours beside the paper's (the checks follow, printed by the flow).

use super::compare::map_at_flush_line;
use super::results::{elapsed, Figure5, RestartSummary};
use super::tables::{ablation_header, ablation_rows, mode_pair_header, table1_rows, whole_map_table};
use super::{modes, paper, rbj, wal, xftl, Report};
use crate::fmt::count;
use crate::terminal::table;
use crate::wrapln;

pub fn print(r: &Report) {
    let p = &r.params;
    wrapln!("device: {}; X-L2P table {} entries", p.head.device, p.xl2p_entries);
    wrapln!("{}", map_at_flush_line(p.map_at_flush));
    wrapln!("scaled down:");
    for s in &p.scaled_down {
        wrapln!("  - {s}");
    }
    wrapln!(
        "counts are per 1,000 transactions (ours scaled from {}); times are simulated (device clock)",
        p.transactions
    );
    for fig in &r.figures.figure5 {
        let t = table(
            mode_pair_header(&format!("Table 1 (K={}, GC validity {}%)", p.table1_k, fig.validity_pct)),
            table1_rows(p, fig),
        );
        println!("{t}");
    }
    println!("{}", table(ablation_header(p), ablation_rows(p, &r.figures)));
    let (h, rows) = whole_map_table(p, &r.figures);
    println!("{}", table(h, rows));
    for fig in &r.figures.figure5 {
        print_figure5(r, fig);
    }
    wrapln!(
        "paper, Figure 5(b): X-FTL {:.1}x faster than WAL and {:.1}x faster than RBJ",
        paper::FIG5_XFTL_OVER_WAL,
        paper::FIG5_XFTL_OVER_RBJ
    );
    print_table5(&r.figures.table5.summary);
    print_table4(r);
    print_tpcc_modes(r);
}

/// Figure 5 at one validity: elapsed time per mode and K, and X-FTL's speed-ups.
fn print_figure5(r: &Report, fig: &Figure5) {
    let p = &r.params;
    let mut header = vec![format!("Figure 5 ({}% validity): elapsed, simulated s", fig.validity_pct)];
    header.extend(p.ks.iter().map(|k| format!("K={k}")));
    let mut rows = Vec::new();
    let head = &p.head;
    for m in modes() {
        let mut row = vec![format!("{} (device / + host)", m.name())];
        row.extend(p.ks.iter().map(|&k| {
            fig.run(m, k)
                .map_or("-".into(), |x| format!("{:.2} / {:.2}", x.elapsed_s, elapsed(x, head)))
        }));
        rows.push(row);
    }
    let mut row = vec!["X-FTL faster than WAL / RBJ (x, device + host)".to_string()];
    row.extend(
        p.ks.iter()
            .map(|&k| match (fig.run(wal(), k), fig.run(rbj(), k), fig.run(xftl(), k)) {
                (Some(w), Some(b), Some(x)) => format!(
                    "{:.1} / {:.1}",
                    elapsed(w, head) / elapsed(x, head),
                    elapsed(b, head) / elapsed(x, head)
                ),
                _ => "-".into(),
            }),
    );
    rows.push(row);
    println!("{}", table(header, rows));
}

/// Table 5: restart time per mode, the paper's quantity and its parts.
fn print_table5(s: &[RestartSummary]) {
    let mut header = vec!["Table 5: restart (device clock, ms)".to_string()];
    header.extend(s.iter().map(|x| x.mode.name().to_string()));
    let row = |name: &str, g: &dyn Fn(&RestartSummary) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(s.iter().map(g));
        v
    };
    let rows = vec![
        row("paper (SQLite's restart; X-FTL: X-L2P table)", &|x| {
            modes()
                .iter()
                .position(|m| *m == x.mode)
                .map_or("-".into(), |i| format!("{:.1}", paper::TABLE5_MS[i]))
        }),
        row("ours, the same quantity", &|x| format!("{:.2}", x.paper_comparable_ms)),
        row("SQLite's recovery, mean of every cut", &|x| format!("{:.2}", x.sqlite_mean_ms)),
        row("cuts that left SQLite something to recover", &|x| {
            format!("{} of {}", x.cuts_with_recovery, x.cuts)
        }),
        row("X-L2P table load (FTL recovery part)", &|x| format!("{:.2}", x.xl2p_load_mean_ms)),
        row("file-system mount", &|x| format!("{:.2}", x.fs_mount_mean_ms)),
        row("FTL recovery, whole", &|x| format!("{:.2}", x.ftl_recovery_mean_ms)),
        row("integrity and committed state ok", &|x| {
            if x.all_ok { "yes" } else { "NO" }.to_string()
        }),
    ];
    println!("{}", table(header, rows));
}

/// Table 4: transactions per simulated minute per mix, ours beside the paper's.
fn print_table4(r: &Report) {
    let mut header = vec![
        "Table 4: TPC-C, transactions per minute, device time / device + host time".to_string(),
        "mix (NO,P,OS,D,SL %)".into(),
    ];
    for m in ["RBJ", "WAL", "X-FTL"] {
        header.push(format!("{m} ours"));
    }
    header.extend(["WAL paper".into(), "X-FTL paper".into(), "X-FTL vs WAL ours".into(), "paper".into()]);
    let mut rows = Vec::new();
    for (i, mix) in r.figures.tpcc.iter().enumerate() {
        let mut row = vec![mix.name.clone(), format!("{:?}", mix.mix)];
        for m in modes() {
            // With every page in the host's caches a read-only mix spends no
            // device time: its device-only rate is undefined, not 0.
            let device = match mix.runs.iter().find(|x| x.mode == m) {
                Some(x) if x.elapsed_s > 0.0 => count(mix.device_tpm(m)),
                _ => "no device time".into(),
            };
            row.push(format!("{device} / {}", count(mix.tpm(m, &r.params.head))));
        }
        row.push(count(paper::TABLE4_WAL[i]));
        row.push(count(paper::TABLE4_XFTL[i]));
        let (w, x) = (mix.tpm(wal(), &r.params.head), mix.tpm(xftl(), &r.params.head));
        row.push(if w > 0.0 {
            format!("{:+.1}%", 100.0 * (x / w - 1.0))
        } else {
            "-".into()
        });
        row.push(format!("{:+.1}%", 100.0 * (paper::TABLE4_XFTL[i] / paper::TABLE4_WAL[i] - 1.0)));
        rows.push(row);
    }
    println!("{}", table(header, rows));
}

/// TPC-C per mode: New-Orders, host pages and flash programs per transaction, consistency.
fn print_tpcc_modes(r: &Report) {
    let mut header = vec!["TPC-C per mode (ours)".to_string()];
    for mix in &r.figures.tpcc {
        header.push(mix.name.clone());
    }
    let mut rows = Vec::new();
    for m in modes() {
        let mut row = vec![format!(
            "{}: New-Orders per sim. minute / host pages per tx / flash programs per tx / consistency",
            m.name()
        )];
        for mix in &r.figures.tpcc {
            row.push(mix.runs.iter().find(|x| x.mode == m).map_or("-".into(), |x| {
                let n = x.units.max(1) as f64;
                format!(
                    "{} / {:.1} / {:.1} / {}",
                    count(x.new_orders_per_sim_minute().unwrap_or(0.0)),
                    x.host.host_page_writes() as f64 / n,
                    (x.device.flash_programs + x.device.flash_partial_programs) as f64 / n,
                    x.consistency.as_deref().unwrap_or("-")
                )
            }));
        }
        rows.push(row);
    }
    println!("{}", table(header, rows));
}
