//! The terminal's tables of `reproduce mobius`, one per figure of the paper
//! (the checks follow, printed by the flow).

use super::{paper, Interface, Pattern, Report};
use crate::terminal::table;
use crate::wrapln;

/// Fig. 7's rows for `pattern`: one per interface, a latency per size.
pub fn fig7_rows(r: &Report, pattern: Pattern) -> (Vec<String>, Vec<Vec<String>>) {
    let mut h = vec![format!("Fig. 7 ({}): mean latency, us", pattern.key())];
    h.extend(r.params.sizes.iter().map(|s| format!("{s} pages")));
    let rows = Interface::ALL
        .iter()
        .map(|&i| {
            let mut row = vec![i.label().to_string()];
            row.extend(r.params.sizes.iter().map(|&s| {
                r.figures
                    .point(i.key(), pattern.key(), s)
                    .map_or("-".into(), |p| format!("{:.0}", p.latency_us))
            }));
            row
        })
        .collect();
    (h, rows)
}

/// Fig. 8's rows: bandwidth at the largest size, both patterns, and the
/// costs behind it.
pub fn fig8_rows(r: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let n = r.params.sizes.iter().copied().max().unwrap_or(0);
    let h = vec![
        format!("Fig. 8: {n}-page writes"),
        "random MB/s".into(),
        "sequential MB/s".into(),
        "programs per page (random)".into(),
        "checkpoints (random / sequential)".into(),
        "translation reads per page (random / sequential)".into(),
    ];
    let rows = Interface::ALL
        .iter()
        .map(|&i| {
            let pt = |p: Pattern| r.figures.point(i.key(), p.key(), n);
            let (rd, sq) = (pt(Pattern::Random), pt(Pattern::Sequential));
            vec![
                i.label().to_string(),
                rd.map_or("-".into(), |p| format!("{:.1}", p.bandwidth_mb_s)),
                sq.map_or("-".into(), |p| format!("{:.1}", p.bandwidth_mb_s)),
                rd.map_or("-".into(), |p| format!("{:.2}", p.programs_per_page)),
                match (rd, sq) {
                    (Some(a), Some(b)) => format!("{} / {}", a.checkpoints, b.checkpoints),
                    _ => "-".into(),
                },
                match (rd, sq) {
                    (Some(a), Some(b)) => format!("{:.2} / {:.2}", a.map_reads_per_page, b.map_reads_per_page),
                    _ => "-".into(),
                },
            ]
        })
        .collect();
    (h, rows)
}

