//! Real SQLite on the device, in every journal mode.

mod common;
use common::{stack, stack_with};
use txftl_protocols::PROTOCOLS;

use txftl_fs::CachePolicy;
use txftl_ftl::FtlConfig;
use txftl_protocols::{ProtocolOptions, SqlJournal};
use txftl_sqlite::workload::{costs, integrity_check, load, run_tx, TxWorkload};
use txftl_sqlite::{Mode, Stack};

#[test]
/// Every mode of every protocol the registry says can carry SQLite.
fn every_mode_runs_the_workload_and_keeps_integrity() {
    for mode in Mode::all(PROTOCOLS) {
        let s = stack(mode);
        let conn = s.open("test.db", 4096).unwrap();
        load(&conn, 2000, 1).unwrap_or_else(|e| panic!("{mode:?}: load: {e}"));
        let w = TxWorkload {
            rows: 2000,
            k: 5,
            transactions: 50,
            seed: 2,
        };
        let mut expect = costs(&conn).unwrap();
        let loaded = s.with_fs_mut(|fs| fs.stats()).unwrap();
        for i in 0..w.transactions {
            let u = w.updates(i);
            run_tx(&conn, &u).unwrap();
            for (id, c) in u {
                expect[id as usize] = c;
            }
        }
        assert_eq!(integrity_check(&conn).unwrap(), "ok", "{mode:?}");
        assert_eq!(costs(&conn).unwrap(), expect, "{mode:?}");
        let st = s.with_fs_mut(|fs| fs.stats()).unwrap();
        let commits = st.tx_commits - loaded.tx_commits;
        match mode.journal() {
            SqlJournal::Delete | SqlJournal::Truncate | SqlJournal::Persist => {
                assert!(st.journal_page_writes > loaded.journal_page_writes, "{mode:?} {st:?}");
            }
            SqlJournal::Wal => assert!(st.wal_page_writes > 0, "{mode:?} {st:?}"),
            // No journal; on a transactional device not even the file
            // system's (its metadata commits with the transaction).
            SqlJournal::Off | SqlJournal::Memory => {
                assert_eq!(st.journal_page_writes + st.wal_page_writes, 0, "{mode:?} {st:?}");
                if mode.transactional() {
                    assert_eq!(st.metadata_journal_writes, 0, "{mode:?} {st:?}");
                }
            }
            SqlJournal::Batch => {
                // The very first transaction (on an empty file) journals to a
                // file, as SQLite does; from then on each commit is one batch.
                assert_eq!(st.journal_page_writes, loaded.journal_page_writes, "{st:?}");
                assert_eq!(commits, 50, "one device transaction per commit");
                assert_eq!(st.wal_page_writes + st.metadata_journal_writes, 0, "{st:?}");
            }
        }
        // On a transactional device each SQLite transaction is (at least) one
        // device transaction, whatever the journal, except in WAL mode, where
        // the database is written only by checkpoints, outside them.
        match (mode.transactional(), mode.journal()) {
            (true, SqlJournal::Wal) | (false, _) => {}
            (true, _) => assert!(commits >= 50, "{mode:?} {st:?}"),
        }
        // Closing the last connection checkpoints a WAL into the database
        // and deletes it: what a new connection reads is what was committed.
        drop(conn);
        let conn = s.open("test.db", 4096).unwrap();
        assert_eq!(costs(&conn).unwrap(), expect, "{mode:?} after close and reopen");
        drop(conn);
        s.into_fs().unwrap();
    }
}

/// ROLLBACK on X-FTL after the page cache spilled uncommitted pages to the device.
#[test]
fn rollback_after_a_cache_spill_on_xftl() {
    for mode in [
        Mode::parse(PROTOCOLS, "xftl").unwrap(),
        Mode::parse(PROTOCOLS, "xftl-memory").unwrap(),
        Mode::parse(PROTOCOLS, "xftl-batch").unwrap(),
    ] {
        let s = stack(mode);
        // A host page cache of 4 pages: the spilled pages reach the device
        // (evicted with the transaction's id) before the rollback.
        s.with_fs_mut(|fs| fs.set_cache_policy(CachePolicy::WriteBack { max_dirty_pages: 4 }))
            .unwrap()
            .unwrap();
        let loader = s.open("test.db", 4096).unwrap();
        load(&loader, 2000, 1).unwrap();
        let before = costs(&loader).unwrap();
        drop(loader);
        // A fresh connection: a warm cache holding the whole table never spills.
        let conn = s.open("test.db", 4096).unwrap();
        conn.pragma_update(None, "cache_size", 10).unwrap(); // 10 pages: updates spill
        let written = s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap();
        conn.execute_batch("BEGIN; UPDATE partsupp SET ps_supplycost = -1;").unwrap();
        let spilled = s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap() - written;
        assert!(
            spilled > 10,
            "{mode:?}: the cache must have spilled to the device ({spilled} pages)"
        );
        conn.execute_batch("ROLLBACK").unwrap();
        assert_eq!(costs(&conn).unwrap(), before, "{mode:?}");
        assert_eq!(integrity_check(&conn).unwrap(), "ok");
    }
}

