//! The command line as a user meets it: exit codes, errors, round trips.

use std::process::Command;

mod common;
use common::{txftl, txftl_env, txftl_piped};

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

/// After a cut, the protocol's counters of the mounted device are what its
/// recovery read and decided: Möbius cut inside a transaction reads the
/// pages of its unflagged inodes and finds the transaction aborted.
#[test]
fn cut_at_reports_what_the_protocols_recovery_did() {
    let args = [
        "run",
        "--preset",
        "tiny",
        "--protocol",
        "mobius",
        "--workload",
        "txwrite",
        "--pages-per-tx",
        "5",
        "--ops",
        "300",
        "--cut-at",
        "103",
    ];
    let (code, out, err) = txftl(&[&args[..], &["--json"]].concat());
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let p = &v["protocol_at_recovery"];
    assert!(p["mobius_verified_pages"].as_u64().unwrap() > 0, "{p}");
    assert_eq!(p["mobius_aborted_found"].as_u64(), Some(1), "{p}");
    let (code, out, err) = txftl(&args);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("protocol's own, at recovery") && out.contains("mobius_verified_pages"),
        "{out}"
    );
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
    // A run on the image (explicitly reused: it overwrites the data), and the image still mounts.
    assert_eq!(
        txftl(&[
            "run",
            "--image",
            img,
            "--reuse",
            "--ops",
            "300",
            "--fill",
            "50",
            "--workload",
            "mixed"
        ])
        .0,
        0
    );
    assert_eq!(txftl(&["info", "--image", img]).0, 0);
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
fn crashtest_cuts_at_instants_and_refuses_an_instant_with_nothing_in_flight() {
    let dev = concat!(env!("CARGO_MANIFEST_DIR"), "/../harness/tests/devices/tiny-2ch.toml");
    let run = [
        "crashtest",
        "--config",
        dev,
        "--protocol",
        "lighttx",
        "--ops",
        "60",
        "--no-recovery-cuts",
        "--in-flight",
    ];
    let (code, out, err) = txftl(&run);
    assert_eq!(code, 0, "{err}{out}");
    assert!(out.contains("cuts at instants tried"), "{out}");
    // Before the first operation nothing is in flight: no such cut to replay.
    let (code, _, err) = txftl(&[&run[..], &["--at-ns", "0", "--torn", "none"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no cut at 0 ns"), "{err}");
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

/// The longest line of `out`, in characters.
fn widest(out: &str) -> usize {
    out.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

/// Default output fits $COLUMNS, else 100 columns when piped: the tables'
/// cells and the prose wrap, and a replay command breaks with shell
/// continuations.
#[test]
fn default_output_fits_the_width() {
    let (code, out, err) = txftl_piped(&["protocols"]);
    assert_eq!(code, 0, "{err}");
    assert!(widest(&out) <= 100, "{out}");
    let (code, narrow, err) = txftl_env(&["protocols"], &[("COLUMNS", "72")]);
    assert_eq!(code, 0, "{err}");
    assert!(widest(&narrow) <= 72, "{narrow}");
    let words = |s: &str| {
        s.split(|c: char| c.is_whitespace() || "│┆".contains(c))
            .filter(|w| !w.is_empty())
            .count()
    };
    assert_eq!(words(&out), words(&narrow), "wrapping keeps every word");
    // Not a number: the pipe's 100.
    let (_, out, _) = txftl_env(&["protocols"], &[("COLUMNS", "wide")]);
    assert!(widest(&out) <= 100 && widest(&out) > 72, "{out}");

    let (code, out, err) = txftl_piped(&["run", "--preset", "tiny", "--ops", "2000", "--fill", "90"]);
    assert_eq!(code, 0, "{err}");
    assert!(widest(&out) <= 100, "{out}");

    let canary = [
        "crashtest",
        "--protocol",
        "plain-canary",
        "--ops",
        "300",
        "--fill",
        "90",
        "--no-recovery-cuts",
    ];
    let (code, out, _) = txftl_env(&canary, &[("COLUMNS", "60")]);
    assert_eq!(code, 1, "the canary must be caught: {out}");
    assert!(widest(&out) <= 60, "{out}");
    let replay = out.replace(" \\\n  ", " ");
    assert!(replay.contains("replay: txftl crashtest --protocol plain-canary --preset"), "{out}");
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
    let (code, out, err) = txftl(&[
        "sqlcrash",
        "--modes",
        "xftl,rbj",
        "--synchronous",
        "off,full",
        "--sample-every",
        "7",
    ]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(
        out.contains("crash points tried") && out.contains("X-FTL") && out.contains("OFF"),
        "{out}"
    );
    // Too short for GC: the run refuses to pass on a scenario that exercised nothing of it.
    let (code, _, err) = txftl(&["sqlcrash", "--modes", "xftl", "--transactions", "3", "--sample-every", "7"]);
    assert_ne!(code, 0);
    assert!(err.contains("meant to exercise GC runs"), "{err}");
    // The canary (commit at xSync) is caught with synchronous=OFF, and the failure says how to replay it.
    let (code, out, _) = txftl(&[
        "sqlcrash",
        "--modes",
        "xftl",
        "--synchronous",
        "off",
        "--canary",
        "commit-at-sync",
        "--sample-every",
        "7",
        "--recovery-cuts",
        "0",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("VIOLATION") && out.contains("replay: txftl sqlcrash --modes xftl --synchronous off"),
        "{out}"
    );
}

/// The TPC-C scenario: a sample of its crash points passes on `xftl` and
/// `wal`; the canary that skips the WAL's syncs is caught with FULL, with a
/// replay line naming the workload; partsupp's options are refused for it and
/// TPC-C's for partsupp.
#[test]
fn sqlcrash_tpcc_enumerates_catches_its_canary_and_refuses_what_does_not_apply() {
    let (code, out, err) = txftl(&["sqlcrash", "--workload", "tpcc", "--modes", "xftl,wal", "--sample-every", "53"]);
    assert_eq!(code, 0, "{err}{out}");
    assert!(out.contains("in New-Order / Payment / Delivery") && out.contains("WAL"), "{out}");
    let (code, out, _) = txftl(&[
        "sqlcrash",
        "--workload",
        "tpcc",
        "--modes",
        "wal",
        "--synchronous",
        "full",
        "--canary",
        "wal-skips-sync",
        "--sample-every",
        "7",
        "--recovery-cuts",
        "0",
    ]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("VIOLATION") && out.contains("replay: txftl sqlcrash --modes wal --synchronous full --workload tpcc --scale 900"),
        "{out}"
    );
    for (args, flag) in [
        (&["sqlcrash", "--workload", "tpcc", "--rows", "40"][..], "--rows"),
        (&["sqlcrash", "--workload", "tpcc", "--k", "2"][..], "--k"),
        (
            &["sqlcrash", "--workload", "tpcc", "--canary", "no-sync-after-batch-abort"][..],
            "--canary",
        ),
        (&["sqlcrash", "--scale", "10"][..], "--scale"),
    ] {
        let (code, _, err) = txftl(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains(flag) && err.contains("does not apply"), "{err}");
    }
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

/// `compare` models the X-FTL paper's firmware: the mapping table written at
/// every flush unless `--map-at-flush off`; the host side does not change.
#[test]
fn compare_writes_the_map_at_every_flush_unless_told_not_to() {
    let run = |extra: &[&str]| {
        let mut a = vec![
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
            "--modes",
            "rbj",
            "--json",
        ];
        a.extend_from_slice(extra);
        let (code, out, err) = txftl(&a);
        assert_eq!(code, 0, "{err}");
        serde_json::from_str::<serde_json::Value>(&out).unwrap()
    };
    let on = run(&[]);
    let off = run(&["--map-at-flush", "off"]);
    assert_eq!(on["spec"]["map_at_flush"], true);
    assert_eq!(off["spec"]["map_at_flush"], false);
    let (a, b) = (&on["table1"][0], &off["table1"][0]);
    assert_eq!(a["host"], b["host"], "the host sends the same writes and flushes");
    let n = |v: &serde_json::Value, k: &str| v["device"][k].as_u64().unwrap();
    // RBJ flushes after writing (journal, database, file-system journal):
    // most flushes follow programs, and each of those is a checkpoint.
    assert!(n(a, "host_flushes") > 0);
    assert!(2 * n(a, "checkpoints") >= n(a, "host_flushes"), "{a}");
    assert!(n(a, "checkpoints") > n(b, "checkpoints") && n(a, "map_writes") > n(b, "map_writes"));
    assert_eq!(txftl(&["compare", "--map-at-flush", "maybe"]).0, 2);
}

/// Formats a `tiny` image in `dir` and writes `bytes` from lpn 0; returns its path.
fn image_with(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let img = dir.join(name).to_str().unwrap().to_string();
    let (code, _, err) = txftl(&["format", "--image", &img, "--preset", "tiny"]);
    assert_eq!(code, 0, "{err}");
    let input = dir.join(format!("{name}.in"));
    std::fs::write(&input, bytes).unwrap();
    let (code, _, err) = txftl(&["put", "--image", &img, input.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    img
}

fn get_bytes(img: &str, n: usize) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_txftl"))
        .args(["get", "--image", img, "--bytes", &n.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// `run --image` on an existing image would overwrite its logical pages (and any
/// file system on it): it is refused unless `--reuse` says so.
#[test]
fn run_refuses_an_existing_image_without_reuse() {
    let dir = tempfile::tempdir().unwrap();
    let img = image_with(dir.path(), "dev.img", &[0x5Au8; 3000]);
    let (code, _, err) = txftl(&["run", "--image", &img, "--ops", "100", "--fill", "50"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("already exists") && err.contains("--reuse"), "{err}");
    assert_eq!(get_bytes(&img, 3000), vec![0x5Au8; 3000], "the image is untouched");
    let (code, _, err) = txftl(&["run", "--image", &img, "--reuse", "--ops", "100", "--fill", "50"]);
    assert_eq!(code, 0, "{err}");
    // --reuse needs an image that exists, and an --image at all.
    let missing = dir.path().join("missing.img");
    let (code, _, err) = txftl(&["run", "--image", missing.to_str().unwrap(), "--reuse", "--ops", "10"]);
    assert_eq!(code, 2, "{err}");
    assert!(!missing.exists());
    let (code, _, err) = txftl(&["run", "--reuse", "--preset", "tiny", "--ops", "10"]);
    assert_eq!(code, 2, "{err}");
}

/// The image fixes the geometry, endurance and data mode: options that would
/// change them are refused rather than ignored.
#[test]
fn options_an_existing_image_fixes_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let img = image_with(dir.path(), "dev.img", &[1u8; 100]);
    for extra in [
        &["--preset", "tiny"][..],
        &["--blocks-per-plane", "64"],
        &["--endurance", "10"],
        &["--overprovision", "30"],
        &["--data", "meta"],
    ] {
        let mut args = vec!["run", "--image", &img, "--reuse", "--ops", "10"];
        args.extend_from_slice(extra);
        let (code, _, err) = txftl(&args);
        assert_eq!(code, 2, "{extra:?}: {err}");
        assert!(err.contains(extra[0]), "{extra:?}: {err}");
    }
    for cmd in ["info", "get", "put"] {
        let (code, _, err) = txftl(&[cmd, "--image", &img, "--preset", "tiny", "x"]);
        assert_eq!(code, 2, "{cmd}: {err}");
    }
    // A new image stores full data: `--data meta` would be ignored.
    let new = dir.path().join("new.img");
    let (code, _, err) = txftl(&[
        "run",
        "--image",
        new.to_str().unwrap(),
        "--data",
        "meta",
        "--preset",
        "tiny",
        "--ops",
        "10",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--data meta"), "{err}");
}

/// What users read names cell types as they write them, not as Rust's `Debug` does.
#[test]
fn descriptions_have_no_debug_forms() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let (code, out, err) = txftl(&["format", "--image", img.to_str().unwrap(), "--preset", "tiny"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("(MLC,") && !out.contains("Mlc"), "{out}");
    let (code, out, err) = txftl(&["info", "--image", img.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("MLC") && !out.contains("Mlc"), "{out}");
    let (_, out, _) = txftl(&["presets"]);
    assert!(out.contains("SLC") && !out.contains("Slc") && !out.contains("Mlc"), "{out}");
}

#[test]
fn torn_without_cut_at_is_refused() {
    let (code, _, err) = txftl(&["run", "--preset", "tiny", "--ops", "10", "--torn", "partial"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--cut-at"), "{err}");
}

/// `put` streams its input: an endless input fails as soon as it passes the
/// device end instead of filling memory, and a file too large is refused
/// before anything is written.
#[test]
fn put_streams_and_refuses_input_past_the_device_end() {
    let dir = tempfile::tempdir().unwrap();
    let img = image_with(dir.path(), "dev.img", &[7u8; 512]);
    let mut child = Command::new(env!("CARGO_BIN_EXE_txftl"))
        .args(["put", "--image", &img, "--lpn", "1", "/dev/zero"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > std::time::Duration::from_secs(20) {
            child.kill().unwrap();
            panic!("put /dev/zero did not stop at the device end");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let mut err = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut err).unwrap();
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("device end"), "{err}");
    // A regular file too large: refused up front, lpn 0 keeps its data.
    let big = dir.path().join("big.bin");
    std::fs::write(&big, vec![9u8; 200_000]).unwrap();
    let (code, _, err) = txftl(&["put", "--image", &img, "--lpn", "0", big.to_str().unwrap()]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("device end") && err.contains("200000 bytes"), "{err}");
    assert_eq!(get_bytes(&img, 512), vec![7u8; 512]);
    // Standard input ("-") streams too.
    let mut child = Command::new(env!("CARGO_BIN_EXE_txftl"))
        .args(["put", "--image", &img, "--lpn", "2", "-"])
        .stdin(std::process::Stdio::piped())
        .output_with_input(b"hello");
    assert!(child.status.success(), "{}", String::from_utf8_lossy(&child.stderr));
    child.stdout.clear();
}

trait OutputWithInput {
    fn output_with_input(&mut self, input: &[u8]) -> std::process::Output;
}

impl OutputWithInput for Command {
    fn output_with_input(&mut self, input: &[u8]) -> std::process::Output {
        let mut child = self
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        std::io::Write::write_all(child.stdin.as_mut().unwrap(), input).unwrap();
        drop(child.stdin.take());
        child.wait_with_output().unwrap()
    }
}

/// A device larger than the machine's memory is refused with what it needs,
/// by part (flash array, FTL tables, metadata pages), not aborted by a failed
/// allocation (exit 134). TXFTL_MEMORY_AVAILABLE caps the memory the run may
/// use, so the refusal does not depend on the machine.
#[test]
fn a_device_too_large_for_memory_is_refused_with_its_size() {
    let cap = [("TXFTL_MEMORY_AVAILABLE", "1073741824")];
    // 800 Ki blocks of 128 pages: about 2 GiB even with metadata only.
    let (code, _, err) = txftl_env(&["run", "--blocks-per-plane", "100000", "--ops", "10"], &cap);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("memory") && err.contains("GiB") && err.contains("FTL tables"), "{err}");
    assert!(err.contains("only 1.00 GiB"), "{err}");
    // The example: more pages than a 32-bit page number addresses.
    let (code, _, err) = txftl(&["run", "--preset", "jasmine", "--blocks-per-plane", "100000000", "--data", "meta"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("pages"), "{err}");
    // Full data at that size needs the whole array in memory.
    let (code, _, err) = txftl(&["run", "--blocks-per-plane", "100000", "--ops", "10", "--data", "full"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--data meta"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("huge.img");
    let (code, _, err) = txftl(&[
        "format",
        "--image",
        img.to_str().unwrap(),
        "--preset",
        "jasmine",
        "--blocks-per-plane",
        "100000",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("memory"), "{err}");
    assert!(!img.exists(), "no image is left behind");
}

/// A second process opening an image in use gets an error naming the holder.
#[test]
fn an_image_in_use_is_refused_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let img = image_with(dir.path(), "dev.img", &[3u8; 600]);
    let held = txftl_nand::Nand::open_image(std::path::Path::new(&img), txftl_nand::ViolationPolicy::Error).unwrap();
    let input = dir.path().join("x.bin");
    std::fs::write(&input, [1u8; 10]).unwrap();
    for args in [
        &["put", "--image", &img, input.to_str().unwrap()][..],
        &["get", "--image", &img, "--bytes", "10"],
        &["info", "--image", &img],
        &["run", "--image", &img, "--reuse", "--ops", "10"],
    ] {
        let (code, _, err) = txftl(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(
            err.contains("in use by process") && err.contains(&std::process::id().to_string()),
            "{args:?}: {err}"
        );
    }
    drop(held);
    assert_eq!(get_bytes(&img, 600), vec![3u8; 600]);
}

#[test]
fn sync_modes_are_accepted_and_checked() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    let (code, _, err) = txftl(&["format", "--image", img, "--preset", "tiny", "--sync", "always"]);
    assert_eq!(code, 0, "{err}");
    let input = dir.path().join("in.bin");
    std::fs::write(&input, [4u8; 1500]).unwrap();
    for mode in ["close", "flush", "always"] {
        let (code, _, err) = txftl(&["put", "--image", img, "--sync", mode, input.to_str().unwrap()]);
        assert_eq!(code, 0, "{mode}: {err}");
        let (code, _, err) = txftl(&["run", "--image", img, "--reuse", "--sync", mode, "--ops", "50", "--fill", "20"]);
        assert_eq!(code, 0, "{mode}: {err}");
    }
    let (code, _, err) = txftl(&["put", "--image", img, "--sync", "sometimes", input.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    // Without an image there is nothing to sync.
    let (code, _, err) = txftl(&["run", "--preset", "tiny", "--sync", "always", "--ops", "10"]);
    assert_eq!(code, 2, "{err}");
}

#[test]
fn compare_refuses_what_it_would_ignore() {
    // The modes choose the protocol (rbj and wal on plain, xftl on xftl).
    let (code, _, err) = txftl(&["compare", "--protocol", "xftl", "--preset", "tiny", "--transactions", "1"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--protocol") && err.contains("--modes"), "{err}");
    // An unwritable report path fails before the (long) run, not after it.
    let start = std::time::Instant::now();
    let (code, _, err) = txftl(&["compare", "--html", "/nonexistent-dir/report.html"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("/nonexistent-dir/report.html"), "{err}");
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
}

/// Looking at a device must not wear it: `info` and `get` mount read-only and
/// leave the image byte for byte as it was (they used to seal a checkpoint).
#[test]
fn info_and_get_leave_the_image_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, [7u8; 3000]).unwrap();
    assert_eq!(txftl(&["format", "--image", img, "--preset", "tiny", "--protocol", "xftl"]).0, 0);
    assert_eq!(txftl(&["put", "--image", img, "--protocol", "xftl", input.to_str().unwrap()]).0, 0);
    let before = std::fs::read(img).unwrap();
    for args in [
        &["info", "--image", img, "--protocol", "xftl"][..],
        &["get", "--image", img, "--protocol", "xftl", "--bytes", "3000", "--out", "/dev/null"],
    ] {
        let (code, _, err) = txftl(args);
        assert_eq!(code, 0, "{args:?}: {err}");
        assert!(std::fs::read(img).unwrap() == before, "{args:?} wrote to the image");
    }
    // --sync has nothing to do on a read-only mount: refused.
    let (code, _, err) = txftl(&["info", "--image", img, "--sync", "always"]);
    assert_eq!(code, 2, "{err}");
}

/// An image knows its protocol (its superblock records it): `put`, `get` and
/// `info` without `--protocol` mount it with that one, and a different one
/// given is refused, naming both.
#[test]
fn image_commands_take_the_protocol_from_the_image() {
    let dir = tempfile::tempdir().unwrap();
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, [9u8; 5000]).unwrap();
    assert_eq!(txftl(&["format", "--image", img, "--preset", "tiny", "--protocol", "lighttx"]).0, 0);
    let (code, _, err) = txftl(&["put", "--image", img, "--lpn", "2", input.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let out = dir.path().join("out.bin");
    let (code, _, err) = txftl(&[
        "get",
        "--image",
        img,
        "--lpn",
        "2",
        "--bytes",
        "5000",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(std::fs::read(&out).unwrap(), vec![9u8; 5000]);
    let (code, stdout, err) = txftl(&["info", "--image", img, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["device"]["protocol"], "lighttx", "{stdout}");
    let (code, _, err) = txftl(&["info", "--image", img, "--protocol", "xftl"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("lighttx") && err.contains("xftl"), "{err}");
}
