//! BPCC, scenario by scenario (the crash contract is in txftl-harness's
//! crash tests): the cycle, the back pointer that makes an aborted version
//! safe to leave on flash (no forced erase), the pinned page GC must move
//! while that version is there, the isolation it refuses, and the
//! whole-device scan at recovery.

mod common;
use common::{page, reads as read};
use std::collections::BTreeSet;
use txftl_ftl::{Device, DeviceError, Ftl, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::bpcc::{Bpcc, BpccHooks};
use txftl_protocols::{entry, mount, AnyDevice, ProtocolOptions};

fn nand() -> Nand {
    Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

fn device(canary: bool) -> Bpcc {
    let n = nand();
    let hooks = BpccHooks::new(n.geometry(), canary);
    Bpcc::new(Ftl::format(n, FtlConfig::default(), hooks).unwrap())
}

fn name(canary: bool) -> &'static str {
    if canary {
        "bpcc-canary"
    } else {
        "bpcc"
    }
}

/// Power loss: DRAM is gone, the NAND is mounted again.
fn power_cycle(d: Bpcc, canary: bool) -> Bpcc {
    let n = Box::new(d).into_nand();
    let hooks = BpccHooks::new(n.geometry(), canary);
    Bpcc::new(Ftl::mount(n, FtlConfig::default(), hooks).unwrap())
}

#[test]
fn a_cycle_commits_and_an_open_chain_does_not() {
    let mut d = device(false);
    let programs = |d: &Bpcc| d.stats().flash_programs;
    d.begin(1).unwrap();
    let p0 = programs(&d);
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    assert_eq!(programs(&d), p0, "the first page waits for its link");
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap();
    assert_eq!(programs(&d), p0 + 1, "the next write programs it, linking to the new page");
    d.commit(1).unwrap();
    assert_eq!(programs(&d), p0 + 2, "the commit programs the last page, linking to the first");
    assert_eq!((read(&mut d, 3), read(&mut d, 4)), (0xA1, 0xA2));

    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&d, 0xB1)).unwrap();
    d.write_tx(2, 5, &page(&d, 0xB2)).unwrap();
    let mut d = power_cycle(d, false);
    assert_eq!((read(&mut d, 3), read(&mut d, 4), read(&mut d, 5)), (0xA1, 0xA2, 0));
    assert_eq!(
        d.ftl().hooks().recovered_uncommitted,
        1,
        "the open transaction's page is found, uncommitted"
    );
}

/// An aborted transaction's page links to a page it never programmed. SCC
/// erases it before the next version of that page; BPCC writes the next
/// version at once, its back pointer straddling the aborted one, and pins
/// it while the aborted page is on flash. A later version points back to
/// the committed one and straddles nothing.
#[test]
fn a_newer_version_straddles_the_aborted_one_instead_of_a_forced_erase() {
    let mut d = device(false);
    for lpn in 0..40 {
        d.write(lpn, &page(&d, 0x11)).unwrap();
    }
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap(); // programs lpn 3's page, linking to lpn 4
    let programs = d.stats().flash_programs;
    d.abort(1).unwrap();
    assert_eq!(d.stats().flash_programs, programs, "an abort programs nothing");
    assert_eq!(d.ftl().hooks().dead_transactions(), 1);
    assert_eq!(d.ftl().hooks().pinned_pages(), 0);
    d.write(4, &page(&d, 0x44)).unwrap();
    assert_eq!(d.ftl().hooks().pinned_pages(), 1, "its back pointer straddles the aborted lpn 4");
    d.write(4, &page(&d, 0x45)).unwrap();
    assert_eq!(
        d.ftl().hooks().pinned_pages(),
        1,
        "the next points back to 0x44: it straddles nothing"
    );
    d.write(3, &page(&d, 0x33)).unwrap();
    assert_eq!(d.ftl().hooks().pinned_pages(), 2, "lpn 3's aborted version is straddled too");
    let s = d.stats();
    assert_eq!(s.flash_erases, 0, "{s:?}");
    let mut d = power_cycle(d, false);
    assert_eq!((read(&mut d, 3), read(&mut d, 4)), (0x33, 0x45));
    assert_eq!(
        d.ftl().hooks().pinned_pages(),
        2,
        "recovery pins them again from their back pointers"
    );
    assert_eq!(d.ftl().hooks().dead_transactions(), 1);
}

