//! SQLite's WAL on SW-WAL (`sw-wal`): frames laid out page-aligned, so a
//! checkpoint remaps them onto the database instead of copying; the same
//! WAL on `plain` (`wal`, Base-WAL) keeps SQLite's layout and copies.

mod common;
use common::{count, stack};
use rusqlite::config::DbConfig;
use rusqlite::{params, Connection};
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, PowerCut, Torn, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, mount, ProtocolOptions};
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
    let mode = Mode::parse(PROTOCOLS, "sw-wal").unwrap();
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
    let s = stack(Mode::parse(PROTOCOLS, "wal").unwrap());
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
    let s = stack(Mode::parse(PROTOCOLS, "wal").unwrap());
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

/// A stack on the README's image: `jasmine` (8 KiB flash pages) at
/// `blocks` blocks a plane.
fn jasmine(blocks: u32) -> Stack {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = blocks;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format("sw-wal", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    Stack::format(dev, Mode::parse(PROTOCOLS, "sw-wal").unwrap()).unwrap()
}

/// The table: three columns, an index on each.
fn create_table(c: &Connection) {
    c.execute_batch(
        "CREATE TABLE t(a INTEGER, b INTEGER, c TEXT);
         CREATE INDEX ta ON t(a); CREATE INDEX tb ON t(b); CREATE INDEX tc ON t(c);",
    )
    .unwrap();
}

/// One transaction of `rows` inserts, as a Python user writes it: random
/// `a`, `b` counting from `from`, a text of 10 to 60 letters. `Ok` once
/// its COMMIT returned.
fn insert_rows(c: &Connection, from: i64, rows: i64) -> rusqlite::Result<()> {
    c.execute_batch("BEGIN")?;
    let mut ins = c.prepare("INSERT INTO t VALUES (?1, ?2, ?3)")?;
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ from as u64;
    for i in from..from + rows {
        // xorshift64: deterministic "random" values.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let text: String = (0..10 + x % 51).map(|k| (b'a' + ((x >> (k % 58)) % 26) as u8) as char).collect();
        ins.execute(params![(x >> 1) as i64, i, text])?;
    }
    c.execute_batch("COMMIT")
}

fn checkpoint(c: &Connection) -> rusqlite::Result<()> {
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
}

fn integrity(c: &Connection) -> String {
    c.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap()
}

/// Issue 35: 50,000 inserts in one transaction at SQLite's default 4 KiB
/// pages on 8 KiB flash pages. SQLite's frames (4,120 bytes) straddle the
/// remapping layout's (8,216): its spills end inside the layout's pages,
/// and the WAL's length must give SQLite back all it wrote (a length of
/// whole layout frames cuts SQLite's last frame short, and the COMMIT,
/// reading it back, fails with `SQLITE_IOERR_SHORT_READ`). Nothing is
/// remapped at this page size; a power cut after the close (whose
/// checkpoint copies the WAL in) finds the table whole.
#[test]
fn a_large_transaction_of_4_kib_pages_on_8_kib_flash_pages_commits() {
    for blocks in [16, 64] {
        let s = jasmine(blocks);
        let c = s.open("x.db", 4096).unwrap();
        create_table(&c);
        insert_rows(&c, 0, 50_000).unwrap();
        assert_eq!((count(&c, "SELECT count(*) FROM t"), integrity(&c).as_str()), (50_000, "ok"));
        let fs = s.with_fs_mut(|fs| fs.stats()).unwrap();
        assert_eq!((fs.remappable_writes, fs.remapped_pages), (0, 0), "{fs:?}");
        drop(c);
        let s = power_cut(s);
        let c = s.open("x.db", 4096).unwrap();
        assert_eq!((count(&c, "SELECT count(*) FROM t"), integrity(&c).as_str()), (50_000, "ok"));
    }
}

/// A power cut of a COMMIT's WAL that was never checkpointed, at 4 KiB
/// pages on 8 KiB flash pages: SQLite's recovery reads the WAL through the
/// layout before it has said its page size.
#[test]
fn a_wal_of_4_kib_pages_is_recovered_after_a_cut() {
    let s = jasmine(16);
    let c = s.open("x.db", 4096).unwrap();
    c.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
    create_table(&c);
    insert_rows(&c, 0, 30_000).unwrap();
    let wal = s.with_fs_mut(|fs| fs.size(None, fs.lookup("x.db-wal").unwrap()).unwrap()).unwrap();
    // More than one segment of the layout (a header page and 340 pages).
    assert!(wal > 341 * 8192, "the WAL holds the transaction: {wal} bytes");
    // Closed without a checkpoint: the commit is in the WAL alone.
    c.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).unwrap();
    drop(c);
    let s = power_cut(s);
    let c = s.open("x.db", 4096).unwrap();
    assert_eq!((count(&c, "SELECT count(*) FROM t"), integrity(&c).as_str()), (30_000, "ok"));
}

