//! `reproduce lighttx` at the test size (`--tiny`), through the library:
//! the trace recorded in the run, every figure's replays, the fill sweep of
//! Figs. 6 and 7, the checks computed from the measured figures with their
//! kinds (LightTx's bounds, BPCC = SCC as structural), and the notes from
//! the same run.

use serde_json::Value;
use std::sync::OnceLock;
use txftl_reproduce::lighttx::{paper, LightTx, Report};
use txftl_reproduce::{check, flow, Error, Kind, Options, Paper};

/// One tiny run, shared by the tests of this file.
fn report() -> &'static Report {
    static REPORT: OnceLock<Report> = OnceLock::new();
    REPORT.get_or_init(|| flow::build(&LightTx, &Options::tiny(1), false).expect("reproduce lighttx --tiny"))
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
fn the_trace_is_recorded_in_the_run_from_a_consistent_database() {
    let r = report();
    assert!(!LightTx.failed(&r.figures));
    assert!(!r.params.scaled_down.is_empty(), "says what was scaled down");
    let w = &r.figures.workload;
    assert_eq!(w.consistency, "ok");
    assert!(w.device_transactions > 0);
    assert!(
        w.tx_pages_mean > 1.0 && w.tx_pages_mean <= w.tx_pages_max as f64,
        "{}",
        w.tx_pages_mean
    );
    assert_eq!(number(&check(r, "trace.tx_pages_mean").paper), 27.2);
    assert_eq!(number(&check(r, "trace.tx_pages_mean").measured), w.tx_pages_mean);
}

#[test]
fn every_protocol_runs_at_the_levels_it_offers_and_every_abort_ratio() {
    let r = report();
    let (p, f) = (&r.params, &r.figures);
    let levels = |name: &str| -> Vec<String> {
        p.protocols
            .iter()
            .find(|x| x.protocol == name)
            .unwrap_or_else(|| panic!("{name} not run"))
            .levels
            .clone()
    };
    assert_eq!(levels("lighttx"), ["strict", "no-page-conflict", "serializable"]);
    assert_eq!(levels("atomic-write"), ["strict"]);
    assert!(!levels("scc").contains(&"serializable".to_string()));
    let z0 = p.zone_blocks_default;
    let find = |name: &str, level: &str, a: u32| f.run(name, level, a, (name == "lighttx").then_some(z0));
    for pl in &p.protocols {
        let name = pl.protocol.as_str();
        for level in &pl.levels {
            assert!(find(name, level, 0).is_some(), "{name} {level}");
        }
        for level in ["strict", "no-page-conflict", "serializable"] {
            if !pl.levels.iter().any(|l| l == level) {
                assert!(find(name, level, 0).is_none(), "{name} ran {level}, which it does not offer");
            }
        }
        for &a in &p.abort_pcts {
            let x = find(name, "strict", a).unwrap_or_else(|| panic!("{name} at {a}%"));
            assert!(x.tx_per_sim_s > 0.0);
        }
    }
    assert!(f.failed.is_empty(), "{:?}", f.failed);
    // Fig. 8: a recovery per zone size for LightTx, one for each other protocol;
    // the variants likewise (LightTx's interval zones, and LightTx, SCC and
    // BPCC without summary pages), each on the protocol its key names.
    let zones = p.zone_blocks.len();
    let lighttx_variants = ["lighttx", "lighttx+interval-zones", "lighttx+no-summary-pages"];
    for key in lighttx_variants {
        assert_eq!(f.recovery.iter().filter(|x| x.protocol == key).count(), zones, "{key}");
    }
    let variants = txftl_reproduce::lighttx::VARIANTS.len();
    assert_eq!(
        f.recovery.len(),
        3 * zones + p.protocols.len() - 1 + variants - (lighttx_variants.len() - 1)
    );
    assert!(f.recovery.iter().all(|x| x.recovery_s > 0.0));
    // A variant runs strict without aborts (Fig. 5's column), and is in no check.
    for v in txftl_reproduce::lighttx::VARIANTS {
        assert!(f.run(v.key, "strict", 0, None).is_some(), "{}", v.key);
    }
    // The paper's SCC, BPCC and LightTx read summary pages (sec. IV-D); the
    // variants without them read none.
    for (with, without) in [("scc", "scc+no-summary-pages"), ("bpcc", "bpcc+no-summary-pages")] {
        let (a, b) = (f.recovery_of(with, None).unwrap(), f.recovery_of(without, None).unwrap());
        assert!(a.report.summary_pages_read > 0, "{with}: {:?}", a.report);
        assert_eq!(b.report.summary_pages_read, 0, "{without}: {:?}", b.report);
        assert!(a.report.flash_reads < b.report.flash_reads, "{:?} vs {:?}", a.report, b.report);
    }
}

