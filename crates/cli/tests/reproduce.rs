//! `txftl reproduce`, as a user runs it: what needs the binary (the report's
//! content is tested through the library, in `crates/reproduce/tests`): exit
//! codes, arguments refused before anything runs, the report on standard
//! output (terminal or JSON) and the HTML file written.

mod common;

use common::{txftl, txftl_piped};
use serde_json::Value;

/// A paper not in the list (TxFlash, whose protocols SCC and BPCC are
/// built but whose evaluation is not rerun) is a bad argument, and the
/// refusal lists the papers there are.
#[test]
fn reproduce_refuses_a_paper_it_does_not_reproduce() {
    let (code, _, err) = txftl(&["reproduce", "txflash", "--quick"]);
    assert_eq!(code, 2, "{err}");
    for name in txftl_reproduce::flow::paper_names() {
        assert!(err.contains(name), "{err}");
    }
}

#[test]
fn reproduce_lighttx_refuses_map_at_flush_given_explicitly() {
    for v in ["on", "off"] {
        let (code, out, err) = txftl(&["reproduce", "lighttx", "--tiny", "--map-at-flush", v]);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("--map-at-flush") && err.contains("xftl"), "{err}");
        assert!(out.is_empty(), "refused before the run: {out}");
    }
}

#[test]
fn reproduce_refuses_an_html_path_it_cannot_write_before_the_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("no-such-dir").join("report.html");
    let (code, out, err) = txftl(&["reproduce", "xftl", "--tiny", "--html", path.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot write there"), "{err}");
    assert!(out.is_empty(), "refused before the run: {out}");
}

#[test]
fn reproduce_lighttx_prints_json_and_writes_the_html_report() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lighttx.html");
    let (code, out, err) = txftl(&["reproduce", "lighttx", "--tiny", "--json", "--html", path.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).expect("standard output is the JSON report");
    for key in ["paper", "params", "figures", "checks", "deviations", "summary"] {
        assert!(!r[key].is_null(), "missing {key}");
    }
    let page = std::fs::read_to_string(&path).expect("the HTML report is written");
    assert!(page.contains(r["summary"]["line"].as_str().unwrap()));
    assert!(page.contains("<svg"), "figures drawn");
}

#[test]
fn reproduce_xftl_prints_the_checks_table_then_the_notes() {
    let (code, out, err) = txftl_piped(&["reproduce", "xftl", "--tiny", "--map-at-flush", "off"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("txftl reproduce xftl --quick: X-FTL"), "{out}");
    assert!(out.contains("--map-at-flush off"), "the run says which FTL it had");
    let checks = out.find("\nChecks\n").expect("the checks table");
    let notes = out.find("\nnotes:\n").expect("the notes under it");
    assert!(checks < notes);
    assert!(out.contains("value/bound/order checks within 25%"));
    // Standard output is not a terminal and COLUMNS is not set: the checks
    // table and every line of prose are 100 columns at most (another table
    // only where its words cannot stand narrower side by side).
    for line in out[checks..notes].lines() {
        assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
    }
    let table_line = |l: &str| l.starts_with(['┌', '│', '╞', '├', '└']);
    for line in out.lines().filter(|l| !table_line(l)) {
        assert!(line.chars().count() <= 100, "{} columns: {line}", line.chars().count());
    }
}
