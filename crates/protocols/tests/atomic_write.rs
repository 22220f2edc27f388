//! Atomic-Write, scenario by scenario (the crash contract is in
//! txftl-harness's crash tests).

use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, PowerCut, Torn, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn page(dev: &dyn AnyDevice, tag: u8) -> Vec<u8> {
    vec![tag; dev.info().page_size as usize]
}

fn read(dev: &mut dyn AnyDevice, lpn: u32) -> u8 {
    let mut buf = vec![0u8; dev.info().page_size as usize];
    dev.read(lpn, &mut buf).unwrap();
    buf[0]
}

/// `tiny` with twice its blocks: more logical pages than one table page holds.
fn tiny() -> Nand {
    let mut cfg = preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic);
    cfg.geometry.blocks_per_plane *= 2;
    Nand::new(cfg).unwrap()
}

/// Commits a transaction writing `tag` to each of `lpns`; returns the
/// flash programs and protocol metadata writes it took.
fn commit(d: &mut dyn AnyDevice, tid: u32, lpns: &[u32], tag: u8) -> (u64, u64) {
    let before = d.stats();
    d.begin(tid).unwrap();
    for &lpn in lpns {
        d.write_tx(tid, lpn, &page(d, tag)).unwrap();
    }
    d.commit(tid).unwrap();
    let after = d.stats();
    (
        after.flash_programs - before.flash_programs,
        after.protocol_meta_writes - before.protocol_meta_writes,
    )
}