#[test]
fn the_json_has_reproduce_md_fields_and_each_check_its_kind() {
    let j: Value = serde_json::to_value(report()).unwrap();
    for key in ["paper", "params", "figures", "checks", "deviations", "summary"] {
        assert!(!j[key].is_null(), "missing {key}");
    }
    let checks = j["checks"].as_array().unwrap();
    assert!(checks.len() >= 15, "{} checks", checks.len());
    for c in checks {
        for key in ["id", "what", "paper", "measured", "unit", "kind", "note"] {
            assert!(!c[key].is_null(), "check {} lacks {key}", c["id"]);
        }
        let within = &c["within_25pct"];
        let num = |k: &str| c[k].as_f64().unwrap();
        match c["kind"].as_str().unwrap() {
            // A ratio over 0 (no GC) is undefined, said so, and never within.
            "value" if c["measured"].is_string() => {
                assert!(c["measured"].as_str().unwrap().starts_with("undefined"), "{}", c["id"]);
                assert_eq!(within.as_bool(), Some(false), "{}", c["id"]);
            }
            // The rule every paper's checks share: 25%, or the floor in
            // points for a percentage.
            "value" => {
                let unit = if c["unit"] == "percent" {
                    check::Unit::Percent
                } else {
                    check::Unit::Factor
                };
                assert_eq!(
                    within.as_bool().unwrap(),
                    check::agrees_value(num("paper"), num("measured"), unit),
                    "{}",
                    c["id"]
                )
            }
            "bound" => assert_eq!(within.as_bool().unwrap(), num("measured") <= num("paper"), "{}", c["id"]),
            "order" => assert_eq!(within.as_bool().unwrap(), c["paper"] == c["measured"], "{}", c["id"]),
            "structural" => assert!(within.is_null(), "{}", c["id"]),
            k => panic!("kind {k}"),
        }
    }
}

#[test]
fn the_papers_bounds_and_structural_checks_have_their_kinds() {
    let r = report();
    let kind = |id: &str| check(r, id).kind;
    assert_eq!(kind("fig8.lighttx_max_s"), Kind::Bound);
    assert_eq!(kind("fig9.lighttx_max_pct"), Kind::Bound);
    assert_eq!(number(&check(r, "fig8.lighttx_max_s").paper), paper::FIG8_LIGHTTX_MAX_S);
    // BPCC = SCC without aborts by construction: structural, not counted,
    // and left out of the orders.
    for id in ["fig8.bpcc_eq_scc", "fig9.bpcc_eq_scc"] {
        let c = check(r, id);
        assert_eq!((c.kind, c.within_25pct), (Kind::Structural, None), "{id}");
        assert_eq!(number(&c.measured), 0.0, "{id}");
    }
    for id in ["fig8.order", "fig9.order"] {
        let c = check(r, id);
        assert!(!c.show(&c.measured).contains("BPCC"), "{id}: {:?}", c.measured);
    }
    // SCC's and BPCC's mapping persistence counts what their checkpoints
    // write (block table and record), not 0 by omission.
    let z0 = r.params.zone_blocks_default;
    // One check for both (the paper's one figure; `bpcc_eq_scc` shows ours equal).
    assert!(r.checks.iter().all(|c| c.id != "fig9.bpcc_pct" && c.id != "fig8.bpcc_s"));
    for (id, p) in [("fig9.scc_pct", "scc"), ("fig9.scc_pct", "bpcc")] {
        let c = check(r, id);
        assert_eq!(c.kind, Kind::Value, "{id}");
        let m = &r.figures.strict(p, 0, z0).unwrap().measured;
        assert_eq!(m.map_l2p_writes, 0, "{p} persists no L2P");
        let want = 100.0 * (m.map_block_writes + m.map_record_writes) as f64 / m.host_writes as f64;
        assert!((number(&c.measured) - want).abs() < 1e-9, "{id}: {:?} vs {want}", c.measured);
    }
    let s = &r.summary;
    assert!(
        s.line.ends_with("(structural, not counted: fig8.bpcc_eq_scc, fig9.bpcc_eq_scc)"),
        "{}",
        s.line
    );
    assert_eq!(s.counted, r.checks.len() - 2);
    // Measured, orderings and trends counted apart, adding up.
    assert_eq!(s.measured.1 + s.order.1 + s.trend.1, s.counted);
    assert_eq!(s.measured.0 + s.order.0 + s.trend.0, s.within);
    let trends = r.checks.iter().filter(|c| check::is_trend(c)).count();
    assert_eq!(s.trend.1, trends);
    assert_eq!(
        trends,
        r.params.protocols.len() + 1,
        "a Fig. 6 trend per protocol and SCC's Fig. 7 trend"
    );
    assert!(s.line.contains(&format!("trend {} of {}", s.trend.0, s.trend.1)), "{}", s.line);
}

