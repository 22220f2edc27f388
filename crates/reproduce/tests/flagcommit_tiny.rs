//! `reproduce flagcommit` at the test size (`--tiny`), through the library:
//! every protocol at every point, what each design costs (CFC's and AFC's
//! commits clear one flag, CFC's abort programs nothing, no page past the
//! NOP), GC's time inside the flash's, the recoveries, Table 3, and the
//! checks with their kinds and notes from the same run.

use std::sync::OnceLock;
use txftl_reproduce::flagcommit::{points, FlagCommit, Report, PROTOCOLS};
use txftl_reproduce::{flow, Kind, Options, Paper};

fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| flow::build(&FlagCommit, &Options::tiny(1), false).expect("reproduce flagcommit --tiny"))
}

#[test]
fn every_point_runs_on_every_protocol() {
    let r = report();
    assert!(!FlagCommit.failed(&r.figures));
    assert_eq!(r.figures.runs.len(), points(&r.params).len());
    for run in &r.figures.runs {
        assert_eq!(run.committed + run.aborted, r.params.transactions, "{run:?}");
        assert!(run.throughput > 0.0 && run.flash_busy_s > 0.0, "{run:?}");
        assert!(run.gc_s <= run.flash_busy_s, "GC's die time is part of the flash's: {run:?}");
        assert!(run.max_programs_per_page <= r.params.preset().geometry.nop, "{run:?}");
    }
    // A full device makes GC work; an empty one far less.
    for p in PROTOCOLS {
        let full = r.figures.run(p.name, 90, r.params.abort_pct).expect("fill 90");
        let empty = r.figures.run(p.name, 0, r.params.abort_pct).expect("fill 0");
        assert!(full.gc_copies > empty.gc_copies, "{}: {full:?}", p.name);
        let rec = r.figures.recovery(p.name).expect("Fig. 13b's point recovers");
        assert!(rec.time_ms > 0.0 && rec.flash_reads > 0, "{rec:?}");
    }
    // Summary pages where the geometry holds them: CFC's and AFC's records
    // fit a 2 KiB summary page, BPCC's and SCC's do not. AFC rereads more
    // live spares than CFC (every page of a chain, against its heads).
    let summarised = |n| r.figures.runs.iter().any(|x| x.protocol == n && x.summary_pages);
    assert!(summarised("cfc") && summarised("afc") && !summarised("bpcc") && !summarised("scc"));
    let (afc, cfc) = (r.figures.recovery("afc").unwrap(), r.figures.recovery("cfc").unwrap());
    assert!(
        afc.summary_pages_read > 0 && afc.spare_rereads > cfc.spare_rereads,
        "{afc:?} {cfc:?}"
    );
}

#[test]
fn each_design_costs_what_it_says() {
    let r = report();
    let base = |n| r.figures.run(n, r.params.fill_pct, r.params.abort_pct).unwrap();
    for n in ["cfc", "afc"] {
        assert!((base(n).partial_programs_per_commit() - 1.0).abs() < 1e-9, "{n}: one flag a commit");
    }
    // CFC's GC reads its victims' spares to plan them; AFC plans from its
    // transaction table and reads none.
    assert!(base("cfc").gc_plan_reads > 0);
    assert_eq!(base("afc").gc_plan_reads, 0);
    for n in ["bpcc", "scc"] {
        assert_eq!((base(n).partial_programs, base(n).gc_plan_reads), (0, 0), "{n}");
    }
    // CFC moves commit flags out of its victims; AFC only abort flags.
    assert!(base("cfc").gc_flag_programs > base("afc").gc_flag_programs);
    let cfc_abort = r.figures.abort_programs.iter().find(|(n, _)| n == "cfc").unwrap().1;
    assert_eq!(cfc_abort, 0, "CFC's abort programs nothing");
    assert!(r.figures.page_flag_run("cfc").is_some() && r.figures.page_flag_run("afc").is_some());
    assert_eq!(r.figures.memory.len(), PROTOCOLS.len());
    assert!(r.figures.memory.iter().all(|m| m.mb > 1.0), "{:?}", r.figures.memory);
}