/// GC under pressure: the aborted page sits in a block of cold valid pages,
/// the page straddling it among hot pages rewritten at random until GC takes
/// their blocks. BPCC moves the straddler (counted); the canary lets GC
/// erase it, and recovery then takes the aborted page for committed: the
/// newer versions of the hot page explain its cycle's gap.
#[test]
fn gc_moves_a_pinned_page_and_the_canary_loses_it() {
    for canary in [false, true] {
        let mut d = device(canary);
        let n = d.info().logical_pages;
        let cold = n / 4;
        let (aborted, hot) = (cold, cold + 1);
        for lpn in 0..cold / 2 {
            d.write(lpn, &page(&d, 0x11)).unwrap();
        }
        d.begin(1).unwrap();
        d.write_tx(1, aborted, &page(&d, 0xA1)).unwrap();
        d.write_tx(1, hot, &page(&d, 0xA2)).unwrap(); // programs `aborted`, linking to `hot`
        d.abort(1).unwrap();
        for lpn in cold / 2..cold {
            d.write(lpn, &page(&d, 0x11)).unwrap();
        }
        d.write(hot, &page(&d, 0x44)).unwrap(); // the straddler
        let mut x: u64 = 12345;
        for i in 0..(20 * n) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let lpn = hot + (x >> 33) as u32 % (n - hot);
            d.write(lpn, &page(&d, i as u8)).unwrap();
        }
        let s = d.stats();
        assert!(s.gc_copies > 0, "{s:?}");
        let mut d = power_cycle(d, canary);
        if canary {
            assert_eq!(s.protocol.get("gc_pinned_copies"), 0);
            assert_eq!(read(&mut d, aborted), 0xA1, "the canary brings the aborted page back");
        } else {
            assert!(s.protocol.get("gc_pinned_copies") > 0, "GC moved the straddler: {s:?}");
            assert_eq!(read(&mut d, aborted), 0, "the aborted page stays aborted");
        }
    }
}

/// Once the aborted transaction's pages are erased, nothing is pinned.
#[test]
fn pins_are_released_when_the_aborted_pages_are_gone() {
    let mut d = device(false);
    let n = d.info().logical_pages;
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap();
    d.abort(1).unwrap();
    d.write(4, &page(&d, 0x44)).unwrap();
    assert_eq!(d.ftl().hooks().pinned_pages(), 1);
    for round in 0..12u8 {
        for lpn in 0..n {
            d.write(lpn, &page(&d, round)).unwrap();
        }
    }
    let h = d.ftl().hooks();
    assert_eq!((h.dead_transactions(), h.pinned_pages()), (0, 0));
    assert!(d.stats().gc_runs > 0);
}

/// Pins go at the erase itself (`EventHooks::on_erase`), not when the block is
/// programmed again; and not before the straddled version is unguarded:
/// while its page or the page linking to it is on flash, recovery must see
/// it straddled.
#[test]
fn pins_are_released_at_the_erase_that_unguards_their_version() {
    let mut d = device(false);
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap();
    d.write_tx(1, 5, &page(&d, 0xA3)).unwrap(); // lpns 3 and 4 programmed, 5 cached
    d.abort(1).unwrap();
    d.write(4, &page(&d, 0x44)).unwrap(); // straddles the aborted lpn 4
    assert_eq!(d.ftl().hooks().pinned_pages(), 1);
    let geo = *d.ftl().nand().geometry();
    let blocks: BTreeSet<u32> = d.ftl().hooks().dead_pages().iter().map(|&p| geo.block_of(p)).collect();
    assert_eq!(blocks.len(), 2, "the host stream stripes the two aborted pages over two blocks");
    let (first, last) = (*blocks.first().unwrap(), *blocks.last().unwrap());
    assert!(d.ftl_mut().reclaim_block(first).unwrap());
    let h = d.ftl().hooks();
    assert_eq!(
        (h.dead_transactions(), h.dead_pages().len(), h.pinned_pages()),
        (1, 1, 1),
        "a page of the transaction is still on flash: the straddler stays pinned"
    );
    assert!(d.ftl_mut().reclaim_block(last).unwrap());
    let h = d.ftl().hooks();
    assert_eq!(
        (h.dead_transactions(), h.pinned_pages()),
        (0, 0),
        "released at the erase, before either block is programmed again"
    );
    let mut d = power_cycle(d, false);
    assert_eq!(d.ftl().hooks().pinned_pages(), 0, "recovery finds nothing to pin either");
    assert_eq!((read(&mut d, 3), read(&mut d, 4)), (0, 0x44));
}

