//! TPC-C with several clients, each its own connection, interleaved statement
//! by statement on the simulated clock; SQLite's locks (kept by the VFS across
//! connections) refuse what would conflict, and the clients back off and retry.

mod common;
use common::{small_tpcc as small, stack};
use txftl_ftl::SqlJournal;
use txftl_protocols::PROTOCOLS;

use rusqlite::Connection;
use txftl_sqlite::tpcc::clients::{run_clients, Begin, ClientTx, ClientsReport, ClientsSpec};
use txftl_sqlite::tpcc::{self, check, fingerprint, TpccSpec, TxKind};
use txftl_sqlite::workload::integrity_check;
use txftl_sqlite::Mode;

struct Run {
    report: ClientsReport,
    txs: Vec<ClientTx>,
    fingerprint: u64,
    device_programs: u64,
    now_ns: u64,
}

/// Loads `spec` on a fresh device of `mode` and runs it on `clients` clients;
/// checks consistency and integrity after the run.
fn run(mode: Mode, clients: usize, spec: &TpccSpec) -> Run {
    run_with(mode, clients, spec, &ClientsSpec::default())
}

fn run_with(mode: Mode, clients: usize, spec: &TpccSpec, how: &ClientsSpec) -> Run {
    let s = stack(mode);
    let loader = s.open("tpcc.db", 4096).unwrap();
    tpcc::load(&loader, spec).unwrap();
    let mut conns = vec![loader];
    for _ in 1..clients {
        conns.push(s.open("tpcc.db", 4096).unwrap());
    }
    let mut txs = Vec::new();
    let (report, conns) = run_clients(&s, conns, spec, how, |t| txs.push(*t))
        .unwrap_or_else(|e| panic!("{mode:?}, {clients} clients: {e} ({:?})", s.last_error()));
    assert_eq!(conns.len(), clients);
    let conn: &Connection = &conns[0];
    check(conn).unwrap_or_else(|e| panic!("{mode:?}, {clients} clients: consistency: {e}"));
    assert_eq!(integrity_check(conn).unwrap(), "ok", "{mode:?}, {clients} clients");
    let fingerprint = fingerprint(conn).unwrap();
    drop(conns);
    let (device_programs, now_ns) = s
        .with_fs_mut(|fs| (fs.device().stats().flash_programs, fs.device().now_ns()))
        .unwrap();
    Run {
        report,
        txs,
        fingerprint,
        device_programs,
        now_ns,
    }
}

/// Every transaction ran once, whole; the per-type counts are the mix's.
fn all_ran(r: &Run, spec: &TpccSpec) {
    assert_eq!(r.txs.len() as u64, spec.transactions);
    assert_eq!(r.report.report.transactions(), spec.transactions);
    let mut seen: Vec<u64> = r.txs.iter().map(|t| t.index).collect();
    seen.sort();
    assert_eq!(seen, (0..spec.transactions).collect::<Vec<_>>(), "each transaction exactly once");
    for kind in TxKind::ALL {
        let k = r.report.report.kind(kind);
        assert_eq!(k.committed + k.rolled_back, k.count, "{kind:?}");
    }
    for t in &r.txs {
        assert!(t.end_ns >= t.ready_ns);
        assert!(t.busy >= t.restarts + t.commit_retries, "each retry follows a busy event");
    }
}

#[test]
fn the_same_seed_gives_the_same_interleaving_and_figures() {
    let spec = small(300, 7);
    for mode in [Mode::parse(PROTOCOLS, "rbj").unwrap(), Mode::parse(PROTOCOLS, "xftl").unwrap()] {
        let a = run(mode, 4, &spec);
        let b = run(mode, 4, &spec);
        assert_eq!(a.report, b.report, "{mode:?}");
        assert_eq!(a.txs, b.txs, "{mode:?}: the same transactions, clients, latencies and costs");
        assert_eq!(a.fingerprint, b.fingerprint, "{mode:?}");
        assert_eq!((a.device_programs, a.now_ns), (b.device_programs, b.now_ns), "{mode:?}");
        // And the clients did interleave: the token changed hands mid-transaction.
        assert!(a.report.switches > spec.transactions, "{mode:?}: {} switches", a.report.switches);
    }
}

