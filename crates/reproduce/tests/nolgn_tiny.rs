//! `reproduce nolgn` at the test size (`--tiny`), through the library:
//! every system at every size, mode, YCSB workload and free-space level,
//! the costs each system's design fixes (what it writes, and what it never
//! writes), the checks with their kinds, and the notes from the same run.

use serde_json::Value;
use std::sync::OnceLock;
use txftl_reproduce::nolgn::{NoLgn, Report, System};
use txftl_reproduce::{check, flow, Error, Options, Paper};

fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| flow::build(&NoLgn, &Options::tiny(1), false).expect("reproduce nolgn --tiny"))
}

#[test]
fn every_system_runs_every_experiment_on_an_intact_database() {
    let r = report();
    assert!(!NoLgn.failed(&r.figures));
    assert!(r.params.logical_pages > 0 && !r.params.head.device.is_empty());
    for s in System::ALL {
        for sync in ["NORMAL", "FULL"] {
            for &size in &r.params.sizes {
                let b = r
                    .figures
                    .bench_run(s.key(), sync, size)
                    .unwrap_or_else(|| panic!("{s:?} {sync} {size}"));
                assert_eq!(b.operations, r.params.entries, "{b:?}");
                assert!(b.ops_per_sim_s > 0.0 && b.flash_programs > 0, "{b:?}");
                // FULL: every commit waits for the flash (NORMAL may not:
                // a group commits at the connection's close).
                assert!(sync == "NORMAL" || b.latency_mean_us > 0.0, "{b:?}");
                assert_eq!(b.integrity, "ok");
            }
        }
        for w in ["A", "B", "C", "D", "E", "F"] {
            assert_eq!(r.figures.ycsb_run(s.key(), w).expect("ycsb").integrity, "ok");
        }
        for &free in &r.params.free_pct {
            let t = r.figures.tpcc_run(s.key(), free).expect("tpcc");
            assert!(t.consistency == "ok" && t.integrity == "ok" && t.new_orders > 0, "{t:?}");
            // The aging filled the logical pages to the level asked for.
            assert!((t.filled_pct - (100 - free) as f64).abs() < 0.5, "{t:?}");
        }
    }
    // One device's worth of random writes leaves about 1 - 1/e of the pages written.
    for a in r.figures.aging.iter().filter(|a| !a.experiment.starts_with("TPC-C")) {
        assert!((a.filled_pct - 63.2).abs() < 2.0, "{a:?}");
    }
}

/// What each design writes, whatever the device: Base-WAL its WAL and the
/// checkpoints' copies; SW-WAL the same WAL, its checkpoints remapping
/// instead of copying; NoLgn-FTL the database in place, no WAL, no commit
/// record, and under NORMAL one sync per group, so the host's page cache
/// merges the group's rewrites of a page; under FULL its pages go at the
/// commit, the last with the end flag.
#[test]
fn each_system_writes_what_its_design_says() {
    let r = report();
    let sum = |s: System, sync: &str, g: fn(&txftl_reproduce::nolgn::results::BenchRun) -> u64| -> u64 {
        r.figures
            .bench
            .iter()
            .filter(|b| b.system == s.key() && b.synchronous == sync)
            .map(g)
            .sum()
    };
    for sync in ["NORMAL", "FULL"] {
        assert!(sum(System::BaseWal, sync, |b| b.wal_page_writes) > 0);
        assert!(sum(System::BaseWal, sync, |b| b.db_page_writes) > 0, "Base-WAL's checkpoints copy");
        assert_eq!(sum(System::BaseWal, sync, |b| b.remapped_pages), 0);
        assert!(sum(System::SwWal, sync, |b| b.remapped_pages) > 0, "SW-WAL's checkpoints remap");
        assert!(sum(System::SwWal, sync, |b| b.db_page_writes) < sum(System::BaseWal, sync, |b| b.db_page_writes));
        assert_eq!(sum(System::NoLgn, sync, |b| b.wal_page_writes), 0);
        assert_eq!(sum(System::NoLgn, sync, |b| b.protocol_meta_writes), 0, "no commit record");
    }
    assert_eq!(
        sum(System::NoLgn, "NORMAL", |b| b.fsyncs),
        0,
        "NORMAL syncs at the group's commit only"
    );
    assert!(
        sum(System::NoLgn, "NORMAL", |b| b.absorbed_writes) > 0,
        "the page cache merges a group's rewrites"
    );
    assert!(sum(System::NoLgn, "NORMAL", |b| b.db_page_writes) < sum(System::NoLgn, "FULL", |b| b.db_page_writes));
    // FULL: SQLite's sync leaves the pages to the commit, which sends them,
    // the last one end-flagged: no commit programs a page alone.
    assert_eq!(sum(System::NoLgn, "FULL", |b| b.fsyncs), 0);
    assert_eq!(sum(System::NoLgn, "FULL", |b| b.commit_programs), 0);
}

