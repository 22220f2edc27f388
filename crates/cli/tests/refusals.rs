//! Options the device or the harness cannot honour are refused, and a run that
//! would test nothing fails instead of reporting a clean result.

use std::process::Command;

fn txftl(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_txftl")).args(args).output().expect("run txftl");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

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
