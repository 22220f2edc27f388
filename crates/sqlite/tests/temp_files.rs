//! SQLite's temporary files (sort spills, statement journals, temporary
//! tables) live in host memory, as on a tmpfs `/tmp`: they never reach the
//! device nor need a device transaction, on any protocol, and a budget bounds
//! them (`SQLITE_FULL` past it, the reason in `Stack::last_error`).
//!
//! The device: the README's example image (`jasmine`, 16 blocks per plane,
//! 8 KiB pages). On `atomic-write`, which runs one device transaction at a
//! time, a file created on the device while the database's transaction is
//! open would need a second one.

use rusqlite::{Connection, ErrorCode};
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::{Mode, Stack};

const ROWS: i64 = 20_000;

/// A stack of `mode` on the example image, and a connection to `t.db`
/// holding table `t` of [`ROWS`] rows of about 250 bytes (about 6 MB), with
/// a cache of 50 pages (400 KiB), so a sort of the table spills.
fn loaded(mode: &str) -> (Stack, Connection) {
    let mode = Mode::parse(PROTOCOLS, mode).unwrap();
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 16;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let s = Stack::format(dev, mode).unwrap();
    let conn = s.open("t.db", 8192).unwrap();
    conn.execute_batch(&format!(
        "CREATE TABLE t(k INTEGER PRIMARY KEY, a INTEGER, b INTEGER, c TEXT, d REAL, e BLOB);
         BEGIN;
         WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < {ROWS})
         INSERT INTO t SELECT i, i, (i * 7919) % {ROWS}, printf('row %08d', (i * 31) % {ROWS}), i * 0.5, randomblob(200) FROM n;
         COMMIT;
         PRAGMA cache_size = 50;"
    ))
    .unwrap();
    (s, conn)
}

