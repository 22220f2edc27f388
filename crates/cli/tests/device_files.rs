//! Devices from a file: a preset printed as TOML (`presets --toml`) loads back
//! with `--config` to the identical device, a bad file is refused naming the
//! file and the field, and MQSim's `ssdconfig.xml` imports with a warning
//! listing the fields that have no counterpart.

mod common;
use common::txftl;
use std::path::{Path, PathBuf};

const PRESETS: &[&str] = &["jasmine", "lighttx", "flagcommit", "femu", "tiny", "tiny-slc"];

fn mqsim_sample() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ssdconfig.xml")
        .to_str()
        .unwrap()
        .to_string()
}

/// `presets --toml NAME` written to `dir/file`.
fn preset_file(dir: &Path, name: &str, file: &str) -> PathBuf {
    let (code, out, err) = txftl(&["presets", "--toml", name]);
    assert_eq!(code, 0, "{err}");
    let path = dir.join(file);
    std::fs::write(&path, out).unwrap();
    path
}

/// A run's JSON report without its wall-clock figures (the only ones that may
/// differ between two runs of one device and seed).
fn simulated_report(args: &[&str]) -> serde_json::Value {
    let (code, out, err) = txftl(args);
    assert_eq!(code, 0, "{args:?}: {err}");
    let mut v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let o = v.as_object_mut().unwrap();
    for wall in [
        "setup_wall_seconds",
        "fill_wall_seconds",
        "wall_seconds",
        "flash_ops_per_wall_second",
        "requests_per_wall_second",
    ] {
        assert!(o.remove(wall).is_some(), "no {wall} in the report");
    }
    v
}

#[test]
fn every_preset_printed_as_toml_runs_the_same_as_the_preset() {
    let dir = tempfile::tempdir().unwrap();
    for name in PRESETS {
        let path = preset_file(dir.path(), name, &format!("{name}-copy.toml"));
        let path = path.to_str().unwrap();
        let from_file = simulated_report(&["run", "--config", path, "--ops", "2000", "--json"]);
        let from_preset = simulated_report(&["run", "--preset", name, "--ops", "2000", "--json"]);
        assert_eq!(from_file, from_preset, "{name}: the file's device differs from the preset");
    }
    // Named after the file.
    let path = preset_file(dir.path(), "tiny", "my-device.toml");
    let (code, out, err) = txftl(&["run", "--config", path.to_str().unwrap(), "--ops", "100"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("device: my-device (MLC, 128 KiB raw, 1 ch x 2 dies"), "{out}");
}

/// Each bad file: exit 2, the file and the field named, no panic.
#[test]
fn bad_device_files_are_refused_naming_the_file_and_the_field() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read_to_string(preset_file(dir.path(), "tiny", "tiny.toml")).unwrap();
    let cases: &[(&str, String, &str)] = &[
        (
            "unknown.toml",
            good.replace("channels = 1", "chanels = 1"),
            "config {}: geometry.chanels: unknown field `chanels`, expected one of `channels`",
        ),
        (
            "zero.toml",
            good.replace("pages_per_block = 8", "pages_per_block = 0"),
            "config {}: geometry.pages_per_block: must be at least 1",
        ),
        (
            "cell.toml",
            good.replace("cell = \"mlc\"", "cell = \"qlc\""),
            "config {}: geometry.cell: `qlc` is not a cell type: slc, mlc or tlc",
        ),
        ("malformed.toml", good.replace("[timing]", "[timing"), "config {}: not valid TOML: "),
        (
            "op.toml",
            good.replace("# overprovision_pct = 10", "overprovision_pct = 120"),
            "config {}: ftl.overprovision_pct: 120 is above the maximum 99",
        ),
        (
            "missing.toml",
            good.replace("erase_ns = 1500000", ""),
            "config {}: timing: missing field `erase_ns`",
        ),
        (
            "oob.toml",
            good.replace("oob_size = 64", "oob_size = 32"),
            "config {}: geometry.oob_size: 32 bytes cannot hold the FTL's 64-byte OOB record",
        ),
    ];
    for (file, text, expected) in cases {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        let (code, out, err) = txftl(&["run", "--config", path, "--ops", "10"]);
        assert_eq!(code, 2, "{file}: {out}{err}");
        let expected = expected.replace("{}", path);
        assert!(
            err.starts_with(&format!("error: {expected}")),
            "{file}: expected `{expected}`, got {err}"
        );
        assert!(!err.contains("panicked"), "{err}");
    }
    let absent = dir.path().join("absent.toml");
    let (code, _, err) = txftl(&["run", "--config", absent.to_str().unwrap()]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("absent.toml: cannot read it"), "{err}");
}

