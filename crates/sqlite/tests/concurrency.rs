//! Several connections in one process: each database file handle has its own
//! device transaction.

use rusqlite::Connection;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::workload::{costs, integrity_check, load};
use txftl_sqlite::{Mode, Stack};

fn stack(mode: Mode) -> Stack {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 512;
    p.geometry.page_size = 4096;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    Stack::format(dev, mode).unwrap()
}

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
    for mode in [Mode::XftlOff, Mode::XftlMemory] {
        let s = stack(mode);
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
