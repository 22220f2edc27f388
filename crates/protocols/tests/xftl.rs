//! X-FTL, scenario by scenario (the crash contract is in txftl-harness's crash tests).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

/// `entries` X-L2P entries (0: the default, sized to the array at format,
/// as formatted at a mount).
fn opts(entries: u32) -> ProtocolOptions {
    match entries {
        0 => ProtocolOptions::new(),
        e => ProtocolOptions::new().with("xl2p-entries", e),
    }
}

fn device(entries: u32) -> Box<dyn AnyDevice> {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format("xftl", nand, FtlConfig::default(), &opts(entries)).unwrap()
}

/// Power loss: DRAM is gone, the NAND is mounted again.
fn power_cycle(d: Box<dyn AnyDevice>, entries: u32) -> Box<dyn AnyDevice> {
    let mut n = d.into_nand();
    n.power_off();
    n.power_on();
    mount("xftl", n, FtlConfig::default(), &opts(entries)).unwrap()
}

fn page(size: u32, tag: u8) -> Vec<u8> {
    vec![tag; size as usize]
}

fn read(dev: &mut dyn AnyDevice, lpn: u32) -> u8 {
    let mut buf = vec![0u8; dev.info().page_size as usize];
    dev.read(lpn, &mut buf).unwrap();
    buf[0]
}

fn read_tx(dev: &mut dyn AnyDevice, tid: u32, lpn: u32) -> u8 {
    let mut buf = vec![0u8; dev.info().page_size as usize];
    dev.read_tx(tid, lpn, &mut buf).unwrap();
    buf[0]
}

#[test]
fn isolation_commit_and_abort() {
    let mut d = device(16);
    let ps = d.info().page_size;
    d.write(1, &page(ps, 10)).unwrap();
    d.begin(7).unwrap();
    d.write_tx(7, 1, &page(ps, 11)).unwrap();
    d.write_tx(7, 1, &page(ps, 12)).unwrap(); // re-update inside the transaction
    d.write_tx(7, 2, &page(ps, 20)).unwrap();
    assert_eq!(read_tx(&mut *d, 7, 1), 12, "a transaction reads its own latest write");
    assert_eq!(read(&mut *d, 1), 10, "others read the last committed copy");
    d.begin(8).unwrap();
    assert_eq!(read_tx(&mut *d, 8, 1), 10);
    d.write_tx(8, 3, &page(ps, 30)).unwrap();
    d.abort(8).unwrap();
    d.commit(7).unwrap();
    assert_eq!((read(&mut *d, 1), read(&mut *d, 2), read(&mut *d, 3)), (12, 20, 0));
    let s = d.stats();
    assert_eq!((s.commits, s.aborts), (1, 1));
    assert_eq!(s.protocol_meta_writes, 1, "one X-L2P table page per commit");
    d.check_invariants().unwrap();
    // Misuse is typed.
    assert!(matches!(d.commit(7), Err(DeviceError::UnknownTransaction(7))));
    assert!(matches!(d.write_tx(99, 1, &page(ps, 1)), Err(DeviceError::UnknownTransaction(99))));
    assert!(matches!(d.begin(0), Err(DeviceError::InvalidTransactionId)));
    d.begin(5).unwrap();
    assert!(matches!(d.begin(5), Err(DeviceError::TransactionExists(5))));
}

