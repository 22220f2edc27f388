//! The terminal's tables of `reproduce nolgn`, one per figure of the paper
//! (the checks follow, printed by the flow). The figures' rows are built
//! here once and drawn by the terminal and the HTML report alike.

use super::checks::{gc_share, lock_share};
use super::results::BenchRun;
use super::{paper, Report, System, SYNCS};
use crate::fmt::{pct, ratio, thousands};
use crate::terminal::table;
use crate::wrapln;

pub type Rows = (Vec<String>, Vec<Vec<String>>);

fn size_header(title: String, sizes: &[u32]) -> Vec<String> {
    let mut h = vec![title];
    h.extend(
        sizes
            .iter()
            .map(|&s| if s >= 1024 { format!("{} KiB", s / 1024) } else { format!("{s} B") }),
    );
    h
}

/// A per-size table at `sync`: one row per system, `cell` of its run
/// against Base-WAL's at the same size.
fn per_size(r: &Report, sync: &str, title: String, cell: impl Fn(&BenchRun, &BenchRun) -> String) -> Rows {
    let h = size_header(title, &r.params.sizes);
    let rows = System::ALL
        .iter()
        .map(|&s| {
            let mut row = vec![s.label().to_string()];
            row.extend(r.params.sizes.iter().map(|&size| {
                match (
                    r.figures.bench_run(s.key(), sync, size),
                    r.figures.bench_run(System::BaseWal.key(), sync, size),
                ) {
                    (Some(x), Some(b)) => cell(x, b),
                    _ => "-".into(),
                }
            }));
            row
        })
        .collect();
    (h, rows)
}

/// Fig. 6: flash page writes, normalised to Base-WAL (the count under it).
pub fn fig6_rows(r: &Report, sync: &str) -> Rows {
    per_size(r, sync, format!("Fig. 6 ({sync}): flash page writes / Base-WAL's"), |x, b| {
        format!(
            "{:.2} ({})",
            ratio(x.flash_programs as f64, b.flash_programs as f64),
            thousands(x.flash_programs)
        )
    })
}

/// A cell of a figure judged on device + host time: the ratio of `x`'s to
/// Base-WAL's figure, `x`'s figure, and the ratio on device time alone.
fn timed_cell((x, base): (f64, f64), (x_device, base_device): (f64, f64)) -> String {
    format!("{:.2} ({x:.0}; {:.2})", ratio(x, base), ratio(x_device, base_device))
}

/// Fig. 7: overwrites per second of device + host time, normalised to
/// Base-WAL, and the same on device time alone.
pub fn fig7_rows(r: &Report, sync: &str) -> Rows {
    let head = &r.params.head;
    per_size(
        r,
        sync,
        format!("Fig. 7 ({sync}): throughput / Base-WAL's, device + host (ops/s; device alone)"),
        |x, b| timed_cell((x.ops_per_s(head), b.ops_per_s(head)), (x.ops_per_sim_s, b.ops_per_sim_s)),
    )
}

/// Fig. 8: mean overwrite latency on device + host time, normalised to
/// Base-WAL, and the same on device time alone.
pub fn fig8_rows(r: &Report, sync: &str) -> Rows {
    let head = &r.params.head;
    per_size(
        r,
        sync,
        format!("Fig. 8 ({sync}): latency / Base-WAL's, device + host (mean us; device alone)"),
        |x, b| timed_cell((x.latency_us(head), b.latency_us(head)), (x.latency_mean_us, b.latency_mean_us)),
    )
}

