//! `txftl sql tpcc`, as a user runs it: a small-scale run per journal mode,
//! its consistency check, a recorded trace that replays.

mod common;

use common::txftl;

#[test]
fn tpcc_runs_in_every_mode_and_its_trace_replays() {
    let dir = tempfile::tempdir().unwrap();
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "16"];
    for mode in ["rbj", "wal", "xftl"] {
        let trace = dir.path().join(format!("{mode}.trace"));
        let mut a = vec!["sql", "tpcc", "--mode", mode, "--scale", "100", "--transactions", "300", "--json"];
        a.extend(dev);
        a.extend(["--record", trace.to_str().unwrap()]);
        let (code, out, err) = txftl(&a);
        assert_eq!(code, 0, "{mode}: {err}");
        let r: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["consistency"], "ok", "{mode}");
        assert_eq!(r["integrity"], "ok", "{mode}");
        assert!(r["tpmc"].as_f64().unwrap() > 0.0, "{mode}");
        assert_eq!(r["kinds"].as_array().unwrap().len(), 5);
        assert!(
            r["kinds"][0]["host_page_writes_per_tx"].as_f64().unwrap() > 0.0,
            "{mode}: New-Order writes pages"
        );
        assert_eq!(r["kinds"][2]["host_page_writes_per_tx"], 0.0, "{mode}: Order-Status writes nothing");
        if mode == "xftl" {
            // The file system's transactions, replayed by 7 clients.
            let mut a = vec![
                "trace",
                "replay",
                trace.to_str().unwrap(),
                "--protocol",
                "xftl",
                "--clients",
                "7",
                "--isolation",
                "serializable",
                "--json",
            ];
            a.extend(dev);
            let (code, out, err) = txftl(&a);
            assert_eq!(code, 0, "{err}");
            let r: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert!(r["trace"]["transactions"].as_u64().unwrap() > 200, "{r}");
        }
    }
    // Four clients, four connections: the database stays consistent.
    let mut a = vec![
        "sql",
        "tpcc",
        "--mode",
        "xftl",
        "--clients",
        "4",
        "--scale",
        "100",
        "--transactions",
        "300",
        "--json",
    ];
    a.extend(dev);
    let (code, out, err) = txftl(&a);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((r["consistency"].as_str(), r["integrity"].as_str()), (Some("ok"), Some("ok")));
    assert_eq!(r["clients"], 4);
    // They interleaved: the token changed hands, and every busy event was retried.
    assert!(r["switches"].as_u64().unwrap() > 300, "{}", r["switches"]);
    let b = &r["busy"];
    assert_eq!(
        b["busy"].as_u64(),
        Some(b["restarts"].as_u64().unwrap() + b["commit_retries"].as_u64().unwrap())
    );
    // A mix that does not add up is refused.
    let (code, _, err) = txftl(&["sql", "tpcc", "--mix", "50,50,0,0,1"]);
    assert_eq!(code, 2);
    assert!(err.contains("adds up to 101"), "{err}");
    let (code, _, err) = txftl(&["sql", "tpcc", "--protocol", "plain"]);
    assert_eq!(code, 2);
    assert!(err.contains("--protocol plain does not apply"), "{err}");
}