#[test]
fn committed_survives_remount_uncommitted_does_not() {
    let mut d = device(16);
    let ps = d.info().page_size;
    d.begin(1).unwrap();
    d.write_tx(1, 4, &page(ps, 41)).unwrap();
    d.commit(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(2, 5, &page(ps, 51)).unwrap();
    d.write_tx(2, 4, &page(ps, 42)).unwrap();
    // Power cut: no flush, no close.
    let mut d = power_cycle(d, 16);
    assert_eq!(read(&mut *d, 4), 41);
    assert_eq!(read(&mut *d, 5), 0);
    let r = d.recovery_report().unwrap();
    assert_eq!((r.protocol_pages_read, r.protocol_updates_applied), (1, 1));
    d.check_invariants().unwrap();
}

/// A full table spills a transaction's entries to flash: the transaction
/// reads its own spilled writes, rewrites spilled pages, commits whole, and
/// the commit survives a power cut; an aborted spilled transaction leaves
/// nothing. Committed entries are still reclaimed through a checkpoint first.
#[test]
fn a_full_table_spills_to_flash() {
    let mut d = device(4);
    let ps = d.info().page_size;
    d.begin(1).unwrap();
    for lpn in 0..20 {
        d.write_tx(1, lpn, &page(ps, 1)).unwrap();
    }
    d.write_tx(1, 2, &page(ps, 2)).unwrap(); // a spilled entry updated
    d.begin(2).unwrap();
    d.write_tx(2, 30, &page(ps, 9)).unwrap();
    let spilled = d.stats().protocol.get("xl2p_spill_pages");
    assert!(spilled >= 4, "{spilled} spill pages");
    assert_eq!((read_tx(&mut *d, 1, 2), read_tx(&mut *d, 1, 0), read_tx(&mut *d, 1, 19)), (2, 1, 1));
    assert_eq!(read(&mut *d, 2), 0, "others do not see the spilled writes");
    d.check_invariants().unwrap();
    d.abort(2).unwrap();
    d.commit(1).unwrap();
    assert_eq!((read(&mut *d, 2), read(&mut *d, 19), read(&mut *d, 30)), (2, 1, 0));
    // Committed entries are reclaimed through a checkpoint when slots run out
    // (a spilled commit is checkpointed already: this one is not spilled).
    d.begin(5).unwrap();
    d.write_tx(5, 50, &page(ps, 5)).unwrap();
    d.write_tx(5, 51, &page(ps, 5)).unwrap();
    d.commit(5).unwrap();
    let before = d.stats().checkpoints;
    d.begin(3).unwrap();
    for lpn in 40..44 {
        d.write_tx(3, lpn, &page(ps, 3)).unwrap();
    }
    assert!(d.stats().checkpoints > before, "a checkpoint reclaimed the committed entries");
    d.check_invariants().unwrap();
    // A spilled transaction cut before its commit is absent; one committed is whole.
    d.begin(4).unwrap();
    for lpn in 0..12 {
        d.write_tx(4, lpn, &page(ps, 4)).unwrap();
    }
    d.commit(3).unwrap();
    let mut d = power_cycle(d, 4);
    assert_eq!(
        (read(&mut *d, 0), read(&mut *d, 2), read(&mut *d, 43), read(&mut *d, 51)),
        (1, 2, 3, 5)
    );
    d.check_invariants().unwrap();
}

/// Transaction 1 writes four pages into a table of four entries that does
/// not spill; a fifth page is refused with `TableFull`.
fn fill_a_table_of_four(d: &mut dyn AnyDevice) {
    let ps = d.info().page_size;
    d.begin(1).unwrap();
    for lpn in 0..4 {
        d.write_tx(1, lpn, &page(ps, 1)).unwrap();
    }
    assert!(matches!(
        d.write_tx(1, 9, &page(ps, 1)),
        Err(DeviceError::TableFull { capacity: 4 })
    ));
}

/// With spilling off (`xl2p-spill=0`, the paper's fixed table), a full table
/// is a typed error the host can act on.
#[test]
fn without_spilling_a_full_table_is_a_typed_error() {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let opts = ProtocolOptions::new().with("xl2p-entries", 4).with("xl2p-spill", 0);
    let mut d = format("xftl", nand, FtlConfig::default(), &opts).unwrap();
    let ps = d.info().page_size;
    fill_a_table_of_four(&mut *d);
    d.write_tx(1, 2, &page(ps, 2)).unwrap(); // an existing entry still updates
    d.commit(1).unwrap();
    assert_eq!(d.stats().protocol.get("xl2p_spill_pages"), 0);
    assert_eq!(read(&mut *d, 2), 2);
    d.check_invariants().unwrap();
}

/// A transaction larger than the device's free space (every logical page
/// written, then every one again in one transaction: the new copies and the
/// committed ones must all stay) fails a write with the typed `NoSpace`,
/// not a panic; the host aborts it and the device is as before, also after
/// a power cut.
#[test]
fn a_transaction_larger_than_free_space_fails_with_no_space() {
    let mut d = device(8);
    let ps = d.info().page_size;
    let pages = d.info().logical_pages;
    for lpn in 0..pages {
        d.write(lpn, &page(ps, 1)).unwrap();
    }
    d.flush().unwrap();
    d.begin(1).unwrap();
    let failed = (0..pages).find_map(|lpn| d.write_tx(1, lpn, &page(ps, 2)).err());
    assert!(matches!(failed, Some(DeviceError::NoSpace)), "{failed:?} over {pages} pages");
    assert!(d.stats().protocol.get("xl2p_spill_pages") > 0);
    d.check_invariants().unwrap();
    d.abort(1).unwrap();
    d.check_invariants().unwrap();
    // The space the transaction took is free again: a small one commits.
    d.begin(2).unwrap();
    d.write_tx(2, 0, &page(ps, 3)).unwrap();
    d.commit(2).unwrap();
    let mut d = power_cycle(d, 8);
    assert_eq!((read(&mut *d, 0), read(&mut *d, 1), read(&mut *d, pages - 1)), (3, 1, 1));
    d.check_invariants().unwrap();
}

/// GC must keep both the uncommitted page and the committed copy it replaces.
#[test]
fn gc_keeps_uncommitted_and_old_committed_copies() {
    let mut d = device(16);
    let ps = d.info().page_size;
    let lp = d.info().logical_pages;
    for lpn in 0..lp {
        d.write(lpn, &page(ps, 1)).unwrap();
    }
    d.begin(1).unwrap();
    d.write_tx(1, 0, &page(ps, 2)).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let gc_before = d.stats().gc_runs;
    for _ in 0..3000 {
        let lpn = rng.gen_range(1..lp);
        d.write(lpn, &page(ps, 1)).unwrap();
    }
    assert!(d.stats().gc_runs > gc_before + 50, "GC must have run many times");
    assert_eq!(read_tx(&mut *d, 1, 0), 2, "the uncommitted page survived GC");
    assert_eq!(read(&mut *d, 0), 1, "the committed copy survived GC");
    d.check_invariants().unwrap();
    d.commit(1).unwrap();
    assert_eq!(read(&mut *d, 0), 2);
}

#[test]
fn a_newer_plain_write_beats_an_older_commit_after_a_cut() {
    let mut d = device(16);
    let ps = d.info().page_size;
    d.begin(1).unwrap();
    d.write_tx(1, 6, &page(ps, 60)).unwrap();
    d.commit(1).unwrap();
    d.write(6, &page(ps, 61)).unwrap();
    d.flush().unwrap();
    let mut d = power_cycle(d, 16);
    assert_eq!(read(&mut *d, 6), 61, "the committed entry must not be replayed over a newer write");
}

/// Reliability issue, item 1: commit T1 writing p, trim p, commit T2 (another
/// page), cut power before any flush. The trim was never made durable, so p may
/// read as trimmed or as T1's value, never as its value from before T1.
#[test]
fn a_trim_after_a_commit_never_resurrects_the_older_value() {
    let mut d = device(16);
    let ps = d.info().page_size;
    d.write(3, &page(ps, 30)).unwrap();
    d.flush().unwrap(); // p = 30 is durable
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(ps, 31)).unwrap();
    d.commit(1).unwrap(); // p = 31 is durable
    d.trim(3).unwrap();
    assert_eq!(read(&mut *d, 3), 0);
    d.begin(2).unwrap();
    d.write_tx(2, 4, &page(ps, 41)).unwrap();
    d.commit(2).unwrap();
    d.check_invariants().unwrap();
    let mut d = power_cycle(d, 16);
    let p = read(&mut *d, 3);
    assert!(p == 31 || p == 0, "p came back as {p}: the value from before the committed T1");
    assert_eq!(read(&mut *d, 4), 41);
    d.check_invariants().unwrap();
}