/// Fig. 9: NoLgn-FTL's flash page writes split by source, percent.
pub fn fig9_rows(r: &Report, sync: &str) -> Rows {
    let h = vec![
        format!("Fig. 9 ({sync}): NoLgn-FTL, value size"),
        "host %".into(),
        "GC migration %".into(),
        "of which lock-induced %".into(),
        "FTL metadata %".into(),
        "GC runs".into(),
        "locked victims skipped".into(),
        "P2P peak (device's so far)".into(),
    ];
    let rows = r
        .params
        .sizes
        .iter()
        .filter_map(|&s| r.figures.bench_run(System::NoLgn.key(), sync, s))
        .map(|x| {
            let t = x.flash_programs.max(1) as f64;
            vec![
                format!("{} B", x.value_size),
                format!("{:.1}", 100.0 * x.host_writes as f64 / t),
                format!("{:.1}", gc_share(x)),
                format!("{:.2}", lock_share(x)),
                format!("{:.1}", 100.0 * x.ftl_programs as f64 / t),
                thousands(x.gc_runs),
                thousands(x.gc_victims_skipped),
                thousands(x.p2p_peak),
            ]
        })
        .collect();
    (h, rows)
}

/// What each system wrote, summed over the sizes at `sync`.
pub fn costs_rows(r: &Report, sync: &str) -> Rows {
    let h = [
        "costs: system",
        "database pages",
        "WAL pages",
        "FS metadata pages",
        "fsyncs",
        "pages remapped",
        "GC copies",
        "programs at commit",
        "integrity",
    ]
    .iter()
    .enumerate()
    .map(|(i, s)| {
        if i == 0 {
            format!("{s} ({sync}, all sizes)")
        } else {
            s.to_string()
        }
    })
    .collect();
    let rows = System::ALL
        .iter()
        .map(|&s| {
            let t = r.figures.totals(s.key(), sync);
            vec![
                s.label().to_string(),
                thousands(t.db_page_writes),
                thousands(t.wal_page_writes),
                thousands(t.fs_metadata_writes),
                thousands(t.fsyncs),
                thousands(t.remapped_pages),
                thousands(t.gc_copies),
                thousands(t.commit_programs),
                if t.intact { "ok".into() } else { "FAILED".into() },
            ]
        })
        .collect();
    (h, rows)
}

/// Fig. 10: YCSB throughput per workload, normalised to Base-WAL.
pub fn fig10_rows(r: &Report) -> Rows {
    let head = &r.params.head;
    let mut h = vec!["Fig. 10 (NORMAL): YCSB ops/s / Base-WAL's, device + host (ops/s; device alone)".to_string()];
    h.extend(super::ycsb::WORKLOADS.iter().map(|w| w.name().to_string()));
    let rows = System::ALL
        .iter()
        .map(|&s| {
            let mut row = vec![s.label().to_string()];
            row.extend(super::ycsb::WORKLOADS.iter().map(|w| {
                match (
                    r.figures.ycsb_run(s.key(), w.name()),
                    r.figures.ycsb_run(System::BaseWal.key(), w.name()),
                ) {
                    // No time at all: no throughput.
                    (Some(x), _) if x.elapsed_s(head) <= 0.0 => "no time".into(),
                    // No device time: the device-alone ratio is not defined.
                    (Some(x), Some(b)) if x.sim_s <= 0.0 || b.sim_s <= 0.0 => format!(
                        "{:.2} ({:.0}; no device time)",
                        ratio(x.ops_per_s(head), b.ops_per_s(head)),
                        x.ops_per_s(head)
                    ),
                    (Some(x), Some(b)) => timed_cell((x.ops_per_s(head), b.ops_per_s(head)), (x.ops_per_sim_s, b.ops_per_sim_s)),
                    _ => "-".into(),
                }
            }));
            row
        })
        .collect();
    (h, rows)
}

/// Fig. 11: tpmC per free-space level, and the change against Base-WAL.
pub fn fig11_rows(r: &Report) -> Rows {
    let head = &r.params.head;
    let mut h = vec!["Fig. 11 (NORMAL): TPC-C tpmC, device + host (against Base-WAL; device alone)".to_string()];
    h.extend(r.params.free_pct.iter().map(|f| format!("{f}% free")));
    let rows = System::ALL
        .iter()
        .map(|&s| {
            let mut row = vec![s.label().to_string()];
            row.extend(r.params.free_pct.iter().map(|&free| {
                match (r.figures.tpcc_run(s.key(), free), r.figures.tpcc_run(System::BaseWal.key(), free)) {
                    (Some(x), Some(b)) => format!(
                        "{:.0} ({:+.1}%; {:+.1}%), GC {}",
                        x.tpm(head),
                        pct(x.tpm(head), b.tpm(head)),
                        pct(x.tpmc, b.tpmc),
                        thousands(x.gc_copies)
                    ),
                    _ => "-".into(),
                }
            }));
            row
        })
        .collect();
    (h, rows)
}