fn integrity(conn: &Connection) -> String {
    conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

/// The files on the device.
fn device_files(s: &Stack) -> Vec<String> {
    s.with_fs_mut(|fs| fs.list().into_iter().map(|(name, _)| name).collect()).unwrap()
}

#[test]
fn five_create_index_in_one_atomic_write_transaction() {
    let (s, conn) = loaded("atomic-write");
    let before = s.vfs.temp_stats();
    conn.execute_batch(
        "BEGIN;
         CREATE INDEX ia ON t(a); CREATE INDEX ib ON t(b); CREATE INDEX ic ON t(c);
         CREATE INDEX id ON t(d); CREATE INDEX ie ON t(e);
         COMMIT;",
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", s.last_error()));
    let after = s.vfs.temp_stats();
    assert_eq!(integrity(&conn), "ok");
    let indexes: i64 = conn
        .query_row("SELECT count(*) FROM sqlite_schema WHERE type = 'index'", [], |r| r.get(0))
        .unwrap();
    assert_eq!(indexes, 5);
    // The index builds' sorts spilled (to memory), and nothing of them is
    // left: no file on the device, no byte in memory.
    assert!(after.files_opened > before.files_opened, "{after:?}");
    assert!(after.bytes_peak > 0 && after.bytes_written > 0, "{after:?}");
    assert_eq!((after.files_open, after.bytes, after.refusals), (0, 0, 0), "{after:?}");
    assert_eq!(device_files(&s), ["t.db"]);
    assert_eq!(s.last_error(), None, "no VFS call failed");
    eprintln!("five indexes: {after:?}");
}

/// An `ORDER BY` over an unindexed table larger than the cache spills its
/// sort: the device sees no write while it runs, on a transactional
/// protocol and on `plain`.
#[test]
fn a_sort_spill_never_writes_the_device() {
    for mode in ["atomic-write", "xftl", "rbj"] {
        let (s, conn) = loaded(mode);
        let temp = s.vfs.temp_stats();
        let dev = s.snapshot().unwrap().dev;
        let mut stmt = conn.prepare("SELECT b, e FROM t ORDER BY b DESC, e").unwrap();
        let mut rows = stmt.query([]).unwrap();
        let (mut n, mut last) = (0, i64::MAX);
        while let Some(row) = rows.next().unwrap() {
            let b: i64 = row.get(0).unwrap();
            assert!(b <= last, "{mode}: out of order");
            (n, last) = (n + 1, b);
        }
        drop(rows);
        drop(stmt);
        let after = s.snapshot().unwrap().dev;
        let spilled = s.vfs.temp_stats();
        assert_eq!(n, ROWS, "{mode}");
        assert!(spilled.files_opened > temp.files_opened, "{mode}: the sort spilled: {spilled:?}");
        assert!(
            spilled.bytes_peak >= 4_000_000,
            "{mode}: the spill holds the sorted rows: {spilled:?}"
        );
        assert_eq!(
            (after.host_writes, after.host_flushes, after.commits),
            (dev.host_writes, dev.host_flushes, dev.commits),
            "{mode}: the device saw no write, flush or commit during the SELECT"
        );
        assert!(after.host_reads > dev.host_reads, "{mode}: it read the table");
        assert_eq!(device_files(&s), ["t.db"], "{mode}");
        assert_eq!(spilled.bytes, 0, "{mode}: freed at close");
    }
}

/// A statement journal (the rollback journal modes keep one per statement
/// of a transaction, spilled past 64 KiB) lives in memory and does its job:
/// a statement that fails at its last row is undone, the transaction goes on.
#[test]
fn a_statement_journal_rolls_a_statement_back_from_memory() {
    for mode in ["atomic-write-batch", "rbj"] {
        let (s, conn) = loaded(mode);
        conn.execute_batch("PRAGMA cache_size = -65536; CREATE UNIQUE INDEX ia ON t(a);")
            .unwrap();
        let before = s.vfs.temp_stats();
        conn.execute_batch("BEGIN; UPDATE t SET d = -d;").unwrap();
        // Every row changes, then the last one breaks the unique index.
        let r = conn.execute_batch(&format!("UPDATE t SET c = 'z', a = CASE k WHEN {ROWS} THEN 1 ELSE a END"));
        assert!(
            matches!(&r, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::ConstraintViolation),
            "{mode}: {r:?}"
        );
        conn.execute_batch("COMMIT").unwrap();
        let after = s.vfs.temp_stats();
        assert!(after.subjournals_opened > before.subjournals_opened, "{mode}: {after:?}");
        let (z, negative): (i64, i64) = conn
            .query_row("SELECT sum(c = 'z'), sum(d < 0) FROM t", [], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap();
        assert_eq!((z, negative), (0, ROWS), "{mode}: the failed statement is undone, the first kept");
        assert_eq!(integrity(&conn), "ok", "{mode}");
        assert!(!device_files(&s).iter().any(|f| f != "t.db" && !f.starts_with("t.db-")), "{mode}");
    }
}

/// A temporary table, written inside an open `atomic-write` transaction.
#[test]
fn a_temporary_table_inside_an_atomic_write_transaction() {
    let (s, conn) = loaded("atomic-write");
    let before = s.vfs.temp_stats();
    conn.execute_batch(
        "BEGIN;
         UPDATE t SET d = d + 1 WHERE k % 100 = 0;
         CREATE TEMP TABLE x AS SELECT k, e FROM t;
         DELETE FROM t WHERE k IN (SELECT k FROM x WHERE k % 2 = 0);
         COMMIT;",
    )
    .unwrap_or_else(|e| panic!("{e}: {:?}", s.last_error()));
    let after = s.vfs.temp_stats();
    let (n, kept): (i64, i64) = conn
        .query_row("SELECT count(*), (SELECT count(*) FROM temp.x) FROM t", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .unwrap();
    assert_eq!((n, kept), (ROWS / 2, ROWS));
    assert!(after.files_opened > before.files_opened && after.bytes > 1_000_000, "{after:?}");
    assert_eq!(device_files(&s), ["t.db"]);
    drop(conn);
    assert_eq!((s.vfs.temp_stats().files_open, s.vfs.temp_stats().bytes), (0, 0), "freed at close");
}

/// Past the budget a temporary file's write fails with `SQLITE_FULL`, and
/// `Stack::last_error` says which budget; a larger one lets the query run.
#[test]
fn the_budget_gives_sqlite_full_with_its_reason() {
    let (s, conn) = loaded("atomic-write");
    s.vfs.set_temp_budget(256 << 10);
    let r = conn.query_row("SELECT count(*) FROM (SELECT b, e FROM t ORDER BY b, e)", [], |r| {
        r.get::<_, i64>(0)
    });
    assert!(
        matches!(&r, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::DiskFull),
        "{r:?}"
    );
    let why = s.last_error().unwrap();
    assert!(why.contains("budget of 262144 bytes") && why.contains("temporary journal"), "{why}");
    let stats = s.vfs.temp_stats();
    assert!(stats.refusals > 0 && stats.bytes_peak <= 256 << 10, "{stats:?}");
    assert_eq!((stats.files_open, stats.bytes), (0, 0), "the failed sort freed its files");
    eprintln!("{why}");

    s.vfs.set_temp_budget(txftl_sqlite::vfs::TEMP_BUDGET_DEFAULT);
    let n: i64 = conn
        .query_row("SELECT count(*) FROM (SELECT b, e FROM t ORDER BY b, e)", [], |r| r.get(0))
        .unwrap();
    assert_eq!(n, ROWS);
    assert_eq!(integrity(&conn), "ok");
}
