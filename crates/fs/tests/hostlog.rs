//! The host log: a process that dies (kill -9) loses nothing it wrote, as on
//! a real machine whose operating system keeps its page cache, while a power
//! cut still loses what was not made durable.

mod common;
use common::*;
use txftl_fs::{host_log_path, FileClass, Fs, FsError, FsMode};

const PS: usize = 512;

fn page(seed: u32, p: u32) -> Vec<u8> {
    page_bytes(PS, seed, p)
}

/// Changes of every kind, the last ones not made durable (a namespace change
/// or a truncate outside a transaction makes every pending change durable,
/// so they come first); returns the contents a reader must find, per file.
fn changes(fs: &mut Fs, mode: FsMode) -> Vec<(&'static str, Option<Vec<u8>>)> {
    let a = fs.create("a", FileClass::Database).unwrap();
    let b = fs.create("b", FileClass::Journal).unwrap();
    for p in 0..5 {
        fs.write(None, a, p as u64 * PS as u64, &page(1, p)).unwrap();
    }
    fs.fsync(None, a).unwrap();
    for p in 0..3 {
        fs.write(None, b, p as u64 * PS as u64, &page(2, p)).unwrap();
    }
    fs.delete("b").unwrap();
    let b = fs.create("b", FileClass::Journal).unwrap();
    fs.mkdir("d").unwrap();
    let c = fs.create("d/c", FileClass::Database).unwrap();
    let e = fs.create("e", FileClass::Database).unwrap();
    fs.truncate(None, a, 6 * PS as u64 + 100).unwrap();
    // Not durable from here on.
    for p in 6..8 {
        fs.write(None, a, p as u64 * PS as u64, &page(1, p)).unwrap();
    }
    fs.write(None, a, 2 * PS as u64 + 7, b"overwritten").unwrap();
    fs.write(None, b, 0, &page(3, 0)).unwrap();
    let mut want_a: Vec<u8> = (0..5).flat_map(|p| page(1, p)).collect();
    want_a.extend(vec![0u8; PS]);
    want_a.extend((6..8).flat_map(|p| page(1, p)));
    want_a[2 * PS + 7..2 * PS + 18].copy_from_slice(b"overwritten");
    let mut want = vec![("a", Some(want_a)), ("b", Some(page(3, 0)))];
    if mode == FsMode::Transactional {
        let t1 = fs.begin().unwrap();
        fs.write(Some(t1), c, 0, &page(4, 0)).unwrap();
        fs.write(Some(t1), c, PS as u64, &page(4, 1)).unwrap();
        fs.commit(t1).unwrap();
        // Open when the process dies: its files are closed, it is aborted.
        let t2 = fs.begin().unwrap();
        fs.write(Some(t2), c, 0, &page(5, 0)).unwrap();
        let t3 = fs.begin().unwrap();
        fs.write(Some(t3), e, 0, &page(6, 0)).unwrap();
        fs.abort(t3).unwrap();
        want.push(("d/c", Some([page(4, 0), page(4, 1)].concat())));
        want.push(("e", Some(Vec::new())));
    }
    want
}

fn contents(fs: &mut Fs, path: &str) -> Option<Vec<u8>> {
    let ino = fs.lookup(path)?;
    Some(read_all(fs, None, ino))
}

/// The process dies: the device loses its DRAM (its mount recovers from the
/// NAND), the file system loses all it held in memory.
fn die(fs: Fs, protocol: &str, mode: FsMode) -> Fs {
    cut_and_mount(fs, protocol, mode)
}