pub fn aging_rows(r: &Report) -> Rows {
    let h = ["device aged for", "system", "random 4 KiB writes", "logical pages holding data"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let rows = r
        .figures
        .aging
        .iter()
        .map(|a| {
            vec![
                a.experiment.clone(),
                a.system.clone(),
                thousands(a.writes),
                format!("{:.1}%", a.filled_pct),
            ]
        })
        .collect();
    (h, rows)
}

pub fn print(r: &Report) {
    let p = &r.params;
    wrapln!(
        "device: {}, full data; {} logical pages",
        p.head.device,
        thousands(p.logical_pages as u64)
    );
    wrapln!("scaled down: {}", p.scaled_down.join("; "));
    let (h, rows) = aging_rows(r);
    println!("{}", table(h, rows));
    for sync in SYNCS {
        let s = sync.name();
        for (h, rows) in [fig6_rows(r, s), fig7_rows(r, s), fig8_rows(r, s), costs_rows(r, s)] {
            println!("{}", table(h, rows));
        }
    }
    wrapln!(
        "paper, Figs. 6-8 (means over sizes): writes NORMAL {}% / {}% (NoLgn-FTL against Base-WAL / SW-WAL), FULL {}% / {}%; throughput NORMAL +{}% / +{}%, FULL +{}% / +{}%; latency NORMAL {}% / {}%, FULL {}% / {}%",
        paper::FIG6_NORMAL_NOLGN_VS_BASE,
        paper::FIG6_NORMAL_NOLGN_VS_SW,
        paper::FIG6_FULL_NOLGN_VS_BASE,
        paper::FIG6_FULL_NOLGN_VS_SW,
        paper::FIG7_NORMAL_NOLGN_VS_BASE,
        paper::FIG7_NORMAL_NOLGN_VS_SW,
        paper::FIG7_FULL_NOLGN_VS_BASE,
        paper::FIG7_FULL_NOLGN_VS_SW,
        paper::FIG8_NORMAL_NOLGN_VS_BASE,
        paper::FIG8_NORMAL_NOLGN_VS_SW,
        paper::FIG8_FULL_NOLGN_VS_BASE,
        paper::FIG8_FULL_NOLGN_VS_SW
    );
    for sync in SYNCS {
        let (h, rows) = fig9_rows(r, sync.name());
        println!("{}", table(h, rows));
    }
    wrapln!(
        "paper, Fig. 9: GC migration up to {}% of the writes; lock-induced pages up to {}%, {}% on average",
        paper::FIG9_GC_SHARE_MAX,
        paper::FIG9_LOCK_SHARE_MAX,
        paper::FIG9_LOCK_SHARE_MEAN
    );
    let (h, rows) = fig10_rows(r);
    println!("{}", table(h, rows));
    wrapln!(
        "paper, Fig. 10: SW-WAL +{}%, NoLgn-FTL +{}% against Base-WAL (mean over A-F)",
        paper::FIG10_SW_VS_BASE,
        paper::FIG10_NOLGN_VS_BASE
    );
    let (h, rows) = fig11_rows(r);
    println!("{}", table(h, rows));
    wrapln!(
        "paper, Fig. 11: SW-WAL +{}%, NoLgn-FTL +{}% against Base-WAL on average, +{}% at 25% free",
        paper::FIG11_SW_VS_BASE,
        paper::FIG11_NOLGN_VS_BASE,
        paper::FIG11_NOLGN_VS_BASE_AT_25
    );
}
