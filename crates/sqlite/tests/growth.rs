//! Databases that grow page by page next to each other: two SQLite databases
//! (and a third in a directory) inserting in turn interleave their pages on
//! the device, so each grows far past the 16 extents of its inode into extent
//! overflow pages. After a power cut and a remount, every committed row is
//! there and `PRAGMA integrity_check` is ok, on `rbj` and `xftl`.

use rusqlite::Connection;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, mount, ProtocolOptions};
use txftl_sqlite::workload::integrity_check;
use txftl_sqlite::{Mode, Stack};

const PAGE: usize = 1024;
const ROWS: i64 = 150;
const DBS: [&str; 3] = ["x.db", "y.db", "dir/z.db"];

fn rows(conn: &Connection) -> Vec<(i64, Vec<u8>)> {
    let mut st = conn.prepare("SELECT k, v FROM t ORDER BY k").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(|r| r.unwrap())
        .collect()
}

fn value(db: usize, k: i64) -> Vec<u8> {
    // A row larger than a page's local payload: each insert grows the
    // database by a page or two (a leaf share and a SQLite overflow page).
    (0..900).map(|i| (i as i64 * 7 + k * 13 + db as i64) as u8).collect()
}

#[test]
fn databases_growing_in_turn_pass_16_extents_and_survive_a_remount() {
    for mode in [Mode::parse(PROTOCOLS, "rbj").unwrap(), Mode::parse(PROTOCOLS, "xftl").unwrap()] {
        let mut p = preset("tiny").unwrap();
        p.geometry.blocks_per_plane = 256;
        p.geometry.page_size = PAGE as u32;
        let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
        let s = Stack::format(dev, mode).unwrap();
        s.with_fs_mut(|fs| fs.mkdir("dir").map(|_| ())).unwrap().unwrap();
        let conns: Vec<Connection> = DBS.iter().map(|db| s.open(db, PAGE).unwrap()).collect();
        for c in &conns {
            c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
        }
        for k in 0..ROWS {
            for (i, c) in conns.iter().enumerate() {
                c.execute("INSERT INTO t VALUES (?1, ?2)", rusqlite::params![k, value(i, k)])
                    .unwrap();
            }
        }
        // An update and a delete in the middle, so pages are rewritten in place too.
        for (i, c) in conns.iter().enumerate() {
            c.execute("UPDATE t SET v = ?1 WHERE k = 7", [value(i, 1000)]).unwrap();
            c.execute("DELETE FROM t WHERE k = 9", []).unwrap();
        }
        let extents: Vec<usize> = s
            .with_fs_mut(|fs| DBS.map(|db| fs.extent_count(None, fs.lookup(db).unwrap()).unwrap()).to_vec())
            .unwrap();
        assert!(
            extents.iter().all(|&e| e > 100),
            "{mode:?}: interleaved growth, {extents:?} extents"
        );
        drop(conns);
        // A power cut: only the device survives.
        let fs = s.into_fs().unwrap();
        let mut n = fs.into_device().into_nand();
        n.power_off();
        n.power_on();
        let dev = mount(mode.protocol(), n, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
        let s = Stack::mount(dev, mode).unwrap();
        let report = s.with_fs_mut(|fs| fs.check()).unwrap().unwrap();
        eprintln!("{mode:?}: extents {extents:?}, after the remount {report:?}");
        assert!(
            report.overflow_pages >= 6,
            "{mode:?}: pages of 124 extents, 2 or more each: {report:?}"
        );
        for (i, db) in DBS.iter().enumerate() {
            let c = s.open(db, PAGE).unwrap();
            assert_eq!(integrity_check(&c).unwrap(), "ok", "{mode:?}: {db}");
            let mut want: Vec<(i64, Vec<u8>)> = (0..ROWS).filter(|&k| k != 9).map(|k| (k, value(i, k))).collect();
            want[7].1 = value(i, 1000);
            assert_eq!(rows(&c), want, "{mode:?}: {db}");
        }
    }
}