#[test]
fn a_process_death_loses_nothing_the_host_wrote() {
    let dir = tempfile::tempdir().unwrap();
    for (protocol, mode) in MODES {
        let log = host_log_path(&dir.path().join(format!("{protocol}.img")));
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        fs.attach_host_log(&log).unwrap();
        let want = changes(&mut fs, mode);
        assert!(
            std::fs::metadata(&log).unwrap().len() > 8,
            "{protocol}: changes pending, the log holds them"
        );
        let mut fs = die(fs, protocol, mode);
        let stats = fs.attach_host_log(&log).unwrap();
        assert!(stats.found > 0, "{protocol}");
        if mode == FsMode::Transactional {
            assert_eq!((stats.replayed_transactions, stats.dropped_transactions), (1, 2), "{protocol}");
        }
        for (path, w) in &want {
            assert_eq!(contents(&mut fs, path).as_ref(), w.as_ref(), "{protocol}: {path}");
        }
        assert!(fs.lookup("d").is_some());
        fs.check().unwrap();
        // The replay was made durable and the log started over: another
        // death (even a power cut) finds the same.
        assert_eq!(std::fs::metadata(&log).unwrap().len(), 8, "{protocol}");
        let mut fs = die(fs, protocol, mode);
        for (path, w) in &want {
            assert_eq!(
                contents(&mut fs, path).as_ref(),
                w.as_ref(),
                "{protocol}: {path} after a second death"
            );
        }
    }
}

/// Without the log the same death loses the host's unsynced changes: what
/// the log carries is what the device does not have.
#[test]
fn without_the_log_a_death_is_a_power_cut() {
    for (protocol, mode) in MODES {
        let mut fs = Fs::format(small_device(protocol), mode).unwrap();
        let want = changes(&mut fs, mode);
        let mut fs = die(fs, protocol, mode);
        let lost = want.iter().filter(|(path, w)| contents(&mut fs, path) != *w).count();
        assert!(
            lost > 0,
            "{protocol}: a death without the log kept everything: the test shows nothing"
        );
    }
}

/// Nothing pending, the log is empty; past its writeback size the file
/// system writes everything back and the log starts over.
#[test]
fn the_log_restarts_when_nothing_is_pending_and_writes_back_when_large() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.host");
    let mut fs = Fs::format(small_device("plain"), FsMode::Journaled).unwrap();
    fs.attach_host_log_with(&log, 4096).unwrap();
    let a = fs.create("a", FileClass::Database).unwrap();
    fs.write(None, a, 0, &page(1, 0)).unwrap();
    assert!(std::fs::metadata(&log).unwrap().len() > 8);
    fs.fsync(None, a).unwrap();
    assert_eq!(std::fs::metadata(&log).unwrap().len(), 8, "synced: nothing pending");
    let flushes = fs.stats().flushes;
    for p in 0..20 {
        fs.write(None, a, p * PS as u64, &page(2, p as u32)).unwrap();
    }
    let st = fs.host_log_stats().unwrap();
    assert!(st.writebacks >= 2, "{st:?}");
    assert!(fs.stats().flushes > flushes, "a writeback flushes the device");
    assert!(std::fs::metadata(&log).unwrap().len() < 4096 + 2 * (PS as u64 + 64));
}

/// The call a process dies inside may have taken effect without its record
/// (here a delete, durable when it returns): the changes logged before it to
/// the file it removed are skipped, and the rest replays.
#[test]
fn a_change_to_a_file_the_device_no_longer_has_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.host");
    let mut fs = Fs::format(small_device("plain"), FsMode::Journaled).unwrap();
    fs.attach_host_log(&log).unwrap();
    let a = fs.create("a", FileClass::Database).unwrap();
    let j = fs.create("j", FileClass::Journal).unwrap();
    fs.write(None, j, 0, &page(1, 0)).unwrap();
    fs.write(None, a, 0, &page(2, 0)).unwrap();
    let logged = std::fs::read(&log).unwrap();
    // The delete takes effect on the device; the process dies before its
    // record: the log is as it was before the call.
    fs.delete("j").unwrap();
    let mut fs = die(fs, "plain", FsMode::Journaled);
    std::fs::write(&log, &logged).unwrap();
    let st = fs.attach_host_log(&log).unwrap();
    assert_eq!(st.skipped, 1, "{st:?}");
    assert!(fs.lookup("j").is_none());
    assert_eq!(contents(&mut fs, "a"), Some(page(2, 0)));
    // Not a log at all: refused, and left as it is.
    std::fs::write(&log, b"not a host log").unwrap();
    let e = fs.attach_host_log(&log).unwrap_err();
    assert!(matches!(&e, FsError::HostLog(m) if m.contains("not a txftl host log")), "{e}");
    assert_eq!(std::fs::read(&log).unwrap(), b"not a host log");
}

