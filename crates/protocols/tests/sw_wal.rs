//! SW-WAL's device: a remap moves a page onto another logical page without
//! a program, is durable at the next flush (all of the flush's remaps
//! together, none before it, even across the FTL's own checkpoints), and
//! the page reads, moves (GC) and recovers as its new logical page's; a
//! remap the page's spare area does not name is refused (the canary takes
//! it, and its target reads corrupted).

mod common;
use common::{nand, page, reads};
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_protocols::{AnyDevice, Protocol, ProtocolOptions};

fn protocol(canary: bool) -> Protocol {
    Protocol {
        entry: &txftl_protocols::sw_wal::ENTRY,
        canary,
    }
}

fn device(canary: bool) -> Box<dyn AnyDevice> {
    protocol(canary)
        .format(nand(), FtlConfig::default(), &ProtocolOptions::new())
        .unwrap()
}

/// A power cut: the mount recovers from the NAND alone.
fn cut(d: Box<dyn AnyDevice>) -> Box<dyn AnyDevice> {
    protocol(false)
        .mount(d.into_nand(), FtlConfig::default(), &ProtocolOptions::new())
        .map_err(|(e, _)| e)
        .unwrap()
}

fn write_wal(d: &mut dyn AnyDevice, lpn: u32, v: u8, target: u32) {
    let data = page(d, v);
    d.remap_calls().unwrap().write_remappable(lpn, &data, target).unwrap();
}

fn remap(d: &mut dyn AnyDevice, from: u32, to: u32) -> Result<u64, DeviceError> {
    d.remap_calls().unwrap().remap(from, to)
}

#[test]
fn a_remap_programs_nothing_and_is_durable_at_the_next_flush() {
    let mut d = device(false);
    d.write(3, &page(&*d, 1)).unwrap();
    d.flush().unwrap();
    write_wal(&mut *d, 100, 2, 3);
    let programs = d.stats().flash_programs;
    remap(&mut *d, 100, 3).unwrap();
    assert_eq!(d.stats().flash_programs, programs, "no program");
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 100)), (2, 0));
    assert_eq!(d.stats().protocol.get("sw_wal_remaps"), 1);
    // Not flushed: a cut finds the WAL page where it was and the old database page.
    let mut d = cut(d);
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 100)), (1, 2));
    assert!(
        matches!(remap(&mut *d, 100, 3), Err(DeviceError::Unsupported { .. })),
        "forgotten at the mount"
    );
    write_wal(&mut *d, 100, 4, 3);
    remap(&mut *d, 100, 3).unwrap();
    d.flush().unwrap();
    let mut d = cut(d);
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 100)), (4, 0));
    d.check_invariants().unwrap();
}

/// GC reclaims the blocks holding remapped pages: it copies each as the
/// database page the L2P maps it as (its spare area names the WAL page), and
/// the copies read, check and recover as those pages.
#[test]
fn gc_moves_a_remapped_page_as_its_new_logical_pages() {
    use txftl_ftl::{Device, Ftl};
    use txftl_protocols::sw_wal::{SwHooks, SwWal};
    let nand = nand();
    let geo = *nand.geometry();
    let mut d = SwWal::new(
        Ftl::format(
            nand,
            FtlConfig::default(),
            SwHooks::new(false, txftl_protocols::sw_wal::PENDING_REMAPS_DEFAULT, true),
        )
        .unwrap(),
    );
    let data = |v: u8| vec![v; geo.page_size as usize];
    for lpn in 0..40 {
        d.write(lpn, &data(1)).unwrap();
    }
    for lpn in 0..10 {
        txftl_ftl::extensions::Remap::write_remappable(&mut d, 100 + lpn, &data(7), lpn).unwrap();
        txftl_ftl::extensions::Remap::remap(&mut d, 100 + lpn, lpn).unwrap();
    }
    d.flush().unwrap();
    let before = d.stats().gc_copies;
    let blocks: std::collections::BTreeSet<u32> = (0..10).map(|l| geo.block_of(d.ftl().mapping(l).unwrap())).collect();
    for b in blocks {
        d.ftl_mut().reclaim_block(b).unwrap();
    }
    assert!(d.stats().gc_copies >= before + 10, "{:?}", d.stats());
    let mut buf = data(0);
    for lpn in 0..10 {
        d.read(lpn, &mut buf).unwrap();
        assert_eq!(buf[0], 7, "lpn {lpn}");
    }
    d.ftl().check_invariants().unwrap();
    // A cut before the next checkpoint: the copies roll forward as the database pages.
    let mut d = protocol(false)
        .mount(d.ftl().duplicate().into_nand(), FtlConfig::default(), &ProtocolOptions::new())
        .map_err(|(e, _)| e)
        .unwrap();
    for lpn in 0..10 {
        assert_eq!(reads(&mut *d, lpn), 7, "lpn {lpn} after a cut");
    }
    d.check_invariants().unwrap();
}

