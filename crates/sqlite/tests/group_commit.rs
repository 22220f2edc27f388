//! `synchronous=NORMAL` on `nolgn` (`journal_mode=OFF`): SQLite's
//! transactions go to the device grouped, one device transaction per so many
//! database page writes (the paper's 1,000; set small here). A power cut
//! loses the open group whole, earlier groups stay; FULL commits each one;
//! a ROLLBACK inside a group loses nothing; a clean close commits the group.

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, mount, ProtocolOptions};
use txftl_sqlite::{Mode, Stack, Synchronous};

fn stack(sync: Synchronous, group_pages: u32) -> Stack {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format("nolgn", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let mut s = Stack::format(dev, Mode::parse(PROTOCOLS, "nolgn").unwrap()).unwrap();
    s.synchronous = sync;
    s.vfs.set_normal_group_pages(group_pages);
    s
}

/// Rows of `t` after a power cut now (the connection still open: nothing
/// closes it; the flash is taken as it is).
fn rows_after_cut(s: Stack, conn: rusqlite::Connection) -> i64 {
    let mut nand = s.with_fs_mut(|fs| fs.device().nand().snapshot()).unwrap();
    drop(conn);
    drop(s);
    nand.power_off();
    nand.power_on();
    let dev = mount("nolgn", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let s = Stack::mount(dev, Mode::parse(PROTOCOLS, "nolgn").unwrap()).unwrap();
    let conn = s.open("g.db", 512).unwrap();
    conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap_or(-1)
}

fn device_commits(s: &Stack) -> u64 {
    s.with_fs_mut(|fs| fs.device().stats().commits).unwrap()
}

#[test]
fn normal_groups_commits_and_a_cut_loses_the_open_group_whole() {
    let s = stack(Synchronous::Normal, 1000);
    assert!(s.groups_commits());
    let conn = s.open("g.db", 512).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
    let before = device_commits(&s);
    for i in 0..20 {
        conn.execute("INSERT INTO t VALUES (?1, 'x')", [i]).unwrap();
    }
    conn.execute_batch("BEGIN; INSERT INTO t VALUES (100, 'y'); ROLLBACK;").unwrap();
    assert_eq!(
        device_commits(&s),
        before,
        "20 small transactions fit one group: nothing committed yet"
    );
    assert_eq!(
        rows_after_cut(s, conn),
        -1,
        "the group held the CREATE TABLE too: all of it is lost"
    );
}

#[test]
fn a_small_group_commits_inside_the_run_and_full_commits_each() {
    let s = stack(Synchronous::Normal, 3);
    let conn = s.open("g.db", 512).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
    for i in 0..20 {
        conn.execute("INSERT INTO t VALUES (?1, 'x')", [i]).unwrap();
    }
    let groups = device_commits(&s);
    assert!((3..20).contains(&groups), "{groups} device commits for 21 SQLite ones");
    let rows = rows_after_cut(s, conn);
    assert!((1..20).contains(&rows), "a prefix survives: {rows} rows");

    let s = stack(Synchronous::Full, 3);
    assert!(!s.groups_commits());
    let conn = s.open("g.db", 512).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
    for i in 0..20 {
        conn.execute("INSERT INTO t VALUES (?1, 'x')", [i]).unwrap();
    }
    assert_eq!(rows_after_cut(s, conn), 20);
}

/// A ROLLBACK inside the group (SQLite wrote nothing: cache_spill is off)
/// keeps the group; a clean close commits it.
#[test]
fn a_rollback_keeps_the_group_and_a_clean_close_commits_it() {
    let s = stack(Synchronous::Normal, 1000);
    let conn = s.open("g.db", 512).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'x');")
        .unwrap();
    conn.execute_batch(
        "PRAGMA cache_size=2; BEGIN; WITH RECURSIVE n(i) AS (SELECT 10 UNION ALL SELECT i + 1 FROM n WHERE i < 210) \
         INSERT INTO t SELECT i, hex(randomblob(300)) FROM n; ROLLBACK;",
    )
    .unwrap();
    let errors = s.last_error();
    assert!(errors.is_none(), "{errors:?}");
    conn.execute_batch("INSERT INTO t VALUES (2, 'x');").unwrap();
    drop(conn);
    let conn = s.open("g.db", 512).unwrap();
    assert_eq!(rows_after_cut(s, conn), 2);
}