#[test]
fn figs_6_and_7_run_at_every_fill_and_a_ratio_over_no_gc_is_undefined() {
    let r = report();
    let (p, f) = (&r.params, &r.figures);
    assert!(p.fills_pct.len() >= 2 && p.fills_pct.contains(&p.precondition_pct));
    assert!(p.fill_default_reason.contains("higher garbage collection frequency"));
    for &fill in &p.fills_pct {
        for pl in &p.protocols {
            for &a in &p.abort_pcts {
                let x = f
                    .swept(&pl.protocol, a, fill)
                    .unwrap_or_else(|| panic!("{} at {a}%, fill {fill}%", pl.protocol));
                assert!(x.tx_per_sim_s >= x.committed_per_sim_s && x.committed_per_sim_s > 0.0);
                assert_eq!(x.fill_pct, fill);
            }
        }
    }
    // The default's sweep runs are the checks table's runs.
    let top = txftl_reproduce::lighttx::top_abort(p);
    let z0 = p.zone_blocks_default;
    let d = f.swept("lighttx", top, p.precondition_pct).unwrap();
    assert_eq!(d.tx_per_sim_s, f.strict("lighttx", top, z0).unwrap().tx_per_sim_s);
    // Fill 0%: nothing to collect without aborts.
    let empty = f.swept("lighttx", 0, 0).unwrap();
    assert_eq!(empty.measured.gc_runs, 0);
    // Every Fig. 6/7 check at every fill; a ratio over LightTx's 0 ms undefined.
    let sc = |id: &str| f.sweep_checks.iter().find(|x| x.id == id).unwrap_or_else(|| panic!("{id}"));
    for x in &f.sweep_checks {
        assert_eq!(x.by_fill.len(), p.fills_pct.len(), "{}", x.id);
    }
    for (fill, m, within) in &sc("fig7.scc_over_lighttx").by_fill {
        let l = f.swept("lighttx", top, *fill).unwrap().gc_overhead_ms;
        assert_eq!(m.starts_with("undefined"), l == 0.0, "fill {fill}: {m}");
        if l == 0.0 {
            assert_eq!(*within, Some(false));
        }
    }
    // The default's cells are the checks table's.
    for x in &f.sweep_checks {
        let c = check(r, &x.id);
        let (_, m, w) = x.by_fill.iter().find(|c| c.0 == p.precondition_pct).unwrap();
        assert_eq!((m, w), (&c.show(&c.measured), &c.within_25pct), "{}", x.id);
    }
    // GC onset: every fill and protocol, the whole trace last.
    assert_eq!(f.gc_onset.len(), p.fills_pct.len() * p.protocols.len());
    for o in &f.gc_onset {
        let whole = o.prefixes.last().unwrap();
        assert_eq!(whole.0, 100);
        assert_eq!(whole.1, f.swept(&o.protocol, 0, o.fill_pct).unwrap().measured.gc_runs);
        assert!(o.prefixes.windows(2).all(|w| w[0].2 <= w[1].2), "{:?}", o.prefixes);
    }
}

