//! ARIES on `plain` under power cuts: on the `tiny` geometry with 2 KiB
//! pages (Flag Commit's page size: a log page holds the paper's 40 records
//! and a DB page the records a short run writes) in full-data mode, a short run of a few clients with record locks, steals, injected
//! rollbacks, deadlock restarts and checkpoints, cut at every flash
//! operation that changes the array with every torn variant. The NAND alone
//! is remounted, the DBMS restarts (analysis, redo, undo) and every record
//! must hold the version its last acknowledged committer wrote; the records
//! of the commit in flight at the cut show all or none. Every eighth point's
//! restart is then itself cut at each of its mutating operations (its torn
//! variants in turn) and restarted again: cuts while a restart writes what
//! its redo and undo made.
//!
//! One point replays with
//! `TXFTL_ARIES_CRASH=<op>:<torn>[:<restart op>:<torn>] cargo test -p txftl-dbms --test aries`.

mod common;

use std::collections::BTreeMap;
use std::time::Instant;
use txftl_dbms::{records_on_flash, restart, CommitLog, DbmsConfig, DbmsError, DbmsReport, RecordDbms, Recovery, RestartReport};
use txftl_harness::DeviceSpec;
use txftl_nand::{Nand, PowerCut, Torn};
use txftl_protocols::AnyDevice;

const REPLAY_ENV: &str = "TXFTL_ARIES_CRASH";
const PROTOCOL: &str = "plain";

fn config() -> DbmsConfig {
    config_of(Recovery::Aries)
}

fn config_of(recovery: Recovery) -> DbmsConfig {
    DbmsConfig {
        clients: 6,
        buffer_pages: 8,
        warehouses: 1,
        db_pages: 80,
        max_pages_per_tx: 8,
        transactions: 120,
        abort_pct: 20,
        seed: 3,
        recovery,
        log_pages: 40,
        checkpoint_log_pages: 2,
        record_commits: true,
        ..DbmsConfig::default()
    }
}

struct Outcome {
    dev: Box<dyn AnyDevice>,
    /// Clients mid-rollback when the run stopped.
    rolling_back: usize,
    base_op: u64,
    result: Result<DbmsReport, DbmsError>,
    log: CommitLog,
}

fn run(cut: Option<(u64, Torn)>, log_ops: bool) -> Outcome {
    run_with(config(), cut, log_ops)
}

/// `tiny` with 2 KiB pages.
fn spec() -> DeviceSpec {
    let mut s = DeviceSpec::tiny(PROTOCOL);
    s.nand.geometry.page_size = 2048;
    s
}

fn run_with(cfg: DbmsConfig, cut: Option<(u64, Torn)>, log_ops: bool) -> Outcome {
    let mut dev = spec().fresh().expect("the tiny device formats");
    let mut db = RecordDbms::new(&mut *dev, cfg).expect("the configuration fits the tiny device");
    db.load().expect("the load runs uncut");
    let base_op = common::arm(db.device().nand_mut(), cut, log_ops);
    let result = db.run();
    let log = db.commit_log().clone();
    let rolling_back = db.rolling_back();
    drop(db);
    Outcome {
        dev,
        rolling_back,
        base_op,
        result,
        log,
    }
}

fn mount(nand: Nand) -> Result<Box<dyn AnyDevice>, String> {
    common::remount(&spec(), nand)
}

/// The records the DBMS must show: the last acknowledged committer's.
fn expected(log: &CommitLog) -> BTreeMap<(u32, u32), u32> {
    let mut want = BTreeMap::new();
    for rec in &log.acknowledged {
        for &r in &rec.records {
            want.insert(r, rec.tid);
        }
    }
    want
}

/// Every record against the commit log; the commit in flight all or none.
fn check_records(dev: &mut dyn AnyDevice, log: &CommitLog) -> Result<(), String> {
    let found = records_on_flash(dev, &config()).map_err(|e| format!("reading the records: {e}"))?;
    let want = expected(log);
    let flight = log.in_flight.as_ref();
    let in_flight: BTreeMap<(u32, u32), u32> = flight.map_or(BTreeMap::new(), |r| r.records.iter().map(|&k| (k, r.tid)).collect());
    let mut shown = 0;
    let keys: std::collections::BTreeSet<(u32, u32)> = found.keys().chain(want.keys()).chain(in_flight.keys()).copied().collect();
    for k in keys {
        let (f, w) = (found.get(&k).copied().unwrap_or(0), want.get(&k).copied().unwrap_or(0));
        if in_flight.get(&k) == Some(&f) && f != 0 {
            shown += 1;
        } else if f != w {
            return Err(format!("record {k:?} holds version {f}; the last acknowledged commit of it is {w}"));
        }
    }
    if shown != 0 && shown != in_flight.len() {
        return Err(format!("the commit in flight shows on {shown} of its {} records", in_flight.len()));
    }
    Ok(())
}

