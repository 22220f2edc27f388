//! ARIES on `plain` under power cuts (the shared test: `common/records.rs`):
//! the restart redoes and undoes, and cuts land during rollbacks.
//!
//! One point replays with
//! `TXFTL_ARIES_CRASH=<op>:<torn>[:<restart op>:<torn>] cargo test -p txftl-dbms --test aries`.

mod common;

use common::records::Case;
use txftl_dbms::{DbmsError, Recovery};

const CASE: Case = Case {
    protocol: "plain",
    recovery: Recovery::Aries,
    replay_env: "TXFTL_ARIES_CRASH",
    test: "aries",
};

#[test]
fn every_cut_keeps_exactly_the_committed_records() {
    if CASE.replay() {
        return;
    }
    let (report, ops) = CASE.dry_run();
    let log = report.log.expect("a logging run reports its log");
    // Record locks in TPC-C's lock order rarely deadlock (the page-level
    // crash test covers victims); rollbacks come from the injected aborts.
    assert!(
        log.checkpoints >= 2 && log.page_reads > 0,
        "no second checkpoint, or no rollback read its log back"
    );
    let t = CASE.every_cut(&ops);
    assert!(t.redone > 0 && t.undone > 0, "the cuts never made a restart redo and undo");
    assert!(t.in_rollbacks > 0, "no cut fell during a rollback");
}

/// The canary: ARIES with the WAL rule broken (a stolen page written before
/// its log records). Some cut leaves an uncommitted record on flash whose
/// undo record never reached the log.
#[test]
fn the_cuts_catch_the_canary() {
    if std::env::var(CASE.replay_env).is_ok() {
        return;
    }
    CASE.catches(Recovery::AriesCanary);
}

/// A damaged log is a typed error, never a panic or a silent restart: here
/// the master record overwritten.
#[test]
fn a_damaged_log_is_refused_with_a_typed_error() {
    if std::env::var(CASE.replay_env).is_ok() {
        return;
    }
    let cfg = CASE.config();
    let layout = txftl_dbms::Layout::new(cfg.warehouses, cfg.db_pages).unwrap();
    let master = txftl_dbms::records::log_start(&cfg, &layout);
    let o = CASE.run(None, false);
    assert!(o.result.is_ok());
    let mut dev = CASE.mount(o.dev.into_nand()).unwrap();
    let garbage = vec![0x5A; dev.info().page_size as usize];
    dev.write(master, &garbage).unwrap();
    let err = txftl_dbms::restart(&mut *dev, &cfg).unwrap_err();
    assert!(matches!(err, DbmsError::Corrupt(ref m) if m.contains("master")), "{err}");
}