/// Batch atomic writes: a commit that does not fit the X-L2P table is rolled
/// back on the device and goes through SQLite's rollback journal instead.
#[test]
fn a_batch_too_big_for_the_table_falls_back_to_the_journal() {
    let s = stack_with(
        Mode::parse(PROTOCOLS, "xftl-batch").unwrap(),
        &ProtocolOptions::new().with("xl2p-entries", 16).with("xl2p-spill", 0),
    );
    let conn = s.open("test.db", 4096).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
    conn.execute("INSERT INTO t VALUES (1, 'x')", []).unwrap();
    let before = s.with_fs_mut(|fs| fs.stats()).unwrap();
    conn.execute("INSERT INTO t VALUES (2, 'y')", []).unwrap();
    let small = s.with_fs_mut(|fs| fs.stats()).unwrap();
    assert_eq!(small.tx_commits - before.tx_commits, 1, "a small commit is one batch");
    assert_eq!(small.journal_page_writes, before.journal_page_writes, "and writes no journal");
    // About 60 pages of rows in one transaction: more than 16 entries.
    conn.execute_batch("BEGIN; WITH RECURSIVE n(i) AS (SELECT 3 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) INSERT INTO t SELECT i, printf('%0200d', i) FROM n; COMMIT;")
        .unwrap();
    let big = s.with_fs_mut(|fs| fs.stats()).unwrap();
    assert_eq!(big.tx_aborts - small.tx_aborts, 1, "the batch was tried and aborted: {big:?}");
    assert!(
        big.journal_page_writes > small.journal_page_writes,
        "then the journal was used: {big:?}"
    );
    let n: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1000);
    assert_eq!(integrity_check(&conn).unwrap(), "ok");
    // The journal path leaves the file system consistent: remount and look again.
    drop(conn);
    let fs = s.into_fs().unwrap();
    let dev = fs.unmount().unwrap().close().unwrap();
    let dev = txftl_protocols::mount(
        "xftl",
        dev,
        FtlConfig::default(),
        &ProtocolOptions::new().with("xl2p-entries", 16).with("xl2p-spill", 0),
    )
    .unwrap();
    let s = Stack::mount(dev, Mode::parse(PROTOCOLS, "xftl-batch").unwrap()).unwrap();
    let conn = s.open("test.db", 4096).unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1000);
    assert_eq!(integrity_check(&conn).unwrap(), "ok");
}

#[test]
fn exclusive_locking_is_refused_on_xftl() {
    let s = stack(Mode::parse(PROTOCOLS, "xftl").unwrap());
    let conn = s.open("test.db", 4096).unwrap();
    let err = conn.execute_batch("PRAGMA locking_mode=EXCLUSIVE").unwrap_err();
    assert!(err.to_string().contains("locking_mode=EXCLUSIVE"), "{err}");
}

/// A journal mode a device cannot carry is refused with a reason, never
/// accepted and broken: at its PRAGMA, and (SQLite's default DELETE, which
/// needs no PRAGMA) when SQLite opens the journal. Atomic-Write runs one
/// transaction at a time, so no rollback journal or WAL beside its
/// transactions; the batch VFS runs only DELETE (as batches) and WAL.
#[test]
fn a_journal_mode_the_device_cannot_carry_is_refused_with_its_reason() {
    use rusqlite::{Connection, OpenFlags};
    let s = stack(Mode::parse(PROTOCOLS, "atomic-write").unwrap());
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE;
    let conn = Connection::open_with_flags_and_vfs("r.db", flags, s.vfs.name()).unwrap();
    for mode in ["WAL", "DELETE", "TRUNCATE", "PERSIST"] {
        let e = conn
            .query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get::<_, String>(0))
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("atomic-write") && msg.contains(&format!("journal_mode={mode}")),
            "{msg}"
        );
    }
    // The default journal (DELETE, no PRAGMA): refused as SQLite opens it.
    let e = conn.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1);").unwrap_err();
    assert!(e.to_string().contains("unable to open"), "{e}");
    let why = s.last_error().unwrap();
    assert!(why.contains("does not carry journal_mode=DELETE"), "{why}");
    // What it carries works on the same connection.
    conn.execute_batch("PRAGMA journal_mode=OFF; CREATE TABLE t(a); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);

    let s = stack(Mode::parse(PROTOCOLS, "xftl-batch").unwrap());
    let conn = Connection::open_with_flags_and_vfs("b.db", flags, s.vfs.name()).unwrap();
    for mode in ["OFF", "MEMORY", "TRUNCATE", "PERSIST"] {
        let e = conn
            .query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get::<_, String>(0))
            .unwrap_err();
        assert!(e.to_string().contains("batch VFS"), "{mode}: {e}");
    }
    let wal: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0)).unwrap();
    assert_eq!(wal, "wal");
    // On a device without transactions every journal mode runs.
    let s = stack(Mode::parse(PROTOCOLS, "rbj").unwrap());
    let conn = Connection::open_with_flags_and_vfs("p.db", flags, s.vfs.name()).unwrap();
    for mode in ["OFF", "MEMORY", "TRUNCATE", "PERSIST", "WAL", "DELETE"] {
        let got: String = conn.query_row(&format!("PRAGMA journal_mode={mode}"), [], |r| r.get(0)).unwrap();
        assert_eq!(got, mode.to_lowercase());
    }
}