/// The large transaction at 4 KiB pages on 8 KiB flash pages, then its
/// checkpoint, cut at a sample of its flash operations (the cache spills,
/// the COMMIT, the checkpoint's copies): after the restart the table holds
/// the rows committed before, and the transaction's too once its COMMIT
/// returned (`synchronous=FULL`), never part of it.
#[test]
fn a_large_transaction_of_4_kib_pages_survives_sampled_cuts() {
    const BEFORE: i64 = 100;
    const ROWS: i64 = 30_000;
    let setup = || {
        let s = jasmine(16);
        let c = s.open("x.db", 4096).unwrap();
        create_table(&c);
        insert_rows(&c, 0, BEFORE).unwrap();
        (s, c)
    };
    let (s, c) = setup();
    let op_count = |s: &Stack| s.with_fs_mut(|fs| fs.device_mut().nand_mut().op_count()).unwrap();
    let base = op_count(&s);
    insert_rows(&c, BEFORE, ROWS).and_then(|_| checkpoint(&c)).unwrap();
    let ops = op_count(&s) - base;
    const CUTS: u64 = 24;
    let mut after_commit = 0;
    for i in 0..CUTS {
        let at = ops * (2 * i + 1) / (2 * CUTS);
        let torn = Torn::ALL[i as usize % Torn::ALL.len()];
        let (s, c) = setup();
        let base = op_count(&s);
        s.with_fs_mut(|fs| {
            fs.device_mut().nand_mut().arm_power_cut(PowerCut {
                at_op: base + at,
                torn,
                seed: i,
            })
        })
        .unwrap();
        let committed = insert_rows(&c, BEFORE, ROWS).is_ok();
        after_commit += committed as u64;
        assert!(
            !committed || checkpoint(&c).is_err(),
            "cut {i} at operation {at} of {ops}: the scenario ran whole"
        );
        drop(c);
        let s = power_cut(s);
        let c = s.open("x.db", 4096).unwrap();
        let n = count(&c, "SELECT count(*) FROM t");
        let expect: &[i64] = if committed { &[BEFORE + ROWS] } else { &[BEFORE, BEFORE + ROWS] };
        assert!(expect.contains(&n), "cut {i} at operation {at} of {ops} ({torn:?}): {n} rows");
        assert_eq!(integrity(&c), "ok", "cut {i} at operation {at} of {ops} ({torn:?})");
    }
    eprintln!("{CUTS} cuts in {ops} operations: {after_commit} after the COMMIT returned");
    assert!(after_commit > 0 && after_commit < CUTS, "cuts on both sides of the COMMIT");
}

/// The same transaction at 8 KiB pages, then every row updated in one
/// transaction and checkpointed: a remap of most pages of the database
/// (hundreds) waits in the file system and then in the device,
/// durable together at the checkpoint's flush; a power cut after it finds
/// the table whole.
#[test]
fn a_large_checkpoint_of_8_kib_pages_remaps_hundreds_of_pages_together() {
    let s = jasmine(16);
    let c = s.open("x.db", 8192).unwrap();
    create_table(&c);
    insert_rows(&c, 0, 50_000).unwrap();
    c.execute_batch("PRAGMA wal_autocheckpoint=0").unwrap();
    checkpoint(&c).unwrap();
    let (before, pages_before) = (s.snapshot().unwrap(), count(&c, "PRAGMA page_count") as u64);
    c.execute_batch("BEGIN; UPDATE t SET b = b + 1, c = upper(c); COMMIT;").unwrap();
    checkpoint(&c).unwrap();
    let (after, pages) = (s.snapshot().unwrap(), count(&c, "PRAGMA page_count") as u64);
    let remapped = after.fs.remapped_pages - before.fs.remapped_pages;
    let copied = after.fs.database_page_writes - before.fs.database_page_writes;
    eprintln!(
        "{pages_before} -> {pages} pages: {remapped} remapped, {copied} copied; {:?}",
        after.dev.protocol
    );
    // The pages the database had before the update and the update changed
    // (all but index `ta`'s: `a` is unchanged) are remapped; only the pages
    // it grew into are copied.
    assert!(remapped >= pages_before * 3 / 4 && copied <= pages - pages_before, "{:?}", after.fs);
    assert_eq!(after.dev.protocol.get("sw_wal_remaps"), after.fs.remapped_pages);
    assert_eq!(after.dev.protocol.get("sw_wal_remaps_refused"), 0);
    drop(c);
    let s = power_cut(s);
    let c = s.open("x.db", 8192).unwrap();
    assert_eq!((count(&c, "SELECT count(*) FROM t"), integrity(&c).as_str()), (50_000, "ok"));
    assert_eq!(count(&c, "SELECT count(*) FROM t WHERE c <> upper(c) OR b = 0"), 0);
}

