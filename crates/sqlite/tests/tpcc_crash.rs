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

mod common;
use common::in_own_process;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::crash::{sql_crashtest, tpcc, SqlCrashError, SqlCrashSpec, SqlWorkload};
use txftl_sqlite::{Canary, Mode, Synchronous};

const WORKLOAD: SqlWorkload = SqlWorkload::Tpcc {
    scale: tpcc::SCALE_DEFAULT,
};

fn spec(mode: Mode, synchronous: Synchronous, sample_every: u64) -> SqlCrashSpec {
    SqlCrashSpec::on_tiny(WORKLOAD, mode, synchronous, sample_every)
}

fn survives(mode: Mode, sample_every: u64) {
    for s in Synchronous::ALL {
        let r = sql_crashtest(&spec(mode, s, sample_every), &|_, _| {}).unwrap_or_else(|e| panic!("{mode:?} {s:?}: {e}"));
        eprintln!("{}", r.summary());
        for v in r.violations.iter().take(5) {
            eprintln!("  {v:?}");
        }
        assert_eq!(r.violation_count, 0, "{}", r.summary());
        let e = &r.exercised;
        assert!(
            e.cuts_in_new_order > 0 && e.cuts_in_payment > 0 && e.cuts_in_delivery > 0,
            "{}",
            r.summary()
        );
        assert!(e.cuts_in_rollback > 0 && e.recovery_cuts > 0, "{}", r.summary());
        assert!(r.dry_run.gc_runs > 0 && e.cuts_in_gc > 0, "{}", r.summary());
        if mode == Mode::parse(PROTOCOLS, "xftl").unwrap() {
            assert!(r.dry_run.table_reclaim_checkpoints > 0, "{}", r.summary());
        }
        if mode.journal() == txftl_protocols::SqlJournal::Wal {
            assert!(e.wal_frames_recovered > 0, "{}", r.summary());
        }
    }
}

// 7 and 11 are prime to the 5 torn variants: the samples cover each of them.
#[test]
fn tpcc_on_xftl_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "xftl").unwrap(), 7);
    });
}

#[test]
fn tpcc_on_wal_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "wal").unwrap(), 11);
    });
}

/// WAL on X-FTL: TPC-C's small `wal_autocheckpoint` checkpoints inside the
/// run, so cuts land in checkpoints, whose database writes go outside
/// device transactions.
#[test]
fn tpcc_on_xftl_wal_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "xftl-wal").unwrap(), 11);
    });
}

/// A VFS that puts a WAL checkpoint's database writes in a device
/// transaction (as it did for every database write on a transactional
/// device): the transaction commits only at a later SQLite commit, after the
/// WAL was reset, so a cut in between loses checkpointed transactions that
/// `synchronous=FULL` promised. The correct VFS passes the same run.
#[test]
fn canary_wal_checkpoint_in_transaction_is_caught_on_tpcc() {
    in_own_process(|| {
        let run = |canary: Canary| {
            let mut sp = spec(Mode::parse(PROTOCOLS, "xftl-wal").unwrap(), Synchronous::Full, 13);
            sp.recovery_cuts = 0;
            sp.canary = canary;
            sql_crashtest(&sp, &|_, _| {}).unwrap()
        };
        let caught = run(Canary::WalCheckpointInTransaction);
        eprintln!("canary: {}", caught.summary());
        assert!(caught.violation_count > 0, "the canary went unnoticed: {}", caught.summary());
        let correct = run(Canary::None);
        assert_eq!(correct.violation_count, 0, "{}", correct.summary());
    });
}

/// A VFS that commits at xSync instead of COMMIT_PHASETWO: with
/// `synchronous=OFF` SQLite never syncs, so no TPC-C transaction commits on
/// the device and a restart finds the loaded database where transactions
/// were committed. Invisible with FULL, which syncs right before phase two.
#[test]
fn canary_commit_at_sync_is_caught_on_tpcc_with_synchronous_off() {
    in_own_process(|| {
        let run = |s: Synchronous, canary: Canary| {
            let mut sp = spec(Mode::parse(PROTOCOLS, "xftl").unwrap(), s, 13);
            sp.recovery_cuts = 0;
            sp.canary = canary;
            sql_crashtest(&sp, &|_, _| {}).unwrap()
        };
        let caught = run(Synchronous::Off, Canary::CommitAtSync);
        eprintln!("canary OFF: {}", caught.summary());
        for v in caught.violations.iter().take(3) {
            eprintln!("  {v:?}");
        }
        assert!(caught.violation_count > 0, "the canary went unnoticed: {}", caught.summary());
        let hidden = run(Synchronous::Full, Canary::CommitAtSync);
        assert_eq!(hidden.violation_count, 0, "{}", hidden.summary());
    });
}

/// A VFS whose xSync ignores WAL files: `wal` with FULL promises that a
/// COMMIT that returned survives a power cut, and without the WAL's fsync
/// its size (file-system metadata) is not durable, so committed transactions
/// vanish. The correct VFS passes the same run.
#[test]
fn canary_wal_skips_sync_is_caught_on_tpcc_with_synchronous_full() {
    in_own_process(|| {
        let run = |canary: Canary| {
            let mut sp = spec(Mode::parse(PROTOCOLS, "wal").unwrap(), Synchronous::Full, 13);
            sp.recovery_cuts = 0;
            sp.canary = canary;
            sql_crashtest(&sp, &|_, _| {}).unwrap()
        };
        let caught = run(Canary::WalSkipsSync);
        eprintln!("canary: {}", caught.summary());
        for v in caught.violations.iter().take(3) {
            eprintln!("  {v:?}");
        }
        assert!(caught.violation_count > 0, "the canary went unnoticed: {}", caught.summary());
        let correct = run(Canary::None);
        assert_eq!(correct.violation_count, 0, "{}", correct.summary());
    });
}

/// The transaction forced to roll back must be a New-Order of the run.
#[test]
fn the_rolled_back_transaction_must_be_a_new_order() {
    in_own_process(|| {
        let mut sp = spec(Mode::parse(PROTOCOLS, "xftl").unwrap(), Synchronous::Full, 1);
        sp.rollback_at = 1; // a Payment
        match sql_crashtest(&sp, &|_, _| {}) {
            Err(SqlCrashError::DryRun(m)) => assert!(m.contains("must be a New-Order"), "{m}"),
            Err(e) => panic!("unexpected error: {e}"),
            Ok(_) => panic!("a Payment was accepted as the rolled-back transaction"),
        }
    });
}

/// SW-WAL: the WAL laid out page-aligned, its checkpoints (TPC-C's small
/// `wal_autocheckpoint`) remap its frames onto the database, sent to the
/// device after the database's metadata at its fsync (`txftl_fs`'s
/// `remap.rs`: sent before it, a cut between left the database's pages
/// checkpointed, the WAL's frames gone and the grown database's size old).
#[test]
fn tpcc_on_sw_wal_survives_sampled_cuts_with_its_checkpoints_remapping() {
    in_own_process(|| {
        let mode = Mode::parse(PROTOCOLS, "sw-wal").unwrap();
        survives(mode, 11);
        let r = sql_crashtest(&spec(mode, Synchronous::Full, 11), &|_, _| {}).unwrap();
        assert!(r.dry_run.pages_remapped > 10, "{:?}", r.dry_run);
    });
}