#[test]
fn the_checks_have_kinds_and_the_differing_ones_notes() {
    let r = report();
    let ids: Vec<&str> = r.checks.iter().map(|c| c.id.as_str()).collect();
    for id in [
        "fig12.order",
        "fig12.afc_over_bpcc",
        "fig13a.afc_gc_vs_scc",
        "fig13a.scc_gc_share",
        "fig13b.slowest",
        "fig14a.crossing",
        "fig14b.scc_gc_per_commit_growth",
        "table3.cfc",
        "structural.programs_per_page",
        "fig15a.cfc-ex_2_to_3",
        "fig15b.afc-ex_restarts_2_to_3",
        "fig16a.cfc-ex_over_cfc",
        "fig16a.afc-ex_over_wal",
        "fig16b.cfc-ex_commit_gain",
        "fig17.log_pages.cfc-ex",
        "fig18a.cfc-ex_over_wal_short",
        "fig18b.afc-ex_gc_vs_wal_long",
        "fig19a.trend.wal",
        "fig19a.ex_converge",
        "structural.ex_programs_per_page",
    ] {
        assert!(ids.contains(&id), "{id} missing: {ids:?}");
    }
    let share = r.checks.iter().find(|c| c.id == "fig13a.bpcc_gc_share").unwrap();
    assert!(share.at_least && share.kind == Kind::Bound);
    for c in &r.checks {
        if c.differs() {
            assert!(!c.note.is_empty(), "{} differs without a note", c.id);
        }
    }
    assert!(r.summary.counted > 20, "{}", r.summary.line);
    let json = serde_json::to_value(r).unwrap();
    assert_eq!(json["figures"]["runs"].as_array().unwrap().len(), r.figures.runs.len());
}

/// Sec. 5.3: every point ran, the extended protocols wrote versions holding
/// several transactions' pending records and committed without a commit
/// record where no update was buffered; WAL read log pages back for its
/// rollbacks and the extended manager none; no page past its NOP.
#[test]
fn section_5_3_runs_every_point_on_every_manager() {
    use txftl_reproduce::flagcommit::ex;
    let r = report();
    assert_eq!(r.figures.ex_runs.len(), ex::points(&r.params).len());
    for x in &r.figures.ex_runs {
        assert!(x.committed > 0 && x.throughput > 0.0, "{x:?}");
        assert!(x.max_programs_per_page <= x.nop, "{x:?}");
        assert!(x.commit_records <= x.committed, "{x:?}");
        if x.lineup == "wal" {
            assert_eq!((x.versions_read, x.shared_writes), (0, 0), "{x:?}");
        } else {
            assert_eq!(x.log_pages_read_back, 0, "the extended manager rolls back in memory: {x:?}");
            assert_eq!(x.nop as u32, x.point.max_c + 1, "{x:?}");
        }
    }
    let default = ex::ExPoint {
        max_c: r.params.max_c,
        buffer_pages: r.params.buffer_pages,
        written: ex::ALL,
    };
    // Where the buffer is smaller than the database, pages leave it holding
    // several transactions' pending records, and come back.
    for name in ["cfc-ex", "afc-ex"] {
        let runs = r.figures.ex_runs.iter().filter(|x| x.lineup == name);
        assert!(runs.clone().any(|x| x.shared_writes > 0), "{name}");
        assert!(runs.clone().any(|x| x.versions_read > 0), "{name}");
    }
    let wal = r.figures.ex_run("wal", default).expect("WAL at the default point");
    assert!(
        wal.log_records > r.figures.ex_run("cfc-ex", default).unwrap().log_records,
        "WAL logs undo data too"
    );
}

#[test]
fn an_option_of_another_paper_is_refused() {
    let opts = Options {
        map_at_flush: Some(true),
        ..Options::tiny(1)
    };
    assert!(matches!(FlagCommit.params(&opts), Err(txftl_reproduce::Error::Usage(_))));
}

/// Every miss has a class (setup, paper, host, model) and a note giving
/// its cause and measured reason; the summary counts none unclassified.
#[test]
fn every_miss_has_a_class_and_a_note() {
    let r = report();
    let problems = txftl_reproduce::check::class_problems(&r.checks, &r.summary);
    assert!(problems.is_empty(), "{problems:#?}");
}