/// A pinned page that is its logical page's committed version is mapped:
/// GC counts it live once (valid), not again as a protocol page, or a block
/// of such pages would look fuller than it is; once a newer version
/// commits, the L2P drops it and the pin alone keeps it.
#[test]
fn a_pinned_committed_page_is_counted_live_once() {
    use txftl_ftl::GcHooks;
    let mut d = device(false);
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap();
    d.abort(1).unwrap();
    d.write(4, &page(&d, 0x44)).unwrap(); // committed, mapped, and pinned
    let straddler = d.ftl().mapping(4).unwrap();
    assert_eq!(d.ftl().hooks().pinned_pages(), 1);
    let count = |d: &Bpcc| d.ftl().hooks().extra_live_count(straddler, straddler + 1);
    assert_eq!(count(&d), 0, "mapped: the valid count has it");
    d.write(4, &page(&d, 0x45)).unwrap(); // a newer committed version
    assert_ne!(d.ftl().mapping(4), Some(straddler));
    assert_eq!(count(&d), 1, "no longer mapped, still pinned");
}

/// GC's own erase (a victim erased when the pool hands it out again)
/// releases the pins in the same call: by the time a block that held the
/// aborted pages shows a higher erase count, nothing is pinned for them.
#[test]
fn gc_erasing_the_aborted_pages_releases_their_pins() {
    let mut d = device(false);
    let n = d.info().logical_pages;
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap();
    d.abort(1).unwrap();
    d.write(4, &page(&d, 0x44)).unwrap();
    assert_eq!(d.ftl().hooks().pinned_pages(), 1);
    let geo = *d.ftl().nand().geometry();
    let block = geo.block_of(d.ftl().hooks().dead_pages()[0]);
    let before = d.ftl().erase_counts()[block as usize];
    let mut erased_at = None;
    'fill: for round in 0..12u8 {
        for lpn in (0..n).filter(|&l| l != 4) {
            d.write(lpn, &page(&d, round)).unwrap();
            if d.ftl().erase_counts()[block as usize] > before {
                erased_at = Some(lpn);
                break 'fill;
            }
        }
    }
    assert!(erased_at.is_some(), "GC erased the block within 12 rounds");
    let h = d.ftl().hooks();
    assert_eq!((h.dead_transactions(), h.pinned_pages()), (0, 0));
    assert!(d.stats().gc_runs > 0);
}

