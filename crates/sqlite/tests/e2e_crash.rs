//! End-to-end crash tests: SQLite on every mode and `synchronous` setting,
//! power cut at a sample of the programs and erases (every torn variant) of a
//! scenario with a cache spill followed by ROLLBACK, long enough for GC and
//! X-FTL's table-reclaim checkpoints, with cuts inside the restarts too.
//!
//! The sample keeps debug builds quick; `txftl sqlcrash` enumerates every
//! point (the proof). Each run fails on its own if it exercised nothing of
//! what it is meant to (`SqlCrashError::NotExercised`). Each test runs
//! in a process of its own (`common::in_own_process`), so the tests run
//! side by side on every core.

mod common;
use common::in_own_process;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::crash::{sql_crashtest, SqlCrashSpec, SqlWorkload};
use txftl_sqlite::{Canary, Mode, Synchronous};

fn spec(mode: Mode, synchronous: Synchronous, sample_every: u64) -> SqlCrashSpec {
    SqlCrashSpec::on_tiny(SqlWorkload::Partsupp, mode, synchronous, sample_every)
}

fn survives(mode: Mode) {
    for s in Synchronous::ALL {
        // 3 is prime to the 5 torn variants: the sample covers each of them.
        let r = sql_crashtest(&spec(mode, s, 3), &|_, _| {}).unwrap_or_else(|e| panic!("{mode:?} {s:?}: {e}"));
        eprintln!("{}", r.summary());
        for v in r.violations.iter().take(5) {
            eprintln!("  {v:?}");
        }
        assert_eq!(r.violation_count, 0, "{}", r.summary());
        assert!(r.exercised.recovery_cuts > 0, "{}", r.summary());
        // In WAL mode the device's transactions carry only file-system metadata.
        if mode.protocol() == "xftl" && mode.journal() != txftl_protocols::SqlJournal::Wal {
            assert!(r.dry_run.gc_runs > 0 && r.exercised.cuts_in_gc > 0, "{}", r.summary());
            if !(mode == Mode::parse(PROTOCOLS, "xftl-batch").unwrap() && s == Synchronous::Off) {
                assert!(r.dry_run.table_reclaim_checkpoints > 0, "{}", r.summary());
            }
            if mode == Mode::parse(PROTOCOLS, "xftl-batch").unwrap() {
                // The transaction larger than the table: cut inside, and (when
                // SQLite batches at all) its batch aborted by the device.
                assert!(r.exercised.cuts_in_big > 0, "{}", r.summary());
                assert_eq!(r.dry_run.aborts > 0, s != Synchronous::Off, "{}", r.summary());
            }
        }
    }
}

#[test]
fn rbj_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "rbj").unwrap());
    });
}

#[test]
fn wal_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "wal").unwrap());
    });
}

#[test]
fn xftl_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "xftl").unwrap());
    });
}

#[test]
fn xftl_memory_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "xftl-memory").unwrap());
    });
}

#[test]
fn xftl_batch_survives_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "xftl-batch").unwrap());
    });
}

/// The other rollback journals: TRUNCATE and PERSIST finalize the journal
/// differently (a truncate, a zeroed header), and a restart must still find
/// a hot journal only while its header is there.
#[test]
fn truncate_and_persist_survive_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "truncate").unwrap());
        survives(Mode::parse(PROTOCOLS, "persist").unwrap());
    });
}

/// Why `persist` with NORMAL is held to no promise: the journal keeps an
/// earlier transaction's later segments, and NORMAL writes the live header's
/// nRec and the zero over the next stale header under one sync, so a cut can
/// keep the first and lose the second; the restart then plays stale segments
/// back and committed transactions go. FULL syncs in between and loses none.
#[test]
fn persist_normal_can_play_back_stale_journal_segments() {
    in_own_process(|| {
        let lost = |s: Synchronous| {
            let r = sql_crashtest(&spec(Mode::parse(PROTOCOLS, "persist").unwrap(), s, 3), &|_, _| {}).unwrap();
            eprintln!("{}", r.summary());
            r.exercised.committed_lost
        };
        assert!(
            lost(Synchronous::Normal) > 0,
            "no cut lost a committed transaction: the promise could be stronger"
        );
        assert_eq!(lost(Synchronous::Full), 0);
    });
}

