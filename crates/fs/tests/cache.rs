//! The host page cache: rewrites absorbed until fsync, what a power cut
//! loses, transactions' dirty pages, the bound, truncation, write-through.

mod common;

use common::{cut_and_mount, page_bytes, read_all, small_device, MODES};
use txftl_fs::{CachePolicy, FileClass, Fs, FsError, FsMode};

/// Records one page and 8 bytes long, as SQLite's journal records straddle pages.
fn write_records(fs: &mut Fs, tx: Option<u32>, ino: u32, n: usize, seed: u32) -> Vec<u8> {
    let ps = fs.page_size();
    let mut all = Vec::new();
    for i in 0..n {
        let rec = page_bytes(ps + 8, seed, i as u32);
        fs.write(tx, ino, all.len() as u64, &rec).unwrap();
        all.extend(rec);
    }
    all
}

#[test]
fn rewrites_are_absorbed_until_fsync_and_write_through_sends_them() {
    for (protocol, mode) in MODES {
        let mut cached = Fs::format(small_device(protocol), mode).unwrap();
        let mut through = Fs::format(small_device(protocol), mode).unwrap();
        through.set_cache_policy(CachePolicy::WriteThrough).unwrap();
        let mut writes = Vec::new();
        for fs in [&mut cached, &mut through] {
            let ino = fs.create("j", FileClass::Journal).unwrap();
            fs.reset_stats();
            let data = write_records(fs, None, ino, 10, 7);
            // Reads see the writes, before and after the fsync.
            assert_eq!(read_all(fs, None, ino), data, "{protocol}");
            fs.fsync(None, ino).unwrap();
            assert_eq!(read_all(fs, None, ino), data, "{protocol}");
            writes.push(fs.stats());
        }
        let pages = (10 * (cached.page_size() + 8)).div_ceil(cached.page_size()) as u64;
        let (c, t) = (writes[0], writes[1]);
        assert_eq!(c.journal_page_writes, pages, "{protocol}: each page once: {c:?}");
        assert_eq!(c.rewrites_before_fsync, 0, "{protocol}: {c:?}");
        assert!(c.cache_absorbed_writes >= 9, "{protocol}: {c:?}");
        assert!(t.journal_page_writes > pages && t.rewrites_before_fsync >= 9, "{protocol}: {t:?}");
        assert_eq!(t.cache_absorbed_writes, 0, "{protocol}: {t:?}");
        assert_eq!(cached.dirty_pages(), 0);
    }
}

#[test]
fn a_cut_loses_what_was_not_fsynced_and_keeps_what_was() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        let ino = fs.create("db", FileClass::Database).unwrap();
        let ps = fs.page_size();
        let a: Vec<u8> = (0..4).flat_map(|p| page_bytes(ps, 1, p)).collect();
        fs.write(None, ino, 0, &a).unwrap();
        fs.fsync(None, ino).unwrap();
        // Overwrite in place and grow, without an fsync.
        let b: Vec<u8> = (0..6).flat_map(|p| page_bytes(ps, 2, p)).collect();
        fs.write(None, ino, 0, &b).unwrap();
        assert_eq!(read_all(&mut fs, None, ino), b);
        assert!(fs.dirty_pages() > 0);
        let mut fs = cut_and_mount(fs, protocol, mode);
        assert_eq!(read_all(&mut fs, None, ino), a, "{protocol}: the fsynced contents");
        fs.check().unwrap();
    }
}

#[test]
fn a_clean_unmount_writes_everything_back() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        let ino = fs.create("w", FileClass::Wal).unwrap();
        let data = write_records(&mut fs, None, ino, 5, 3);
        let dev = fs.unmount().unwrap();
        let mut fs = Fs::mount(common::remount(dev, protocol), mode).unwrap();
        assert_eq!(read_all(&mut fs, None, ino), data, "{protocol}");
    }
}

