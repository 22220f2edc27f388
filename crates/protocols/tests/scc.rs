//! SCC, scenario by scenario (the crash contract is in txftl-harness's
//! crash tests): what each command programs, the forced erase, the isolation
//! it refuses, and the whole-device scan at recovery.

use std::collections::BTreeSet;
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn device(protocol: &str) -> Box<dyn AnyDevice> {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format(protocol, nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

/// Power loss: DRAM is gone, the NAND is mounted again.
fn power_cycle(d: Box<dyn AnyDevice>, protocol: &str) -> Box<dyn AnyDevice> {
    mount(protocol, d.into_nand(), FtlConfig::default(), &ProtocolOptions::default()).unwrap()
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
fn a_cycle_commits_and_an_open_chain_does_not() {
    let mut d = device("scc");
    let programs = |d: &dyn AnyDevice| d.stats().flash_programs;
    d.begin(1).unwrap();
    let p0 = programs(&*d);
    d.write_tx(1, 3, &page(&*d, 0xA1)).unwrap();
    assert_eq!(programs(&*d), p0, "the first page waits for its link");
    d.write_tx(1, 4, &page(&*d, 0xA2)).unwrap();
    assert_eq!(programs(&*d), p0 + 1, "the next write programs it, linking to the new page");
    d.commit(1).unwrap();
    assert_eq!(programs(&*d), p0 + 2, "the commit programs the last page, linking to the first");
    assert_eq!((read(&mut *d, 3), read(&mut *d, 4)), (0xA1, 0xA2));

    // Open at the power loss: its first page is on flash, linking to a page that is not.
    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&*d, 0xB1)).unwrap();
    d.write_tx(2, 5, &page(&*d, 0xB2)).unwrap();
    let mut d = power_cycle(d, "scc");
    assert_eq!((read(&mut *d, 3), read(&mut *d, 4), read(&mut *d, 5)), (0xA1, 0xA2, 0));
}

/// An aborted transaction's page links to a page it never programmed; once
/// a newer version of that page exists, the gap would look explained. SCC
/// erases the aborted transaction first; the canary does not, and recovery
/// then brings the aborted page back.
#[test]
fn an_uncommitted_transaction_is_erased_before_a_newer_version_is_written() {
    for (protocol, forced, after_crash) in [("scc", 1, 0x11), ("scc-canary", 0, 0xA1)] {
        let mut d = device(protocol);
        for lpn in 0..40 {
            d.write(lpn, &page(&*d, 0x11)).unwrap();
        }
        d.begin(1).unwrap();
        d.write_tx(1, 3, &page(&*d, 0xA1)).unwrap();
        d.write_tx(1, 4, &page(&*d, 0xA2)).unwrap(); // programs lpn 3's page, linking to lpn 4
        d.abort(1).unwrap();
        assert_eq!(d.stats().protocol.get("forced_erases"), 0, "an abort programs and erases nothing");
        d.write(4, &page(&*d, 0x44)).unwrap();
        let s = d.stats();
        assert_eq!(s.protocol.get("forced_erases"), forced, "{protocol}: {s:?}");
        if forced > 0 {
            assert!(
                s.protocol.get("forced_erase_moves") > 0,
                "the block's valid pages are moved first: {s:?}"
            );
        }
        assert_eq!((read(&mut *d, 3), read(&mut *d, 4)), (0x11, 0x44));
        let mut d = power_cycle(d, protocol);
        assert_eq!(read(&mut *d, 4), 0x44);
        assert_eq!(read(&mut *d, 3), after_crash, "{protocol}");
    }
}

#[test]
fn a_page_another_open_transaction_wrote_is_refused_and_trim_too() {
    let mut d = device("scc");
    d.begin(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(1, 5, &page(&*d, 1)).unwrap();
    let refused = |r: Result<u64, DeviceError>| matches!(r, Err(DeviceError::IsolationUnsupported { protocol: "scc", .. }));
    assert!(refused(d.write_tx(2, 5, &page(&*d, 2))));
    assert!(refused(d.write(5, &page(&*d, 3))));
    d.write_tx(2, 6, &page(&*d, 2)).unwrap(); // no conflict: no-page-conflict isolation
    d.write_tx(1, 5, &page(&*d, 4)).unwrap(); // its own page again
    d.commit(1).unwrap();
    d.write_tx(2, 5, &page(&*d, 5)).unwrap();
    d.commit(2).unwrap();
    assert_eq!((read(&mut *d, 5), read(&mut *d, 6)), (5, 2));
    assert!(matches!(d.trim(5), Err(DeviceError::Unsupported { protocol: "scc", .. })));
}

/// No mapping table of its own: recovery reads every block holding data,
/// not only those written since the last checkpoint.
#[test]
fn recovery_scans_every_block_in_use() {
    let mut d = device("scc");
    let n = d.info().logical_pages / 2;
    for lpn in 0..n {
        d.write(lpn, &page(&*d, 7)).unwrap();
    }
    d.flush().unwrap();
    let nand = d.close().unwrap(); // a clean shutdown: checkpoint written, nothing to roll forward
    let d = mount("scc", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let geo = *d.nand().geometry();
    let in_use: BTreeSet<u32> = (0..n).filter_map(|l| d.mapping(l)).map(|p| geo.block_of(p)).collect();
    let r = d.recovery_report().unwrap();
    assert!(
        r.protocol_blocks_scanned as usize >= in_use.len() && r.protocol_pages_scanned >= n as u64,
        "{} blocks hold data, recovery read {} of them ({} pages): {r:?}",
        in_use.len(),
        r.protocol_blocks_scanned,
        r.protocol_pages_scanned
    );
    assert_eq!(r.protocol_updates_applied, n as u64, "every mapping comes from the scan");
}

/// SCC and BPCC keep no mapping table (LightTx Fig. 9 gives them no
/// mapping-persistence writes): their checkpoints write block-table pages
/// and records but no L2P page, and a mount after a power loss (DRAM gone)
/// maps every logical page again from the whole-device scan alone, through
/// GC and checkpoints. `plain`, which persists its L2P, is the control: the
/// same run writes L2P pages.
#[test]
fn checkpoints_write_no_l2p_page_and_recovery_maps_every_page_from_the_scan() {
    for protocol in ["scc", "bpcc", "plain"] {
        let mut d = device(protocol);
        let pages = 120u32;
        let mut expect = vec![0u8; pages as usize];
        // A fixed LCG: deterministic, no dependency.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let mut next = |m: u32| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((x >> 33) % m as u64) as u32
        };
        for round in 0..1500u32 {
            let tag = (round % 250) as u8 + 1;
            if protocol == "plain" || round % 3 == 0 {
                let lpn = next(pages);
                d.write(lpn, &page(&*d, tag)).unwrap();
                expect[lpn as usize] = tag;
                continue;
            }
            let tid = round + 1;
            d.begin(tid).unwrap();
            let mut lpns = BTreeSet::new();
            while lpns.len() < 3 {
                lpns.insert(next(pages));
            }
            for &lpn in &lpns {
                d.write_tx(tid, lpn, &page(&*d, tag)).unwrap();
            }
            if round % 7 == 0 {
                d.abort(tid).unwrap();
            } else {
                d.commit(tid).unwrap();
                for &lpn in &lpns {
                    expect[lpn as usize] = tag;
                }
            }
        }
        d.flush().unwrap();
        d.check_invariants().unwrap();
        let s = d.stats();
        assert!(s.gc_runs > 0 && s.checkpoints > 2 && s.map_block_writes > 0, "{protocol}: {s:?}");
        assert_eq!(
            s.map_writes,
            s.map_l2p_writes + s.map_block_writes + s.map_record_writes,
            "{protocol}"
        );
        if protocol == "plain" {
            assert!(s.map_l2p_writes > 0, "the control persists its L2P: {s:?}");
        } else {
            assert_eq!(s.map_l2p_writes, 0, "{protocol}: no mapping table on flash: {s:?}");
        }
        let mut d = power_cycle(d, protocol);
        d.check_invariants().unwrap();
        for lpn in 0..pages {
            assert_eq!(read(&mut *d, lpn), expect[lpn as usize], "{protocol}: lpn {lpn} after the remount");
        }
        // Once more, from the checkpoint the first mount sealed.
        let mut d = power_cycle(d, protocol);
        for lpn in 0..pages {
            assert_eq!(
                read(&mut *d, lpn),
                expect[lpn as usize],
                "{protocol}: lpn {lpn} after the second remount"
            );
        }
    }
}

/// The framework's side of an unpersisted mapping table (`Mapping::PERSISTED`
/// false, SCC's `Unpersisted`): without L2P persistence a
/// trim is refused by the FTL itself (no checkpoint could make it durable),
/// and a protocol that persists no L2P but rebuilds none from the scan is
/// refused at format.
#[test]
fn without_l2p_persistence_the_framework_refuses_trims_and_protocols_that_scan_nothing() {
    use txftl_ftl::{Capabilities, EventHooks, Ftl, GcHooks, Hooks, PersistHooks, RecoveryHooks, Unpersisted};
    use txftl_protocols::scc::SccHooks;
    let nand = || Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let n = nand();
    let hooks = SccHooks::new(n.geometry(), false);
    let mut ftl = Ftl::format(n, FtlConfig::default(), hooks).unwrap();
    assert!(matches!(ftl.trim_page(3), Err(DeviceError::Unsupported { protocol: "scc", .. })));

    struct NoTableNoScan;
    impl Hooks for NoTableNoScan {
        type Mapping = Unpersisted;
        const CAPABILITIES: Capabilities = Capabilities::NONE;
        fn name(&self) -> &'static str {
            "no-table-no-scan"
        }
    }
    impl GcHooks for NoTableNoScan {}
    impl PersistHooks for NoTableNoScan {}
    impl RecoveryHooks for NoTableNoScan {}
    impl EventHooks for NoTableNoScan {}
    assert!(matches!(
        Ftl::format(nand(), FtlConfig::default(), NoTableNoScan),
        Err(DeviceError::Config(_))
    ));
}
