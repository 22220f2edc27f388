//! Power cuts under the DBMS: on the `tiny` geometry (its SLC twin where
//! the protocol needs one), in full-data mode, a short run of a few clients
//! on every transactional protocol that can keep several transactions open
//! (the registry's entries), cut at every flash operation that changes the
//! array (a cut at a read leaves the same flash as one at the next program
//! or erase, as the crash harness argues), with every torn variant. The
//! NAND alone is then remounted and every DB page must hold the version its
//! last acknowledged committer wrote, or, for pages of the commit in flight
//! at the cut, that commit's version, on all of its pages or on none.
//!
//! One point replays with
//! `TXFTL_DBMS_CRASH=<protocol>:<op>:<torn> cargo test -p txftl-dbms --test crash`.

mod common;

use std::time::Instant;
use txftl_dbms::{CommitLog, Dbms, DbmsConfig, DbmsError, DbmsReport, ISOLATION_NEEDED};
use txftl_harness::DeviceSpec;
use txftl_nand::Torn;
use txftl_protocols::AnyDevice;
use txftl_workload::data::{self, Content};

const REPLAY_ENV: &str = "TXFTL_DBMS_CRASH";

/// Every protocol the DBMS can run on, as the registry lists them.
fn protocols() -> Vec<&'static str> {
    txftl_protocols::PROTOCOLS
        .iter()
        .filter(|e| e.transactional && e.isolation.contains(&ISOLATION_NEEDED))
        .map(|e| e.name)
        .collect()
}

fn config(protocol: &str) -> DbmsConfig {
    DbmsConfig {
        clients: 4,
        buffer_pages: 9,
        // Two warehouses keep the warehouse and district rows a page each
        // (tpcc.rs), so transactions overlap, steal and deadlock.
        warehouses: 2,
        // The frames the protocol needs resident per open transaction.
        pinned_frames_per_tx: txftl_protocols::PROTOCOLS
            .iter()
            .find(|e| e.name == protocol)
            .map_or(0, |e| e.resident_pages_per_tx),
        db_pages: 40,
        max_pages_per_tx: 8,
        transactions: 100,
        abort_pct: 20,
        seed: 11,
        record_commits: true,
        ..DbmsConfig::default()
    }
}

/// A fresh device with the database loaded, the flash operation count after
/// the load, and the run's outcome with a cut armed `cut` operations after it.
struct Outcome {
    dev: Box<dyn AnyDevice>,
    base_op: u64,
    result: Result<DbmsReport, DbmsError>,
    log: CommitLog,
    db_pages: u32,
}

fn run(protocol: &str, cut: Option<(u64, Torn)>, log_ops: bool) -> Outcome {
    let mut dev = DeviceSpec::tiny(protocol).fresh().expect("the tiny device formats");
    let cfg = config(protocol);
    let mut db = Dbms::new(&mut *dev, cfg).expect("the configuration fits the tiny device");
    db.load().expect("the load runs uncut");
    let base_op = common::arm(db.device().nand_mut(), cut, log_ops);
    let result = db.run();
    let log = db.commit_log().clone();
    let db_pages = db.layout().pages;
    drop(db);
    Outcome {
        dev,
        base_op,
        result,
        log,
        db_pages,
    }
}

/// Remounts the cut device's NAND and checks every DB page against the log.
fn check_after_cut(protocol: &str, o: Outcome) -> Result<(), String> {
    let per_db = config(protocol).flash_pages_per_db_page;
    let mut dev = common::remount(&DeviceSpec::tiny(protocol), o.dev.into_nand())?;
    let mut expected = vec![0u64; o.db_pages as usize];
    for rec in &o.log.acknowledged {
        rec.pages.iter().for_each(|&p| expected[p as usize] = rec.tid as u64);
    }
    assert!(o.log.in_flight.len() <= 1, "the page-level engine commits in one device call");
    let in_flight = o.log.in_flight.first();
    let mut buf = vec![0u8; dev.info().page_size as usize];
    let mut shows_in_flight = 0;
    for page in 0..o.db_pages {
        for lpn in page * per_db..(page + 1) * per_db {
            dev.read(lpn, &mut buf).map_err(|e| format!("reading lpn {lpn} failed: {e}"))?;
            let version = match data::decode(&buf) {
                Content::Written { lpn: l, version } if l == lpn => version,
                other => return Err(format!("DB page {page} (lpn {lpn}) holds {other:?}")),
            };
            let flight = in_flight.filter(|r| r.pages.contains(&page)).map(|r| r.tid as u64);
            if version == expected[page as usize] && flight != Some(version) {
                continue;
            }
            if flight == Some(version) {
                shows_in_flight += 1;
                continue;
            }
            return Err(format!(
                "DB page {page} (lpn {lpn}) holds transaction {version}'s version; the last acknowledged commit of it is {}{}",
                expected[page as usize],
                flight.map_or(String::new(), |t| format!(", the one in flight {t}"))
            ));
        }
    }
    if let Some(r) = in_flight {
        let all = r.pages.len() as u32 * per_db;
        if shows_in_flight != 0 && shows_in_flight != all {
            return Err(format!(
                "the commit in flight (transaction {}) shows on {shows_in_flight} of its {all} flash pages",
                r.tid
            ));
        }
    }
    Ok(())
}

