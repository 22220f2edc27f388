//! SQLite's WAL on SW-WAL (`sw-wal`): frames laid out page-aligned, so a
//! checkpoint remaps them onto the database instead of copying; the same
//! WAL on `plain` (`wal`, Base-WAL) keeps SQLite's layout and copies.

mod common;
use common::{count, stack};
use txftl_ftl::FtlConfig;
use txftl_protocols::{mount, ProtocolOptions};
use txftl_sqlite::{Mode, Stack};

const PAGE: usize = 4096;

/// Loads a table, updates it in many small transactions, checkpoints.
fn run(s: &Stack) {
    let c = s.open("t.db", PAGE).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB); PRAGMA wal_autocheckpoint=0;")
        .unwrap();
    for k in 0..200 {
        c.execute("INSERT INTO t VALUES (?1, zeroblob(300))", [k]).unwrap();
    }
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    for i in 0..300 {
        c.execute("UPDATE t SET v = randomblob(300) WHERE k = ?1", [(i * 7) % 200]).unwrap();
    }
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t"), 200);
}

#[test]
fn a_checkpoint_remaps_the_frames_onto_the_database() {
    let mode = Mode::parse("sw-wal").unwrap();
    let s = stack(mode);
    run(&s);
    let (fs, dev) = s.with_fs_mut(|fs| (fs.stats(), fs.device().stats())).unwrap();
    eprintln!("{fs:?}\n{:?}", dev.protocol);
    // The second checkpoint remaps every page of the database (about 17);
    // the first copied them: the database had not allocated them when
    // their frames were written.
    assert!(fs.remapped_pages >= 15 && fs.remappable_writes >= 300, "{fs:?}");
    assert_eq!(dev.protocol.get("sw_wal_remaps"), fs.remapped_pages);
    assert_eq!(dev.protocol.get("sw_wal_remaps_refused"), 0);
    assert!(fs.database_page_writes <= fs.remapped_pages + 2, "{fs:?}");
    // A power cut after the checkpoint's sync: only the device survives.
    let fs = s.into_fs().unwrap();
    let mut n = fs.into_device().into_nand();
    n.power_off();
    n.power_on();
    let dev = mount(mode.protocol(), n, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let s = Stack::mount(dev, mode).unwrap();
    let c = s.open("t.db", PAGE).unwrap();
    assert_eq!(count(&c, "SELECT count(*) FROM t"), 200);
    let ok: String = c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    assert_eq!(ok, "ok");
}

#[test]
fn base_wal_copies_every_frame() {
    let s = stack(Mode::parse("wal").unwrap());
    run(&s);
    let fs = s.with_fs_mut(|fs| fs.stats()).unwrap();
    assert_eq!((fs.remapped_pages, fs.remappable_writes), (0, 0));
    assert!(fs.database_page_writes > 20, "{fs:?}");
}

/// Base-WAL under FULL appends one frame per one-page commit: the VFS
/// reports POWERSAFE_OVERWRITE (as SQLite's unix VFS does), so SQLite pads
/// no commit to a sector boundary with copies of its last frame.
#[test]
fn base_wal_pads_no_commit_under_full() {
    let s = stack(Mode::parse("wal").unwrap());
    let c = s.open("t.db", PAGE).unwrap();
    c.execute_batch("PRAGMA synchronous=FULL; CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER); INSERT INTO t VALUES (1, 0);")
        .unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    c.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
    for i in 1..=20 {
        c.execute("UPDATE t SET v = ?1 WHERE k = 1", [i]).unwrap();
    }
    let wal = s
        .with_fs_mut(|fs| {
            let ino = fs.lookup("t.db-wal").expect("the WAL");
            fs.size(None, ino).unwrap()
        })
        .unwrap();
    // The WAL header, then one frame (a 24-byte header and the page) per commit.
    assert_eq!(wal, 32 + 20 * (24 + PAGE as u64));
}
