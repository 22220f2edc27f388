//! `reproduce xftl` at the test size (`--tiny`), through the library: every
//! experiment present, the checks computed from the measured figures (not
//! copied from the paper) with their kinds, the notes from the same run, and
//! the report's three renderings.

use serde_json::Value;
use std::sync::OnceLock;
use txftl_reproduce::xftl::{Report, Xftl};
use txftl_reproduce::{check, flow, terminal, Kind, Options, Paper};

/// One tiny run, shared by the tests of this file.
fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| flow::build(&Xftl, &Options::tiny(1), false).expect("reproduce xftl --tiny"))
}

fn json() -> Value {
    serde_json::to_value(report()).unwrap()
}

fn check<'a>(r: &'a Report, id: &str) -> &'a txftl_reproduce::Check {
    r.checks.iter().find(|c| c.id == id).unwrap_or_else(|| panic!("no check {id}"))
}

fn number(f: &check::Figure) -> f64 {
    match f {
        check::Figure::Number(v) => *v,
        check::Figure::Order(s) => panic!("an ordering, {s}"),
    }
}

#[test]
fn every_experiment_ran_on_an_intact_database() {
    let r = report();
    assert!(!Xftl.failed(&r.figures));
    let p = &r.params;
    assert!(!p.scaled_down.is_empty(), "says what was scaled down");
    // Figure 5 at 30, 50 and 70% validity, every mode at every K.
    let f = &r.figures;
    assert_eq!(f.figure5.iter().map(|x| x.validity_pct).collect::<Vec<_>>(), [30, 50, 70]);
    for v in &f.figure5 {
        assert_eq!(v.runs.len(), 3 * p.ks.len());
        assert!(v.runs.iter().all(|run| run.integrity == "ok"));
    }
    // Table 5: every cut in every mode; TPC-C: the paper's four mixes on three modes.
    assert!(p.restart_cuts >= 5);
    assert_eq!(f.table5.runs.len(), 3 * p.restart_cuts as usize);
    let mixes: Vec<&str> = f.tpcc.iter().map(|m| m.id.as_str()).collect();
    assert_eq!(mixes, ["write", "read", "selection", "join"]);
    assert_eq!(f.tpcc[1].mix, [5, 0, 50, 0, 45], "read-intensive, Table 3");
    for m in &f.tpcc {
        assert!(m.runs.iter().all(|run| run.consistency.as_deref() == Some("ok")));
    }
}

#[test]
fn the_json_has_reproduce_md_fields_and_each_check_its_kind() {
    let j = json();
    for key in ["paper", "params", "figures", "checks", "deviations", "summary"] {
        assert!(!j[key].is_null(), "missing {key}");
    }
    let checks = j["checks"].as_array().unwrap();
    assert!(checks.len() >= 30, "{} checks", checks.len());
    for c in checks {
        for key in ["id", "what", "paper", "measured", "unit", "kind", "note"] {
            assert!(!c[key].is_null(), "check {} lacks {key}", c["id"]);
        }
        let within = &c["within_25pct"];
        match c["kind"].as_str().unwrap() {
            "value" => assert_eq!(
                within.as_bool().unwrap(),
                check::within_25pct(c["paper"].as_f64().unwrap(), c["measured"].as_f64().unwrap()),
                "{}",
                c["id"]
            ),
            "order" => assert_eq!(within.as_bool().unwrap(), c["paper"] == c["measured"], "{}", c["id"]),
            "structural" => assert!(within.is_null(), "{}: structural checks are not counted", c["id"]),
            k => panic!("kind {k} in {}", c["id"]),
        }
    }
}

#[test]
fn measured_columns_come_from_the_figures() {
    let r = report();
    // The paper's column is the paper's; the measured one is ours, from the figures.
    assert_eq!(number(&check(r, "table1.rbj.host_writes").paper), 29439.0);
    let t1 = r.figures.figure5.iter().find(|v| v.validity_pct == 50).unwrap();
    let x = t1.runs.iter().find(|run| run.mode.cli() == "xftl" && run.k == 5).unwrap();
    let fsyncs = x.host.fsyncs as f64 * 1000.0 / r.params.transactions as f64;
    assert_eq!(number(&check(r, "table1.xftl.fsyncs").measured), fsyncs);
    // Table 4's rates are on device + host time: the host model's prices
    // times the run's counted host work.
    let host = r.params.head.host.as_ref().expect("reproduce xftl has a host model");
    let w = &r.figures.tpcc[0];
    let tpm = |mode: &str| {
        let x = w.runs.iter().find(|x| x.mode.cli() == mode).unwrap();
        let hw = &x.host_work;
        assert!(
            hw.statements > 0 && hw.vm_steps > hw.statements && hw.syscalls > 0 && hw.bytes_copied > 0,
            "{hw:?}"
        );
        x.units as f64 * 60.0 / (x.elapsed_s + host.profile.ns(hw, 1.0) / 1e9)
    };
    let gain = 100.0 * (tpm("xftl") / tpm("wal") - 1.0);
    let c = check(r, "table4.write.xftl_over_wal");
    assert!((number(&c.measured) - gain).abs() < 1e-6, "{:?} vs {gain}", c.measured);
    assert_eq!(c.unit, txftl_reproduce::Unit::Percent);
    let wal_tpm = check(r, "table4.write.wal_tpm");
    assert!((number(&wal_tpm.measured) - tpm("wal")).abs() < 1e-6 * tpm("wal"));
    // Host time only adds: device time alone runs faster.
    let wal_mode = w.runs.iter().find(|x| x.mode.cli() == "wal").unwrap().mode;
    assert!(tpm("wal") < w.device_tpm(wal_mode));
}

