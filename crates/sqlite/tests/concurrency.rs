//! Several connections in one process: each database file handle has its own
//! device transaction, and SQLite's locks (NONE, SHARED, RESERVED, PENDING,
//! EXCLUSIVE) are kept across connections per database file.

mod common;
use common::stack;
use txftl_protocols::PROTOCOLS;

use rusqlite::{Connection, ErrorCode};
use txftl_fs::CachePolicy;
use txftl_ftl::FtlConfig;
use txftl_protocols::ProtocolOptions;
use txftl_sqlite::workload::{costs, integrity_check, load};
use txftl_sqlite::{Mode, Stack};

/// Closes the stack (every connection must be dropped), cuts power and
/// remounts: only what the device made durable is left.
fn power_cycle(s: Stack) -> Stack {
    let mode = s.mode;
    let fs = s.into_fs().unwrap();
    let mut nand = fs.into_device().into_nand();
    nand.power_off();
    nand.power_on();
    let dev = txftl_protocols::mount(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    Stack::mount(dev, mode).unwrap()
}

fn is_busy(r: rusqlite::Result<usize>) -> bool {
    matches!(r, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::DatabaseBusy)
}

fn rows(conn: &Connection) -> Vec<(i64, String)> {
    let mut st = conn.prepare("SELECT k, v FROM t ORDER BY k").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

/// Connection A spills an uncommitted UPDATE to the device, connection B
/// commits to another database, A rolls back: A's update must stay rolled
/// back, in memory and after a power cut.
#[test]
fn a_rollback_stays_rolled_back_when_another_database_commits() {
    for mode in [
        Mode::parse(PROTOCOLS, "xftl").unwrap(),
        Mode::parse(PROTOCOLS, "xftl-memory").unwrap(),
    ] {
        let s = stack(mode);
        // A host page cache of 4 pages: A's spilled pages reach the device
        // (evicted with its transaction's id) before the rollback.
        s.with_fs_mut(|fs| fs.set_cache_policy(CachePolicy::WriteBack { max_dirty_pages: 4 }))
            .unwrap()
            .unwrap();
        let loader = s.open("a.db", 4096).unwrap();
        load(&loader, 2000, 1).unwrap();
        let before = costs(&loader).unwrap();
        drop(loader);
        // A fresh connection with a cold, small cache: the update spills.
        let a = s.open("a.db", 4096).unwrap();
        let b = s.open("b.db", 4096).unwrap();
        b.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
        a.pragma_update(None, "cache_size", 10).unwrap(); // 10 pages: the update spills
        let spilled_before = s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap();
        a.execute_batch("BEGIN; UPDATE partsupp SET ps_supplycost = -1;").unwrap();
        let spilled = s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap() - spilled_before;
        assert!(spilled > 10, "{mode:?}: A's cache must have spilled ({spilled} pages)");
        b.execute("INSERT INTO t VALUES (1, 'b commits')", []).unwrap();
        a.execute_batch("ROLLBACK").unwrap();
        assert_eq!(costs(&a).unwrap(), before, "{mode:?}: A rolled back (before the cut)");
        drop((a, b));
        let s = power_cycle(s);
        let a = s.open("a.db", 4096).unwrap();
        assert_eq!(integrity_check(&a).unwrap(), "ok", "{mode:?}");
        assert_eq!(costs(&a).unwrap(), before, "{mode:?}: A's rollback is what the device kept");
        let b = s.open("b.db", 4096).unwrap();
        assert_eq!(rows(&b), vec![(1, "b commits".to_string())], "{mode:?}: B's commit is durable");
    }
}

/// One connection holds a write transaction; another's write gets SQLITE_BUSY;
/// after the first commits the second retries; both rows are there, before
/// and after a power cut.
#[test]
fn a_second_writer_gets_busy_and_no_committed_row_is_lost() {
    for mode in Mode::all(PROTOCOLS) {
        let s = stack(mode);
        let a = s.open("t.db", 4096).unwrap();
        a.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
        let b = s.open("t.db", 4096).unwrap();
        a.execute_batch("BEGIN; INSERT INTO t VALUES (1, 'a');").unwrap();
        assert!(
            is_busy(b.execute("INSERT INTO t VALUES (2, 'b')", [])),
            "{mode:?}: B must not write while A holds a write transaction"
        );
        a.execute_batch("COMMIT").unwrap();
        b.execute("INSERT INTO t VALUES (2, 'b')", []).unwrap();
        let want = vec![(1, "a".to_string()), (2, "b".to_string())];
        assert_eq!(rows(&a), want, "{mode:?}: A sees both rows");
        assert_eq!(rows(&b), want, "{mode:?}: B sees both rows");
        drop((a, b));
        let s = power_cycle(s);
        let c = s.open("t.db", 4096).unwrap();
        assert_eq!(integrity_check(&c).unwrap(), "ok", "{mode:?}");
        assert_eq!(rows(&c), want, "{mode:?}: both commits are durable");
    }
}

/// The classic lost update: two read-modify-write transactions on one counter,
/// interleaved. The second writer gets SQLITE_BUSY, rolls back and retries, so
/// the counter ends at 2, not 1.
#[test]
fn interleaved_increments_lose_no_update() {
    for mode in Mode::all(PROTOCOLS) {
        let s = stack(mode);
        let a = s.open("c.db", 4096).unwrap();
        a.execute_batch("CREATE TABLE c(id INTEGER PRIMARY KEY, n INT); INSERT INTO c VALUES (1, 0);")
            .unwrap();
        let b = s.open("c.db", 4096).unwrap();
        let read = |c: &Connection| -> i64 { c.query_row("SELECT n FROM c WHERE id = 1", [], |r| r.get(0)).unwrap() };
        a.execute_batch("BEGIN").unwrap();
        b.execute_batch("BEGIN").unwrap();
        let na = read(&a);
        let nb = read(&b);
        a.execute("UPDATE c SET n = ?1 WHERE id = 1", [na + 1]).unwrap();
        let second = b.execute("UPDATE c SET n = ?1 WHERE id = 1", [nb + 1]);
        assert!(is_busy(second), "{mode:?}: B's update of a counter A is updating must be refused");
        b.execute_batch("ROLLBACK").unwrap();
        a.execute_batch("COMMIT").unwrap();
        // B retries its whole transaction.
        b.execute_batch("BEGIN").unwrap();
        let nb = read(&b);
        b.execute("UPDATE c SET n = ?1 WHERE id = 1", [nb + 1]).unwrap();
        b.execute_batch("COMMIT").unwrap();
        assert_eq!(read(&a), 2, "{mode:?}: both increments counted");
        drop((a, b));
        let s = power_cycle(s);
        let c = s.open("c.db", 4096).unwrap();
        assert_eq!(read(&c), 2, "{mode:?}: after a power cut too");
    }
}

/// A reader holds SHARED: the writer's COMMIT gets SQLITE_BUSY and keeps
/// PENDING, which keeps new readers out (SQLITE_BUSY) until the reader is
/// gone; then the commit goes through. Not WAL, where readers never block.
#[test]
fn a_reader_delays_a_commit_and_pending_keeps_new_readers_out() {
    for mode in [
        Mode::parse(PROTOCOLS, "rbj").unwrap(),
        Mode::parse(PROTOCOLS, "xftl").unwrap(),
        Mode::parse(PROTOCOLS, "xftl-memory").unwrap(),
        Mode::parse(PROTOCOLS, "xftl-batch").unwrap(),
    ] {
        let s = stack(mode);
        let a = s.open("p.db", 4096).unwrap();
        a.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'old');")
            .unwrap();
        let reader = s.open("p.db", 4096).unwrap();
        let late = s.open("p.db", 4096).unwrap();
        reader.execute_batch("BEGIN").unwrap();
        assert_eq!(rows(&reader), vec![(1, "old".to_string())]);
        a.execute_batch("BEGIN; UPDATE t SET v = 'new' WHERE k = 1;").unwrap();
        assert!(is_busy(a.execute("COMMIT", [])), "{mode:?}: a reader holds SHARED");
        let r = late.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0));
        assert!(
            matches!(&r, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::DatabaseBusy),
            "{mode:?}: PENDING keeps a new reader out: {r:?}"
        );
        assert_eq!(
            rows(&reader),
            vec![(1, "old".to_string())],
            "{mode:?}: the reader sees the committed row"
        );
        reader.execute_batch("COMMIT").unwrap();
        a.execute_batch("COMMIT").unwrap();
        assert_eq!(rows(&late), vec![(1, "new".to_string())], "{mode:?}");
        drop((a, reader, late));
        let s = power_cycle(s);
        let c = s.open("p.db", 4096).unwrap();
        assert_eq!(rows(&c), vec![(1, "new".to_string())], "{mode:?}: after a power cut");
    }
}
