//! The checks of `reproduce nolgn`: every number the paper's sec. 4 states
//! that the experiments speak to. The paper's averages are means over its
//! points (value sizes, YCSB workloads, free-space levels) of each point's
//! change against the baseline, in percent; ours are computed the same way.

use super::results::{BenchRun, Figures};
use super::{paper, Params, System};
use crate::fmt::{mean, pct};
use crate::paper::Head;
use crate::{Check, Unit};
use System::{BaseWal, NoLgn, SwWal};

/// Flash page programs of a run (Fig. 6).
pub fn writes(r: &BenchRun, _: &Head) -> f64 {
    r.flash_programs as f64
}
/// Overwrites per second of device + host time (Fig. 7: the paper measured
/// a real host).
pub fn throughput(r: &BenchRun, head: &Head) -> f64 {
    r.ops_per_s(head)
}
/// Mean overwrite latency on device + host time, us (Fig. 8).
pub fn latency(r: &BenchRun, head: &Head) -> f64 {
    r.latency_us(head)
}
/// GC's copies (a greedy choice's and the lock-induced ones) as a share of
/// the flash page programs, percent (Fig. 9).
pub fn gc_share(r: &BenchRun) -> f64 {
    100.0 * r.gc_copies as f64 / (r.flash_programs.max(1)) as f64
}
/// The copies GC made because it skipped a locked block, as a share of
/// the flash page programs, percent (Fig. 9's "additional pages").
pub fn lock_share(r: &BenchRun) -> f64 {
    100.0 * r.gc_skip_extra_copies as f64 / (r.flash_programs.max(1)) as f64
}

/// Per size, `a`'s change against `b` in percent, for `metric`, at `sync`.
pub fn changes(p: &Params, f: &Figures, sync: &str, a: System, b: System, metric: Metric) -> Vec<(u32, f64)> {
    p.sizes
        .iter()
        .filter_map(|&s| {
            let (x, y) = (f.bench_run(a.key(), sync, s)?, f.bench_run(b.key(), sync, s)?);
            Some((s, pct(metric(x, &p.head), metric(y, &p.head))))
        })
        .collect()
}

/// A quantity of one sqlite-bench run, on the run's host model.
pub type Metric = fn(&BenchRun, &Head) -> f64;

pub fn mean_change(p: &Params, f: &Figures, sync: &str, a: System, b: System, metric: Metric) -> f64 {
    mean(changes(p, f, sync, a, b, metric).into_iter().map(|c| c.1))
}

/// NoLgn-FTL's runs at `sync`, in size order.
pub fn nolgn_runs<'a>(p: &Params, f: &'a Figures, sync: &str) -> Vec<&'a BenchRun> {
    p.sizes.iter().filter_map(|&s| f.bench_run(NoLgn.key(), sync, s)).collect()
}

/// The YCSB workloads every system spent time on (device + host): a
/// throughput is defined for each (without a host model, a read-only
/// workload whose pages the host's caches all hold spends none).
pub fn ycsb_timed<'a>(f: &Figures, head: &Head) -> Vec<&'a str> {
    super::ycsb::WORKLOADS
        .iter()
        .map(|w| w.name())
        .filter(|w| {
            System::ALL
                .iter()
                .all(|s| f.ycsb_run(s.key(), w).is_some_and(|r| r.elapsed_s(head) > 0.0))
        })
        .collect()
}

/// YCSB: per workload with a defined throughput ([`ycsb_timed`]), `a`'s
/// throughput change against Base-WAL on device + host time, percent.
pub fn ycsb_changes(f: &Figures, a: System, head: &Head) -> Vec<(String, f64)> {
    ycsb_timed(f, head)
        .into_iter()
        .filter_map(|w| {
            let (x, y) = (f.ycsb_run(a.key(), w)?, f.ycsb_run(BaseWal.key(), w)?);
            Some((w.to_string(), pct(x.ops_per_s(head), y.ops_per_s(head))))
        })
        .collect()
}

/// TPC-C: per free-space level, `a`'s tpmC change against Base-WAL on
/// device + host time, percent.
pub fn tpcc_changes(p: &Params, f: &Figures, a: System) -> Vec<(u32, f64)> {
    p.free_pct
        .iter()
        .filter_map(|&free| {
            let (x, y) = (f.tpcc_run(a.key(), free)?, f.tpcc_run(BaseWal.key(), free)?);
            Some((free, pct(x.tpm(&p.head), y.tpm(&p.head))))
        })
        .collect()
}