/// A commit the process dies inside may be durable: its record is logged
/// before the device commits, so the replay commits it again in its place
/// (after the changes logged before it, which must not overwrite it).
#[test]
fn a_commit_in_flight_at_a_death_replays_in_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("x.host");
    let mut fs = Fs::format(small_device("xftl"), FsMode::Transactional).unwrap();
    fs.attach_host_log(&log).unwrap();
    let a = fs.create("a", FileClass::Database).unwrap();
    fs.write(None, a, 0, &page(1, 0)).unwrap();
    let t = fs.begin().unwrap();
    fs.write(Some(t), a, 0, &page(2, 0)).unwrap();
    fs.commit(t).unwrap();
    // The process died inside the commit, after the device committed: the
    // log ends with the commit record (the one appended before it).
    let mut fs = die(fs, "xftl", FsMode::Transactional);
    let st = fs.attach_host_log(&log).unwrap();
    assert_eq!(st.replayed_transactions, 1, "{st:?}");
    assert_eq!(contents(&mut fs, "a"), Some(page(2, 0)));
}

/// A transaction open at the death with commit points (SQLite's commits
/// grouped into one device transaction): what it wrote up to its last
/// commit point comes back, what it wrote after does not; a power cut
/// instead (no log) loses it whole.
/// A transactional file system on `dev` with its host log at `log`, a file
/// `c` made durable, a transaction that wrote `c`'s first page, and a
/// commit point after it.
fn group_after_a_commit_point(dev: Box<dyn txftl_protocols::AnyDevice>, log: &std::path::Path) -> (Fs, txftl_fs::Ino, u32) {
    let mut fs = Fs::format(dev, FsMode::Transactional).unwrap();
    fs.attach_host_log(log).unwrap();
    let c = fs.create("c", FileClass::Database).unwrap();
    fs.sync().unwrap();
    let t = fs.begin().unwrap();
    fs.write(Some(t), c, 0, &page(1, 0)).unwrap();
    fs.commit_point(t).unwrap();
    (fs, c, t)
}

#[test]
fn an_open_transaction_replays_up_to_its_last_commit_point() {
    let dir = tempfile::tempdir().unwrap();
    let protocol = "nolgn";
    let mode = FsMode::Transactional;
    let log = host_log_path(&dir.path().join("g.img"));
    let (mut fs, c, t) = group_after_a_commit_point(small_device(protocol), &log);
    fs.write(Some(t), c, PS as u64, &page(1, 1)).unwrap();
    fs.commit_point(t).unwrap();
    fs.write(Some(t), c, 0, &page(2, 0)).unwrap();
    let mut fs = die(fs, protocol, mode);
    let stats = fs.attach_host_log(&log).unwrap();
    assert_eq!(stats.replayed_transactions, 1);
    assert_eq!(contents(&mut fs, "c"), Some([page(1, 0), page(1, 1)].concat()));
    fs.check().unwrap();
}

/// A group whose final commit failed (its device refused it: a full P2P
/// table) stays open in the process; after the process dies, replay keeps
/// what it wrote up to its last commit point.
#[test]
fn a_transaction_whose_commit_failed_replays_up_to_its_last_commit_point() {
    let dir = tempfile::tempdir().unwrap();
    let (protocol, mode) = ("nolgn", FsMode::Transactional);
    let log = host_log_path(&dir.path().join("f.img"));
    let opts = txftl_protocols::ProtocolOptions::new().with("p2p-entries", 3);
    let dev = txftl_protocols::format(protocol, nand(64, 8, 512), txftl_ftl::FtlConfig::default(), &opts).unwrap();
    let (mut fs, c, t) = group_after_a_commit_point(dev, &log);
    for p in 1..4 {
        fs.write(Some(t), c, p * PS as u64, &page(1, p as u32)).unwrap();
    }
    assert!(fs.commit(t).is_err(), "4 pages and metadata in a 3-entry table");
    let mut fs = die(fs, protocol, mode);
    let stats = fs.attach_host_log(&log).unwrap();
    assert_eq!(stats.replayed_transactions, 1);
    assert_eq!(contents(&mut fs, "c"), Some(page(1, 0)));
    fs.check().unwrap();
}
