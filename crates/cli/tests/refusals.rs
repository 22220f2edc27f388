//! Options the device or the harness cannot honour are refused, and a run that
//! would test nothing fails instead of reporting a clean result.

mod common;
use common::txftl;

/// The X-FTL canary's bug only shows with transactions: on its defaults it
/// runs `txwrite` and is caught (exit 1); a workload without transactions is refused.
#[test]
fn the_xftl_canary_is_caught_on_its_defaults() {
    let (code, out, err) = txftl(&["crashtest", "--protocol", "xftl-canary", "--no-recovery-cuts", "--ops", "150"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("txwrite") && out.contains("VIOLATION"), "{out}");
    let (code, _, err) = txftl(&["crashtest", "--protocol", "xftl-canary", "--workload", "randwrite"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("only shows with --workload txwrite"), "{err}");
}

/// A crash point or a cut past the workload's last operation tested nothing.
#[test]
fn cuts_past_the_last_operation_fail() {
    let (code, _, err) = txftl(&["crashtest", "--ops", "20", "--at", "100000", "--torn", "none"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("does not exist"), "{err}");
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "50", "--cut-at", "100000000"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(err.contains("no power cut happened"), "{err}");
    // A cut inside the run still works.
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "2000", "--cut-at", "100"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// `--second-ops` sizes the continuations of two-cut runs: with them off it
/// would be ignored, so it is refused (a second cut's replay still takes it).
#[test]
fn second_ops_without_second_cuts_is_refused() {
    let (code, _, err) = txftl(&["crashtest", "--ops", "20", "--second-cuts", "off", "--second-ops", "5"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--second-cuts off"), "{err}");
    let (code, out, err) = txftl(&[
        "crashtest",
        "--ops",
        "20",
        "--no-recovery-cuts",
        "--second-cuts",
        "1",
        "--second-ops",
        "5",
    ]);
    assert_eq!(code, 0, "{out}{err}");
}

/// An over-provisioning below what GC needs used to be raised without a word.
#[test]
fn an_overprovisioning_below_the_minimum_is_refused() {
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "100", "--overprovision", "5"]);
    assert_ne!(code, 0, "{out}{err}");
    assert!(err.contains("below the minimum"), "{err}");
    // Without the option, the default is raised to the minimum and the run works.
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "100"]);
    assert_eq!(code, 0, "{out}{err}");
}

/// Transaction options with a workload that has no transactions used to be
/// ignored without a word.
#[test]
fn transaction_options_need_the_txwrite_workload() {
    let (code, _, err) = txftl(&["run", "--preset", "tiny", "--ops", "10", "--concurrency", "3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--concurrency") && err.contains("txwrite"), "{err}");
    let (code, _, err) = txftl(&["crashtest", "--workload", "mixed", "--trim-pct", "5"]);
    assert_eq!(code, 2, "{err}");
}

/// `crashtest` on a transactional protocol defaults to the mix that shakes out
/// the most bugs: two transactions open, plain writes and trims mixed in.
#[test]
fn crashtest_defaults_to_concurrent_transactions_with_plain_writes_and_trims() {
    let (code, out, err) = txftl(&[
        "crashtest",
        "--protocol",
        "xftl",
        "--ops",
        "150",
        "--no-recovery-cuts",
        "--torn",
        "none,data",
    ]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("txwrite"), "{out}");
    let (code, out, _) = txftl(&[
        "crashtest",
        "--protocol",
        "xftl",
        "--ops",
        "150",
        "--no-recovery-cuts",
        "--torn",
        "none,data",
        "--json",
    ]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let tx = &v["workload"]["tx"];
    assert_eq!(
        (tx["concurrency"].as_u64(), tx["nontx_pct"].as_u64(), tx["trim_pct"].as_u64()),
        (Some(2), Some(10), Some(5))
    );
}

/// On a protocol that runs one transaction at a time the default is one
/// open at a time (two would be refused by the device); asked for two,
/// it is refused with its reason.
#[test]
fn crashtest_defaults_to_one_transaction_on_a_strict_protocol() {
    let args = [
        "crashtest",
        "--protocol",
        "atomic-write",
        "--ops",
        "120",
        "--no-recovery-cuts",
        "--torn",
        "none",
        "--json",
    ];
    let (code, out, err) = txftl(&args);
    assert_eq!(code, 0, "{out}{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["workload"]["tx"]["concurrency"].as_u64(), Some(1));
    let (code, out, err) = txftl(&[&args[..], &["--concurrency", "2"]].concat());
    assert_ne!(code, 0, "{out}");
    assert!(err.contains("one at a time"), "{err}");
}

/// Fault options need a fault model, and its parameters are checked; with
/// one, the run's table says what the faults did.
#[test]
fn fault_options_are_checked_and_reported() {
    let (code, _, err) = txftl(&["run", "--preset", "tiny", "--ops", "100", "--fault-seed", "3"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("need --faults"), "{err}");
    let (code, _, err) = txftl(&[
        "run",
        "--preset",
        "tiny",
        "--ops",
        "100",
        "--faults",
        "typical",
        "--retention-days=-1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("retention_days must be 0 or more"), "{err}");
    let (code, _, err) = txftl(&["run", "--preset", "tiny", "--ops", "100", "--faults", "bogus"]);
    assert_eq!(code, 2, "{err}");
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "200", "--data", "full", "--faults", "stress"]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains("flash faults") && out.contains("bit errors corrected by ECC"), "{out}");
}

/// A protocol option is checked against the protocol's registry entry: one it
/// does not take, a value out of its range, a conflict with the FTL's
/// options, or a key no protocol of a multi-mode command takes is refused
/// (exit 2) before anything runs; one it takes is used.
#[test]
fn protocol_options_are_checked_against_the_protocols_entry() {
    let refused = |args: &[&str], says: &str| {
        let (code, out, err) = txftl(args);
        assert_eq!(code, 2, "{args:?}: {out}{err}");
        assert!(err.contains(says), "{args:?}: {err}");
    };
    let run = ["run", "--preset", "tiny", "--ops", "50"];
    let with = |extra: &[&'static str]| -> Vec<&'static str> { run.iter().chain(extra).copied().collect() };
    refused(
        &with(&["--protocol-opt", "zone-blocks=2"]),
        "protocol `plain` takes no option `zone-blocks`",
    );
    refused(
        &with(&["--protocol", "xftl", "--protocol-opt", "xl2p-entries=0"]),
        "from 1 to 65536",
    );
    refused(&with(&["--protocol", "xftl", "--protocol-opt", "xl2p-entries"]), "not KEY=VALUE");
    refused(
        &with(&[
            "--protocol",
            "xftl",
            "--protocol-opt",
            "xl2p-entries=8",
            "--protocol-opt",
            "xl2p-entries=9",
        ]),
        "given twice",
    );
    refused(
        &with(&[
            "--protocol",
            "lighttx",
            "--protocol-opt",
            "zone-blocks=2",
            "--protocol-opt",
            "interval-zones=1",
            "--checkpoint-every",
            "64",
        ]),
        "already set",
    );
    refused(
        &["sqlcrash", "--modes", "rbj,wal", "--protocol-opt", "xl2p-entries=8"],
        "takes no option `xl2p-entries`",
    );
    refused(
        &["sqlcrash", "--modes", "rbj,lighttx", "--protocol-opt", "xl2p-entries=8"],
        "applies to none of the protocols run here",
    );
    let (code, out, err) = txftl(&with(&["--protocol", "lighttx", "--protocol-opt", "zone-blocks=2", "--json"]));
    assert_eq!(code, 0, "{out}{err}");
    let report: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(report["protocol"], "lighttx");
}

/// `txftl protocols` lists every registry entry with what it offers.
#[test]
fn protocols_lists_every_entry() {
    let (code, out, err) = txftl(&["protocols", "--json"]);
    assert_eq!(code, 0, "{err}");
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    let names: Vec<&str> = list.as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    assert_eq!(names, txftl_protocols::PROTOCOLS.iter().map(|e| e.name).collect::<Vec<_>>());
    let scc = list.as_array().unwrap().iter().find(|p| p["name"] == "scc").unwrap();
    assert_eq!(scc["trims"], false);
    assert_eq!(scc["counters"][0]["key"], "forced_erases");
    assert!(scc["sql_modes"].as_array().unwrap().iter().any(|m| m == "scc-memory"));
    assert_eq!(scc["nand"]["cell"], "any");
    assert_eq!(
        (scc["nand"]["min_nop"].as_u64(), scc["nand"]["min_oob"].as_u64()),
        (Some(1), Some(64))
    );
    assert_eq!(scc["nand"]["tiny_preset"], "tiny");
}

/// `--tx-end-flag` on a protocol without end-flagged writes, or on a
/// workload without transactions, is refused before anything runs.
#[test]
fn end_flags_are_refused_where_they_do_not_apply() {
    let (code, _, err) = txftl(&["crashtest", "--protocol", "xftl", "--workload", "txwrite", "--tx-end-flag"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--tx-end-flag needs a protocol with end-flagged"), "{err}");
    let (code, _, err) = txftl(&["run", "--protocol", "nolgn", "--workload", "randwrite", "--tx-end-flag"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--tx-end-flag only apply to --workload txwrite"), "{err}");
}

/// `--tx-static-dynamic` on a protocol without Möbius's calls, or beside
/// `--tx-end-flag`, is refused before anything runs.
#[test]
fn static_dynamic_calls_are_refused_where_they_do_not_apply() {
    let (code, _, err) = txftl(&[
        "crashtest",
        "--protocol",
        "nolgn",
        "--workload",
        "txwrite",
        "--tx-static-dynamic",
        "30",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--tx-static-dynamic needs a protocol with static and dynamic"),
        "{err}"
    );
    let (code, _, err) = txftl(&["run", "--protocol", "mobius", "--workload", "txwrite", "--tx-static-dynamic", "101"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("101"), "{err}");
}
