//! Runs of the DBMS on small devices: one seed gives one run, the counts add
//! up, the protocols it cannot carry are refused, steal and deadlocks happen.

use txftl_dbms::{run_dbms, DbmsConfig, DbmsError};
use txftl_harness::DeviceSpec;
use txftl_protocols::AnyDevice;

fn device(protocol: &str) -> Box<dyn AnyDevice> {
    DeviceSpec::tiny(protocol).fresh().unwrap()
}

/// 6 clients on a 40-page, two-warehouse database, a 13-frame buffer.
fn small(seed: u64, pins: u32) -> DbmsConfig {
    DbmsConfig {
        clients: 6,
        buffer_pages: 13,
        pinned_frames_per_tx: pins,
        warehouses: 2,
        db_pages: 40,
        max_pages_per_tx: 10,
        transactions: 80,
        seed,
        ..DbmsConfig::default()
    }
}

#[test]
fn one_seed_gives_one_run_and_another_seed_another() {
    let json = |seed| {
        let r = run_dbms(&mut *device("scc"), small(seed, 1)).unwrap();
        serde_json::to_string(&r).unwrap()
    };
    assert_eq!(json(5), json(5));
    assert_ne!(json(5), json(6));
}

#[test]
fn the_counts_add_up_on_each_protocol() {
    for (p, pins) in [("xftl", 0), ("scc", 1), ("bpcc", 1)] {
        let cfg = small(3, pins);
        let r = run_dbms(&mut *device(p), cfg.clone()).unwrap();
        assert_eq!(r.committed + r.aborted, cfg.transactions, "{p}: {r}");
        assert_eq!(r.restarts, r.deadlocks, "{p}: each deadlock restarts one victim");
        assert_eq!(r.committed_by_profile.values().sum::<u64>(), r.committed);
        assert!(
            r.deadlocks > 0 && r.buffer.steal_writes > 0,
            "{p}: contention and steal exercised: {r}"
        );
        assert!(r.throughput_tx_per_s > 0.0 && r.mean_commit_response_ns > 0.0);
        assert!(r.mean_execution_ns >= r.mean_commit_response_ns, "{p}: {r}");
        // Forced writes and steals reach the flash.
        assert!(r.device.flash_programs >= r.buffer.force_writes + r.buffer.steal_writes, "{p}: {r}");
        assert!(r.device.commits > 0, "{p}");
    }
}

#[test]
fn four_flash_pages_a_db_page_write_four_times_the_pages() {
    let one = run_dbms(&mut *device("xftl"), small(3, 0)).unwrap();
    let cfg = DbmsConfig {
        flash_pages_per_db_page: 4,
        db_pages: 28,
        ..small(3, 0)
    };
    let four = run_dbms(&mut *device("xftl"), cfg).unwrap();
    let writes = four.buffer.force_writes + four.buffer.steal_writes;
    assert_eq!(four.device.host_writes, 4 * writes, "{four}");
    assert!(one.device.host_writes < four.device.host_writes);
}

#[test]
fn protocols_without_concurrent_transactions_are_refused() {
    let err = run_dbms(&mut *device("plain"), small(1, 0)).unwrap_err();
    assert!(matches!(err, DbmsError::NotTransactional { protocol: "plain" }), "{err}");
    let err = run_dbms(&mut *device("atomic-write"), small(1, 0)).unwrap_err();
    assert!(matches!(err, DbmsError::NoConcurrentTransactions { .. }), "{err}");
}

#[test]
fn a_database_larger_than_the_device_is_refused() {
    let cfg = DbmsConfig {
        db_pages: 100_000,
        ..small(1, 0)
    };
    let err = run_dbms(&mut *device("xftl"), cfg).unwrap_err();
    assert!(matches!(err, DbmsError::DeviceTooSmall { .. }), "{err}");
}

/// A warm-up runs its transactions unmeasured: the measured ones are
/// counted alone, and they start on the warm device (its clock and its
/// pages where the warm-up left them), not on a fresh one.
#[test]
fn a_warm_up_is_run_and_not_counted() {
    let cold = run_dbms(&mut *device("bpcc"), small(4, 1)).unwrap();
    let cfg = DbmsConfig {
        warmup_transactions: 120,
        ..small(4, 1)
    };
    let warm = run_dbms(&mut *device("bpcc"), cfg.clone()).unwrap();
    assert_eq!(warm.committed + warm.aborted, cfg.transactions, "{warm}");
    assert_eq!(warm.committed_by_profile.values().sum::<u64>(), warm.committed);
    assert!(
        warm.buffer.force_writes + warm.buffer.steal_writes <= warm.device.flash_programs,
        "{warm}"
    );
    // The measured plans are the warm-up's successors: another run.
    assert_ne!(
        serde_json::to_string(&cold.committed_by_profile).unwrap() + &cold.sim_ns.to_string(),
        serde_json::to_string(&warm.committed_by_profile).unwrap() + &warm.sim_ns.to_string()
    );
    assert!(warm.device.host_writes < 2 * cold.device.host_writes, "{warm}\n{cold}");
}