#[test]
fn a_transaction_keeps_its_dirty_pages_to_itself_until_commit() {
    let mut fs = Fs::format(small_device("xftl"), FsMode::Transactional).unwrap();
    let ino = fs.create("db", FileClass::Database).unwrap();
    let ps = fs.page_size();
    let old: Vec<u8> = (0..3).flat_map(|p| page_bytes(ps, 1, p)).collect();
    fs.write(None, ino, 0, &old).unwrap();
    fs.fsync(None, ino).unwrap();
    fs.reset_stats();

    // An aborted transaction: nothing reached the device, nothing is left.
    let t = fs.begin().unwrap();
    fs.write(Some(t), ino, 10, &[9u8; 100]).unwrap();
    fs.abort(t).unwrap();
    assert_eq!(fs.stats().database_page_writes, 0);
    assert_eq!(fs.dirty_pages(), 0);
    assert_eq!(read_all(&mut fs, None, ino), old);

    let t = fs.begin().unwrap();
    let new = write_records(&mut fs, Some(t), ino, 3, 5);
    assert_eq!(read_all(&mut fs, Some(t), ino), new, "the transaction sees its writes");
    assert_eq!(read_all(&mut fs, None, ino), old, "nobody else does");
    assert_eq!(fs.stats().database_page_writes, 0);
    // fsync in the transaction: the pages go to the device with its id, once each.
    fs.fsync(Some(t), ino).unwrap();
    assert_eq!(fs.stats().database_page_writes, 4);
    assert_eq!(read_all(&mut fs, None, ino), old, "not committed yet");
    fs.write(Some(t), ino, 0, &[1u8; 10]).unwrap(); // dirty again, written at commit
    fs.commit(t).unwrap();
    assert_eq!(fs.stats().database_page_writes, 5);
    let mut expect = new.clone();
    expect[..10].fill(1);
    let mut fs = cut_and_mount(fs, "xftl", FsMode::Transactional);
    assert_eq!(read_all(&mut fs, None, ino), expect);
}

#[test]
fn the_bound_writes_back_the_oldest_pages() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        fs.set_cache_policy(CachePolicy::WriteBack { max_dirty_pages: 4 }).unwrap();
        let ino = fs.create("db", FileClass::Database).unwrap();
        let ps = fs.page_size();
        fs.reset_stats();
        let data: Vec<u8> = (0..10).flat_map(|p| page_bytes(ps, 4, p)).collect();
        fs.write(None, ino, 0, &data).unwrap();
        assert_eq!(fs.dirty_pages(), 4, "{protocol}");
        assert_eq!(fs.stats().database_page_writes, 6, "{protocol}");
        assert_eq!(read_all(&mut fs, None, ino), data, "{protocol}");
        // Shrinking the bound writes back the excess.
        fs.set_cache_policy(CachePolicy::WriteBack { max_dirty_pages: 1 }).unwrap();
        assert_eq!(fs.dirty_pages(), 1, "{protocol}");
        assert!(matches!(
            fs.set_cache_policy(CachePolicy::WriteBack { max_dirty_pages: 0 }),
            Err(FsError::EmptyCache)
        ));
    }
}

#[test]
fn dropped_pages_are_never_written_back() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        let ino = fs.create("j", FileClass::Journal).unwrap();
        let ps = fs.page_size();
        fs.reset_stats();
        let data: Vec<u8> = (0..8).flat_map(|p| page_bytes(ps, 6, p)).collect();
        fs.write(None, ino, 0, &data).unwrap();
        fs.truncate(None, ino, 2 * ps as u64).unwrap();
        fs.fsync(None, ino).unwrap();
        assert_eq!(fs.stats().journal_page_writes, 2, "{protocol}");
        // A deleted file's dirty pages die with it; its pages can be reused at once.
        fs.write(None, ino, 0, &data).unwrap();
        fs.delete("j").unwrap();
        let other = fs.create("k", FileClass::Journal).unwrap();
        let k: Vec<u8> = (0..8).flat_map(|p| page_bytes(ps, 8, p)).collect();
        fs.write(None, other, 0, &k).unwrap();
        fs.fsync(None, other).unwrap();
        let mut fs = cut_and_mount(fs, protocol, mode);
        assert_eq!(read_all(&mut fs, None, other), k, "{protocol}");
        fs.check().unwrap();
    }
}
