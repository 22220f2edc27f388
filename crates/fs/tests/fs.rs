//! The file system on plain (journaled) and X-FTL (transactional) devices.

use txftl_fs::{FileClass, Fs, FsError, FsMode};
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn device(protocol: &str) -> Box<dyn AnyDevice> {
    device_with(protocol, &ProtocolOptions::default())
}

fn device_with(protocol: &str, opts: &ProtocolOptions) -> Box<dyn AnyDevice> {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format(protocol, nand, FtlConfig::default(), opts).unwrap()
}

fn remount(dev: Box<dyn AnyDevice>, protocol: &str) -> Box<dyn AnyDevice> {
    let mut n = dev.into_nand();
    n.power_off();
    n.power_on();
    mount(protocol, n, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

fn bytes(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
}

#[test]
fn files_round_trip_and_survive_a_cut_after_fsync() {
    for (protocol, mode) in [("plain", FsMode::Journaled), ("xftl", FsMode::Transactional)] {
        let mut fs = Fs::format(device(protocol), mode).unwrap();
        let db = fs.create("test.db", FileClass::Database).unwrap();
        let data = bytes(5000, 1);
        fs.write(None, db, 100, &data).unwrap();
        fs.write(None, db, 3000, &bytes(700, 2)).unwrap(); // partial overwrite
        let mut expect = vec![0u8; 5100];
        expect[100..].copy_from_slice(&data);
        expect[3000..3700].copy_from_slice(&bytes(700, 2));
        let mut got = vec![0u8; 5100];
        assert_eq!(fs.read(None, db, 0, &mut got).unwrap(), 5100);
        assert_eq!(got, expect, "{protocol}");
        fs.fsync(None, db).unwrap();
        let j = fs.create("test.db-journal", FileClass::Journal).unwrap();
        fs.write(None, j, 0, &bytes(512, 3)).unwrap();
        fs.fsync(None, j).unwrap();
        fs.delete("test.db-journal").unwrap();
        fs.truncate(None, db, 2000).unwrap();
        expect.truncate(2000);
        let s = fs.stats();
        assert!(
            s.database_page_writes > 0 && s.journal_page_writes > 0 && s.metadata_page_writes > 0,
            "{s:?}"
        );
        if mode == FsMode::Journaled {
            assert!(s.metadata_journal_writes > 0, "ordered-mode metadata goes through the journal");
        } else {
            assert_eq!(s.metadata_journal_writes, 0, "no journal on a transactional device");
            assert!(s.tx_commits > 0);
        }
        // Power cut: only the device survives.
        let dev = remount(fs.into_device(), protocol);
        let mut fs = Fs::mount(dev, mode).unwrap();
        assert!(fs.lookup("test.db-journal").is_none(), "{protocol}: a durable delete");
        let db = fs.lookup("test.db").unwrap();
        assert_eq!(fs.size(None, db).unwrap(), 2000);
        let mut got = vec![0u8; 2000];
        fs.read(None, db, 0, &mut got).unwrap();
        assert_eq!(got, expect, "{protocol}");
    }
}

#[test]
fn transactions_commit_whole_or_abort_whole() {
    let mut fs = Fs::format(device("xftl"), FsMode::Transactional).unwrap();
    let db = fs.create("t.db", FileClass::Database).unwrap();
    let t = fs.begin().unwrap();
    fs.write(Some(t), db, 0, &bytes(3000, 5)).unwrap();
    assert_eq!(fs.size(Some(t), db).unwrap(), 3000, "a transaction sees its own writes");
    assert_eq!(fs.size(None, db).unwrap(), 0, "others see the committed file");
    fs.abort(t).unwrap();
    assert_eq!(fs.size(None, db).unwrap(), 0, "an abort drops the size change too");
    let t = fs.begin().unwrap();
    fs.write(Some(t), db, 0, &bytes(3000, 6)).unwrap();
    fs.commit(t).unwrap();
    // An open transaction at the cut is gone after it.
    let t = fs.begin().unwrap();
    fs.write(Some(t), db, 0, &bytes(6000, 7)).unwrap();
    let _ = t;
    let dev = remount(fs.into_device(), "xftl");
    let mut fs = Fs::mount(dev, FsMode::Transactional).unwrap();
    let db = fs.lookup("t.db").unwrap();
    assert_eq!(fs.size(None, db).unwrap(), 3000);
    let mut got = vec![0u8; 3000];
    fs.read(None, db, 0, &mut got).unwrap();
    assert_eq!(got, bytes(3000, 6));
}

/// Two transactions open at once on two files whose inodes share an inode
/// page and whose pages share a bitmap page: one commits, the other aborts (in
/// both orders, and both commit): each keeps exactly its own changes, in memory
/// and after a power cut.
#[test]
fn concurrent_transactions_keep_their_own_data_and_metadata() {
    for case in ["first commits", "second commits", "both commit"] {
        let mut fs = Fs::format(device("xftl"), FsMode::Transactional).unwrap();
        let a = fs.create("a.db", FileClass::Database).unwrap();
        let b = fs.create("b.db", FileClass::Database).unwrap();
        let ta = fs.begin().unwrap();
        let tb = fs.begin().unwrap();
        assert_ne!(ta, tb);
        // Interleaved growth: their pages interleave on the device, so their
        // allocations share bitmap bytes and their extents share no page.
        for i in 0..4u64 {
            fs.write(Some(ta), a, i * 512, &bytes(512, 10 + i as u8)).unwrap();
            fs.write(Some(tb), b, i * 512, &bytes(512, 20 + i as u8)).unwrap();
        }
        let mut got = vec![0u8; 2048];
        fs.read(Some(ta), a, 0, &mut got).unwrap();
        assert_eq!(&got[..512], &bytes(512, 10)[..], "{case}: A reads its own write");
        assert_eq!(
            fs.read(Some(ta), b, 0, &mut got).unwrap(),
            0,
            "{case}: A does not see B's uncommitted file"
        );
        let (commit_a, commit_b) = match case {
            "first commits" => (true, false),
            "second commits" => (false, true),
            _ => (true, true),
        };
        // B finishes first, then A: the last commit of the shared pages must
        // not undo the earlier one.
        if commit_b {
            fs.commit(tb).unwrap()
        } else {
            fs.abort(tb).unwrap()
        }
        if commit_a {
            fs.commit(ta).unwrap()
        } else {
            fs.abort(ta).unwrap()
        }
        assert!(fs.open_transactions().is_empty());
        let dev = remount(fs.into_device(), "xftl");
        let mut fs = Fs::mount(dev, FsMode::Transactional).unwrap();
        for (name, committed, seed) in [("a.db", commit_a, 10u8), ("b.db", commit_b, 20u8)] {
            let ino = fs.lookup(name).unwrap();
            let want = if committed { 2048 } else { 0 };
            assert_eq!(fs.size(None, ino).unwrap(), want, "{case}: {name}");
            if committed {
                fs.read(None, ino, 0, &mut got).unwrap();
                for i in 0..4 {
                    assert_eq!(&got[i * 512..(i + 1) * 512], &bytes(512, seed + i as u8)[..], "{case}: {name}");
                }
            }
        }
        // The allocation survived: a new file gets none of the committed pages.
        let c = fs.create("c.db", FileClass::Database).unwrap();
        fs.write(None, c, 0, &bytes(4096, 30)).unwrap();
        fs.fsync(None, c).unwrap();
        for (name, committed, seed) in [("a.db", commit_a, 10u8), ("b.db", commit_b, 20u8)] {
            if committed {
                let ino = fs.lookup(name).unwrap();
                fs.read(None, ino, 0, &mut got).unwrap();
                assert_eq!(&got[..512], &bytes(512, seed)[..], "{case}: {name} after another file grew");
            }
        }
    }
}

#[test]
fn one_transaction_at_a_time_changes_a_file() {
    let mut fs = Fs::format(device("xftl"), FsMode::Transactional).unwrap();
    let db = fs.create("t.db", FileClass::Database).unwrap();
    let t1 = fs.begin().unwrap();
    let t2 = fs.begin().unwrap();
    fs.write(Some(t1), db, 0, &bytes(100, 1)).unwrap();
    assert!(matches!(fs.write(Some(t2), db, 0, &bytes(100, 2)), Err(FsError::Busy { tid, .. }) if tid == t1));
    assert!(matches!(fs.write(None, db, 0, &bytes(100, 2)), Err(FsError::Busy { .. })));
    assert!(matches!(fs.delete("t.db"), Err(FsError::Busy { .. })));
    fs.commit(t1).unwrap();
    fs.write(Some(t2), db, 0, &bytes(100, 2)).unwrap();
    fs.commit(t2).unwrap();
    assert!(
        matches!(fs.commit(t2), Err(FsError::Device(_))),
        "a finished transaction is unknown"
    );
}

/// A transaction far larger than the X-L2P table (40 entries): an overwrite
/// of a 320-page file (about half the file system: the new copies and the
/// committed ones must both fit) spills the table to flash and commits
/// whole; a second such transaction aborts and leaves nothing; after a power
/// cut the file is the committed one, page for page.
#[test]
fn transactions_far_larger_than_the_table_commit_or_abort_whole() {
    let mut fs = Fs::format(
        device_with("xftl", &ProtocolOptions::new().with("xl2p-entries", 40)),
        FsMode::Transactional,
    )
    .unwrap();
    let a = fs.create("a.db", FileClass::Database).unwrap();
    const CHUNK: usize = 16 * 512;
    let size = 20 * CHUNK as u64;
    for off in (0..size).step_by(CHUNK) {
        fs.write(None, a, off, &bytes(CHUNK, 1)).unwrap();
    }
    fs.fsync(None, a).unwrap();
    for (tag, commit) in [(9u8, true), (5, false)] {
        let t = fs.begin().unwrap();
        for off in (0..size).step_by(CHUNK) {
            fs.write(Some(t), a, off, &bytes(CHUNK, tag)).unwrap();
        }
        if commit {
            fs.commit(t).unwrap();
        } else {
            fs.abort(t).unwrap();
        }
    }
    let dev = remount(fs.into_device(), "xftl");
    assert!(dev.stats().protocol.get("xl2p_spill_pages") == 0, "a fresh mount counts anew");
    let mut fs = Fs::mount(dev, FsMode::Transactional).unwrap();
    let a = fs.lookup("a.db").unwrap();
    assert_eq!(fs.size(None, a).unwrap(), size);
    let mut got = vec![0u8; CHUNK];
    for off in (0..size).step_by(CHUNK) {
        fs.read(None, a, off, &mut got).unwrap();
        assert_eq!(got, bytes(CHUNK, 9), "a at {off} is the committed overwrite");
    }
}

#[test]
fn misuse_is_typed() {
    let mut fs = Fs::format(device("plain"), FsMode::Journaled).unwrap();
    assert!(matches!(fs.begin(), Err(FsError::NotTransactional)));
    assert!(matches!(fs.delete("nope"), Err(FsError::NotFound(_))));
    assert!(matches!(
        fs.create(&"x".repeat(100), FileClass::Other),
        Err(FsError::NameTooLong(_))
    ));
    assert!(matches!(
        Fs::format(device("plain"), FsMode::Transactional),
        Err(FsError::NotTransactional)
    ));
    assert!(matches!(Fs::mount(device("plain"), FsMode::Journaled), Err(FsError::Format(_))));
}