#[test]
fn a_page_another_open_transaction_wrote_is_refused_and_trim_too() {
    let mut d = device(false);
    d.begin(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(1, 5, &page(&d, 1)).unwrap();
    let refused = |r: Result<u64, DeviceError>| matches!(r, Err(DeviceError::IsolationUnsupported { protocol: "bpcc", .. }));
    assert!(refused(d.write_tx(2, 5, &page(&d, 2))));
    assert!(refused(d.write(5, &page(&d, 3))));
    d.write_tx(2, 6, &page(&d, 2)).unwrap(); // no conflict: no-page-conflict isolation
    d.write_tx(1, 5, &page(&d, 4)).unwrap(); // its own page again
    d.commit(1).unwrap();
    d.write_tx(2, 5, &page(&d, 5)).unwrap();
    d.commit(2).unwrap();
    assert_eq!((read(&mut d, 5), read(&mut d, 6)), (5, 2));
    assert!(matches!(d.trim(5), Err(DeviceError::Unsupported { protocol: "bpcc", .. })));
    for canary in [false, true] {
        assert_eq!(entry(name(canary)).unwrap().isolation, &["strict", "no-page-conflict"]);
    }
}

/// A page written twice inside one transaction: the second version's back
/// pointer passes over the first, which is the same transaction's, not an abort.
#[test]
fn a_re_update_inside_a_transaction_commits() {
    let mut d = device(false);
    d.write(7, &page(&d, 0x10)).unwrap();
    d.begin(1).unwrap();
    d.write_tx(1, 7, &page(&d, 0x71)).unwrap();
    d.write_tx(1, 8, &page(&d, 0x81)).unwrap();
    d.write_tx(1, 7, &page(&d, 0x72)).unwrap();
    d.commit(1).unwrap();
    let mut d = power_cycle(d, false);
    assert_eq!((read(&mut d, 7), read(&mut d, 8)), (0x72, 0x81));
    assert_eq!(d.ftl().hooks().pinned_pages(), 0);
}

/// No mapping table of its own: recovery reads every block holding data.
#[test]
fn recovery_scans_every_block_in_use() {
    let mut d = device(false);
    let n = d.info().logical_pages / 2;
    for lpn in 0..n {
        d.write(lpn, &page(&d, 7)).unwrap();
    }
    d.flush().unwrap();
    let nand = Box::new(d).close().unwrap();
    let d = mount("bpcc", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let geo = *d.nand().geometry();
    let in_use: BTreeSet<u32> = (0..n).filter_map(|l| d.mapping(l)).map(|p| geo.block_of(p)).collect();
    let r = d.recovery_report().unwrap();
    assert!(
        r.protocol_blocks_scanned as usize >= in_use.len() && r.protocol_pages_scanned >= n as u64,
        "{r:?}"
    );
    assert_eq!(r.protocol_updates_applied, n as u64, "every mapping comes from the scan");
}

/// A straddler is released once the version it straddles is unguarded (its
/// page and the page linking to it erased), though other pages of the
/// aborted transaction are still on flash; the straddlers of the versions
/// those pages guard stay pinned, after a power cut too.
#[test]
fn a_straddler_goes_with_its_versions_guards_not_with_the_whole_transaction() {
    let mut d = device(false);
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 4, &page(&d, 0xA2)).unwrap();
    d.write_tx(1, 5, &page(&d, 0xA3)).unwrap(); // 3 -> 4 programmed, 5 cached
    d.abort(1).unwrap();
    for (lpn, tag) in [(5, 0x55), (4, 0x44), (3, 0x33)] {
        d.write(lpn, &page(&d, tag)).unwrap(); // each straddles the aborted version of its page
    }
    assert_eq!(d.ftl().hooks().pinned_pages(), 3);
    let geo = *d.ftl().nand().geometry();
    let dead = d.ftl().hooks().dead_pages();
    let of = |lpn| {
        let p = *dead.iter().find(|&&p| d.ftl().hooks().dead_page_lpn(p) == Some(lpn)).unwrap();
        geo.block_of(p)
    };
    let (block3, block4) = (of(3), of(4));
    assert_ne!(block3, block4, "the host stream stripes the two aborted pages over two blocks");
    assert!(d.ftl_mut().reclaim_block(block4).unwrap());
    let h = d.ftl().hooks();
    assert_eq!(
        (h.dead_transactions(), h.dead_pages().len(), h.pinned_pages()),
        (1, 1, 2),
        "lpn 5's straddler goes (nothing on flash links to the dropped version any more); \
         lpn 4's stays (lpn 3's aborted page links to it), lpn 3's too"
    );
    let mut d = power_cycle(d, false);
    assert_eq!(d.ftl().hooks().pinned_pages(), 2, "recovery pins the same two");
    assert_eq!((read(&mut d, 3), read(&mut d, 4), read(&mut d, 5)), (0x33, 0x44, 0x55));
    assert!(d.ftl_mut().reclaim_block(block3).unwrap());
    let h = d.ftl().hooks();
    assert_eq!((h.dead_transactions(), h.pinned_pages()), (0, 0));
}

/// GC moves a pinned page of an open transaction that is no longer its
/// newest page of that logical page (it wrote the page again): the copy is
/// one of the transaction's pages on flash, and must be one of the aborted
/// transaction's pages after its abort, as recovery finds it. (A first
/// version followed only the newest pages to their copies, so the aborted
/// version looked gone while its copy was on flash, and its straddlers could
/// be released.)
#[test]
fn a_gc_copy_of_an_older_page_of_an_open_transaction_is_one_of_its_pages() {
    let mut d = device(false);
    let geo = *d.ftl().nand().geometry();
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&d, 0xA1)).unwrap();
    d.write_tx(1, 5, &page(&d, 0xA2)).unwrap(); // lpn 3 programmed
    d.abort(1).unwrap();
    let aborted = d.ftl().hooks().dead_pages();
    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&d, 0xB1)).unwrap();
    d.write_tx(2, 4, &page(&d, 0xB2)).unwrap(); // lpn 3 programmed: it straddles tx 1's
    let pinned = d.ftl().hooks().pinned_at();
    assert_eq!(pinned.len(), 1, "{pinned:?}");
    let (older, older_version) = pinned[0];
    d.write_tx(2, 3, &page(&d, 0xB3)).unwrap(); // lpn 4 programmed, lpn 3 again cached
    d.write_tx(2, 6, &page(&d, 0xB4)).unwrap(); // lpn 3's newer page programmed
    assert_eq!(d.ftl().hooks().pinned_at().len(), 2, "both pages of lpn 3 straddle tx 1's");
    assert!(
        aborted.iter().all(|&p| geo.block_of(p) != geo.block_of(older)),
        "the aborted page must be elsewhere, or the erase would release the pin"
    );
    assert!(d.ftl_mut().reclaim_block(geo.block_of(older)).unwrap());
    let copy = d.ftl().hooks().pinned_at().into_iter().find(|&(_, at)| at == older_version);
    let (copy, _) = copy.expect("the older page was moved, still pinned");
    assert_ne!(geo.block_of(copy), geo.block_of(older));
    d.abort(2).unwrap();
    let runtime = d.ftl().hooks().dead_pages();
    assert!(
        runtime.contains(&copy),
        "the copy {copy} of the older page is one of the aborted pages: {runtime:?}"
    );
    let d = power_cycle(d, false);
    assert_eq!(d.ftl().hooks().dead_pages(), runtime, "recovery finds the same aborted pages");
}