/// The sizes' first and last, for the trend claims.
fn ends(p: &Params) -> (u32, u32) {
    (p.sizes.first().copied().unwrap_or(0), p.sizes.last().copied().unwrap_or(0))
}

fn size_name(s: u32) -> String {
    if s >= 1024 {
        format!("{} KiB", s / 1024)
    } else {
        format!("{s} B")
    }
}

/// A check of Figs. 6 to 8: the mean over the sizes of `a`'s change in
/// `metric` against `b`'s, at `sync`.
pub struct MeanCheck {
    pub id: &'static str,
    pub sync: &'static str,
    pub a: System,
    pub b: System,
    /// The paper's mean change, percent.
    pub paper: f64,
    /// What `metric` measures.
    pub quantity: &'static str,
    pub metric: Metric,
}

const fn mean_check(
    id: &'static str,
    sync: &'static str,
    a: System,
    b: System,
    paper: f64,
    quantity: &'static str,
    metric: Metric,
) -> MeanCheck {
    MeanCheck {
        id,
        sync,
        a,
        b,
        paper,
        quantity,
        metric,
    }
}

/// Figs. 6, 7 and 8's checks, in the paper's order.
pub const MEAN_CHECKS: [MeanCheck; 14] = [
    mean_check(
        "fig6.normal.sw_vs_base",
        "NORMAL",
        SwWal,
        BaseWal,
        paper::FIG6_NORMAL_SW_VS_BASE,
        "flash page writes",
        writes,
    ),
    mean_check(
        "fig6.normal.nolgn_vs_base",
        "NORMAL",
        NoLgn,
        BaseWal,
        paper::FIG6_NORMAL_NOLGN_VS_BASE,
        "flash page writes",
        writes,
    ),
    mean_check(
        "fig6.normal.nolgn_vs_sw",
        "NORMAL",
        NoLgn,
        SwWal,
        paper::FIG6_NORMAL_NOLGN_VS_SW,
        "flash page writes",
        writes,
    ),
    mean_check(
        "fig6.full.nolgn_vs_base",
        "FULL",
        NoLgn,
        BaseWal,
        paper::FIG6_FULL_NOLGN_VS_BASE,
        "flash page writes",
        writes,
    ),
    mean_check(
        "fig6.full.nolgn_vs_sw",
        "FULL",
        NoLgn,
        SwWal,
        paper::FIG6_FULL_NOLGN_VS_SW,
        "flash page writes",
        writes,
    ),
    mean_check(
        "fig7.normal.nolgn_vs_base",
        "NORMAL",
        NoLgn,
        BaseWal,
        paper::FIG7_NORMAL_NOLGN_VS_BASE,
        "overwrite throughput (device + host time)",
        throughput,
    ),
    mean_check(
        "fig7.normal.nolgn_vs_sw",
        "NORMAL",
        NoLgn,
        SwWal,
        paper::FIG7_NORMAL_NOLGN_VS_SW,
        "overwrite throughput (device + host time)",
        throughput,
    ),
    mean_check(
        "fig7.full.nolgn_vs_base",
        "FULL",
        NoLgn,
        BaseWal,
        paper::FIG7_FULL_NOLGN_VS_BASE,
        "overwrite throughput (device + host time)",
        throughput,
    ),
    mean_check(
        "fig7.full.nolgn_vs_sw",
        "FULL",
        NoLgn,
        SwWal,
        paper::FIG7_FULL_NOLGN_VS_SW,
        "overwrite throughput (device + host time)",
        throughput,
    ),
    mean_check(
        "fig8.normal.nolgn_vs_base",
        "NORMAL",
        NoLgn,
        BaseWal,
        paper::FIG8_NORMAL_NOLGN_VS_BASE,
        "overwrite latency (device + host time)",
        latency,
    ),
    mean_check(
        "fig8.normal.nolgn_vs_sw",
        "NORMAL",
        NoLgn,
        SwWal,
        paper::FIG8_NORMAL_NOLGN_VS_SW,
        "overwrite latency (device + host time)",
        latency,
    ),
    mean_check(
        "fig8.normal.sw_vs_base",
        "NORMAL",
        SwWal,
        BaseWal,
        paper::FIG8_NORMAL_SW_VS_BASE,
        "overwrite latency (device + host time)",
        latency,
    ),
    mean_check(
        "fig8.full.nolgn_vs_base",
        "FULL",
        NoLgn,
        BaseWal,
        paper::FIG8_FULL_NOLGN_VS_BASE,
        "overwrite latency (device + host time)",
        latency,
    ),
    mean_check(
        "fig8.full.nolgn_vs_sw",
        "FULL",
        NoLgn,
        SwWal,
        paper::FIG8_FULL_NOLGN_VS_SW,
        "overwrite latency (device + host time)",
        latency,
    ),
];

