//! The tables of `reproduce xftl` that the terminal and the HTML report
//! both show: Table 1 per validity beside the paper's, and its ablation (the
//! other behaviour at a flush).

use super::compare::ModeRun;
use super::params::Params;
use super::results::{factor, host_writes, programs, scale_tx, Figure5, Figures};
use super::{modes, paper};
use crate::fmt::count;
use txftl_sqlite::Mode;

/// Table 1 rows at one validity: ours per mode beside the paper's (at 50%).
pub fn table1_rows(params: &Params, fig: &Figure5) -> Vec<Vec<String>> {
    let k = params.table1_k;
    let modes = modes();
    let paper_here = fig.validity_pct == 50;
    type Get = fn(&ModeRun) -> f64;
    type GetP = fn(&paper::Table1Row) -> f64;
    let rows: [(&str, Get, GetP); 12] = [
        ("host: database page writes", |r| r.host.database_page_writes as f64, |p| p.db),
        (
            "host: journal / WAL page writes",
            |r| (r.host.journal_page_writes + r.host.wal_page_writes) as f64,
            |p| p.journal,
        ),
        (
            "host: file-system metadata writes",
            |r| (r.host.metadata_page_writes + r.host.metadata_journal_writes) as f64,
            |p| p.fs,
        ),
        ("host: total page writes", |r| host_writes(r) as f64, |p| p.total),
        (
            "host: of which rewrites of a page before its fsync",
            |r| r.host.rewrites_before_fsync as f64,
            |_| f64::NAN,
        ),
        (
            "host: rewrites of a dirty page the host page cache absorbed (not sent)",
            |r| r.host.cache_absorbed_writes as f64,
            |_| f64::NAN,
        ),
        ("host: fsync calls", |r| r.host.fsyncs as f64, |p| p.fsyncs),
        ("flash: pages written", |r| programs(r) as f64, |p| p.flash_writes),
        (
            "flash: of which map and superblock pages",
            |r| (r.device.map_writes + r.device.superblock_writes) as f64,
            |_| f64::NAN,
        ),
        ("flash: pages read", |r| r.device.flash_reads as f64, |p| p.flash_reads),
        ("flash: GC runs", |r| r.device.gc_runs as f64, |p| p.gc),
        ("flash: erases", |r| r.device.flash_erases as f64, |p| p.erases),
    ];
    let mut out = Vec::new();
    for (name, get, getp) in rows {
        let mut row = vec![name.to_string()];
        for (i, &m) in modes.iter().enumerate() {
            row.push(fig.run(m, k).map_or("-".into(), |r| count(scale_tx(get(r), params))));
            let pv = getp(&paper::TABLE1[i]);
            row.push(if paper_here && !pv.is_nan() { count(pv) } else { "-".into() });
        }
        out.push(row);
    }
    out.extend(table1_measured_rows(params, fig));
    out
}

/// Table 1's rows past the paper's counts: flash writes per host write
/// (the paper's derived from its counts), victim validity and elapsed time.
fn table1_measured_rows(params: &Params, fig: &Figure5) -> Vec<Vec<String>> {
    let k = params.table1_k;
    let modes = modes();
    let paper_here = fig.validity_pct == 50;
    let mut out = Vec::new();
    let mut row = vec!["flash pages written per host page write".to_string()];
    for (i, &m) in modes.iter().enumerate() {
        row.push(
            fig.run(m, k)
                .map_or("-".into(), |r| format!("{:.2}", programs(r) as f64 / host_writes(r).max(1) as f64)),
        );
        let p = &paper::TABLE1[i];
        row.push(if paper_here {
            format!("{:.2}", p.flash_writes / p.total)
        } else {
            "-".into()
        });
    }
    out.push(row);
    let mut row = vec!["valid pages per GC victim (measured)".to_string()];
    for &m in &modes {
        row.push(
            fig.run(m, k)
                .and_then(|r| r.gc_victim_validity_pct)
                .map_or("-".into(), |v| format!("{v:.1}%")),
        );
        row.push("-".into());
    }
    out.push(row);
    let mut row = vec!["elapsed (simulated)".to_string()];
    for &m in &modes {
        row.push(fig.run(m, k).map_or("-".into(), |r| format!("{:.2} s", r.elapsed_s)));
        row.push("-".into());
    }
    out.push(row);
    out
}

pub fn ablation_header(p: &Params) -> Vec<String> {
    let mut h = vec![format!(
        "Table 1 (K={}, 50%) {}",
        p.table1_k,
        if p.map_at_flush {
            "without the map written at every write barrier (txftl's roll-forward FTL; --map-at-flush off)"
        } else {
            "with the map written at every write barrier (the paper's firmware, sec. 6.3.4)"
        }
    )];
    h.extend(["RBJ", "WAL", "X-FTL"].map(String::from));
    h
}

pub fn ablation_rows(p: &Params, f: &Figures) -> Vec<Vec<String>> {
    let modes = modes();
    let a = |m: Mode| f.table1_ablation.iter().find(|x| x.mode == m);
    let row = |name: &str, g: &dyn Fn(&ModeRun) -> String| {
        let mut v = vec![name.to_string()];
        v.extend(modes.iter().map(|&m| a(m).map_or("-".into(), g)));
        v
    };
    vec![
        row("flash pages written (per 1,000 tx)", &|x| count(scale_tx(programs(x) as f64, p))),
        row("  of which map and superblock pages", &|x| {
            count(scale_tx((x.device.map_writes + x.device.superblock_writes) as f64, p))
        }),
        row("flash pages written per host page write", &|x| format!("{:.2}", factor(x))),
        row("GC runs / erases (per 1,000 tx)", &|x| {
            format!(
                "{} / {}",
                count(scale_tx(x.device.gc_runs as f64, p)),
                count(scale_tx(x.device.flash_erases as f64, p))
            )
        }),
        row("elapsed (simulated)", &|x| format!("{:.2} s", x.elapsed_s)),
    ]
}

/// The variant with the whole map at every barrier (the board's public
/// firmware), per device size: a row per mode and size.
pub fn whole_map_table(p: &Params, f: &Figures) -> (Vec<String>, Vec<Vec<String>>) {
    let h = [
        format!("Table 1 (K={}, 50%), the whole map at every barrier (variant)", p.table1_k),
        "device (L2P pages)".into(),
        "flash pages written (per 1,000 tx)".into(),
        "map and superblock pages per fsync".into(),
        "elapsed (simulated)".into(),
    ]
    .to_vec();
    let mut rows = Vec::new();
    for w in &f.table1_whole_map {
        for m in modes() {
            let Some(x) = w.runs.iter().find(|x| x.mode == m) else { continue };
            rows.push(vec![
                m.name().to_string(),
                format!("{} MiB ({})", w.capacity_mib, w.l2p_pages),
                count(scale_tx(programs(x) as f64, p)),
                format!(
                    "{:.1}",
                    (x.device.map_writes + x.device.superblock_writes) as f64 / x.host.fsyncs.max(1) as f64
                ),
                format!("{:.2} s", x.elapsed_s),
            ]);
        }
    }
    (h, rows)
}

pub fn mode_pair_header(first: &str) -> Vec<String> {
    let mut h = vec![first.to_string()];
    for m in ["RBJ", "WAL", "X-FTL"] {
        h.push(format!("{m} ours"));
        h.push(format!("{m} paper"));
    }
    h
}