/// Remounts, restarts (cut at `second` operations into the restart, then
/// remounted and restarted again), and checks.
fn recover_and_check(nand: Nand, log: &CommitLog, second: Option<(u64, Torn)>) -> Result<RestartReport, String> {
    let mut dev = mount(nand)?;
    if let Some((at, torn)) = second {
        let nand = dev.nand_mut();
        let base = nand.op_count();
        nand.arm_power_cut(PowerCut {
            at_op: base + at,
            torn,
            seed: at ^ 0x5eed,
        });
        match restart(&mut *dev, &config()) {
            Err(e) if e.is_power_loss() => {}
            Err(e) => return Err(format!("the restart failed before its cut: {e}")),
            Ok(_) => return Err("the restart ended before its cut".into()),
        }
        dev = mount(dev.into_nand())?;
    }
    let report = restart(&mut *dev, &config()).map_err(|e| format!("restart failed: {e}"))?;
    check_records(&mut *dev, log)?;
    Ok(report)
}

/// The mutating operations of the restart after a cut at `at`, counted
/// from the mount's end.
fn restart_ops(at: u64, torn: Torn) -> Vec<u64> {
    let o = run(Some((at, torn)), false);
    let mut dev = mount(o.dev.into_nand()).expect("the device mounts");
    dev.nand_mut().set_op_log(true);
    let base = dev.nand().op_count();
    restart(&mut *dev, &config()).expect("the restart runs");
    assert_eq!(dev.nand().op_count() - base, dev.nand().op_log().len() as u64);
    dev.nand().mutating_ops()
}

/// A cut's restart report, and whether the cut fell during a rollback.
fn point(at: u64, torn: Torn, second: Option<(u64, Torn)>) -> Result<(RestartReport, bool), String> {
    let o = run(Some((at, torn)), false);
    let in_rollback = o.rolling_back > 0;
    match &o.result {
        Err(e) if e.is_power_loss() => {}
        Err(e) => return Err(format!("the run failed before the cut: {e}")),
        Ok(_) => return Err("the run ended before the cut".into()),
    }
    recover_and_check(o.dev.into_nand(), &o.log, second).map(|r| (r, in_rollback))
}

fn replay_line(at: u64, torn: Torn, second: Option<(u64, Torn)>) -> String {
    let s = second.map_or(String::new(), |(s, t)| format!(":{s}:{}", t.name()));
    format!("{REPLAY_ENV}={at}:{}{s} cargo test -p txftl-dbms --test aries", torn.name())
}

/// The uncut run's mutating operations, after checking it end to end.
fn dry_run() -> Vec<u64> {
    let o = run(None, true);
    let report = o.result.as_ref().unwrap_or_else(|e| panic!("the uncut run failed: {e}"));
    eprintln!("{report}");
    let log = report.log.expect("a logging run reports its log");
    eprintln!("  log: {log:?}");
    // What the cuts must land among, or they prove little.
    assert!(report.buffer.steal_writes > 0, "no steal");
    // Record locks in TPC-C's lock order rarely deadlock (the page-level
    // crash test covers victims); rollbacks come from the injected aborts.
    assert!(report.aborted > 0, "no rollback");
    assert!(
        log.checkpoints >= 2 && log.page_reads > 0,
        "no second checkpoint, or no rollback read its log back"
    );
    let ops: Vec<u64> = o.dev.nand().mutating_ops();
    assert_eq!(o.dev.nand().op_count() - o.base_op, o.dev.nand().op_log().len() as u64);
    recover_and_check(o.dev.into_nand(), &o.log, None).unwrap_or_else(|e| panic!("after the uncut run: {e}"));
    ops
}

