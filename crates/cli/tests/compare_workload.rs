//! `txftl compare --workload W`: a workload other than partsupp in every mode
//! on identical devices, and the options of another workload refused.

mod common;

use common::txftl;
use serde_json::Value;

#[test]
fn compare_runs_ycsb_and_tpcc_in_every_mode() {
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "16"];
    let mut a = vec![
        "compare",
        "--workload",
        "ycsb-a",
        "--records",
        "300",
        "--operations",
        "300",
        "--modes",
        "wal,xftl",
        "--json",
    ];
    a.extend(dev);
    let (code, out, err) = txftl(&a);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let runs = r["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    for x in runs {
        assert_eq!(x["integrity"], "ok");
        assert_eq!(x["units"], 300);
        assert!(x["throughput_per_sim_s"].as_f64().unwrap() > 0.0);
        assert!(x["latency_p99_ns"].as_u64().unwrap() > 0);
    }
    // YCSB-A updates: WAL writes its log and syncs, X-FTL commits on the device.
    assert!(runs[0]["host"]["wal_page_writes"].as_u64().unwrap() > 0);
    assert!(runs[1]["device"]["commits"].as_u64().unwrap() > 0);
    assert_eq!(runs[1]["host"]["wal_page_writes"], 0);

    let mut a = vec![
        "compare",
        "--workload",
        "tpcc",
        "--scale",
        "100",
        "--transactions",
        "50",
        "--modes",
        "rbj,xftl",
        "--json",
    ];
    a.extend(dev);
    let (code, out, err) = txftl(&a);
    assert_eq!(code, 0, "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    for x in r["runs"].as_array().unwrap() {
        assert_eq!(x["consistency"], "ok");
        assert_eq!(x["units"], 50);
    }
}

#[test]
fn compare_refuses_options_of_another_workload() {
    for a in [
        &["compare", "--workload", "tpcc", "--k", "3"][..],
        &["compare", "--num", "10"],
        &["compare", "--workload", "ycsb"],
        &["compare", "--workload", "ycsb-a", "--transactions", "5"],
        &["compare", "--workload", "nope"],
    ] {
        let (code, _, err) = txftl(a);
        assert_eq!(code, 2, "{a:?}: {err}");
    }
}