/// Fig. 9's rows: per workload (TPC-C, then Filebench's), one per run, its
/// throughput against Atomic-Write's.
pub fn fig9_rows(r: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let h = [
        "Fig. 9: workload",
        "run",
        "transactions per simulated s",
        "against Atomic-Write",
        "Filebench ops per simulated s",
        "commit latency, us",
        "flash programs",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut rows = Vec::new();
    for (workload, runs) in super::checks::fig9_workloads(&r.figures) {
        let aw = super::checks::tps_of(runs, "atomic-write");
        let bars = r.figures.filebench(workload);
        for &(k, _, _, name) in super::tpcc::FIG9.iter() {
            let Some(x) = runs.iter().find(|x| x.key == k) else { continue };
            rows.push(vec![
                workload.to_string(),
                name.to_string(),
                format!("{:.1}", x.tps),
                format!("{:+.1}%", crate::fmt::pct(x.tps, aw)),
                bars.map_or("-".into(), |b| format!("{:.0}", b.ops_per_s(k))),
                format!("{:.0}", x.commit_mean_us),
                crate::fmt::thousands(x.flash_programs),
            ]);
        }
    }
    (h, rows)
}

/// Fig. 10's rows: one per protocol, its write amplification and where the
/// writes went.
pub fn fig10_rows(r: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let h = [
        "Fig. 10: the TPC-C trace",
        "write amplification",
        "host writes (journal)",
        "flash programs",
        "GC copies",
        "checkpoint pages",
        "protocol pages (inodes, commit pages)",
        "commits",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = super::tpcc::PROTOCOLS
        .iter()
        .filter_map(|&(p, name)| r.figures.wa_run(p).map(|x| (name, x)))
        .map(|(name, x)| {
            vec![
                name.to_string(),
                format!("{:.3}", x.write_amplification),
                format!(
                    "{} ({})",
                    crate::fmt::thousands(x.host_writes),
                    crate::fmt::thousands(x.journal_writes)
                ),
                crate::fmt::thousands(x.flash_programs),
                crate::fmt::thousands(x.gc_copies),
                crate::fmt::thousands(x.map_writes),
                crate::fmt::thousands(x.protocol_meta_writes),
                crate::fmt::thousands(x.commits),
            ]
        })
        .collect();
    (h, rows)
}

/// Fig. 11's rows: one per protocol and zone, the recovery and its parts.
pub fn fig11_rows(r: &Report) -> (Vec<String>, Vec<Vec<String>>) {
    let h = [
        "Fig. 11: recovery after",
        "protocol",
        "recovery ms",
        "load ms",
        "log and zone scan ms",
        "roll-forward ms",
        "seal ms",
        "other ms (ring erase counts)",
        "pages read",
        "checkpoints during the writes",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let rows = r
        .figures
        .recovery
        .iter()
        .map(|x| {
            vec![
                format!("{} MiB written", x.zone_mib),
                super::recovery::PROTOCOLS
                    .iter()
                    .find(|p| p.0 == x.protocol)
                    .map_or(x.protocol.clone(), |p| p.1.to_string()),
                format!("{:.1}", x.recovery_ms),
                format!("{:.1}", x.load_ms),
                format!("{:.1}", x.log_ms),
                format!("{:.1}", x.scan_ms),
                format!("{:.1}", x.seal_ms),
                format!("{:.1}", x.other_ms),
                crate::fmt::thousands(x.pages_read),
                x.checkpoints_before.to_string(),
            ]
        })
        .collect();
    (h, rows)
}

pub fn print(r: &Report) {
    let p = &r.params;
    wrapln!("device (Figs. 7, 8): {}, metadata only", p.head.device);
    wrapln!("scaled down:");
    for s in &p.scaled_down {
        wrapln!("  - {s}");
    }
    wrapln!(
        "times are simulated (device clock); {} compound writes per point, random within {} logical pages (5 GB)",
        p.iterations,
        p.random_range_pages
    );
    for pattern in Pattern::ALL {
        let (h, rows) = fig7_rows(r, pattern);
        println!("{}", table(h, rows));
    }
    wrapln!(
        "paper, Fig. 7: {}; {}; {}",
        paper::FIG7_ASWRITE_BEST,
        paper::FIG7_DFTL_VS_DWRITE,
        paper::FIG7_SWRITE_VS_AIO
    );
    let (h, rows) = fig8_rows(r);
    println!("{}", table(h, rows));
    wrapln!(
        "paper, Fig. 8: {} (the board's {} MB/s); this preset's bound: {:.1} MB/s (every die programming, or the channels)",
        paper::FIG8_ASWRITE,
        paper::FIG8_PLATFORM_MB_S,
        p.max_write_mb_s
    );
    if let Some(w) = &r.figures.tps_workload {
        wrapln!(
            "Fig. 9's device: the 4 KiB flash at 1 GiB, metadata only, {}% of its logical pages written first; the trace: TPC-C on SQLite, {} transactions by {} clients, {} device transactions of {:.1} pages on average",
            p.fill_pct, w.tpcc_transactions, p.tpcc.clients, w.device_transactions, w.tx_pages_mean
        );
    }
    for b in &r.figures.filebench {
        let w = &b.workload;
        wrapln!(
            "Fig. 9's {}: Filebench's personality on our file system (one device transaction per fsync), {} loops, {} flowops, {} fsyncs; {} device transactions of {:.1} pages on average (at most {}), {} trace operations, replayed by {} clients",
            w.personality, w.report.loops, w.report.flowops, w.report.fsyncs, w.device_transactions, w.tx_pages_mean, w.tx_pages_max, w.trace_ops, p.filebench.clients
        );
    }
    let (h, rows) = fig9_rows(r);
    println!("{}", table(h, rows));
    wrapln!(
        "paper, Fig. 9: A-SWRITE up to +{}% over Atomic-Write; {}; {}",
        paper::FIG9_ASWRITE_OVER_AW_PCT,
        paper::FIG9_SSWRITE_SIMILAR,
        paper::FIG9_FILEBENCH_AW_ABOVE
    );
    if let Some(w) = &r.figures.wa_workload {
        wrapln!(
            "Fig. 10's device: {}, metadata only, {}% of its logical pages written first; the trace: TPC-C on SQLite, {} transactions by {} clients, {} device transactions of {:.1} pages on average",
            p.wa_device, p.fill_pct, w.tpcc_transactions, p.tpcc.clients, w.device_transactions, w.tx_pages_mean
        );
    }
    let (h, rows) = fig10_rows(r);
    println!("{}", table(h, rows));
    wrapln!(
        "paper, Fig. 10: {}; {}",
        paper::FIG10_NOT_ENLARGED,
        paper::FIG10_BETTER_THAN_LIGHTTX
    );
    wrapln!("Fig. 11's device: {}, metadata only", p.recovery_device);
    let (h, rows) = fig11_rows(r);
    println!("{}", table(h, rows));
    wrapln!(
        "paper, Fig. 11: Möbius {}x faster than LightTx at a 4 GB zone; {}",
        paper::FIG11_MOBIUS_VS_LIGHTTX,
        paper::FIG11_FASTEST
    );
}
