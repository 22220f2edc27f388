//! `txftl filebench`, as a user runs it: a personality on a transactional
//! protocol (one device transaction per fsync) and on the plain FTL
//! (journaled), its JSON, and the options refused before anything runs.

mod common;

use common::txftl;
use serde_json::Value;

fn run_json(args: &[&str]) -> Value {
    let mut all = vec!["filebench"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--blocks-per-plane", "32", "--loops", "40", "--json"]);
    let (code, out, err) = txftl(&all);
    assert_eq!(code, 0, "{err}");
    serde_json::from_str(&out).unwrap()
}

#[test]
fn the_webserver_on_mobius_commits_one_transaction_per_log_append() {
    let v = run_json(&["webserver", "--protocol", "mobius", "--nfiles", "100"]);
    assert_eq!(v["fs_mode"], "transactional");
    assert_eq!(v["fsync"], "one-transaction");
    assert_eq!(v["report"]["flowops"], 40 * 31);
    assert_eq!(v["host"]["tx_commits"], 40);
    assert!(v["ops_per_sim_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_fileserver_on_plain_journals_its_metadata() {
    let v = run_json(&["fileserver", "--nfiles", "100", "--filesize", "8192"]);
    assert_eq!(v["fs_mode"], "journaled");
    assert_eq!(v["fsync"], Value::Null);
    assert_eq!(v["report"]["flowops"], 40 * 11);
    assert!(v["host"]["metadata_journal_writes"].as_u64().unwrap() > 0);
}

#[test]
fn options_that_do_not_apply_are_refused() {
    for (args, says) in [
        (vec!["fileserver", "--fsync", "one-tx"], "has no transactions"),
        (vec!["webserver", "--meandirwidth", "1"], "meandirwidth"),
        (vec!["mailserver"], "invalid value"),
    ] {
        let mut all = vec!["filebench"];
        all.extend_from_slice(&args);
        let (code, out, err) = txftl(&all);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(out.is_empty(), "{args:?}: refused before the run");
    }
}
