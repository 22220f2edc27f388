//! The checks of `reproduce mobius`: every claim of the paper's Figs. 7 and
//! 8 the compound writes speak to. The text gives no number for them: each
//! is an ordering, counted over the sizes run.

use super::{paper, Figures, Interface, Params, Pattern};
use crate::Check;

/// Mean latency of `i`'s compound writes of `n` pages, µs.
pub fn latency(f: &Figures, i: Interface, pattern: Pattern, n: u32) -> f64 {
    f.point(i.key(), pattern.key(), n).map_or(f64::NAN, |p| p.latency_us)
}

/// "`a` below `b` at k of n sizes", or the paper's "at every size".
pub(super) fn below_count(params: &Params, f: &Figures, pattern: Pattern, a: Interface, b: &[Interface]) -> (usize, usize) {
    let n = params.sizes.len();
    let k = params
        .sizes
        .iter()
        .filter(|&&s| b.iter().all(|&o| latency(f, a, pattern, s) < latency(f, o, pattern, s)))
        .count();
    (k, n)
}

fn claim(subject: &str, relation: &str, k: usize, n: usize) -> (String, String) {
    let paper = format!("{subject} {relation} at every size");
    let measured = if k == n {
        paper.clone()
    } else {
        format!("{subject} {relation} at {k} of {n} sizes")
    };
    (paper, measured)
}

/// A run's figures, for the checks.
struct Ctx<'a> {
    params: &'a Params,
    f: &'a Figures,
}

impl Ctx<'_> {
    /// `a` has a lower latency than every one of `b` at every size.
    fn lower(&self, id: &str, what: &str, pattern: Pattern, a: Interface, b: &[Interface], relation: &str) -> Check {
        let (k, n) = below_count(self.params, self.f, pattern, a, b);
        let (paper, measured) = claim(a.label(), relation, k, n);
        Check::order(id, what, &paper, &measured)
    }
}

pub fn checks(params: &Params, f: &Figures) -> Vec<Check> {
    use Interface::*;
    let c = Ctx { params, f };
    let mut out = Vec::new();
    for pattern in Pattern::ALL {
        let p = pattern.key();
        // An A-SWRITE returns at its inode, one program, where every other
        // interface waits for N pages: lowest by construction (structural).
        let others: Vec<Interface> = Interface::ALL.into_iter().filter(|&i| i != ASwrite).collect();
        let (k, n) = below_count(params, f, pattern, ASwrite, &others);
        out.push(Check::structural(
            &format!("fig7.{p}.aswrite_best"),
            &format!(
                "{p}: sizes at which A-SWRITE has the lowest latency, of those run ({}; it returns at its inode: \
                 structural)",
                paper::FIG7_ASWRITE_BEST
            ),
            n as f64,
            k as f64,
            crate::Unit::Count,
        ));
        for d in [DftlSingle, DftlAio] {
            out.push(c.lower(
                &format!("fig7.{p}.{}_vs_dwrite", d.key().replace('-', "_")),
                &format!("{p}: {} below DWRITE ({})", d.label(), paper::FIG7_DFTL_VS_DWRITE),
                pattern,
                d,
                &[Dwrite],
                "below DWRITE",
            ));
        }
        out.push(c.lower(
            &format!("fig7.{p}.sswrite_vs_dftl_aio"),
            &format!("{p}: S-SWRITE below DFTL-AIO ({})", paper::FIG7_SWRITE_VS_AIO),
            pattern,
            SSwrite,
            &[DftlAio],
            "below DFTL-AIO",
        ));
    }
    out.push(c.lower(
        "fig7.random.dftl_aio_vs_single",
        &format!("random: DFTL-AIO below DFTL ({})", paper::FIG7_AIO_VS_SINGLE),
        Pattern::Random,
        DftlAio,
        &[DftlSingle],
        "below DFTL",
    ));
    out.push(sequential_faster(params, f));
    for pattern in Pattern::ALL {
        out.push(fig8_highest(params, f, pattern));
    }
    out.extend(fig9(f));
    out.extend(fig10(f));
    out.extend(fig11(params, f));
    out
}