/// Cold data fills the device before the load: its pages are written once
/// (the load's writes grow by them), a database with more cold data than
/// room is refused, and a full device makes GC copy during the run.
#[test]
fn cold_data_fills_the_device_and_makes_gc_work() {
    let logical = device("bpcc").info().logical_pages as u64;
    let mut dev = device("bpcc");
    let cfg = DbmsConfig {
        cold_fill_pct: 70,
        transactions: 400,
        ..small(2, 1)
    };
    let mut db = txftl_dbms::Dbms::new(&mut *dev, cfg.clone()).unwrap();
    let db_pages = db.layout().pages as u64;
    db.load().unwrap();
    let loaded = db.device().stats().host_writes;
    assert_eq!(loaded, logical * 70 / 100 + db_pages, "cold pages, then the DB pages");
    let r = db.run().unwrap();
    let empty = run_dbms(
        &mut *device("bpcc"),
        DbmsConfig {
            cold_fill_pct: 0,
            ..cfg.clone()
        },
    )
    .unwrap();
    assert!(r.device.gc_busy_ns > empty.device.gc_busy_ns, "{r}\n{empty}");
    assert!(r.device.gc_copies > empty.device.gc_copies, "{r}\n{empty}");
    let too_full = DbmsConfig { cold_fill_pct: 100, ..cfg };
    let err = run_dbms(&mut *device("bpcc"), too_full).unwrap_err();
    assert!(matches!(err, DbmsError::DeviceTooSmall { .. }), "{err}");
}

/// ARIES on `plain`: one seed gives one run; the counts add up (a begin,
/// updates and a commit and an end a committed writer, compensation
/// records for the rollbacks); the page-level engine refuses it, and a
/// restart refuses a device that keeps no data.
#[test]
fn aries_runs_on_plain_and_its_log_adds_up() {
    let cfg = DbmsConfig {
        recovery: txftl_dbms::Recovery::Aries,
        pinned_frames_per_tx: 0,
        log_pages: 40,
        checkpoint_log_pages: 2,
        db_pages: 80,
        ..small(4, 0)
    };
    // `tiny` with 2 KiB pages: a DB page's image holds a run's records.
    let plain = || {
        let mut s = DeviceSpec::tiny("plain");
        s.nand.geometry.page_size = 2048;
        s.fresh().unwrap()
    };
    let json = || serde_json::to_string(&run_dbms(&mut *plain(), cfg.clone()).unwrap()).unwrap();
    assert_eq!(json(), json());
    let r = run_dbms(&mut *plain(), cfg.clone()).unwrap();
    let log = r.log.expect("a logging run reports its log");
    assert_eq!(r.committed + r.aborted, cfg.transactions);
    assert!(r.aborted > 0 && r.buffer.steal_writes > 0, "{r}");
    // Every committed writer forces the log once at least; nothing is forced.
    assert!(log.forces >= r.committed / 2 && r.buffer.force_writes == 0, "{log:?}");
    assert!(log.checkpoints >= 1 && log.page_writes > 0, "{log:?}");
    let mut dev = plain();
    let err = txftl_dbms::Dbms::new(&mut *dev, cfg.clone())
        .err()
        .expect("the page-level engine refuses ARIES");
    assert!(matches!(err, DbmsError::Config(m) if m.contains("aries")));
    let preset = txftl_nand::preset("tiny").unwrap();
    let nand = txftl_nand::Nand::new(preset.config(txftl_nand::DataMode::MetaOnly, txftl_nand::ViolationPolicy::Panic)).unwrap();
    let mut meta = txftl_protocols::format("plain", nand, Default::default(), &Default::default()).unwrap();
    let err = txftl_dbms::restart(&mut *meta, &cfg).unwrap_err();
    assert!(matches!(err, DbmsError::Config(m) if m.contains("full-data")));
}