#[test]
fn ycsb_and_sqlite_bench_run_on_wal_and_xftl() {
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "16"];
    for mode in ["wal", "xftl"] {
        for w in ["a", "e"] {
            let mut a = vec![
                "sql",
                "ycsb",
                "--mode",
                mode,
                "--workload",
                w,
                "--records",
                "500",
                "--operations",
                "300",
                "--json",
            ];
            a.extend(dev);
            let (code, out, err) = txftl(&a);
            assert_eq!(code, 0, "{mode} {w}: {err}");
            let r: serde_json::Value = serde_json::from_str(&out).unwrap();
            assert_eq!(r["integrity"], "ok");
            assert!(r["throughput_per_sim_s"].as_f64().unwrap() > 0.0);
            assert!(r["latency"]["request"]["p99_ns"].as_u64().unwrap() > 0, "{mode} {w}");
        }
        let mut a = vec![
            "sql",
            "sqlite-bench",
            "--mode",
            mode,
            "--benchmarks",
            "fillseq,overwrite,readrandom",
            "--num",
            "300",
            "--value-size",
            "4096",
            "--json",
        ];
        a.extend(dev);
        let (code, out, err) = txftl(&a);
        assert_eq!(code, 0, "{mode}: {err}");
        let r: serde_json::Value = serde_json::from_str(&out).unwrap();
        let b = r["benchmarks"].as_array().unwrap();
        assert_eq!(b.len(), 3);
        assert_eq!(b[2]["result"]["found"], 300, "readrandom finds every key");
        assert!(b[1]["host_page_writes"].as_u64().unwrap() > 0);
    }
    let (code, _, err) = txftl(&["sql", "sqlite-bench", "--benchmarks", "fillfast"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn partsupp_runs_on_rbj_and_xftl() {
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "16"];
    let mut committed = Vec::new();
    for mode in ["rbj", "xftl"] {
        let mut a = vec![
            "sql",
            "partsupp",
            "--mode",
            mode,
            "--rows",
            "2000",
            "--transactions",
            "200",
            "--k",
            "5",
            "--json",
        ];
        a.extend(dev);
        let (code, out, err) = txftl(&a);
        assert_eq!(code, 0, "{mode}: {err}");
        let r: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(r["integrity"], "ok");
        assert_eq!(r["kinds"][0]["count"], 200);
        assert!(r["throughput_per_sim_s"].as_f64().unwrap() > 0.0);
        assert!(r["latency"]["transaction"]["p99_ns"].as_u64().unwrap() > 0);
        committed.push(r["host"]["database_page_writes"].as_u64().unwrap());
    }
    assert!(committed.iter().all(|&n| n > 0), "{committed:?}");
    let (code, _, err) = txftl(&["sql", "partsupp", "--k", "0"]);
    assert_eq!(code, 2, "{err}");
}

/// A recorded run on a device with extension calls records them as their
/// own trace words: SW-WAL's WAL pages go `write-remappable`, its
/// checkpoints `remap`. The trace replays on SW-WAL with the remaps, and on
/// `plain`, which has none, with the host's copies instead.
#[test]
fn a_recorded_sw_wal_run_records_its_remaps_and_replays_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("sw-wal.trace");
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "16"];
    let mut a = vec![
        "sql",
        "tpcc",
        "--mode",
        "sw-wal",
        "--scale",
        "100",
        "--transactions",
        "100",
        "--json",
        "--record",
        trace.to_str().unwrap(),
    ];
    a.extend(dev);
    let (code, out, err) = txftl(&a);
    assert_eq!(code, 0, "{err}");
    let r: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((r["consistency"].as_str(), r["integrity"].as_str()), (Some("ok"), Some("ok")));
    let remaps = r["measured"]["protocol"]["sw_wal_remaps"].as_u64().unwrap();
    assert!(remaps > 0 && r["host"]["remappable_writes"].as_u64().unwrap() > 0, "{}", r["host"]);
    let text = std::fs::read_to_string(&trace).unwrap();
    let count = |word: &str| text.lines().filter(|l| l.split_whitespace().nth(3) == Some(word)).count() as u64;
    assert_eq!(count("remap"), remaps, "every remap recorded");
    assert!(count("write-remappable") >= remaps);
    for (protocol, want_remaps) in [("sw-wal", true), ("plain", false)] {
        let mut a = vec!["trace", "replay", trace.to_str().unwrap(), "--protocol", protocol, "--json"];
        a.extend(dev);
        let (code, out, err) = txftl(&a);
        assert_eq!(code, 0, "{protocol}: {err}");
        let r: serde_json::Value = serde_json::from_str(&out).unwrap();
        let replayed = r["measured"]["protocol"]["sw_wal_remaps"].as_u64().unwrap_or(0);
        assert_eq!(replayed > 0, want_remaps, "{protocol}: {replayed} remaps");
    }
}