/// Fig. 9's workloads, by the key of their bars: TPC-C, then Filebench's.
pub fn fig9_workloads(f: &Figures) -> Vec<(&'static str, &[super::results::TpsRun])> {
    let mut out = vec![("tpcc", f.tps.as_slice())];
    for b in &f.filebench {
        let key = match b.workload.personality.as_str() {
            "fileserver" => "fileserver",
            _ => "webserver",
        };
        out.push((key, b.runs.as_slice()));
    }
    out
}

/// Transactions per simulated second of run `key` among `runs`.
pub fn tps_of(runs: &[super::results::TpsRun], key: &str) -> f64 {
    runs.iter().find(|r| r.key == key).map_or(f64::NAN, |r| r.tps)
}

/// Fig. 9: A-SWRITE's largest gain over Atomic-Write across the workloads,
/// S-SWRITE "similar" on TPC-C, and Atomic-Write above S-SWRITE on each
/// Filebench personality.
fn fig9(f: &Figures) -> Vec<Check> {
    let workloads = fig9_workloads(f);
    let (best, gain) = workloads
        .iter()
        .map(|(k, runs)| (*k, crate::fmt::pct(tps_of(runs, "a-swrite"), tps_of(runs, "atomic-write"))))
        .fold(("none", f64::NAN), |acc, x| if acc.1.is_nan() || x.1 > acc.1 { x } else { acc });
    let mut out = vec![Check::value(
        "fig9.aswrite_vs_aw",
        &format!(
            "A-SWRITE's transactions per second over Atomic-Write's, the largest over the workloads run ({}; here \
             {best})",
            workloads.iter().map(|w| w.0).collect::<Vec<_>>().join(", ")
        ),
        paper::FIG9_ASWRITE_OVER_AW_PCT,
        gain,
        crate::Unit::Percent,
    )];
    let tps = |k: &str| tps_of(&f.tps, k);
    out.push(Check::bound(
        "fig9.tpcc.sswrite_vs_aw",
        &format!(
            "TPC-C: S-SWRITE's transactions per second against Atomic-Write's, the difference's size (\"similar\", read \
             as within the checks' 25%) ({})",
            paper::FIG9_SSWRITE_SIMILAR
        ),
        25.0,
        crate::fmt::pct(tps("s-swrite"), tps("atomic-write")).abs(),
        crate::Unit::Percent,
    ));
    for (key, runs) in workloads.iter().skip(1) {
        let items = [
            ("Atomic-Write", tps_of(runs, "atomic-write")),
            ("S-SWRITE", tps_of(runs, "s-swrite")),
        ];
        out.push(Check::order(
            &format!("fig9.{key}.aw_vs_sswrite"),
            &format!(
                "{key}: transactions per second, Atomic-Write against S-SWRITE ({})",
                paper::FIG9_FILEBENCH_AW_ABOVE
            ),
            "Atomic-Write > S-SWRITE",
            &crate::check::ordering(&items),
        ));
    }
    out
}

/// Fig. 10: Möbius's write amplification not above the other methods'
/// (DFTL, Atomic-Write), strictly below LightTx's, and Atomic-Write's
/// mapping and commit pages above Möbius's; every ratio over the same
/// denominator, the pages the trace writes.
fn fig10(f: &Figures) -> Vec<Check> {
    let wa = |p: &str| f.wa_run(p).map_or(f64::NAN, |r| r.write_amplification);
    // "Other methods" than LightTx, which the next sentence compares apart.
    let others = ["dftl", "atomic-write"].map(wa).into_iter().fold(f64::INFINITY, f64::min);
    let mapping = |p: &str| f.wa_run(p).map_or(f64::NAN, |r| (r.map_writes + r.protocol_meta_writes) as f64);
    vec![
        Check::bound(
            "fig10.mobius_not_enlarged",
            &format!(
                "Möbius's write amplification (flash programs per page of the trace) over the lower of DFTL's and \
                 Atomic-Write's, read as at most 25% above it, the tolerance \"similar\" is read with in Fig. 9 ({})",
                paper::FIG10_NOT_ENLARGED
            ),
            25.0,
            crate::fmt::pct(wa("mobius"), others),
            crate::Unit::Percent,
        ),
        Check::order(
            "fig10.mobius_le_lighttx",
            &format!(
                "write amplification (flash programs per page of the trace), LightTx against Möbius, strictly ({})",
                paper::FIG10_BETTER_THAN_LIGHTTX
            ),
            "LightTx > Möbius",
            &crate::check::ordering(&[("LightTx", wa("lighttx")), ("Möbius", wa("mobius"))]),
        ),
        Check::order(
            "fig10.aw_mapping_writes",
            &format!(
                "pages written for mappings and commit records (checkpoints, write-backs, inodes, commit pages) ({})",
                paper::FIG10_AW_MAPPING
            ),
            "Atomic-Write > Möbius",
            &crate::check::ordering(&[("Atomic-Write", mapping("atomic-write")), ("Möbius", mapping("mobius"))]),
        ),
    ]
}

