//! `reproduce mobius` at the test size (`--tiny`), through the library:
//! every interface's compound writes at every size and pattern, the
//! orderings our implementation guarantees, the checks with their kinds,
//! and the notes and deviations from the same run.

use std::sync::OnceLock;
use txftl_reproduce::mobius::{Interface, Mobius, Pattern, Report};
use txftl_reproduce::{flow, Kind, Options, Paper};

fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| flow::build(&Mobius, &Options::tiny(1), false).expect("reproduce mobius --tiny"))
}

#[test]
fn every_interface_pattern_and_size_is_measured() {
    let r = report();
    assert!(!Mobius.failed(&r.figures));
    assert!(!r.params.head.device.is_empty() && r.params.cmt_pages > 0);
    for i in Interface::ALL {
        for p in Pattern::ALL {
            for &n in &r.params.sizes {
                let x = r.figures.point(i.key(), p.key(), n).unwrap_or_else(|| panic!("{i:?} {p:?} {n}"));
                assert!(x.latency_us > 0.0 && x.bandwidth_mb_s > 0.0, "{x:?}");
                // Every page is programmed once at least; Möbius adds inodes
                // (and DWRITE head records) on top.
                assert!(x.programs_per_page >= 1.0, "{x:?}");
            }
        }
    }
}

/// What the implementation guarantees whatever the device: an A-SWRITE
/// returns at its inode, before its pages, so below an S-SWRITE of the same
/// pages; every Möbius interface programs more pages than it writes (a
/// DWRITE's head record and inode, an SWRITE's inode and the flags-only
/// inode of the flush after it).
#[test]
fn a_swrite_returns_before_s_swrite_and_mobius_writes_its_inodes() {
    let r = report();
    for p in Pattern::ALL {
        for &n in &r.params.sizes {
            let pt = |i: Interface| r.figures.point(i.key(), p.key(), n).unwrap();
            assert!(pt(Interface::ASwrite).latency_us < pt(Interface::SSwrite).latency_us, "{p:?} {n}");
            for i in [Interface::Dwrite, Interface::SSwrite, Interface::ASwrite] {
                let min = 1.0 + 2.0 / n as f64;
                assert!(pt(i).programs_per_page >= min, "{i:?} {p:?} {n}: {}", pt(i).programs_per_page);
            }
        }
    }
}

#[test]
fn the_checks_are_orderings_with_notes_where_they_differ() {
    let r = report();
    assert!(r.checks.len() >= 10, "{}", r.checks.len());
    for c in &r.checks {
        let want = match c.id.as_str() {
            "fig11.mobius_vs_lighttx" | "fig9.aswrite_vs_aw" => Kind::Value,
            "fig9.tpcc.sswrite_vs_aw" | "fig10.mobius_not_enlarged" => Kind::Bound,
            id if id.ends_with("aswrite_best") || id.ends_with("aswrite_highest") => Kind::Structural,
            _ => Kind::Order,
        };
        assert_eq!(c.kind, want, "{}", c.id);
        if c.kind != Kind::Bound && c.kind != Kind::Structural {
            assert_eq!(c.differs(), !c.agrees(), "{}", c.id);
        }
        if c.differs() {
            assert!(!c.note.is_empty(), "{} differs without a note", c.id);
        }
    }
    for id in [
        "fig7.random.aswrite_best",
        "fig7.sequential_faster",
        "fig8.random.aswrite_highest",
        "fig11.mobius_vs_lighttx",
        "fig11.order",
    ] {
        assert!(r.checks.iter().any(|c| c.id == id), "no check {id}");
    }
    assert!(
        !r.deviations.iter().any(|d| d.contains("not run")),
        "every figure runs: {:?}",
        r.deviations
    );
    assert!(r.summary.line.contains("within 25%"), "{}", r.summary.line);
}

/// Fig. 11: every protocol recovers after every zone, from the NAND alone;
/// LightTx's zone scan reads more the larger its zone.
#[test]
fn every_protocol_recovers_after_every_zone() {
    let r = report();
    for (p, _) in txftl_reproduce::mobius::recovery::PROTOCOLS {
        for &z in &r.params.zones_mib {
            let x = r.figures.recovered(p, z).unwrap_or_else(|| panic!("{p} {z}"));
            assert!(x.recovery_ms > 0.0 && x.pages_read > 0, "{x:?}");
        }
    }
    let (small, large) = (r.params.zones_mib[0], *r.params.zones_mib.last().unwrap());
    let lt = |z| r.figures.recovered("lighttx", z).unwrap().pages_read;
    assert!(lt(large) > lt(small), "{} {}", lt(small), lt(large));
    // With summary pages (LightTx's paper's), a block the zone filled costs
    // two reads, not one a page: never more than the variant without.
    let plain = |z| r.figures.recovered("lighttx-no-summary-pages", z).unwrap().pages_read;
    assert!(lt(large) <= plain(large), "{} {}", lt(large), plain(large));
}

