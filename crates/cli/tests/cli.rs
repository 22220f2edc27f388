//! The command line as a user meets it: exit codes, errors, round trips.

use std::process::Command;

fn txftl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_txftl")).args(args).output().expect("run txftl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn bad_arguments_exit_2_with_a_message() {
    for args in [
        &["run", "--preset", "nope"][..],
        &["run", "--protocol", "nope"],
        &["run", "--workload", "nope"],
        &["run", "--fill", "0"],
        &["run", "--fill", "101"],
        &["run", "--ops", "0"],
        &["run", "--blocks-per-plane", "0"],
        &["crashtest", "--torn", "sideways"],
        &["crashtest", "--at", "3"],
        &["crashtest", "--preset", "femu"],
        &["frobnicate"],
    ] {
        let (code, _, err) = txftl(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(!err.is_empty(), "{args:?} printed no message");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

#[test]
fn run_prints_counters_and_json() {
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "2000", "--fill", "90"]);
    assert_eq!(code, 0, "{err}");
    for needle in [
        "write amplification",
        "GC runs",
        "flash ops per wall second",
        "simulated time",
        "erases",
    ] {
        assert!(out.contains(needle), "missing {needle}: {out}");
    }
    let (code, out, _) = txftl(&["run", "--preset", "tiny", "--ops", "2000", "--json", "--data", "full"]);
    assert_eq!(code, 0);
    assert!(
        out.trim_start().starts_with('{') && out.contains("\"write_amplification\""),
        "{out}"
    );
    assert!(out.contains("\"wrong_reads\": 0"));
}

#[test]
fn cut_at_reports_recovery() {
    let (code, out, err) = txftl(&["run", "--preset", "tiny", "--ops", "500", "--cut-at", "100", "--torn", "partial"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("power cut after") && out.contains("recovery"), "{out}");
}

#[test]
fn image_round_trip_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    let input = dir.path().join("in.bin");
    let output = dir.path().join("out.bin");
    let bytes: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 251) as u8).collect();
    std::fs::write(&input, &bytes).unwrap();
    assert_eq!(txftl(&["format", "--image", img, "--preset", "tiny"]).0, 0);
    let (code, _, err) = txftl(&["put", "--image", img, "--lpn", "3", input.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = txftl(&[
        "get",
        "--image",
        img,
        "--lpn",
        "3",
        "--bytes",
        "20000",
        "--out",
        output.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&output).unwrap(), bytes);
    // A run on the image, then the data is still there.
    assert_eq!(
        txftl(&["run", "--image", img, "--ops", "300", "--fill", "50", "--workload", "mixed"]).0,
        0
    );
    // Refusals.
    assert_eq!(txftl(&["format", "--image", img]).0, 2, "never overwrites");
    let (code, _, err) = txftl(&["put", "--image", img, "--lpn", "1000000", input.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    let junk = dir.path().join("junk.img");
    std::fs::write(&junk, b"not an image").unwrap();
    let (code, _, err) = txftl(&["info", "--image", junk.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(err.contains("not a txftl image"), "{err}");
    // An image whose header is intact but whose flash was wiped: no superblock.
    let wiped = dir.path().join("wiped.img");
    assert_eq!(txftl(&["format", "--image", wiped.to_str().unwrap()]).0, 0);
    let mut raw = std::fs::read(&wiped).unwrap();
    let page_area = raw.len() - 32 * 8 * (512 + 64); // tiny: 32 blocks x 8 pages x (data + OOB)
    raw[page_area..].iter_mut().for_each(|b| *b = 0x5A);
    std::fs::write(&wiped, &raw).unwrap();
    let (code, _, err) = txftl(&["info", "--image", wiped.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("superblock") && !err.contains("panicked"), "{err}");
}

#[test]
fn crashtest_reports_and_catches_the_canary() {
    let (code, out, err) = txftl(&["crashtest", "--ops", "60", "--fill", "80", "--no-recovery-cuts"]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(out.contains("crash points tried") && out.contains("violations"), "{out}");
    let (code, out, _) = txftl(&[
        "crashtest",
        "--protocol",
        "plain-canary",
        "--ops",
        "300",
        "--fill",
        "90",
        "--no-recovery-cuts",
    ]);
    assert_eq!(code, 1, "the canary must be caught: {out}");
    assert!(out.contains("replay: txftl crashtest --protocol plain-canary"), "{out}");
}

#[test]
fn compare_runs_every_mode_and_writes_a_report() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("report.html");
    let (code, out, err) = txftl(&[
        "compare",
        "--preset",
        "tiny",
        "--blocks-per-plane",
        "512",
        "--rows",
        "400",
        "--transactions",
        "20",
        "--ks",
        "1,5",
        "--validity",
        "0",
        "--modes",
        "rbj,wal,xftl,xftl-memory",
        "--json",
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["table1"].as_array().unwrap().len(), 4);
    assert_eq!(v["figure5"].as_array().unwrap().len(), 8);
    assert_eq!(v["restart"].as_array().unwrap().len(), 20, "five cuts per mode");
    for r in v["restart"].as_array().unwrap() {
        assert_eq!(r["committed_state_ok"], true, "{r}");
    }
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("<svg") && page.contains("Table 1"));
    assert_eq!(txftl(&["compare", "--modes", "nope"]).0, 2);
    assert_eq!(txftl(&["compare", "--ks", "1,x"]).0, 2);
}

#[test]
fn sqlcrash_enumerates_and_finds_nothing() {
    let (code, out, err) = txftl(&["sqlcrash", "--modes", "xftl,rbj", "--rows", "30", "--transactions", "3"]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(out.contains("crash points tried") && out.contains("X-FTL"), "{out}");
}

/// One seed, one result: the simulated figures of two runs are identical (only
/// the wall-clock fields may differ).
#[test]
fn simulated_figures_are_deterministic() {
    let run = || {
        let (code, out, err) = txftl(&[
            "run",
            "--preset",
            "tiny",
            "--ops",
            "3000",
            "--workload",
            "mixed",
            "--seed",
            "9",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        (v["measured"].clone(), v["fill"].clone(), v["erase_count_max"].clone())
    };
    assert_eq!(run(), run());
    let compare = || {
        let (code, out, err) = txftl(&[
            "compare",
            "--preset",
            "tiny",
            "--blocks-per-plane",
            "512",
            "--rows",
            "300",
            "--transactions",
            "10",
            "--ks",
            "",
            "--validity",
            "0",
            "--no-restart",
            "--json",
        ]);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()["table1"].clone()
    };
    assert_eq!(compare(), compare());
}