/// The default: strict isolation only, and at every commit the L2P table
/// pages the transaction changed written back whole (128 entries a page on
/// `tiny`'s 512-byte pages).
#[test]
fn atomic_write_runs_one_transaction_at_a_time_and_writes_back_the_table_pages_it_changed() {
    let mut d = format("atomic-write", tiny(), FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    assert!(d.info().logical_pages > 128, "two table pages at least");
    d.begin(1).unwrap();
    assert!(matches!(d.begin(2), Err(DeviceError::IsolationUnsupported { .. })));
    d.abort(1).unwrap();
    let map_writes = d.stats().map_writes;
    // Two pages of table page 0: the flagged last page, and table page 0.
    assert_eq!(commit(&mut *d, 2, &[3, 4], 7), (3, 1));
    // Pages of table pages 0 and 1: both written back.
    assert_eq!(commit(&mut *d, 3, &[5, 130], 8), (4, 2));
    let s = d.stats();
    assert_eq!((s.protocol.get("aw_table_pages"), s.protocol.get("aw_map_log_pages")), (3, 0));
    assert_eq!(s.map_writes, map_writes, "no checkpoint per commit");
    // Recovery reads the table pages, no data page of a group.
    let mut d = mount("atomic-write", d.into_nand(), FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let r = d.recovery_report().unwrap();
    assert_eq!((r.protocol_pages_read, r.protocol_pages_scanned), (3, 0), "{r:?}");
    assert_eq!(
        (read(&mut *d, 3), read(&mut *d, 4), read(&mut *d, 5), read(&mut *d, 130)),
        (7, 7, 8, 8)
    );
}

/// An abort drops a one-page group (its page never left DRAM) and closes a
/// longer one with a page flagged 1 and aborted, which recovery never applies.
#[test]
fn an_aborted_group_is_closed_by_a_flagged_page_and_stays_invisible() {
    let mut d = format("atomic-write", tiny(), FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    commit(&mut *d, 1, &[3, 4], 7);
    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&*d, 9)).unwrap();
    let before = d.stats();
    d.abort(2).unwrap();
    assert_eq!(d.stats().flash_programs, before.flash_programs);
    d.begin(3).unwrap();
    d.write_tx(3, 3, &page(&*d, 9)).unwrap();
    d.write_tx(3, 4, &page(&*d, 9)).unwrap();
    let before = d.stats();
    d.abort(3).unwrap();
    let after = d.stats();
    assert_eq!(after.flash_programs - before.flash_programs, 1);
    assert_eq!(after.host_writes, before.host_writes, "the closing page is the protocol's write");
    assert_eq!(after.protocol.get("aw_abort_pages"), 1);
    // A group after the aborted one: recovery takes only its own pages.
    commit(&mut *d, 4, &[5], 6);
    let mut d = mount("atomic-write", d.into_nand(), FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    assert_eq!((read(&mut *d, 3), read(&mut *d, 4), read(&mut *d, 5)), (7, 7, 6));
}

/// `map-log=1`: one mapping-log page per commit; the variant is recorded at
/// format, kept by a mount that names none, and a mount asking for the
/// other is refused.
#[test]
fn the_map_log_variant_is_fixed_at_format() {
    let opts = ProtocolOptions::new().with("map-log", 1);
    let mut d = format("atomic-write", tiny(), FtlConfig::default(), &opts).unwrap();
    assert_eq!(commit(&mut *d, 1, &[3, 130], 7), (3, 1));
    let s = d.stats();
    assert_eq!((s.protocol.get("aw_table_pages"), s.protocol.get("aw_map_log_pages")), (0, 1));
    let nand = d.into_nand();
    let other = ProtocolOptions::new().with("map-log", 0);
    match mount("atomic-write", nand.clone(), FtlConfig::default(), &other) {
        Err(e) => assert!(e.to_string().contains("map-log=1"), "{e}"),
        Ok(_) => panic!("a mount asking for the other variant was not refused"),
    }
    let mut d = mount("atomic-write", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    assert_eq!((read(&mut *d, 3), read(&mut *d, 130)), (7, 7));
    assert_eq!(commit(&mut *d, 2, &[4], 8), (2, 1), "still the mapping log");
}

/// Commits `tid` with the power cut at the commit's `k`-th flash operation,
/// then mounts what the cut left: whether the commit returned, and the device.
fn commit_cut_at(mut d: Box<dyn AnyDevice>, tid: u32, k: u64, cfg: &FtlConfig) -> (bool, Box<dyn AnyDevice>) {
    let at_op = d.nand().op_count() + k;
    d.nand_mut().arm_power_cut(PowerCut {
        at_op,
        torn: Torn::None,
        seed: 1,
    });
    let returned = d.commit(tid).is_ok();
    let mut nand = d.into_nand();
    nand.power_on();
    (
        returned,
        mount("atomic-write", nand, cfg.clone(), &ProtocolOptions::default()).unwrap(),
    )
}

/// The flag page is the commit point: a cut after it is on flash and before
/// the table pages are (the commit has not returned) finds the group whole,
/// redone from its pages; a cut before it finds the group absent. Never half.
#[test]
fn a_cut_between_the_flag_page_and_the_table_pages_finds_the_group_whole() {
    let mut redone_by_flag = 0;
    for k in 0..8 {
        let mut d = format("atomic-write", tiny(), FtlConfig::default(), &ProtocolOptions::default()).unwrap();
        commit(&mut *d, 1, &[5, 130], 1);
        d.begin(2).unwrap();
        d.write_tx(2, 5, &page(&*d, 2)).unwrap();
        d.write_tx(2, 130, &page(&*d, 2)).unwrap();
        let (returned, mut d) = commit_cut_at(d, 2, k, &FtlConfig::default());
        let seen = (read(&mut *d, 5), read(&mut *d, 130));
        assert!(seen == (1, 1) || seen == (2, 2), "cut at commit op {k}: {seen:?}");
        if returned {
            assert_eq!(seen, (2, 2));
        } else if seen == (2, 2) {
            redone_by_flag += 1;
        }
    }
    // The cuts after the flag page: before the first table page, and between the two.
    assert!(redone_by_flag >= 2, "{redone_by_flag}");
}

/// A checkpoint taken while a group is open records the group; a cut that
/// leaves it open, with nothing programmed after the checkpoint, gives the
/// mount nothing to seal. The next `begin` then checkpoints, so that the
/// open group's pages are not taken for part of the next group when a cut
/// falls between that group's flag page and its write-back.
#[test]
fn a_group_left_open_at_the_checkpoint_is_not_folded_into_the_next() {
    let cfg = FtlConfig {
        checkpoint_at_flush: true,
        ..FtlConfig::default()
    };
    let mut redone_by_flag = 0;
    for k in 0..6 {
        let mut d = format("atomic-write", tiny(), cfg.clone(), &ProtocolOptions::default()).unwrap();
        d.begin(1).unwrap();
        for lpn in [3, 4, 5] {
            d.write_tx(1, lpn, &page(&*d, 1)).unwrap();
        }
        d.write(60, &page(&*d, 6)).unwrap();
        d.flush().unwrap();
        // Power lost with group 1 open: its pages 3 and 4 are before the checkpoint.
        let mut d = mount("atomic-write", d.into_nand(), cfg.clone(), &ProtocolOptions::default()).unwrap();
        assert!(!d.recovery_report().unwrap().sealed, "nothing after the checkpoint to seal");
        let checkpoints = d.stats().checkpoints;
        d.begin(2).unwrap();
        assert_eq!(d.stats().checkpoints, checkpoints + 1, "the begin bounds group 1's pages");
        d.write_tx(2, 10, &page(&*d, 2)).unwrap();
        d.write_tx(2, 11, &page(&*d, 2)).unwrap();
        let (returned, mut d) = commit_cut_at(d, 2, k, &cfg);
        let group2 = (read(&mut *d, 10), read(&mut *d, 11));
        assert!(group2 == (0, 0) || group2 == (2, 2), "cut at commit op {k}: {group2:?}");
        assert!(!returned || group2 == (2, 2));
        redone_by_flag += (!returned && group2 == (2, 2)) as u32;
        assert_eq!(
            (read(&mut *d, 3), read(&mut *d, 4), read(&mut *d, 60)),
            (0, 0, 6),
            "cut at commit op {k}: group 1 is visible"
        );
    }
    assert!(redone_by_flag >= 1);
}

/// A write-back larger than half the ring (2 of its 4 blocks: 16 pages on
/// `tiny`) could not be kept whole: the commit is refused before the flag
/// page, typed as a full table, and the transaction stays open for the
/// host to abort.
#[test]
fn a_write_back_larger_than_the_ring_takes_is_refused_before_the_flag_page() {
    let mut cfg = preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic);
    cfg.geometry.blocks_per_plane = 256;
    let mut d = format(
        "atomic-write",
        Nand::new(cfg).unwrap(),
        FtlConfig::default(),
        &ProtocolOptions::default(),
    )
    .unwrap();
    assert!(d.info().logical_pages > 17 * 128);
    d.begin(1).unwrap();
    for t in 0..17 {
        d.write_tx(1, t * 128, &page(&*d, 5)).unwrap();
    }
    let programs = d.stats().flash_programs;
    match d.commit(1) {
        // 17 L2P table pages, more than the 16 half the ring holds.
        Err(DeviceError::TableFull { capacity }) => assert_eq!(capacity, 16),
        other => panic!("{other:?}"),
    }
    assert_eq!(d.stats().flash_programs, programs, "no flag page");
    d.abort(1).unwrap();
    assert_eq!(read(&mut *d, 128), 0);
    assert_eq!(commit(&mut *d, 2, &[0, 128], 6).1, 2);
}