/// The table's size is fixed at format and recorded in the superblock: a mount
/// takes it (asked for nothing) and refuses a different size; with no size
/// given, format sizes the table to the array.
#[test]
fn the_table_size_is_fixed_at_format() {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let d = format("xftl", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let auto = txftl_protocols::xftl::auto_entries(d.nand().geometry());
    let n = d.close().unwrap();
    let d = mount("xftl", n, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let n = d.close().unwrap();
    let e = mount(
        "xftl",
        n,
        FtlConfig::default(),
        &ProtocolOptions::new().with("xl2p-entries", auto + 1),
    )
    .err()
    .expect("a different size is refused");
    assert!(e.to_string().contains("fixed at format"), "{e}");
    assert!(auto >= 32);
}

/// The spill policy is fixed at format too: a mount asked for nothing takes
/// the recorded one (a table that does not spill still answers `TableFull`
/// after a remount), and a mount asked for the other is refused, never
/// silently run with a policy the image was not formatted for.
#[test]
fn the_spill_policy_is_fixed_at_format() {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let opts = ProtocolOptions::new().with("xl2p-entries", 4).with("xl2p-spill", 0);
    let n = format("xftl", nand, FtlConfig::default(), &opts).unwrap().close().unwrap();
    let mut d = mount("xftl", n, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    fill_a_table_of_four(&mut *d);
    d.abort(1).unwrap();
    let n = d.close().unwrap();
    let e = mount("xftl", n, FtlConfig::default(), &ProtocolOptions::new().with("xl2p-spill", 1))
        .err()
        .expect("another spill policy is refused");
    assert!(e.to_string().contains("xl2p-spill=0, not 1"), "{e}");
}

/// A transaction larger than one table page commits (the table spans several
/// pages) and survives a power cut whole; only the pages it changed are written.
#[test]
fn a_transaction_larger_than_one_table_page_commits() {
    let mut d = device(100); // 29 entries a page on `tiny`: four table pages
    let ps = d.info().page_size;
    d.begin(1).unwrap();
    for lpn in 0..90 {
        d.write_tx(1, lpn, &page(ps, lpn as u8)).unwrap();
    }
    d.commit(1).unwrap();
    assert_eq!(d.stats().protocol_meta_writes, 4, "90 entries fill four table pages");
    d.begin(2).unwrap();
    d.write_tx(2, 95, &page(ps, 95)).unwrap();
    d.commit(2).unwrap();
    assert_eq!(d.stats().protocol_meta_writes, 5, "a small commit writes only the page it changed");
    let mut d = power_cycle(d, 100);
    for lpn in (0..90).chain([95]) {
        assert_eq!(read(&mut *d, lpn), lpn as u8);
    }
    d.check_invariants().unwrap();
}

/// `--sync flush`: on an image synced at flushes, a device flush and an X-FTL
/// commit reach the host's disk when they return (the FTL calls the sync, so
/// every host of the device gets it, the SQLite extension included); a write
/// alone does not.
#[test]
fn flushes_and_commits_sync_the_image_in_flush_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dev.img");
    let p = preset("tiny").unwrap();
    let mut nand = Nand::create_image(&path, p.config(DataMode::Full, ViolationPolicy::Error)).unwrap();
    nand.set_image_sync(txftl_nand::ImageSync::Flush);
    let mut dev = format("xftl", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let page = vec![1u8; dev.info().page_size as usize];
    let before = dev.nand().image_syncs();
    dev.write(0, &page).unwrap();
    assert_eq!(dev.nand().image_syncs(), before, "a write alone is not synced");
    dev.flush().unwrap();
    assert_eq!(dev.nand().image_syncs(), before + 1);
    dev.begin(1).unwrap();
    dev.write_tx(1, 1, &page).unwrap();
    dev.commit(1).unwrap();
    assert_eq!(dev.nand().image_syncs(), before + 2);
}
