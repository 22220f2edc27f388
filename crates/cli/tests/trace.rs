//! `txftl run --clients/--record` and `txftl trace`, as a user runs them.

mod common;

use common::txftl;

fn json(out: &str) -> serde_json::Value {
    serde_json::from_str(out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
}

#[test]
fn a_recorded_run_replays_on_every_isolation_level_and_on_plain() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("tx.trace");
    let t = trace.to_str().unwrap();
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "8"];
    let mut args = vec!["run", "--protocol", "xftl", "--workload", "txwrite", "--txs", "200", "--fill", "3"];
    args.extend(dev);
    args.extend(["--clients", "4", "--record", t, "--json"]);
    let (code, out, err) = txftl(&args);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(r["host"]["clients"], 4);
    assert!(r["throughput_per_sim_s"].as_f64().unwrap() > 0.0);
    assert!(r["latency"]["transaction"]["p99_ns"].as_u64().unwrap() > 0);
    // Recording again to the same file is refused, not an overwrite.
    let (code, _, err) = txftl(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("cannot create the trace record"), "{err}");
    for (protocol, iso) in [
        ("xftl", "strict"),
        ("xftl", "no-page-conflict"),
        ("xftl", "serializable"),
        ("plain", "serializable"),
        ("lighttx", "strict"),
        ("lighttx", "no-page-conflict"),
        ("lighttx", "serializable"),
        ("atomic-write", "strict"),
    ] {
        let mut a = vec![
            "trace",
            "replay",
            t,
            "--protocol",
            protocol,
            "--clients",
            "8",
            "--isolation",
            iso,
            "--json",
        ];
        a.extend(dev);
        let (code, out, err) = txftl(&a);
        assert_eq!(code, 0, "{protocol} {iso}: {err}");
        let r = json(&out);
        assert_eq!(r["trace"]["transactions"], 200, "{protocol} {iso}");
        assert_eq!(r["counts"]["wrong_reads"], 0);
        assert!(r["latency"]["request"]["p99_ns"].as_u64().unwrap() > 0);
    }
    // Atomic-Write runs one transaction at a time: the other levels are refused.
    for iso in ["no-page-conflict", "serializable"] {
        let mut a = vec![
            "trace",
            "replay",
            t,
            "--protocol",
            "atomic-write",
            "--clients",
            "8",
            "--isolation",
            iso,
        ];
        a.extend(dev);
        let (code, _, err) = txftl(&a);
        assert_eq!(code, 2, "{iso}: {err}");
        assert!(err.contains("does not offer") && err.contains(iso), "{err}");
    }
}