#[test]
fn a_remap_the_spare_area_does_not_name_is_refused_and_the_canary_takes_it() {
    let mut d = device(false);
    d.write(3, &page(&*d, 1)).unwrap();
    d.write(11, &page(&*d, 2)).unwrap();
    write_wal(&mut *d, 12, 3, 4);
    assert!(matches!(remap(&mut *d, 11, 3), Err(DeviceError::Unsupported { .. })));
    assert!(matches!(remap(&mut *d, 12, 3), Err(DeviceError::Unsupported { .. })));
    assert_eq!(d.stats().protocol.get("sw_wal_remaps_refused"), 2);
    assert_eq!(reads(&mut *d, 3), 1);

    let mut d = device(true);
    d.write(3, &page(&*d, 1)).unwrap();
    d.write(11, &page(&*d, 2)).unwrap();
    remap(&mut *d, 11, 3).unwrap();
    assert!(d.check_invariants().is_err(), "a pending remap names another page");
    d.flush().unwrap();
    let mut buf = page(&*d, 0);
    assert!(matches!(d.read(3, &mut buf), Err(DeviceError::Corrupted(_))));
    assert!(d.check_invariants().is_err());
}

/// The pending remaps are a bounded DRAM table (option `pending-remaps`): a
/// remap onto a new page past the bound is refused with `TableFull` (the
/// host copies), one replacing a pending remap of the same target is not,
/// and the flush empties the table.
#[test]
fn a_remap_past_the_pending_bound_is_refused_as_table_full() {
    let opts = ProtocolOptions::new().with("pending-remaps", 2);
    let mut d = protocol(false).format(nand(), FtlConfig::default(), &opts).unwrap();
    for lpn in 0..4 {
        d.write(lpn, &page(&*d, 1)).unwrap();
        write_wal(&mut *d, 100 + lpn, 2, lpn);
    }
    write_wal(&mut *d, 104, 3, 0);
    remap(&mut *d, 100, 0).unwrap();
    remap(&mut *d, 101, 1).unwrap();
    assert!(matches!(remap(&mut *d, 102, 2), Err(DeviceError::TableFull { capacity: 2 })));
    remap(&mut *d, 104, 0).unwrap();
    assert_eq!(d.stats().protocol.get("sw_wal_remaps_refused"), 1);
    d.flush().unwrap();
    remap(&mut *d, 102, 2).unwrap();
    d.flush().unwrap();
    let mut d = cut(d);
    let got: Vec<u8> = (0..4).map(|l| reads(&mut *d, l)).collect();
    assert_eq!(got, [3, 2, 2, 1]);
    d.check_invariants().unwrap();
}

/// A flush makes its remaps and trims durable with a remap record (one
/// group of record pages in the protocol's ring), not a checkpoint: the
/// mount reads the record back; `remap-record=0`, the variant, writes a
/// checkpoint instead. A group of more remaps than one record page holds
/// spans pages, and recovers whole.
#[test]
fn a_flush_writes_a_remap_record_and_the_mount_reads_it_back() {
    for record in [1, 0] {
        let opts = ProtocolOptions::new().with("remap-record", record);
        let mut d = protocol(false).format(nand(), FtlConfig::default(), &opts).unwrap();
        // 60 remaps: two record pages of 41 entries on 512-byte pages.
        for lpn in 0..60 {
            d.write(lpn, &page(&*d, 1)).unwrap();
        }
        d.write(70, &page(&*d, 5)).unwrap();
        d.flush().unwrap();
        for lpn in 0..60 {
            write_wal(&mut *d, 100 + lpn, 2, lpn);
        }
        d.flush().unwrap();
        let before = d.stats();
        for lpn in 0..60 {
            remap(&mut *d, 100 + lpn, lpn).unwrap();
        }
        d.trim(70).unwrap();
        d.flush().unwrap();
        let after = d.stats();
        let p = |k: &str| after.protocol.get(k) - before.protocol.get(k);
        if record == 1 {
            assert_eq!((p("sw_wal_record_groups"), p("sw_wal_record_pages")), (1, 2), "{after:?}");
            assert_eq!(after.checkpoints, before.checkpoints, "no checkpoint at the flush");
            assert_eq!(after.map_writes, before.map_writes);
        } else {
            assert_eq!((p("sw_wal_record_groups"), p("sw_wal_flush_checkpoints")), (0, 1));
            assert_eq!(after.checkpoints, before.checkpoints + 1);
        }
        let mut d = protocol(false)
            .mount(d.into_nand(), FtlConfig::default(), &opts)
            .map_err(|(e, _)| e)
            .unwrap();
        for lpn in 0..60 {
            assert_eq!(
                (reads(&mut *d, lpn), reads(&mut *d, 100 + lpn)),
                (2, 0),
                "lpn {lpn}, remap-record={record}"
            );
        }
        assert_eq!(reads(&mut *d, 70), 0, "the trim, remap-record={record}");
        if record == 1 {
            assert_eq!(d.recovery_report().map(|r| r.protocol_updates_applied), Some(121));
        }
        d.check_invariants().unwrap();
    }
}

/// `record-page-entries` past what a page holds is refused at format, with
/// the page's bound in the message (the tiny preset's 512-byte pages: 41).
#[test]
fn record_page_entries_past_a_page_are_refused() {
    let opts = ProtocolOptions::new().with("record-page-entries", 42);
    match protocol(false).format(nand(), FtlConfig::default(), &opts) {
        Err(DeviceError::ProtocolOption(m)) => assert!(m.contains("at most 41"), "{m}"),
        other => panic!("not refused: {:?}", other.map(|_| ())),
    }
    let opts = ProtocolOptions::new().with("record-page-entries", 41);
    protocol(false).format(nand(), FtlConfig::default(), &opts).unwrap();
}
