//! The end-to-end crash test over a short TPC-C run (`txftl sqlcrash
//! --workload tpcc`): power cut at a sample of the programs and erases of the
//! run (every torn variant), restart, and `integrity_check`, the consistency
//! conditions 1 to 4 and "the database is the state after an allowed prefix of
//! the transactions" (digests of an in-memory run) at each; `xftl` and `wal`
//! in every `synchronous` setting, and two canaries the checker must catch.
//!
//! The sample keeps debug builds quick; `txftl sqlcrash --workload tpcc`
//! enumerates every point (the proof). Each run fails on its own if it
//! exercised nothing of what it is meant to (`SqlCrashError::NotExercised`:
//! cuts inside New-Order, Payment, Delivery and the rolled-back New-Order,
//! GC, and on X-FTL table-reclaim checkpoints).

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Torn, ViolationPolicy};
use txftl_protocols::ProtocolOptions;
use txftl_sqlite::crash::{sql_crashtest, tpcc, ScenarioSize, SqlCrashError, SqlCrashReport, SqlCrashSpec, SqlWorkload};
use txftl_sqlite::{Canary, Mode, Synchronous};

const WORKLOAD: SqlWorkload = SqlWorkload::Tpcc {
    scale: tpcc::SCALE_DEFAULT,
};

fn spec(mode: Mode, synchronous: Synchronous, sample_every: u64) -> SqlCrashSpec {
    let size = ScenarioSize::for_workload(WORKLOAD, mode);
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = size.blocks_per_plane;
    p.geometry.page_size = size.page_size.unwrap();
    SqlCrashSpec {
        workload: WORKLOAD,
        nand: p.config(DataMode::Full, ViolationPolicy::Panic),
        ftl: FtlConfig::default(),
        opts: ProtocolOptions {
            xl2p_entries: size.xl2p_entries,
            ..Default::default()
        },
        mode,
        synchronous,
        rows: 0,
        k: 0,
        transactions: size.transactions,
        rollback_at: tpcc::ROLLBACK_AT_DEFAULT,
        big_at: None,
        seed: 1,
        torn: Torn::ALL.to_vec(),
        recovery_cuts: 1,
        sample_every,
        only: None,
        canary: Canary::None,
        replay_base: String::new(),
    }
}

fn summary(r: &SqlCrashReport) -> String {
    format!(
        "{:?} synchronous={}: {} of {} crash points, {} violations; GC {}, table-reclaim checkpoints {}; {:?}",
        r.mode,
        r.synchronous.name(),
        r.crash_points,
        r.crash_points_total,
        r.violation_count,
        r.dry_run.gc_runs,
        r.dry_run.table_reclaim_checkpoints,
        r.exercised
    )
}

fn survives(mode: Mode, sample_every: u64) {
    for s in Synchronous::ALL {
        let r = sql_crashtest(&spec(mode, s, sample_every), &|_, _| {}).unwrap_or_else(|e| panic!("{mode:?} {s:?}: {e}"));
        eprintln!("{}", summary(&r));
        for v in r.violations.iter().take(5) {
            eprintln!("  {v:?}");
        }
        assert_eq!(r.violation_count, 0, "{}", summary(&r));
        let e = &r.exercised;
        assert!(
            e.cuts_in_new_order > 0 && e.cuts_in_payment > 0 && e.cuts_in_delivery > 0,
            "{}",
            summary(&r)
        );
        assert!(e.cuts_in_rollback > 0 && e.recovery_cuts > 0, "{}", summary(&r));
        assert!(r.dry_run.gc_runs > 0 && e.cuts_in_gc > 0, "{}", summary(&r));
        if mode == Mode::XftlOff {
            assert!(r.dry_run.table_reclaim_checkpoints > 0, "{}", summary(&r));
        }
    }
}

// 7 and 11 are prime to the 5 torn variants: the samples cover each of them.
#[test]
fn tpcc_on_xftl_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::XftlOff, 7);
}

#[test]
fn tpcc_on_wal_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::Wal, 11);
}

/// A VFS that commits at xSync instead of COMMIT_PHASETWO: with
/// `synchronous=OFF` SQLite never syncs, so no TPC-C transaction commits on
/// the device and a restart finds the loaded database where transactions
/// were committed. Invisible with FULL, which syncs right before phase two.
#[test]
fn canary_commit_at_sync_is_caught_on_tpcc_with_synchronous_off() {
    let run = |s: Synchronous, canary: Canary| {
        let mut sp = spec(Mode::XftlOff, s, 13);
        sp.recovery_cuts = 0;
        sp.canary = canary;
        sql_crashtest(&sp, &|_, _| {}).unwrap()
    };
    let caught = run(Synchronous::Off, Canary::CommitAtSync);
    eprintln!("canary OFF: {}", summary(&caught));
    for v in caught.violations.iter().take(3) {
        eprintln!("  {v:?}");
    }
    assert!(caught.violation_count > 0, "the canary went unnoticed: {}", summary(&caught));
    let hidden = run(Synchronous::Full, Canary::CommitAtSync);
    assert_eq!(hidden.violation_count, 0, "{}", summary(&hidden));
}

/// A VFS whose xSync ignores WAL files: `wal` with FULL promises that a
/// COMMIT that returned survives a power cut, and without the WAL's fsync
/// its size (file-system metadata) is not durable, so committed transactions
/// vanish. The correct VFS passes the same run.
#[test]
fn canary_wal_skips_sync_is_caught_on_tpcc_with_synchronous_full() {
    let run = |canary: Canary| {
        let mut sp = spec(Mode::Wal, Synchronous::Full, 13);
        sp.recovery_cuts = 0;
        sp.canary = canary;
        sql_crashtest(&sp, &|_, _| {}).unwrap()
    };
    let caught = run(Canary::WalSkipsSync);
    eprintln!("canary: {}", summary(&caught));
    for v in caught.violations.iter().take(3) {
        eprintln!("  {v:?}");
    }
    assert!(caught.violation_count > 0, "the canary went unnoticed: {}", summary(&caught));
    let correct = run(Canary::None);
    assert_eq!(correct.violation_count, 0, "{}", summary(&correct));
}

/// The transaction forced to roll back must be a New-Order of the run.
#[test]
fn the_rolled_back_transaction_must_be_a_new_order() {
    let mut sp = spec(Mode::XftlOff, Synchronous::Full, 1);
    sp.rollback_at = 1; // a Payment
    match sql_crashtest(&sp, &|_, _| {}) {
        Err(SqlCrashError::DryRun(m)) => assert!(m.contains("must be a New-Order"), "{m}"),
        Err(e) => panic!("unexpected error: {e}"),
        Ok(_) => panic!("a Payment was accepted as the rolled-back transaction"),
    }
}
