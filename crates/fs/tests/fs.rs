//! The file system on plain (journaled) and X-FTL (transactional) devices.

use txftl_fs::{FileClass, Fs, FsError, FsMode};
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn device(protocol: &str) -> Box<dyn AnyDevice> {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format(protocol, nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
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
        fs.write(db, 100, &data).unwrap();
        fs.write(db, 3000, &bytes(700, 2)).unwrap(); // partial overwrite
        let mut expect = vec![0u8; 5100];
        expect[100..].copy_from_slice(&data);
        expect[3000..3700].copy_from_slice(&bytes(700, 2));
        let mut got = vec![0u8; 5100];
        assert_eq!(fs.read(db, 0, &mut got).unwrap(), 5100);
        assert_eq!(got, expect, "{protocol}");
        fs.fsync(db).unwrap();
        let j = fs.create("test.db-journal", FileClass::Journal).unwrap();
        fs.write(j, 0, &bytes(512, 3)).unwrap();
        fs.fsync(j).unwrap();
        fs.delete("test.db-journal").unwrap();
        fs.truncate(db, 2000).unwrap();
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
        assert_eq!(fs.size(db).unwrap(), 2000);
        let mut got = vec![0u8; 2000];
        fs.read(db, 0, &mut got).unwrap();
        assert_eq!(got, expect, "{protocol}");
    }
}

#[test]
fn transactions_commit_whole_or_abort_whole() {
    let mut fs = Fs::format(device("xftl"), FsMode::Transactional).unwrap();
    let db = fs.create("t.db", FileClass::Database).unwrap();
    let t = fs.begin().unwrap();
    fs.write(db, 0, &bytes(3000, 5)).unwrap();
    fs.abort(t).unwrap();
    assert_eq!(fs.size(db).unwrap(), 0, "an abort drops the size change too");
    let t = fs.begin().unwrap();
    fs.write(db, 0, &bytes(3000, 6)).unwrap();
    assert!(matches!(fs.begin(), Err(FsError::TransactionOpen)));
    fs.commit(t).unwrap();
    // An open transaction at the cut is gone after it.
    let t = fs.begin().unwrap();
    fs.write(db, 0, &bytes(6000, 7)).unwrap();
    let _ = t;
    let dev = remount(fs.into_device(), "xftl");
    let mut fs = Fs::mount(dev, FsMode::Transactional).unwrap();
    let db = fs.lookup("t.db").unwrap();
    assert_eq!(fs.size(db).unwrap(), 3000);
    let mut got = vec![0u8; 3000];
    fs.read(db, 0, &mut got).unwrap();
    assert_eq!(got, bytes(3000, 6));
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