impl MeanCheck {
    pub fn measured(&self, p: &Params, f: &Figures) -> f64 {
        mean_change(p, f, self.sync, self.a, self.b, self.metric)
    }
}

/// The Fig. 7 check of the same systems and mode as Fig. 8's `m`, if any.
fn fig7_twin(m: &MeanCheck) -> Option<&'static str> {
    if !m.id.starts_with("fig8.") {
        return None;
    }
    MEAN_CHECKS
        .iter()
        .find(|o| o.id.starts_with("fig7.") && o.sync == m.sync && o.a == m.a && o.b == m.b)
        .map(|o| o.id)
}

pub fn checks(p: &Params, f: &Figures) -> Vec<Check> {
    let mut out: Vec<Check> = MEAN_CHECKS
        .iter()
        .map(|m| {
            let what = format!(
                "{}, {} against {}, {}, mean over sizes",
                m.quantity,
                m.a.label(),
                m.b.label(),
                m.sync
            );
            // One connection: a latency is the inverse of its throughput, so
            // a Fig. 8 pair Fig. 7 also has is one measurement, counted there.
            match fig7_twin(m) {
                Some(twin) => Check::structural(
                    m.id,
                    &format!("{what} (the inverse of {twin}'s throughput at one connection: counted there)"),
                    m.paper,
                    m.measured(p, f),
                    Unit::Percent,
                ),
                None => Check::value(m.id, &what, m.paper, m.measured(p, f), Unit::Percent),
            }
        })
        .collect();
    out.extend(fig9(p, f));
    out.extend(fig10(f, &p.head));
    out.extend(fig11(p, f));
    let extra: u64 = f
        .bench
        .iter()
        .filter(|r| r.system == NoLgn.key())
        .map(|r| r.protocol_meta_writes + r.commit_programs)
        .sum();
    out.push(Check::structural(
        "nolgn.commit_programs",
        "pages NoLgn-FTL's commits programmed and protocol records it wrote, every sqlite-bench run (sec. 3.3: \
         commit programs nothing; here the host sends the last page with its end flag, write_end, so by construction)",
        0.0,
        extra as f64,
        Unit::Count,
    ));
    out
}

/// Fig. 9: NoLgn-FTL's writes split into host, GC and lock-induced pages,
/// over both synchronous modes' runs (the paper does not say which it ran).
fn fig9(p: &Params, f: &Figures) -> Vec<Check> {
    let runs: Vec<&BenchRun> = super::SYNCS.iter().flat_map(|s| nolgn_runs(p, f, s.name())).collect();
    let gc_max = crate::fmt::largest(runs.iter().map(|r| gc_share(r))).unwrap_or(0.0);
    let lock_max = crate::fmt::largest(runs.iter().map(|r| lock_share(r))).unwrap_or(0.0);
    let lock_mean = mean(runs.iter().map(|r| lock_share(r)));
    let (lo, hi) = ends(p);
    // Each size's share over its runs in both modes.
    let share_at = |s: u32, m: fn(&BenchRun) -> f64| mean(runs.iter().filter(|r| r.value_size == s).map(|r| m(r)));
    let gc_claim = format!("GC's share at {} above its share at {}", size_name(hi), size_name(lo));
    let gc_measured = if share_at(hi, gc_share) > share_at(lo, gc_share) {
        gc_claim.clone()
    } else {
        format!("GC's share at {} not above its share at {}", size_name(hi), size_name(lo))
    };
    let lock_claim = format!("lock-induced share at {} above its share at {}", size_name(lo), size_name(hi));
    let lock_measured = if share_at(lo, lock_share) > share_at(hi, lock_share) {
        lock_claim.clone()
    } else {
        format!("lock-induced share at {} not above its share at {}", size_name(lo), size_name(hi))
    };
    vec![
        Check::value(
            "fig9.gc_share_max",
            "GC migration's share of NoLgn-FTL's flash page writes, largest over sizes and modes",
            paper::FIG9_GC_SHARE_MAX,
            gc_max,
            Unit::Percent,
        ),
        Check::value(
            "fig9.lock_share_max",
            "pages GC copied because it skipped a locked block, share of the writes, largest over sizes and modes",
            paper::FIG9_LOCK_SHARE_MAX,
            lock_max,
            Unit::Percent,
        ),
        Check::value(
            "fig9.lock_share_mean",
            "pages GC copied because it skipped a locked block, share of the writes, mean over sizes and modes",
            paper::FIG9_LOCK_SHARE_MEAN,
            lock_mean,
            Unit::Percent,
        ),
        Check::order("fig9.gc_share_rises", paper::FIG9_GC_RISES, &gc_claim, &gc_measured),
        Check::order("fig9.lock_share_small_sizes", paper::FIG9_LOCK_SMALL, &lock_claim, &lock_measured),
    ]
}