#[test]
fn every_cut_keeps_exactly_the_committed_records() {
    if let Ok(v) = std::env::var(REPLAY_ENV) {
        let parts: Vec<&str> = v.split(':').collect();
        let (at, torn) = (
            parts[0].parse().expect("an operation index"),
            Torn::parse(parts[1]).expect("a torn variant"),
        );
        let second = parts.get(2).map(|s| {
            let t = parts.get(3).map_or(Torn::Garbage, |t| Torn::parse(t).expect("a torn variant"));
            (s.parse().expect("a restart operation index"), t)
        });
        point(at, torn, second).unwrap_or_else(|e| panic!("{}: {e}", replay_line(at, torn, second)));
        return;
    }
    let started = Instant::now();
    let ops = dry_run();
    let mut failures = Vec::new();
    let (mut redone, mut undone, mut second_cuts, mut in_rollbacks) = (0, 0, 0, 0);
    for (n, &at) in ops.iter().enumerate() {
        for torn in Torn::ALL {
            match point(at, torn, None) {
                Err(e) => failures.push(format!("{e}\n  replay: {}", replay_line(at, torn, None))),
                Ok((r, in_rollback)) => {
                    in_rollbacks += in_rollback as u64;
                    redone += r.redone;
                    undone += r.undone;
                    // Every eighth point: the restart cut at each of its own
                    // mutating operations, the torn variants in turn.
                    if n % 8 == 0 && torn == Torn::Garbage {
                        for (i, s) in restart_ops(at, torn).into_iter().enumerate() {
                            second_cuts += 1;
                            let t2 = Torn::ALL[i % Torn::ALL.len()];
                            if let Err(e) = point(at, torn, Some((s, t2))) {
                                failures.push(format!("{e}\n  replay: {}", replay_line(at, torn, Some((s, t2)))));
                            }
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "aries on {PROTOCOL}: {} mutating operations, {} cuts ({in_rollbacks} during a rollback), {second_cuts} cuts in restarts, {} failing; restarts redid {redone} and undid {undone} records; {:.1} s",
        ops.len(),
        ops.len() * Torn::ALL.len(),
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    assert!(redone > 0 && undone > 0, "the cuts never made a restart redo and undo");
    assert!(in_rollbacks > 0, "no cut fell during a rollback");
    assert!(
        failures.is_empty(),
        "{} failing cuts; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

/// The canary: ARIES with the WAL rule broken (a stolen page written before
/// its log records). The cuts must catch it: some cut leaves an uncommitted
/// record on flash whose undo record never reached the log.
#[test]
fn the_cuts_catch_the_canary() {
    if std::env::var(REPLAY_ENV).is_ok() {
        return;
    }
    let cfg = config_of(Recovery::AriesCanary);
    let dry = run_with(cfg.clone(), None, true);
    if let Err(e) = &dry.result {
        panic!("the canary's uncut run failed: {e}");
    }
    let ops: Vec<u64> = dry.dev.nand().mutating_ops();
    let caught = ops.iter().find_map(|&at| {
        let o = run_with(cfg.clone(), Some((at, Torn::None)), false);
        assert!(o.result.as_ref().is_err_and(|e| e.is_power_loss()));
        recover_and_check(o.dev.into_nand(), &o.log, None).err().map(|e| (at, e))
    });
    let (at, e) = caught.expect("no cut caught the canary");
    eprintln!("aries-canary caught at operation {at}: {e}");
}

/// A damaged log is a typed error, never a panic or a silent restart: here
/// the master record overwritten.
#[test]
fn a_damaged_log_is_refused_with_a_typed_error() {
    if std::env::var(REPLAY_ENV).is_ok() {
        return;
    }
    let cfg = config();
    let layout = txftl_dbms::Layout::new(cfg.warehouses, cfg.db_pages).unwrap();
    let master = txftl_dbms::records::log_start(&cfg, &layout);
    let o = run(None, false);
    assert!(o.result.is_ok());
    let mut dev = mount(o.dev.into_nand()).unwrap();
    let garbage = vec![0x5A; dev.info().page_size as usize];
    dev.write(master, &garbage).unwrap();
    let err = restart(&mut *dev, &cfg).unwrap_err();
    assert!(matches!(err, DbmsError::Corrupt(ref m) if m.contains("master")), "{err}");
}