/// A rollback journal beside X-FTL's transactions, and WAL on X-FTL (the
/// database written by checkpoints outside device transactions).
#[test]
fn journals_on_xftl_survive_sampled_cuts_in_every_synchronous_setting() {
    in_own_process(|| {
        survives(Mode::parse(PROTOCOLS, "xftl-rbj").unwrap());
        survives(Mode::parse(PROTOCOLS, "xftl-wal").unwrap());
    });
}

/// The canary: a VFS that commits at xSync instead of COMMIT_PHASETWO. With
/// `synchronous=FULL` (all sqlcrash used to run) SQLite syncs right before
/// phase two, so the bug is invisible; with `OFF` it never syncs, no
/// transaction commits on the device, and the checker must say so. The
/// correct VFS passes the same runs.
#[test]
fn canary_commit_at_sync_is_caught_with_synchronous_off() {
    in_own_process(|| {
        let run = |s: Synchronous, canary: Canary| {
            let mut sp = spec(Mode::parse(PROTOCOLS, "xftl").unwrap(), s, 23);
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
        eprintln!("canary FULL: {}", hidden.summary());
        assert_eq!(
            hidden.violation_count, 0,
            "FULL syncs before phase two: the canary is invisible there"
        );
        for s in [Synchronous::Off, Synchronous::Full] {
            let correct = run(s, Canary::None);
            assert_eq!(correct.violation_count, 0, "{}", correct.summary());
        }
    });
}

/// The second canary: after a batch larger than the X-L2P table is aborted,
/// SQLite writes its journal and overwrites the database with no sync between
/// them; a VFS that does not sync the journal itself leaves a torn database
/// after a cut in the overwrites. The checker must see it, and the correct VFS
/// pass the same run. Every crash point is tried, not a sample: the
/// canary's window is a few operations wide.
#[test]
fn canary_no_sync_after_batch_abort_is_caught() {
    in_own_process(|| {
        let run = |canary: Canary| {
            let mut sp = spec(Mode::parse(PROTOCOLS, "xftl-batch").unwrap(), Synchronous::Full, 1);
            sp.recovery_cuts = 0;
            sp.canary = canary;
            sql_crashtest(&sp, &|_, _| {}).unwrap()
        };
        let caught = run(Canary::NoSyncAfterBatchAbort);
        eprintln!("canary: {}", caught.summary());
        assert!(caught.dry_run.aborts > 0, "no batch was aborted: {}", caught.summary());
        assert!(caught.violation_count > 0, "the canary went unnoticed: {}", caught.summary());
        let correct = run(Canary::None);
        assert_eq!(correct.violation_count, 0, "{}", correct.summary());
    });
}

/// NoLgn in place of the journal: FULL and OFF commit each SQLite
/// transaction (its last page end-flagged); NORMAL groups them, here 4
/// database page writes a group (the paper's 1,000 would hold the whole
/// scenario), so groups commit inside it and a cut keeps a prefix.
#[test]
fn nolgn_survives_sampled_cuts_in_every_synchronous_setting_with_small_groups() {
    in_own_process(|| {
        let mode = Mode::parse(PROTOCOLS, "nolgn").unwrap();
        let mut device_commits = Vec::new();
        for s in Synchronous::ALL {
            let mut spec = spec(mode, s, 3);
            spec.group_pages = Some(4);
            let r = sql_crashtest(&spec, &|_, _| {}).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            eprintln!("{} ({} device commits)", r.summary(), r.dry_run.commits);
            assert_eq!(r.violation_count, 0, "{}", r.summary());
            assert!(r.exercised.recovery_cuts > 0 && r.dry_run.gc_runs > 0, "{}", r.summary());
            device_commits.push(r.dry_run.commits);
        }
        // OFF, NORMAL, FULL: NORMAL groups, so fewer device commits, but some.
        assert!(device_commits[1] > 2 && device_commits[1] < device_commits[2], "{device_commits:?}");
    });
}