/// Rows of 3,000 bytes, each filling a page of its own.
const TWO_PAGE_ROWS: &str = "(1, 'first', zeroblob(3000)), (2, 'first', zeroblob(3000))";

/// A `sw-wal` stack with `t.db` in WAL mode under FULL, no autocheckpoint,
/// table `t(k, v TEXT{more_columns})` holding `rows`, checkpointed (so the
/// database has the table's pages and their next frames can be remapped).
fn wal_table(more_columns: &str, rows: &str) -> (Stack, Connection) {
    let s = stack(Mode::parse(PROTOCOLS, "sw-wal").unwrap());
    let c = s.open("t.db", PAGE).unwrap();
    c.pragma_update(None, "journal_mode", "WAL").unwrap();
    c.execute_batch(&format!(
        "PRAGMA synchronous=FULL; PRAGMA wal_autocheckpoint=0;
         CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT{more_columns});
         INSERT INTO t VALUES {rows};"
    ))
    .unwrap();
    c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(())).unwrap();
    (s, c)
}

/// `PRAGMA wal_checkpoint(PASSIVE)`: (busy, frames in the WAL, frames backfilled).
fn passive_checkpoint(c: &Connection) -> (i64, i64, i64) {
    c.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
}

/// Cuts the power under the stack's device and mounts it again: only what
/// the device made durable survives.
fn power_cut(s: Stack) -> Stack {
    let mode = s.mode;
    let mut n = s.into_fs().unwrap().into_device().into_nand();
    n.power_off();
    n.power_on();
    let dev = mount(mode.protocol(), n, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    Stack::mount(dev, mode).unwrap()
}

/// A checkpoint remaps only each page's last frame: the frames before it
/// keep their data, and SQLite's WAL recovery reads frames from the first
/// up to the first one that no longer checks (a remapped one). Here the
/// table's page has two frames, one per commit: the checkpoint remaps the
/// second, and the first, a whole commit on its own, would be replayed
/// over the database after a power cut (the second commit lost). The
/// checkpoint backfills the whole WAL, so its header page is trimmed in
/// the flush that makes the remaps durable: the restart finds no WAL.
#[test]
fn a_cut_after_a_checkpoint_replays_no_frame_it_left() {
    let (s, c) = wal_table("", "(1, 'first')");
    c.execute("UPDATE t SET v = 'second' WHERE k = 1", []).unwrap();
    c.execute("UPDATE t SET v = 'third' WHERE k = 1", []).unwrap();
    let before = s.snapshot().unwrap();
    passive_checkpoint(&c);
    let after = s.snapshot().unwrap();
    assert_eq!(after.fs.remapped_pages - before.fs.remapped_pages, 1, "{:?}", after.fs);
    assert_eq!(after.fs.discarded_pages - before.fs.discarded_pages, 1, "{:?}", after.fs);
    c.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).unwrap();
    drop(c);
    let s = power_cut(s);
    let c = s.open("t.db", PAGE).unwrap();
    let v: String = c.query_row("SELECT v FROM t WHERE k = 1", [], |r| r.get(0)).unwrap();
    assert_eq!((v.as_str(), integrity(&c).as_str()), ("third", "ok"));
}