#[test]
fn the_json_has_reproduce_md_fields_and_each_check_its_kind() {
    let j: Value = serde_json::to_value(report()).unwrap();
    for key in ["paper", "params", "figures", "checks", "deviations", "summary"] {
        assert!(!j[key].is_null(), "missing {key}");
    }
    let checks = j["checks"].as_array().unwrap();
    assert!(checks.len() >= 25, "{} checks", checks.len());
    for c in checks {
        let within = &c["within_25pct"];
        let num = |k: &str| c[k].as_f64().unwrap();
        match c["kind"].as_str().unwrap() {
            "value" => assert_eq!(
                within.as_bool().unwrap(),
                check::agrees_value(
                    num("paper"),
                    num("measured"),
                    if c["unit"] == "percent" {
                        check::Unit::Percent
                    } else {
                        check::Unit::Count
                    }
                ),
                "{}",
                c["id"]
            ),
            "order" => assert_eq!(within.as_bool().unwrap(), c["paper"] == c["measured"], "{}", c["id"]),
            "structural" => assert!(within.is_null(), "{}", c["id"]),
            k => panic!("kind {k} in {}", c["id"]),
        }
    }
    // Fig. 8's latencies Fig. 7 also has as throughputs are one
    // measurement at one connection: shown, counted once, in Fig. 7.
    for id in ["fig8.normal.nolgn_vs_base", "fig8.full.nolgn_vs_sw"] {
        let c = checks.iter().find(|c| c["id"] == id).unwrap();
        assert_eq!(c["kind"], "structural", "{id}");
    }
    assert_eq!(
        checks.iter().find(|c| c["id"] == "fig8.normal.sw_vs_base").unwrap()["kind"],
        "value"
    );
    let s = checks
        .iter()
        .find(|c| c["id"] == "nolgn.commit_programs")
        .expect("structural check");
    assert_eq!(s["kind"], "structural");
    assert_eq!(s["measured"].as_f64(), Some(0.0));
}

#[test]
fn notes_come_from_this_run() {
    let r = report();
    for c in r.checks.iter().filter(|c| c.differs()) {
        assert!(!c.note.is_empty(), "check {} differs with no note", c.id);
    }
    // A Fig. 6 note gives this run's writes per overwrite.
    if let Some(c) = r.checks.iter().find(|c| c.id == "fig6.full.nolgn_vs_base" && c.differs()) {
        let (programs, ops) = r
            .figures
            .bench
            .iter()
            .filter(|b| b.system == "nolgn" && b.synchronous == "FULL")
            .fold((0, 0), |(p, o), b| (p + b.flash_programs, o + b.operations));
        assert!(
            c.note.contains(&format!("NoLgn-FTL {:.2}", programs as f64 / ops as f64)),
            "{}",
            c.note
        );
    }
    let page = flow::html_page(&NoLgn, r).unwrap();
    assert_eq!(page.matches("<figure class=fig").count(), 13);
}

#[test]
fn map_at_flush_is_refused() {
    let opts = Options {
        map_at_flush: Some(true),
        ..Options::tiny(1)
    };
    match NoLgn.params(&opts) {
        Err(Error::Usage(m)) => assert!(m.contains("--map-at-flush"), "{m}"),
        other => panic!("--map-at-flush not refused: {:?}", other.map(|_| ())),
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

/// The paper measured a real host: Figs. 7, 10 and 11 are judged on the
/// device's time plus the host's, the host's from the counted work priced
/// by the profile; device time alone runs faster; the profile's sweep moves
/// those checks and not Fig. 6's counts.
#[test]
fn host_timed_figures_add_the_host_models_time() {
    let r = report();
    let head = &r.params.head;
    let host = head.host.as_ref().expect("reproduce nolgn has a host model");
    for b in &r.figures.bench {
        let w = &b.host_work;
        assert!(w.statements >= b.operations && w.vm_steps > w.statements && w.syscalls > 0, "{b:?}");
        let host_s = host.profile.ns(w, 1.0) / 1e9;
        assert!((b.elapsed_s(head) - (b.sim_s + host_s)).abs() < 1e-12);
        assert!(b.ops_per_s(head) < b.ops_per_sim_s || b.sim_s == 0.0, "{b:?}");
    }
    // Fig. 11's check is the mean of the levels' changes on device + host time.
    let change = |free: u32, s: System| {
        let (x, y) = (
            r.figures.tpcc_run(s.key(), free).unwrap(),
            r.figures.tpcc_run(System::BaseWal.key(), free).unwrap(),
        );
        assert!(x.host_work.statements > 0 && x.tpm(head) < x.tpmc, "{x:?}");
        100.0 * (x.tpm(head) / y.tpm(head) - 1.0)
    };
    let mean: f64 = r.params.free_pct.iter().map(|&f| change(f, System::NoLgn)).sum::<f64>() / r.params.free_pct.len() as f64;
    let c = r.checks.iter().find(|c| c.id == "fig11.nolgn_vs_base").unwrap();
    let measured = match c.measured {
        check::Figure::Number(v) => v,
        ref o => panic!("{o:?}"),
    };
    assert!((measured - mean).abs() < 1e-9, "{measured} vs {mean}");
    for id in ["fig7.normal.nolgn_vs_base", "fig10.nolgn_vs_base", "fig11.nolgn_vs_base"] {
        let row = r.host_sweep.iter().find(|h| h.id == id).unwrap_or_else(|| panic!("{id} not swept"));
        assert_eq!(row.scales, [0.5, 1.0, 2.0]);
    }
    assert!(r.host_sweep.iter().all(|h| !h.id.starts_with("fig6.")));
}