/// One description of the device at a time; an image already fixes it.
#[test]
fn a_device_file_with_another_device_option_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = preset_file(dir.path(), "tiny", "tiny.toml");
    let tiny = tiny.to_str().unwrap();
    let xml = mqsim_sample();
    for args in [
        &["run", "--config", tiny, "--preset", "tiny"][..],
        &["run", "--config", tiny, "--mqsim-config", &xml],
        &["crashtest", "--mqsim-config", &xml, "--preset", "tiny"],
        &["format", "--image", "x.img", "--config", tiny, "--preset", "jasmine"],
    ] {
        let (code, _, err) = txftl(args);
        assert_eq!(code, 2, "{args:?}: {err}");
        assert!(err.contains("cannot be used with"), "{args:?}: {err}");
    }
    let img = dir.path().join("dev.img");
    let img = img.to_str().unwrap();
    let (code, _, err) = txftl(&["format", "--image", img, "--config", tiny]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = txftl(&["run", "--image", img, "--reuse", "--config", tiny, "--ops", "10"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--config cannot apply to an existing image"), "{err}");
}

/// Flags beside a file override it: the array's (--blocks-per-plane) and the FTL's
/// (--overprovision over the file's `ftl.overprovision_pct`).
#[test]
fn flags_override_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(preset_file(dir.path(), "tiny", "t.toml")).unwrap();
    let path = dir.path().join("op50.toml");
    std::fs::write(&path, text.replace("# overprovision_pct = 10", "overprovision_pct = 50")).unwrap();
    let path = path.to_str().unwrap();
    let logical = |extra: &[&str]| {
        let mut args = vec!["run", "--config", path, "--ops", "100", "--json"];
        args.extend_from_slice(extra);
        simulated_report(&args)["logical_pages"].as_u64().unwrap()
    };
    let (file_op, flag_op) = (logical(&[]), logical(&["--overprovision", "35"]));
    assert!(
        flag_op > file_op,
        "--overprovision 35 gives more logical pages than the file's 50%: {flag_op} vs {file_op}"
    );
    let (code, out, err) = txftl(&["run", "--config", path, "--blocks-per-plane", "24", "--ops", "100"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("x 24 blocks x"), "{out}");
}

/// The memory estimate refuses a file's device too large for the machine too.
#[test]
fn a_device_file_too_large_for_memory_is_refused_with_its_size() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(preset_file(dir.path(), "jasmine", "j.toml")).unwrap();
    let path = dir.path().join("huge.toml");
    std::fs::write(&path, text.replace("blocks_per_plane = 128", "blocks_per_plane = 100000")).unwrap();
    let (code, _, err) = txftl(&["run", "--config", path.to_str().unwrap(), "--data", "full", "--ops", "10"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("memory") && err.contains("GiB"), "{err}");
}

/// The commands that build a device take a device file: format, crashtest
/// (whose replay line names the file), compare.
#[test]
fn every_command_that_builds_a_device_takes_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let tiny = preset_file(dir.path(), "tiny", "small.toml");
    let tiny = tiny.to_str().unwrap();
    let img = dir.path().join("f.img");
    let (code, out, err) = txftl(&["format", "--image", img.to_str().unwrap(), "--config", tiny]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("on small (MLC"), "{out}");
    let (code, out, _) = txftl(&[
        "crashtest",
        "--protocol",
        "plain-canary",
        "--config",
        tiny,
        "--ops",
        "300",
        "--fill",
        "90",
        "--no-recovery-cuts",
    ]);
    assert_eq!(code, 1, "the canary must be caught: {out}");
    assert!(
        out.contains(&format!("replay: txftl crashtest --protocol plain-canary --config {tiny} ")),
        "{out}"
    );
    let (code, _, err) = txftl(&[
        "compare",
        "--config",
        tiny,
        "--blocks-per-plane",
        "512",
        "--rows",
        "300",
        "--transactions",
        "5",
        "--ks",
        "",
        "--validity",
        "0",
        "--no-restart",
        "--modes",
        "xftl",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
}

/// MQSim's sample imports (scaled down: as shipped it is a 256 GiB device)
/// and runs; one warning line names every field with no counterpart.
#[test]
fn the_mqsim_sample_imports_and_lists_the_fields_it_ignores() {
    let xml = mqsim_sample();
    let (code, out, err) = txftl(&[
        "run",
        "--mqsim-config",
        &xml,
        "--blocks-per-plane",
        "32",
        "--fill",
        "10",
        "--ops",
        "500",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("device: ssdconfig (MLC, 8192 MiB raw, 8 ch x 8 dies x 2 planes x 32 blocks x 256 pages of 8192 B)"),
        "{out}"
    );
    let ignored: Vec<&str> = err.lines().filter(|l| l.contains("have no counterpart")).collect();
    assert_eq!(ignored.len(), 1, "one warning line: {err}");
    let line = ignored[0];
    assert!(line.starts_with(&format!("warning: mqsim {xml}: 37 fields")), "{line}");
    for name in [
        "PCIe_Lane_Count",
        "Data_Cache_Capacity",
        "CMT_Capacity",
        "Plane_Allocation_Scheme",
        "IO_Queue_Depth",
        "Suspend_Program_Time",
    ] {
        assert!(line.contains(name), "{name}: {line}");
    }
    assert!(
        err.contains("mean of LSB and MSB pages") && err.contains("RGA has no counterpart"),
        "{err}"
    );

    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(&xml).unwrap();
    for (file, text, expected) in [
        ("notxml.xml", "page_size = 4096".to_string(), "text outside any element"),
        (
            "workload.xml",
            "<MQSim_IO_Scenarios><IO_Scenario/></MQSim_IO_Scenarios>".to_string(),
            "the root element is <MQSim_IO_Scenarios>",
        ),
        (
            "nopages.xml",
            sample.replace("<Page_No_Per_Block>256</Page_No_Per_Block>", ""),
            "Page_No_Per_Block: missing from <Flash_Parameter_Set>",
        ),
    ] {
        let path = dir.path().join(file);
        std::fs::write(&path, text).unwrap();
        let path = path.to_str().unwrap();
        let (code, _, err) = txftl(&["run", "--mqsim-config", path, "--ops", "10"]);
        assert_eq!(code, 2, "{file}: {err}");
        assert!(err.starts_with(&format!("error: mqsim {path}: {expected}")), "{file}: {err}");
    }
}

#[test]
fn presets_toml_refuses_an_unknown_preset_and_json() {
    let (code, _, err) = txftl(&["presets", "--toml", "nope"]);
    assert_eq!(code, 2, "{err}");
    let (code, _, err) = txftl(&["presets", "--toml", "tiny", "--json"]);
    assert_eq!(code, 2, "{err}");
}
