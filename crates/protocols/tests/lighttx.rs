//! LightTx, scenario by scenario (the crash contract is in txftl-harness's
//! crash tests): what each command programs, several uncommitted versions of
//! one page, and what recovery reads.

use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

/// A zone of `zone_blocks` (0: the default, 8 blocks per parallel unit).
fn opts(zone_blocks: u32) -> ProtocolOptions {
    match zone_blocks {
        0 => ProtocolOptions::new(),
        z => ProtocolOptions::new().with("zone-blocks", z),
    }
}

fn device(zone_blocks: u32) -> Box<dyn AnyDevice> {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format("lighttx", nand, FtlConfig::default(), &opts(zone_blocks)).unwrap()
}

fn page(dev: &dyn AnyDevice, tag: u8) -> Vec<u8> {
    vec![tag; dev.info().page_size as usize]
}

fn read(dev: &mut dyn AnyDevice, lpn: u32) -> u8 {
    let mut buf = vec![0u8; dev.info().page_size as usize];
    dev.read(lpn, &mut buf).unwrap();
    buf[0]
}

#[test]
fn the_last_page_waits_in_dram_and_an_abort_programs_nothing() {
    let mut d = device(0);
    let programs = |d: &dyn AnyDevice| d.stats().flash_programs;
    d.begin(1).unwrap();
    let p0 = programs(&*d);
    d.write_tx(1, 3, &page(&*d, 0xA1)).unwrap();
    assert_eq!(programs(&*d), p0, "the first page is cached, not programmed");
    d.write_tx(1, 4, &page(&*d, 0xA2)).unwrap();
    assert_eq!(programs(&*d), p0 + 1, "the next write programs the cached page");
    let mut buf = page(&*d, 0);
    d.read_tx(1, 4, &mut buf).unwrap();
    assert_eq!(buf[0], 0xA2, "a transaction reads its own cached page");
    d.abort(1).unwrap();
    assert_eq!(programs(&*d), p0 + 1, "an abort programs nothing");
    assert_eq!((read(&mut *d, 3), read(&mut *d, 4)), (0, 0));

    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&*d, 0xB1)).unwrap();
    d.write_tx(2, 4, &page(&*d, 0xB2)).unwrap();
    let before = programs(&*d);
    d.commit(2).unwrap();
    assert_eq!(programs(&*d), before + 1, "a commit programs its last page, nothing else");
    assert_eq!((read(&mut *d, 3), read(&mut *d, 4)), (0xB1, 0xB2));
    let s = d.stats();
    assert_eq!((s.commits, s.aborts), (1, 1));
}

