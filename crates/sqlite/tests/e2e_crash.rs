//! End-to-end crash tests: SQLite on every mode, power cut at every program
//! and erase of a scenario with a cache spill followed by ROLLBACK.

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Torn, ViolationPolicy};
use txftl_protocols::ProtocolOptions;
use txftl_sqlite::crash::{sql_crashtest, SqlCrashSpec};
use txftl_sqlite::Mode;

fn spec(mode: Mode) -> SqlCrashSpec {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64;
    SqlCrashSpec {
        nand: p.config(DataMode::Full, ViolationPolicy::Panic),
        ftl: FtlConfig::default(),
        opts: ProtocolOptions::default(),
        mode,
        rows: 60,
        k: 3,
        transactions: 4,
        rollback_at: 1,
        seed: 1,
        torn: vec![Torn::None, Torn::Garbage],
    }
}

#[test]
fn every_mode_survives_every_cut() {
    for mode in Mode::ALL {
        let r = sql_crashtest(&spec(mode), &|_, _| {}).unwrap();
        for v in r.violations.iter().take(5) {
            eprintln!("{mode:?}: {v}");
        }
        eprintln!(
            "{mode:?}: {} flash ops, {} programs+erases, {} crash points, {} with the in-flight transaction applied, {} violations",
            r.flash_ops,
            r.mutating_ops,
            r.crash_points,
            r.in_flight_applied,
            r.violations.len()
        );
        assert!(r.mutating_ops > 10, "{mode:?}: {r:?}");
        assert_eq!(
            r.violations.len(),
            0,
            "{mode:?}: {} of {} crash points violated",
            r.violations.len(),
            r.crash_points
        );
    }
}
