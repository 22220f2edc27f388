//! The scenario: on the README's example image (`jasmine`, 16 blocks
//! per plane, 8 KiB pages, the default X-L2P table of 2,048 entries) a
//! transaction of more pages than the table holds commits, its entries
//! spilled to flash: `VACUUM` of a 30 MB table, then `DELETE FROM t`. (A
//! transaction larger than the free space fails with `SQLITE_FULL`: see
//! `error_messages.rs`.)

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
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
    let s = Stack::format(dev, Mode::parse("xftl").unwrap()).unwrap();
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