fn fig10(f: &Figures, head: &Head) -> Vec<Check> {
    let sw = ycsb_changes(f, SwWal, head);
    let nl = ycsb_changes(f, NoLgn, head);
    let claim = "NoLgn-FTL above SW-WAL on A and F".to_string();
    let above = ["A", "F"].iter().all(|w| {
        let t = |s: System| f.ycsb_run(s.key(), w).map_or(f64::NAN, |r| r.ops_per_s(head));
        t(NoLgn) > t(SwWal)
    });
    let measured = if above {
        claim.clone()
    } else {
        "NoLgn-FTL not above SW-WAL on both A and F".to_string()
    };
    vec![
        Check::value(
            "fig10.sw_vs_base",
            "YCSB throughput on device + host time, SW-WAL against Base-WAL, NORMAL, mean over the workloads",
            paper::FIG10_SW_VS_BASE,
            mean(sw.iter().map(|c| c.1)),
            Unit::Percent,
        ),
        Check::value(
            "fig10.nolgn_vs_base",
            "YCSB throughput on device + host time, NoLgn-FTL against Base-WAL, NORMAL, mean over the workloads",
            paper::FIG10_NOLGN_VS_BASE,
            mean(nl.iter().map(|c| c.1)),
            Unit::Percent,
        ),
        Check::order("fig10.nolgn_above_sw_write_heavy", paper::FIG10_NOLGN_ABOVE_SW, &claim, &measured),
    ]
}

fn fig11(p: &Params, f: &Figures) -> Vec<Check> {
    let sw = tpcc_changes(p, f, SwWal);
    let nl = tpcc_changes(p, f, NoLgn);
    let at = |free: u32| nl.iter().find(|c| c.0 == free).map_or(f64::NAN, |c| c.1);
    let (most, least) = (
        p.free_pct.iter().copied().max().unwrap_or(0),
        p.free_pct.iter().copied().min().unwrap_or(0),
    );
    let claim = format!("NoLgn-FTL's gain over Base-WAL larger at {least}% free than at {most}%");
    let measured = if at(least) > at(most) {
        claim.clone()
    } else {
        format!("NoLgn-FTL's gain over Base-WAL not larger at {least}% free than at {most}%")
    };
    vec![
        Check::value(
            "fig11.sw_vs_base",
            "TPC-C tpmC on device + host time, SW-WAL against Base-WAL, mean over free-space levels",
            paper::FIG11_SW_VS_BASE,
            mean(sw.iter().map(|c| c.1)),
            Unit::Percent,
        ),
        Check::value(
            "fig11.nolgn_vs_base",
            "TPC-C tpmC on device + host time, NoLgn-FTL against Base-WAL, mean over free-space levels",
            paper::FIG11_NOLGN_VS_BASE,
            mean(nl.iter().map(|c| c.1)),
            Unit::Percent,
        ),
        Check::value(
            "fig11.nolgn_vs_base_at_25",
            "TPC-C tpmC on device + host time, NoLgn-FTL against Base-WAL at 25% free",
            paper::FIG11_NOLGN_VS_BASE_AT_25,
            at(25),
            Unit::Percent,
        ),
        Check::order("fig11.gap_widens", paper::FIG11_WIDENS, &claim, &measured),
    ]
}
