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

/// `--host-profile` applies to a paper with a host model only; a profile
/// that does not parse or prices below zero is a bad argument, before the run.
#[test]
fn reproduce_refuses_a_host_profile_where_it_does_not_apply_or_is_bad() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("host.toml");
    let (code, out, err) = txftl(&["calibrate-host", "--rounds", "3", "--out", good.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.is_empty(), "{out}");
    let text = std::fs::read_to_string(&good).unwrap();
    for key in ["statement_ns", "vm_step_ns", "syscall_ns", "copy_ns_per_kib", "source"] {
        assert!(text.contains(key), "{key} missing: {text}");
    }
    let (code, out, err) = txftl(&["reproduce", "lighttx", "--tiny", "--host-profile", good.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--host-profile") && err.contains("device time only"), "{err}");
    assert!(out.is_empty(), "refused before the run: {out}");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, text.replace("syscall_ns = ", "syscall_ns = -")).unwrap();
    let (code, out, err) = txftl(&["reproduce", "xftl", "--tiny", "--host-profile", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("syscall_ns"), "{err}");
    assert!(out.is_empty(), "{out}");
    let (code, _, err) = txftl(&["calibrate-host", "--rounds", "1"]);
    assert_eq!(code, 2, "{err}");
}

/// `reproduce xftl` prices its host work with the profile it is given: the
/// JSON's params carry it, and its Table 4 rates move with it.
#[test]
fn reproduce_xftl_uses_the_host_profile_it_is_given() {
    let dir = tempfile::tempdir().unwrap();
    let slow = dir.path().join("slow.toml");
    std::fs::write(
        &slow,
        "statement_ns = 1000000.0\nvm_step_ns = 0.0\nsyscall_ns = 0.0\ncopy_ns_per_kib = 0.0\nsource = \"a test's\"\n",
    )
    .unwrap();
    let run = |extra: &[&str]| -> Value {
        let mut args = vec!["reproduce", "xftl", "--tiny", "--json"];
        args.extend_from_slice(extra);
        let (code, out, err) = txftl(&args);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str(&out).unwrap()
    };
    // The two runs side by side (each is a process of its own).
    let (builtin, mine) = std::thread::scope(|s| {
        let builtin = s.spawn(|| run(&[]));
        let mine = run(&["--host-profile", slow.to_str().unwrap()]);
        (builtin.join().unwrap(), mine)
    });
    assert_eq!(mine["params"]["host"]["profile"]["source"], "a test's");
    assert!(builtin["params"]["host"]["profile_file"].as_str().unwrap().contains("built in"));
    let tpm = |j: &Value| {
        j["checks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["id"] == "table4.write.wal_tpm")
            .unwrap()["measured"]
            .as_f64()
            .unwrap()
    };
    // A millisecond a statement: far fewer transactions a minute.
    assert!(tpm(&mine) < tpm(&builtin) / 2.0, "{} {}", tpm(&mine), tpm(&builtin));
    assert!(mine["host_sweep"].as_array().is_some_and(|v| !v.is_empty()));
}