#[test]
fn scc_grows_from_zero_and_not_when_flat() {
    use txftl_reproduce::lighttx::checks::grows;
    assert_eq!(grows(&[(0, 0.0), (25, 10.0), (50, 20.0)]), "grows");
    assert_eq!(grows(&[(0, 100.0), (25, 102.0), (50, 104.0)]).split(' ').next(), Some("not"));
    assert_eq!(grows(&[(0, 100.0), (25, 300.0), (50, 290.0)]).split(' ').next(), Some("not"));
    assert_eq!(grows(&[(0, 0.0), (50, 0.0)]).split(' ').next(), Some("not"));
}

#[test]
fn fig6_trends_count_ended_transactions_and_show_committed_beside() {
    let r = report();
    let top = txftl_reproduce::lighttx::top_abort(&r.params);
    let z0 = r.params.zone_blocks_default;
    for pl in &r.params.protocols {
        let p = pl.protocol.as_str();
        let c = check(r, &format!("fig6.trend.{p}"));
        let (r0, r1) = (r.figures.strict(p, 0, z0).unwrap(), r.figures.strict(p, top, z0).unwrap());
        let got = txftl_reproduce::lighttx::checks::trend(r0.tx_per_sim_s, r1.tx_per_sim_s);
        let m = c.show(&c.measured);
        assert!(got.starts_with(&m) || m == got, "{p}: {m} vs {got}");
        let committed = txftl_reproduce::lighttx::checks::trend(r0.committed_per_sim_s, r1.committed_per_sim_s);
        assert!(c.note.contains(&format!("committed tx/s {committed}")), "{p}: {}", c.note);
        // An abort request costs the device less than a commit request.
        assert!(r1.abort_mean_ns < r1.commit_mean_ns, "{p}");
    }
}

#[test]
fn measured_columns_come_from_the_figures() {
    let r = report();
    let f = &r.figures;
    let z0 = r.params.zone_blocks_default;
    let t = |level: &str| f.run("lighttx", level, 0, Some(z0)).unwrap().tx_per_sim_s;
    let gain = 100.0 * (t("serializable") / t("strict") - 1.0);
    let c = check(r, "fig5.lighttx.serializable_vs_strict");
    assert!((number(&c.measured) - gain).abs() < 1e-9, "{:?} vs {gain}", c.measured);
    assert_eq!(c.unit, txftl_reproduce::Unit::Percent);
    // Fig. 9: every page the checkpoints write (L2P table, block table,
    // record) and the protocol's own map pages.
    let aw = f.strict("atomic-write", 0, z0).unwrap();
    let m = &aw.measured;
    let pages = m.map_l2p_writes + m.map_block_writes + m.map_record_writes + m.protocol_meta_writes;
    let ratio = 100.0 * pages as f64 / m.host_writes as f64;
    let measured = number(&check(r, "fig9.atomic_write_pct").measured);
    assert!((measured - ratio).abs() < 1e-9, "{measured} vs {ratio}");
    // Atomic-Write persists its mappings at every commit: one page each at least.
    assert!(m.protocol_meta_writes >= aw.commits);
}

#[test]
fn notes_come_from_this_run() {
    let r = report();
    for c in r.checks.iter().filter(|c| c.differs()) {
        assert!(!c.note.is_empty(), "check {} differs with no note", c.id);
    }
    // The trace's note gives this run's pages per transaction kind, and no
    // figure of a run made apart.
    let note = &check(r, "trace.tx_pages_mean").note;
    let w = &r.figures.workload;
    let (kind, n, mean) = &w.host_pages_by_kind[0];
    assert!(note.contains(&format!("{kind} {mean:.1} ({n} tx)")), "{note}");
    assert!(!note.contains("Measured apart"), "{note}");
    let page = flow::html_page(&LightTx, r).unwrap();
    assert_eq!(page.matches("<figure class=fig").count(), 13);
}

#[test]
fn map_at_flush_is_refused() {
    for on in [true, false] {
        let opts = Options {
            map_at_flush: Some(on),
            ..Options::tiny(1)
        };
        match LightTx.params(&opts) {
            Err(Error::Usage(m)) => assert!(m.contains("--map-at-flush") && m.contains("xftl"), "{m}"),
            other => panic!("--map-at-flush {on} not refused: {:?}", other.map(|_| ())),
        }
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