/// The largest zone run (the paper's 4 GB in full mode).
pub fn fig11_zone(params: &Params) -> u32 {
    params.zones_mib.iter().copied().max().unwrap_or(0)
}

/// Fig. 11: LightTx's recovery time over Möbius's at the largest zone (the
/// paper's 29x at 4 GB), and the order of the three there.
fn fig11(params: &Params, f: &Figures) -> Vec<Check> {
    let z = fig11_zone(params);
    let ms = |p: &str| f.recovered(p, z).map_or(f64::NAN, |r| r.recovery_ms);
    let at = if z == paper::FIG11_ZONE_MIB {
        "4 GB".to_string()
    } else {
        format!("{z} MiB (the paper's is 4 GB)")
    };
    vec![
        Check::value(
            "fig11.mobius_vs_lighttx",
            &format!("LightTx's recovery time over Möbius's, after {at} written since the last persistence point"),
            paper::FIG11_MOBIUS_VS_LIGHTTX,
            crate::fmt::ratio(ms("lighttx"), ms("mobius")),
            crate::Unit::Factor,
        ),
        Check::order(
            "fig11.order",
            &format!("recovery time after {at}, longest first ({})", paper::FIG11_FASTEST),
            "DFTL > LightTx > Möbius",
            &crate::check::ordering(&[("Möbius", ms("mobius")), ("LightTx", ms("lighttx")), ("DFTL", ms("dftl"))]),
        ),
    ]
}

/// Every interface's sequential compound writes are faster than its random
/// ones, at every size.
fn sequential_faster(params: &Params, f: &Figures) -> Check {
    let n = Interface::ALL.len() * params.sizes.len();
    let k = Interface::ALL
        .iter()
        .flat_map(|&i| params.sizes.iter().map(move |&s| (i, s)))
        .filter(|&(i, s)| latency(f, i, Pattern::Sequential, s) < latency(f, i, Pattern::Random, s))
        .count();
    let paper = "sequential below random for every interface and size".to_string();
    let measured = if k == n {
        paper.clone()
    } else {
        format!("sequential below random at {k} of {n} interface-sizes")
    };
    Check::order(
        "fig7.sequential_faster",
        &format!("sequential faster than random ({})", paper::FIG7_SEQUENTIAL),
        &paper,
        &measured,
    )
}

/// Fig. 8: A-SWRITE has the highest bandwidth at the largest size (1 if
/// so): structural, as Fig. 7's lowest latency.
fn fig8_highest(params: &Params, f: &Figures, pattern: Pattern) -> Check {
    let n = params.sizes.iter().copied().max().unwrap_or(0);
    let best = Interface::ALL
        .into_iter()
        .filter_map(|i| f.point(i.key(), pattern.key(), n).map(|x| (i, x.bandwidth_mb_s)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
        .map(|(i, _)| i);
    Check::structural(
        &format!("fig8.{}.aswrite_highest", pattern.key()),
        &format!(
            "{}: A-SWRITE has the highest bandwidth at {n} pages, 1 if so ({}; it returns at its inode: structural)",
            pattern.key(),
            paper::FIG8_ASWRITE
        ),
        1.0,
        (best == Some(Interface::ASwrite)) as u32 as f64,
        crate::Unit::Count,
    )
}