#[test]
fn public_traces_replay_and_bad_lines_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g.trace");
    let gs = g.to_str().unwrap();
    let (code, out, err) = txftl(&["trace", "gen", "--out", gs, "--requests", "5000", "--capacity-gib", "1"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("5000 requests"), "{out}");
    let dev = ["--preset", "jasmine", "--blocks-per-plane", "16"];
    let mut a = vec![
        "trace",
        "replay",
        gs,
        "--format",
        "mqsim",
        "--wrap",
        "--as-fast-as-possible",
        "--queue-depth",
        "8",
        "--json",
    ];
    a.extend(dev);
    let (code, out, err) = txftl(&a);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(r["counts"]["requests"], 5000);
    assert!(r["counts"]["wrapped"].as_u64().unwrap() > 0);
    // Without --wrap a trace larger than the device is refused, naming the line.
    let mut a = vec!["trace", "replay", gs, "--format", "mqsim"];
    a.extend(dev);
    let (code, _, err) = txftl(&a);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line "), "{err}");
    // A bad line of an MSR trace.
    let msr = dir.path().join("bad.csv");
    std::fs::write(
        &msr,
        "128166372003061629,web,0,Read,4096,8192,100\n128166372003061630,web,0,Fly,0,8192,100\n",
    )
    .unwrap();
    let (code, _, err) = txftl(&["trace", "replay", msr.to_str().unwrap(), "--format", "msr"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 2"), "{err}");
    // Options of the other kind of trace are refused.
    let (code, _, err) = txftl(&["trace", "replay", gs, "--format", "mqsim", "--isolation", "strict"]);
    assert_eq!(code, 2);
    assert!(err.contains("--isolation do not apply"), "{err}");
    let (code, _, err) = txftl(&["trace", "replay", gs, "--queue-depth", "4"]);
    assert_eq!(code, 2);
    assert!(err.contains("--queue-depth do not apply"), "{err}");
    let (code, _, err) = txftl(&["trace", "replay", gs, "--age", "10"]);
    assert_eq!(code, 2);
    assert!(err.contains("--age do not apply"), "{err}");
    // Aging overwrites the preconditioned pages: without them it is refused.
    let (code, _, err) = txftl(&["trace", "replay", gs, "--format", "mqsim", "--age", "10"]);
    assert_eq!(code, 2);
    assert!(err.contains("--age overwrites the preconditioned pages"), "{err}");
    // A txftl trace with a bad line.
    let bad = dir.path().join("bad.trace");
    std::fs::write(&bad, "# txftl-trace v1\n0 0 - write 1 1\n5 0 - fly 1 1\n").unwrap();
    let (code, _, err) = txftl(&["trace", "replay", bad.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 3: unknown operation `fly`"), "{err}");
}

/// Möbius's own calls, recorded: a static transaction as its staged pages
/// and its swrite, a dynamic one as its chain. The trace replays on Möbius
/// with the same commits and aborts; another protocol refuses it at the
/// first call it lacks, naming the line.
#[test]
fn mobius_calls_are_recorded_and_replay_where_they_are_offered() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("mobius.trace");
    let t = trace.to_str().unwrap();
    let dev = ["--preset", "tiny"];
    let mut args = vec!["run", "--protocol", "mobius", "--workload", "txwrite", "--ops", "300"];
    args.extend([
        "--tx-static-dynamic",
        "40",
        "--abort-ratio",
        "0.2",
        "--concurrency",
        "2",
        "--record",
        t,
        "--json",
    ]);
    args.extend(dev);
    let (code, out, err) = txftl(&args);
    assert_eq!(code, 0, "{err}");
    let run = json(&out);
    let text = std::fs::read_to_string(&trace).unwrap();
    for word in ["stage", "swrite", "sread", "dwrite", "dabort"] {
        assert!(
            text.lines().any(|l| l.split_whitespace().nth(3) == Some(word)),
            "no {word} recorded"
        );
    }
    let mut a = vec!["trace", "replay", t, "--protocol", "mobius", "--json"];
    a.extend(dev);
    let (code, out, err) = txftl(&a);
    assert_eq!(code, 0, "{err}");
    let r = json(&out);
    assert_eq!(r["measured"]["commits"], run["measured"]["commits"], "{}", r["measured"]);
    assert_eq!(r["measured"]["aborts"], run["measured"]["aborts"]);
    let mut a = vec!["trace", "replay", t, "--protocol", "xftl"];
    a.extend(dev);
    let (code, _, err) = txftl(&a);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("operation not supported by the `xftl` protocol: static transactions"),
        "{err}"
    );
}

/// A trace whose Möbius calls come out of order (an swrite with nothing
/// staged, a dabort with no chain open) stops the replay with a typed
/// error naming the line, not a panic.
#[test]
fn mobius_calls_out_of_order_are_refused_at_their_line() {
    let dir = tempfile::tempdir().unwrap();
    for (body, want) in [
        (
            "0 0 5 begin - -\n1 0 5 swrite - - s-swrite\n",
            "transaction 1's swrite with no page staged",
        ),
        (
            "0 0 5 begin - -\n1 0 5 dabort - -\n",
            "a dabort of transaction 1, whose chain is not open",
        ),
    ] {
        let trace = dir.path().join("bad.trace");
        std::fs::write(&trace, format!("# txftl-trace v2\n{body}")).unwrap();
        let (code, _, err) = txftl(&[
            "trace",
            "replay",
            trace.to_str().unwrap(),
            "--protocol",
            "mobius",
            "--preset",
            "tiny",
        ]);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("trace line 3") && err.contains(want), "{err}");
    }
}