/// Cuts at one point: the run must stop at the cut, and recovery must pass.
fn point(protocol: &str, at: u64, torn: Torn) -> Result<(), String> {
    let o = run(protocol, Some((at, torn)), false);
    match &o.result {
        Err(e) if e.is_power_loss() => {}
        Err(e) => return Err(format!("the run failed before the cut: {e}")),
        Ok(_) => return Err("the run ended before the cut".into()),
    }
    check_after_cut(protocol, o)
}

fn replay_line(protocol: &str, at: u64, torn: Torn) -> String {
    format!("{REPLAY_ENV}={protocol}:{at}:{} cargo test -p txftl-dbms --test crash", torn.name())
}

/// The mutating flash operations of the uncut run (relative to the load's
/// end), after checking that run end to end.
fn dry_run(protocol: &str) -> Result<Vec<u64>, String> {
    let o = run(protocol, None, true);
    let report = match &o.result {
        Ok(r) => r,
        Err(e) => panic!("{protocol}: the uncut run failed: {e}"),
    };
    eprintln!("{report}");
    // What the cuts must land among, or they prove little.
    assert!(report.buffer.steal_writes > 0, "{protocol}: no steal");
    assert!(report.aborted > 0 && report.restarts > 0, "{protocol}: no rollback or no restart");
    let ops: Vec<u64> = o.dev.nand().mutating_ops();
    assert_eq!(o.dev.nand().op_count() - o.base_op, o.dev.nand().op_log().len() as u64);
    assert!(
        !o.log.acknowledged.is_empty(),
        "{protocol}: nothing committed, the cuts would test nothing"
    );
    // After the whole run: every acknowledged commit, nothing in flight.
    check_after_cut(protocol, o).map_err(|e| format!("{protocol}: after the uncut run: {e}"))?;
    Ok(ops)
}

/// Cuts `protocol`'s run at every mutating operation with every torn
/// variant; the failures, each with its replay line.
fn enumerate(protocol: &str) -> Vec<String> {
    let started = Instant::now();
    let ops = match dry_run(protocol) {
        Ok(ops) => ops,
        Err(e) => return vec![e],
    };
    let mut failures = Vec::new();
    for &at in &ops {
        for torn in Torn::ALL {
            if let Err(e) = point(protocol, at, torn) {
                failures.push(format!("{protocol}: {e}\n  replay: {}", replay_line(protocol, at, torn)));
            }
        }
    }
    eprintln!(
        "{protocol}: {} mutating operations, {} cuts, {} failing, {:.1} s",
        ops.len(),
        ops.len() * Torn::ALL.len(),
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    failures
}

#[test]
fn every_cut_keeps_exactly_the_committed_transactions() {
    if let Ok(v) = std::env::var(REPLAY_ENV) {
        let parts: Vec<&str> = v.split(':').collect();
        let [p, at, torn] = parts[..] else {
            panic!("{REPLAY_ENV}=<protocol>:<op>:<torn>, got {v}")
        };
        let (at, torn) = (at.parse().expect("an operation index"), Torn::parse(torn).expect("a torn variant"));
        point(p, at, torn).unwrap_or_else(|e| panic!("{}: {e}", replay_line(p, at, torn)));
        return;
    }
    let list = protocols();
    for need in ["xftl", "scc", "bpcc"] {
        assert!(list.contains(&need), "{need} is missing from {list:?}");
    }
    // The protocols' enumerations on every core.
    let failures: Vec<String> = common::par_map(&list, |p| enumerate(p)).into_iter().flatten().collect();
    assert!(
        failures.is_empty(),
        "{} failing cuts; the first:\n{}",
        failures.len(),
        failures[..failures.len().min(5)].join("\n")
    );
}

/// The check fails where it must: a log that forgets the last commit
/// the device acknowledged does not match the remounted device.
#[test]
fn the_check_catches_a_forgotten_commit() {
    let mut o = run("xftl", None, false);
    assert!(o.result.is_ok());
    let forgotten = o.log.acknowledged.pop().expect("the run committed");
    assert!(!forgotten.pages.is_empty());
    let err = check_after_cut("xftl", o).unwrap_err();
    assert!(err.contains(&format!("holds transaction {}'s version", forgotten.tid)), "{err}");
}

/// The canaries: a protocol with a deliberate recovery bug that the cuts
/// must catch, for the cyclic commits (whose canaries break what a
/// DBMS's rollbacks and rewrites lean on).
#[test]
fn the_cuts_catch_a_canary() {
    if std::env::var(REPLAY_ENV).is_ok() {
        return;
    }
    let caught: Vec<&str> = ["scc-canary", "bpcc-canary"]
        .into_iter()
        .filter(|c| !enumerate(c).is_empty())
        .collect();
    assert!(!caught.is_empty(), "no canary caught");
    eprintln!("caught: {caught:?}");
}