/// Fig. 10: the TPC-C trace recorded from a consistent database, replayed
/// on every protocol; Möbius writes one inode per commit (and flags-only
/// ones), DFTL's transactions go through the host journal.
#[test]
fn fig10_replays_the_trace_on_every_protocol() {
    let r = report();
    let w = r.figures.wa_workload.as_ref().expect("Fig. 10's trace");
    assert_eq!(w.consistency, "ok");
    assert!(w.device_transactions > 0);
    for (p, _) in txftl_reproduce::mobius::tpcc::PROTOCOLS {
        let x = r.figures.wa_run(p).unwrap_or_else(|| panic!("{p} not replayed"));
        assert!(x.write_amplification >= 1.0 && x.host_writes > 0, "{x:?}");
        // One denominator: the pages the trace writes, DFTL's journal left out.
        let trace_pages = (x.host_writes - x.journal_writes) as f64;
        assert!(
            (x.write_amplification - x.flash_programs as f64 / trace_pages).abs() < 1e-9,
            "{x:?}"
        );
    }
    let m = r.figures.wa_run("mobius").unwrap();
    assert!(m.inodes >= m.commits && m.commits > 0, "{m:?}");
    assert!(r.figures.wa_run("dftl").unwrap().journal_writes > 0);
    for id in ["fig10.mobius_not_enlarged", "fig10.mobius_le_lighttx", "fig10.aw_mapping_writes"] {
        assert!(r.checks.iter().any(|c| c.id == id), "no check {id}");
    }
}

/// Fig. 9's TPC-C: the trace replayed on every run; an A-SWRITE commit
/// returns before an S-SWRITE one of the same trace (its inode, not its
/// pages), and both write the same pages.
#[test]
fn fig9_replays_the_tpcc_trace_with_both_commits() {
    let r = report();
    assert_eq!(r.figures.tps_workload.as_ref().expect("Fig. 9's trace").consistency, "ok");
    for (k, ..) in txftl_reproduce::mobius::tpcc::FIG9 {
        let x = r.figures.tps_run(k).unwrap_or_else(|| panic!("{k} not replayed"));
        assert!(x.tps > 0.0 && x.commits > 0, "{x:?}");
    }
    let (s, a) = (r.figures.tps_run("s-swrite").unwrap(), r.figures.tps_run("a-swrite").unwrap());
    assert!(a.commit_mean_us < s.commit_mean_us, "{a:?} {s:?}");
    assert_eq!(a.flash_programs, s.flash_programs);
    let kinds: Vec<_> = r.checks.iter().filter(|c| c.id.starts_with("fig9.")).map(|c| c.kind).collect();
    assert_eq!(kinds, [Kind::Value, Kind::Bound, Kind::Order, Kind::Order]);
}

/// Fig. 9's Filebench bars: each personality recorded on the file system
/// (one device transaction per fsync, none sent the ordered way) and
/// replayed on every run; both commits write the same pages.
#[test]
fn fig9_replays_both_filebench_personalities() {
    let r = report();
    let names: Vec<&str> = r.figures.filebench.iter().map(|b| b.workload.personality.as_str()).collect();
    assert_eq!(names, ["fileserver", "webserver"]);
    for b in &r.figures.filebench {
        let w = &b.workload;
        assert_eq!(w.report.loops, r.params.filebench.personalities[0].loops);
        assert!(w.report.fsyncs > 0 && w.device_transactions >= w.report.fsyncs, "{w:?}");
        assert_eq!(w.one_tx_fallbacks, 0);
        for (k, ..) in txftl_reproduce::mobius::tpcc::FIG9 {
            let x = b.run(k).unwrap_or_else(|| panic!("{} {k} not replayed", w.personality));
            assert_eq!(x.commits, w.device_transactions, "{x:?}");
            assert!(b.ops_per_s(k) > 0.0);
        }
        assert_eq!(b.run("s-swrite").unwrap().flash_programs, b.run("a-swrite").unwrap().flash_programs);
    }
}

/// Every miss has a class (setup, paper, host, model) and a note giving
/// its cause and measured reason; the summary counts none unclassified.
#[test]
fn every_miss_has_a_class_and_a_note() {
    let r = report();
    let problems = txftl_reproduce::check::class_problems(&r.checks, &r.summary);
    assert!(problems.is_empty(), "{problems:#?}");
}
