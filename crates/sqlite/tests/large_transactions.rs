//! The scenario: on the README's example image (`jasmine`, 16 blocks
//! per plane, 8 KiB pages, the default X-L2P table of 2,048 entries) a
//! transaction of more pages than the table holds commits, its entries
//! spilled to flash: `VACUUM` of a 30 MB table, then `DELETE FROM t`. (A
//! transaction larger than the free space fails with `SQLITE_FULL`: see
//! `error_messages.rs`.)

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::{Mode, Stack};

fn spill_pages(s: &Stack) -> u64 {
    s.with_fs_mut(|fs| fs.device().stats().protocol.get("xl2p_spill_pages")).unwrap()
}

#[test]
fn vacuum_and_delete_of_a_30_mb_table_commit() {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 16;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format("xftl", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let s = Stack::format(dev, Mode::parse(PROTOCOLS, "xftl").unwrap()).unwrap();
    let conn = s.open("big.db", 8192).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    // 7,500 rows of 4,000 bytes in transactions of 500 rows (each within the table).
    for b in 0..15 {
        let (lo, hi) = (b * 500 + 1, b * 500 + 500);
        conn.execute_batch(&format!(
            "BEGIN; WITH RECURSIVE n(i) AS (SELECT {lo} UNION ALL SELECT i + 1 FROM n WHERE i < {hi}) \
             INSERT INTO t SELECT i, randomblob(4000) FROM n; COMMIT;"
        ))
        .unwrap();
    }
    let bytes: i64 = conn
        .query_row("SELECT page_count * page_size FROM pragma_page_count, pragma_page_size", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(bytes >= 30_000_000, "{bytes} bytes");
    let before = spill_pages(&s);
    conn.execute_batch("DELETE FROM t WHERE k % 2 = 0; VACUUM;").unwrap();
    let vacuum = spill_pages(&s) - before;
    assert!(vacuum > 0, "VACUUM rewrote more pages than the table holds: it spilled");
    let (n, ok): (i64, String) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM t), (SELECT integrity_check FROM pragma_integrity_check)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n, ok.as_str()), (3750, "ok"));
    conn.execute_batch("DELETE FROM t; VACUUM;").unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 0);
    eprintln!("{bytes} bytes; spill pages: VACUUM {vacuum}, in all {}", spill_pages(&s));
}

/// A rollback-journal mode over device transactions (`xftl-rbj`): one
/// transaction rewriting a 40 MB table fails for space (its journal, its
/// device transaction's new pages and the pages they replace do not fit
/// the device), and leaves SQLite's journal hot. Playing it back needs
/// nothing from the device, which kept the database as it was: it must not
/// need room either. After a power cut the database opens, unchanged, and
/// takes a DELETE.
#[test]
fn a_hot_journal_larger_than_the_room_left_plays_back() {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 16;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let mode = Mode::parse(PROTOCOLS, "xftl-rbj").unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let s = Stack::format(dev, mode).unwrap();
    let conn = s.open("big.db", 8192).unwrap();
    conn.execute_batch("PRAGMA journal_mode=DELETE; CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)")
        .unwrap();
    for b in 0..20 {
        let (lo, hi) = (b * 500 + 1, b * 500 + 500);
        conn.execute_batch(&format!(
            "BEGIN; WITH RECURSIVE n(i) AS (SELECT {lo} UNION ALL SELECT i + 1 FROM n WHERE i < {hi}) \
             INSERT INTO t SELECT i, randomblob(4000) FROM n; COMMIT;"
        ))
        .unwrap();
    }
    let err = conn.execute_batch("UPDATE t SET v = randomblob(4000)").unwrap_err();
    assert_eq!(err.sqlite_error_code(), Some(rusqlite::ErrorCode::DiskFull), "{err}");
    drop(conn);
    // The journal lists every page of the table.
    let journal = s
        .with_fs_mut(|fs| fs.lookup("big.db-journal").map(|j| fs.size(None, j).unwrap()))
        .unwrap();
    assert!(journal.is_some_and(|b| b > 40_000_000), "{journal:?}");
    let mode = s.mode;
    let mut n = s.into_fs().unwrap().into_device().into_nand();
    n.power_off();
    n.power_on();
    let dev = txftl_protocols::mount(mode.protocol(), n, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let s = Stack::mount(dev, mode).unwrap();
    let conn = s.open("big.db", 8192).unwrap();
    let (n, ok): (i64, String) = conn
        .query_row(
            "SELECT (SELECT count(*) FROM t), (SELECT integrity_check FROM pragma_integrity_check)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n, ok.as_str()), (10_000, "ok"));
    let journal = s.with_fs_mut(|fs| fs.lookup("big.db-journal")).unwrap();
    assert!(journal.is_none(), "the playback deleted the journal");
    conn.execute_batch("DELETE FROM t WHERE k > 9000").unwrap();
    assert_eq!(conn.query_row("SELECT count(*) FROM t", [], |r| r.get::<_, i64>(0)).unwrap(), 9_000);
}