/// A checkpoint held short of the WAL's end by another connection's read
/// transaction backfills only the frames before that reader's mark: the
/// frames after them are still the only copy of a commit, and SQLite's
/// recovery must read past the backfilled ones to reach them. Such a
/// checkpoint copies (a remap would empty its frames' WAL pages); the
/// restart after a power cut finds the last commit. (Each row fills a page
/// of its own: SQLite backfills a page only from its last frame, and skips
/// a page whose last frame is past the reader's mark.)
#[test]
fn a_checkpoint_held_short_by_a_reader_copies() {
    let (s, c) = wal_table(", w BLOB", TWO_PAGE_ROWS);
    c.execute("UPDATE t SET v = 'second' WHERE k = 1", []).unwrap();
    // A reader's snapshot ends at the commit above.
    let reader = s.open("t.db", PAGE).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    assert_eq!(count(&reader, "SELECT count(*) FROM t"), 2);
    c.execute("UPDATE t SET v = 'third' WHERE k = 2", []).unwrap();
    let before = s.snapshot().unwrap();
    let (busy, log, done) = passive_checkpoint(&c);
    assert!(busy == 0 && done > 0 && done < log, "a partial checkpoint: {done} of {log} frames");
    // SQLite syncs the database only after a complete checkpoint: the copy
    // waits in the page cache, as a remap would wait for the file's next
    // sync. The host's writeback sends it (a remap would empty frame 1).
    s.with_fs_mut(|fs| fs.sync()).unwrap().unwrap();
    let after = s.snapshot().unwrap();
    assert_eq!(after.fs.remapped_pages, before.fs.remapped_pages, "{:?}", after.fs);
    assert!(after.fs.database_page_writes > before.fs.database_page_writes, "{:?}", after.fs);
    reader.execute_batch("COMMIT").unwrap();
    for c in [&reader, &c] {
        c.set_db_config(DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, true).unwrap();
    }
    drop((reader, c));
    let s = power_cut(s);
    let c = s.open("t.db", PAGE).unwrap();
    let v: String = c.query_row("SELECT group_concat(v) FROM t ORDER BY k", [], |r| r.get(0)).unwrap();
    assert_eq!((v.as_str(), integrity(&c).as_str()), ("second,third", "ok"));
}

/// A checkpoint of the whole WAL while another connection reads its
/// snapshot from the WAL (its read mark at the last commit, so SQLite
/// backfills everything): that reader reads its pages from their frames,
/// which a remap would empty. Such a checkpoint copies, and the reader
/// reads what it read before.
#[test]
fn a_checkpoint_under_a_reader_of_the_wal_copies() {
    let (s, c) = wal_table(", w BLOB", TWO_PAGE_ROWS);
    c.execute("UPDATE t SET v = 'second' WHERE k = 1", []).unwrap();
    c.execute("UPDATE t SET v = 'third' WHERE k = 2", []).unwrap();
    let reader = s.open("t.db", PAGE).unwrap();
    reader.execute_batch("BEGIN").unwrap();
    let v = |k: i64| reader.query_row("SELECT v FROM t WHERE k = ?1", [k], |r| r.get::<_, String>(0));
    assert_eq!(v(1).unwrap(), "second");
    let before = s.snapshot().unwrap();
    let (busy, log, done) = passive_checkpoint(&c);
    assert!(busy == 0 && done == log, "a complete checkpoint: {done} of {log} frames");
    let after = s.snapshot().unwrap();
    assert_eq!(after.fs.remapped_pages, before.fs.remapped_pages, "{:?}", after.fs);
    // Row 2's page, not read yet, comes from its frame.
    assert_eq!(v(2).unwrap(), "third");
    reader.execute_batch("COMMIT").unwrap();
}

/// The remaps waiting for the database's fsync are a bounded table of the
/// host's: past the bound, a checkpoint copies its pages (here 2 remaps of
/// about 17 pages), and the table is whole after a power cut.
#[test]
fn remaps_past_the_file_systems_bound_are_copies() {
    let mode = Mode::parse(PROTOCOLS, "sw-wal").unwrap();
    let s = stack(mode);
    s.with_fs_mut(|fs| fs.set_remaps_waiting_max(2)).unwrap();
    run(&s);
    let st = s.snapshot().unwrap();
    // The first checkpoint remaps page 1 (the only one the database had
    // when its frames were written), the second 2 of its 17 pages.
    assert_eq!((st.fs.remapped_pages, st.dev.protocol.get("sw_wal_remaps")), (3, 3), "{:?}", st.fs);
    assert!(st.fs.database_page_writes >= 30, "{:?}", st.fs);
    let s = power_cut(s);
    let c = s.open("t.db", PAGE).unwrap();
    assert_eq!((count(&c, "SELECT count(*) FROM t"), integrity(&c).as_str()), (200, "ok"));
}