/// The host profile's sweep: Table 4's rates fall as the host's prices
/// rise (x0.5, x1, x2), and the x1 column is the checks' own figure.
#[test]
fn the_host_sweep_moves_the_host_timed_checks() {
    let r = report();
    let row = r
        .host_sweep
        .iter()
        .find(|h| h.id == "table4.write.wal_tpm")
        .expect("Table 4 in the host sweep");
    assert_eq!(row.scales, [0.5, 1.0, 2.0]);
    let v: Vec<f64> = row.measured.iter().map(number).collect();
    assert!(v[0] > v[1] && v[1] > v[2], "{v:?}");
    assert_eq!(v[1], number(&check(r, "table4.write.wal_tpm").measured));
    // Counts do not move with the host's prices.
    assert!(r.host_sweep.iter().all(|h| !h.id.starts_with("table1.")));
}

#[test]
fn fsync_counts_are_structural_and_the_summary_leaves_them_out() {
    let r = report();
    let structural: Vec<&str> = r
        .checks
        .iter()
        .filter(|c| c.kind == Kind::Structural)
        .map(|c| c.id.as_str())
        .collect();
    assert_eq!(structural, ["table1.rbj.fsyncs", "table1.wal.fsyncs", "table1.xftl.fsyncs"]);
    let s = &r.summary;
    assert_eq!(s.counted, r.checks.len() - 3);
    assert_eq!(s.within, r.checks.iter().filter(|c| c.within_25pct == Some(true)).count());
    assert!(
        s.line
            .starts_with(&format!("{} of {} value/bound/order checks within 25%", s.within, s.counted)),
        "{}",
        s.line
    );
    assert!(s
        .line
        .ends_with("(structural, not counted: table1.rbj.fsyncs, table1.wal.fsyncs, table1.xftl.fsyncs)"));
    // The fsync calls follow from the journal mode: RBJ three per transaction, X-FTL one.
    assert_eq!(number(&check(r, "table1.rbj.fsyncs").measured), 3000.0);
    assert_eq!(number(&check(r, "table1.xftl.fsyncs").measured), 1000.0);
}

#[test]
fn every_check_that_differs_has_a_note() {
    let r = report();
    for c in r.checks.iter().filter(|c| c.differs()) {
        assert!(!c.note.is_empty(), "check {} differs with no note", c.id);
    }
    assert!(r.deviations.len() >= 3);
}

#[test]
fn the_terminal_and_html_reports_show_every_check() {
    let r = report();
    let section = terminal::checks_section(&r.checks, &r.deviations, 100);
    for line in section.lines() {
        assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
    }
    assert!(section.contains("value/bound/order checks within 25%"));
    let notes = section.find("\nnotes:\n").expect("notes under the table");
    assert!(section[..notes].contains("└"), "the table ends before the notes");
    let page = flow::html_page(&Xftl, r).unwrap();
    // Table 1 (5), Figure 5 (3 validities and the speed-up), Table 5, Table 4 (4 mixes).
    assert_eq!(page.matches("<figure class=fig").count(), 14);
    assert!(page.contains(&r.summary.line));
    assert!(page.contains("<td>structural</td>"));
}

#[test]
fn map_at_flush_is_an_option_of_this_paper() {
    let on = Xftl.params(&Options::tiny(1)).unwrap();
    assert!(on.map_at_flush, "the paper's firmware: on unless asked");
    let off = Xftl
        .params(&Options {
            map_at_flush: Some(false),
            ..Options::tiny(1)
        })
        .unwrap();
    assert!(!off.map_at_flush);
}

/// Every miss has a class (setup, paper, host, model) and a note giving
/// its cause and measured reason; the summary counts none unclassified.
#[test]
fn every_miss_has_a_class_and_a_note() {
    let r = report();
    let problems = txftl_reproduce::check::class_problems(&r.checks, &r.summary);
    assert!(problems.is_empty(), "{problems:#?}");
}

/// The variant with the whole map at every barrier (the board's public
/// firmware): more map pages per fsync than the changed pages alone, and
/// more on the larger device, whose table has more pages.
#[test]
fn the_whole_map_variant_costs_with_the_capacity() {
    let r = report();
    let w = &r.figures.table1_whole_map;
    assert_eq!(w.len(), 2);
    assert!(w[0].l2p_pages < w[1].l2p_pages && w[1].blocks_per_plane == r.params.head.blocks_per_plane);
    let per_fsync = |x: &txftl_reproduce::xftl::compare::ModeRun| {
        (x.device.map_writes + x.device.superblock_writes) as f64 / x.host.fsyncs.max(1) as f64
    };
    let rbj = |runs: &[txftl_reproduce::xftl::compare::ModeRun]| runs.iter().find(|x| x.mode.cli() == "rbj").cloned().unwrap();
    let ours = r.figures.figure5.iter().find(|f| f.validity_pct == 50).unwrap();
    let ours = rbj(&ours.runs.iter().filter(|x| x.k == r.params.table1_k).cloned().collect::<Vec<_>>());
    assert!(r.params.map_at_flush);
    assert!(
        per_fsync(&rbj(&w[1].runs)) > per_fsync(&ours),
        "{} {}",
        per_fsync(&rbj(&w[1].runs)),
        per_fsync(&ours)
    );
    assert!(per_fsync(&rbj(&w[1].runs)) > per_fsync(&rbj(&w[0].runs)));
}