#[test]
fn rollback_journal_clients_meet_busy_and_retry() {
    let spec = small(400, 3);
    let r = run(Mode::parse(PROTOCOLS, "rbj").unwrap(), 2, &spec);
    all_ran(&r, &spec);
    let b = r.report.busy;
    assert!(b.busy > 0, "two clients on a rollback journal never met SQLITE_BUSY: {b:?}");
    assert!(b.restarts + b.commit_retries > 0, "{b:?}");
    assert_eq!(b.busy, b.restarts + b.commit_retries, "every busy event was retried: {b:?}");
    // A transaction that waited counts the wait in its latency.
    let waited = r.txs.iter().find(|t| t.busy > 0).unwrap();
    assert!(waited.latency_ns() >= ClientsSpec::default().backoff_ns_min / 2);
    // Read-only transactions are refused only while a writer commits (PENDING).
    let one = run(Mode::parse(PROTOCOLS, "rbj").unwrap(), 1, &spec);
    assert_eq!(one.report.busy.busy, 0, "one client never waits");
}

/// Four clients on each mode `pick` takes: every transaction ran, the
/// database is consistent and whole (`run` checks TPC-C's conditions 1 to 4
/// and `integrity_check`), and some committed.
fn four_clients_keep_the_database_consistent(pick: impl Fn(SqlJournal) -> bool) {
    let spec = small(400, 5);
    let modes: Vec<Mode> = Mode::all(PROTOCOLS).filter(|m| pick(m.journal())).collect();
    assert!(modes.len() > 10, "{} modes", modes.len());
    for mode in modes {
        let r = run(mode, 4, &spec);
        all_ran(&r, &spec);
        let committed: u64 = TxKind::ALL.iter().map(|&k| r.report.report.kind(k).committed).sum();
        assert!(committed > 0, "{mode:?}");
    }
}

/// Every mode, in two tests the test threads run side by side (as one test
/// it kept a single core busy for most of this file's time): the modes
/// whose journal is a file on the device, and those without one.
fn journal_on_the_device(j: SqlJournal) -> bool {
    matches!(j, SqlJournal::Delete | SqlJournal::Truncate | SqlJournal::Persist | SqlJournal::Wal)
}

#[test]
fn four_clients_keep_the_database_consistent_with_a_journal_file() {
    four_clients_keep_the_database_consistent(journal_on_the_device);
}

#[test]
fn four_clients_keep_the_database_consistent_without_a_journal_file() {
    four_clients_keep_the_database_consistent(|j| !journal_on_the_device(j));
}

/// Writers that take the write lock at BEGIN IMMEDIATE wait before their
/// reads instead of redoing them: each busy event costs one statement again
/// (the refused BEGIN IMMEDIATE or COMMIT), where a deferred writer refused at
/// its first write redoes every statement before it.
#[test]
fn begin_immediate_waits_instead_of_redoing() {
    let spec = small(400, 5);
    for mode in [Mode::parse(PROTOCOLS, "rbj").unwrap(), Mode::parse(PROTOCOLS, "wal").unwrap()] {
        let serial = run(mode, 1, &spec).report.steps;
        let deferred = run(mode, 4, &spec).report;
        let immediate = run_with(
            mode,
            4,
            &spec,
            &ClientsSpec {
                begin: Begin::Immediate,
                ..ClientsSpec::default()
            },
        );
        all_ran(&immediate, &spec);
        let i = &immediate.report;
        assert!(i.busy.busy > 0, "{mode:?}");
        assert_eq!(i.steps - i.busy.busy, serial, "{mode:?}: BEGIN IMMEDIATE redoes nothing");
        assert!(
            deferred.steps - deferred.busy.busy > serial,
            "{mode:?}: deferred writers redo their reads ({} statements, {} busy, {serial} alone)",
            deferred.steps,
            deferred.busy.busy
        );
    }
}

/// One client through the scheduler runs the same transactions as the serial
/// runner: the same database, and no busy event.
#[test]
fn one_client_is_the_serial_run() {
    let spec = small(200, 9);
    let r = run(Mode::parse(PROTOCOLS, "wal").unwrap(), 1, &spec);
    assert_eq!(r.report.busy.busy, 0);
    let s = stack(Mode::parse(PROTOCOLS, "wal").unwrap());
    let conn = s.open("tpcc.db", 4096).unwrap();
    tpcc::load(&conn, &spec).unwrap();
    let report = tpcc::run(&conn, &spec).unwrap();
    assert_eq!(report, r.report.report);
    assert_eq!(fingerprint(&conn).unwrap(), r.fingerprint);
}

#[test]
fn a_bad_backoff_is_refused() {
    let spec = small(10, 1);
    let s = stack(Mode::parse(PROTOCOLS, "wal").unwrap());
    let conn = s.open("tpcc.db", 4096).unwrap();
    tpcc::load(&conn, &spec).unwrap();
    let bad = ClientsSpec {
        backoff_ns_min: 0,
        ..ClientsSpec::default()
    };
    assert!(run_clients(&s, vec![conn], &spec, &bad, |_| {}).is_err());
}
