//! Shared by the crash test files.

use txftl_harness::CrashReport;

/// Fails with every violation printed, each with the command that replays it.
pub fn assert_clean(report: &CrashReport) {
    for v in &report.violations {
        eprintln!(
            "violation at op {} ({:?}, recovery cut {:?}): {}\n  replay: {}",
            v.at_op, v.torn, v.recovery_cut, v.message, v.replay
        );
    }
    assert_eq!(report.violation_count, 0);
}
