//! End-to-end crash tests: SQLite on every mode and `synchronous` setting,
//! power cut at a sample of the programs and erases (every torn variant) of a
//! scenario with a cache spill followed by ROLLBACK, long enough for GC and
//! X-FTL's table-reclaim checkpoints, with cuts inside the restarts too.
//!
//! The sample keeps debug builds quick; `txftl sqlcrash` enumerates every
//! point (the proof). Each run fails on its own if it exercised nothing of
//! what it is meant to (`SqlCrashError::NotExercised`).

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Torn, ViolationPolicy};
use txftl_protocols::ProtocolOptions;
use txftl_sqlite::crash::{sql_crashtest, ScenarioSize, SqlCrashReport, SqlCrashSpec, SqlWorkload};
use txftl_sqlite::{Canary, Mode, Synchronous};

fn spec(mode: Mode, synchronous: Synchronous, sample_every: u64) -> SqlCrashSpec {
    let size = ScenarioSize::default_for(mode);
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = size.blocks_per_plane;
    SqlCrashSpec {
        workload: SqlWorkload::Partsupp,
        nand: p.config(DataMode::Full, ViolationPolicy::Panic),
        ftl: FtlConfig::default(),
        opts: ProtocolOptions {
            xl2p_entries: size.xl2p_entries,
            ..Default::default()
        },
        mode,
        synchronous,
        rows: 30,
        k: 3,
        transactions: size.transactions,
        rollback_at: 1,
        big_at: size.big_at,
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

fn survives(mode: Mode) {
    for s in Synchronous::ALL {
        // 3 is prime to the 5 torn variants: the sample covers each of them.
        let r = sql_crashtest(&spec(mode, s, 3), &|_, _| {}).unwrap_or_else(|e| panic!("{mode:?} {s:?}: {e}"));
        eprintln!("{}", summary(&r));
        for v in r.violations.iter().take(5) {
            eprintln!("  {v:?}");
        }
        assert_eq!(r.violation_count, 0, "{}", summary(&r));
        assert!(r.exercised.recovery_cuts > 0, "{}", summary(&r));
        if mode.protocol() == "xftl" {
            assert!(r.dry_run.gc_runs > 0 && r.exercised.cuts_in_gc > 0, "{}", summary(&r));
            if !(mode == Mode::XftlBatch && s == Synchronous::Off) {
                assert!(r.dry_run.table_reclaim_checkpoints > 0, "{}", summary(&r));
            }
            if mode == Mode::XftlBatch {
                // The transaction larger than the table: cut inside, and (when
                // SQLite batches at all) its batch aborted by the device.
                assert!(r.exercised.cuts_in_big > 0, "{}", summary(&r));
                assert_eq!(r.dry_run.aborts > 0, s != Synchronous::Off, "{}", summary(&r));
            }
        }
    }
}

#[test]
fn rbj_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::Rbj);
}

#[test]
fn wal_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::Wal);
}

#[test]
fn xftl_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::XftlOff);
}

#[test]
fn xftl_memory_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::XftlMemory);
}

#[test]
fn xftl_batch_survives_sampled_cuts_in_every_synchronous_setting() {
    survives(Mode::XftlBatch);
}

/// The canary: a VFS that commits at xSync instead of COMMIT_PHASETWO. With
/// `synchronous=FULL` (all sqlcrash used to run) SQLite syncs right before
/// phase two, so the bug is invisible; with `OFF` it never syncs, no
/// transaction commits on the device, and the checker must say so. The
/// correct VFS passes the same runs.
#[test]
fn canary_commit_at_sync_is_caught_with_synchronous_off() {
    let run = |s: Synchronous, canary: Canary| {
        let mut sp = spec(Mode::XftlOff, s, 23);
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
    eprintln!("canary FULL: {}", summary(&hidden));
    assert_eq!(
        hidden.violation_count, 0,
        "FULL syncs before phase two: the canary is invisible there"
    );
    for s in [Synchronous::Off, Synchronous::Full] {
        let correct = run(s, Canary::None);
        assert_eq!(correct.violation_count, 0, "{}", summary(&correct));
    }
}

/// The second canary: after a batch larger than the X-L2P table is aborted,
/// SQLite writes its journal and overwrites the database with no sync between
/// them; a VFS that does not sync the journal itself leaves a torn database
/// after a cut in the overwrites. The checker must see it, and the correct VFS
/// pass the same run.
#[test]
fn canary_no_sync_after_batch_abort_is_caught() {
    let run = |canary: Canary| {
        let mut sp = spec(Mode::XftlBatch, Synchronous::Full, 7);
        sp.recovery_cuts = 0;
        sp.canary = canary;
        sql_crashtest(&sp, &|_, _| {}).unwrap()
    };
    let caught = run(Canary::NoSyncAfterBatchAbort);
    eprintln!("canary: {}", summary(&caught));
    assert!(caught.dry_run.aborts > 0, "no batch was aborted: {}", summary(&caught));
    assert!(caught.violation_count > 0, "the canary went unnoticed: {}", summary(&caught));
    let correct = run(Canary::None);
    assert_eq!(correct.violation_count, 0, "{}", summary(&correct));
}