#[test]
fn open_transactions_may_write_the_same_page_and_commit_order_decides() {
    let mut d = device(0);
    d.begin(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(1, 7, &page(&*d, 1)).unwrap();
    d.write_tx(2, 7, &page(&*d, 2)).unwrap();
    d.write_tx(1, 8, &page(&*d, 1)).unwrap();
    d.write_tx(2, 8, &page(&*d, 2)).unwrap();
    d.commit(2).unwrap();
    assert_eq!(read(&mut *d, 7), 2);
    d.commit(1).unwrap();
    assert_eq!((read(&mut *d, 7), read(&mut *d, 8)), (1, 1), "the later commit wins");
    // After a power cut, recovery redoes both in commit order.
    let nand = d.into_nand();
    let mut d = mount("lighttx", nand, FtlConfig::default(), &opts(0)).unwrap();
    assert_eq!((read(&mut *d, 7), read(&mut *d, 8)), (1, 1));
    assert_eq!(d.recovery_report().unwrap().protocol_updates_applied, 4);
}

#[test]
fn a_host_id_names_one_open_transaction() {
    let mut d = device(0);
    d.begin(5).unwrap();
    assert!(matches!(d.begin(5), Err(DeviceError::TransactionExists(5))));
    assert!(matches!(d.begin(0), Err(DeviceError::InvalidTransactionId)));
    assert!(matches!(d.commit(6), Err(DeviceError::UnknownTransaction(6))));
    d.commit(5).unwrap();
    d.begin(5).unwrap(); // the host may reuse it once it ended
}

/// Recovery reads the Available Zone (the framework's roll-forward) and the
/// Unavailable Zone the checkpoint recorded, and nothing else: a transaction
/// open across a zone slide that commits after it is redone whole.
#[test]
fn a_transaction_open_across_zone_slides_is_recovered_from_both_zones() {
    // The commit must land before the next slide (one would make it durable
    // in the L2P and leave recovery nothing to do): take the first length
    // whose commit does not end with a checkpoint.
    let (mut d, n) = (35..60)
        .map(|n| (open_across_slides(device(1), n), n))
        .find(|(d, _)| d.stats().checkpoints == CKPTS.with(|c| c.get()))
        .expect("some length commits between two slides");
    assert!(d.stats().protocol_records_with_open_tx > 0, "{:?}", d.stats());
    let nand = std::mem::replace(&mut d, device(1)).into_nand();
    let mut d = mount("lighttx", nand, FtlConfig::default(), &opts(1)).unwrap();
    let r = d.recovery_report().unwrap();
    assert!(r.protocol_blocks_scanned > 0 && r.protocol_pages_scanned > 0, "{r:?}");
    assert_eq!(r.protocol_updates_applied, n as u64, "{r:?}");
    for lpn in 0..n {
        assert_eq!(read(&mut *d, lpn), 0x11, "lpn {lpn}");
    }
}

thread_local! {
    /// Checkpoints before the last `open_across_slides` committed.
    static CKPTS: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// One transaction of `n` pages, with plain writes in between that make the
/// zones slide under it (a zone of one block), then its commit.
fn open_across_slides(mut d: Box<dyn AnyDevice>, n: u32) -> Box<dyn AnyDevice> {
    d.begin(1).unwrap();
    for lpn in 0..n {
        d.write_tx(1, lpn, &page(&*d, 0x11)).unwrap();
        d.write(100 + lpn % 10, &page(&*d, lpn as u8)).unwrap();
    }
    CKPTS.with(|c| c.set(d.stats().checkpoints));
    d.commit(1).unwrap();
    d
}

#[test]
fn the_canary_loses_a_commit_spanning_a_zone_slide() {
    let canary = || {
        let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        format("lighttx-canary", nand, FtlConfig::default(), &opts(1)).unwrap()
    };
    let (d, n) = (35..60)
        .map(|n| (open_across_slides(canary(), n), n))
        .find(|(d, _)| d.stats().checkpoints == CKPTS.with(|c| c.get()))
        .expect("some length commits between two slides");
    let d = mount("lighttx-canary", d.into_nand(), FtlConfig::default(), &opts(1)).unwrap();
    assert_eq!(
        d.recovery_report().unwrap().protocol_updates_applied,
        0,
        "the whole commit is lost ({n} pages)"
    );
}

/// The paper's zones bound what recovery reads beyond the checkpoint: the
/// blocks pre-allocated at the last slide and those open then, whatever the
/// device's size. The interval variant reads page 0 of every free block.
#[test]
fn recovery_reads_the_available_zone_and_no_free_block() {
    let scanned = |variant: &ProtocolOptions| {
        let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let mut d = format("lighttx", nand, FtlConfig::default(), variant).unwrap();
        for lpn in 0..40 {
            d.write(lpn, &page(&*d, 7)).unwrap();
        }
        let nand = d.into_nand();
        let d = mount("lighttx", nand, FtlConfig::default(), variant).unwrap();
        d.recovery_report().unwrap().blocks_scanned
    };
    let geo = preset("tiny").unwrap().geometry;
    let zone = 2;
    let paper = scanned(&opts(zone));
    // The ready blocks, and at most one open block per stream and unit.
    assert!(paper <= (zone + 2 * geo.unit_count()) as u64, "{paper} blocks read");
    let interval = scanned(&opts(zone).with("interval-zones", 1));
    assert!(interval > 4 * paper, "interval variant {interval} blocks, paper's zones {paper}");
}
