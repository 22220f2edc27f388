//! Exhaustive crash tests of BPCC (TxFlash's back-pointer-assisted cyclic
//! commit) on the tiny geometry, every flash operation with every torn
//! variant: concurrent transactions with aborts; long transactions across GC
//! and checkpoints; aborted versions of pages written again by later
//! transactions (back pointers straddling them) under GC pressure, so GC
//! must move pinned pages; and the canary, which lets GC erase them.

mod common;
#[path = "common/cyclic.rs"]
mod cyclic;
use cyclic::shape;
use std::collections::BTreeSet;
use txftl_ftl::{DeviceError, Ftl};
use txftl_harness::model::TxModel;
use txftl_harness::run::{Driver, Outcome};
use txftl_harness::{CrashSpec, Expect, OpStream, TxShape};
use txftl_nand::{PowerCut, Torn};
use txftl_protocols::bpcc::{Bpcc, BpccHooks};

/// No forced erases: that is SCC's cost, not BPCC's (`cyclic::spec` has
/// what every scenario must show).
fn spec(protocol: &str, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    cyclic::spec(protocol, ops, fill_pct, tx, recovery_cuts, &[])
}

#[test]
fn three_open_transactions_with_aborts() {
    let mut s = spec("bpcc", 300, 90, shape(5, 30, 3, 0), true);
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    common::run_clean(&s);
}

#[test]
fn long_transactions_across_gc_and_checkpoints() {
    let mut s = common::sampled(spec("bpcc", 250, 90, shape(20, 20, 2, 0), false), 1);
    s.expect.push(Expect::Device("checkpoints"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    let r = common::run_clean(&s);
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
}

/// A small working set rewritten inside and across transactions: aborted
/// versions are written again by later transactions (their back pointers
/// straddle them) and GC, under pressure, moves the pinned straddlers;
/// writes to a page another open transaction wrote are refused.
#[test]
fn aborted_pages_rewritten_under_gc_pressure() {
    let mut s = spec("bpcc", 600, 30, shape(8, 50, 2, 30), false);
    s.expect.push(Expect::CrossTxUpdates);
    s.expect.push(Expect::Protocol("gc_pinned_copies"));
    common::run_clean(&s);
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation. What a mount rebuilds in DRAM (BPCC: each page's newest
/// committed version, which back pointers name) is tested only this way:
/// committed versions rebuilt from sequence numbers instead survive every
/// single cut, and after a second cut an older version comes back (445
/// violations here).
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("bpcc", 60, 30, shape(4, 30, 1, 0), false);
    // Too short for GC or a checkpoint (whose blocks recovery would read).
    s.expect.retain(|&e| e != Expect::Device("gc_runs") && e != Expect::ZoneScans);
    common::run_every_second_cut(s);
}

/// The canary lets GC erase a pinned page: an aborted transaction's gap
/// then looks explained by a newer version that does not straddle it. It
/// shows when a transaction of two pages aborts, its second (never
/// programmed) page is written again twice, the first of those is erased,
/// and its first page is still the newest version of its page: short
/// transactions, half of them aborted, a working set GC keeps busy.
#[test]
fn canary_is_caught() {
    // 2,400 operations at 50% fill: the sequence above takes luck, and at
    // 600 operations and 60% fill only 4 seeds of 8 met it (at 60% fill
    // seed 4 never does, even over 3,000 operations).
    common::assert_caught_at_every_seed(&spec("bpcc-canary", 2400, 50, shape(2, 50, 3, 0), false));
}

/// Six-page transactions, half aborted, three open at once, every cut
/// inside each recovery too: GC moves pinned pages of dead transactions,
/// checkpoints run with transactions open. A GC
/// copy of a dead transaction's pinned page not recorded as a copy of its
/// version (planted in `on_relocate`) shows only here among the sets: 52
/// violations of 3,031 crash points, an aborted version of lpn 6 back after
/// recovery.
#[test]
fn six_page_transactions_half_aborted_with_pinned_copies() {
    let mut s = spec("bpcc", 600, 60, shape(6, 50, 3, 0), true);
    s.expect.push(Expect::Device("checkpoints"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    s.expect.push(Expect::Protocol("gc_pinned_copies"));
    common::run_clean(&s);
}

/// A block whose pages are all unmapped but pinned (straddlers of aborted
/// versions) must not become reclaimable at a mount. Recovery once set
/// every block without a mapped page prefree, so the pool could hand it
/// out and erase it: a cut inside that mount's own writes, and the rerun
/// found the straddler gone and an aborted version of lpn 61 committed
/// (`txftl crashtest --protocol bpcc --workload txwrite --seed 1
/// --trim-pct 0 --nontx-pct 10 --ops 600 --fill 60 --pages-per-tx 6
/// --abort-ratio 0.5 --concurrency 3 --at 397 --torn data`: 1 violation
/// before the fix, 11 in the whole enumeration). The crash point replayed,
/// with every cut inside its recovery.
#[test]
fn a_block_of_pinned_pages_outlives_the_mount() {
    let mut s = spec("bpcc", 600, 60, shape(6, 50, 3, 0), true);
    s.torn = vec![Torn::Data];
    s.only = Some((397, Torn::Data));
    // A test pinned to a crash-point number tests nothing if the numbering
    // moves: the mount after this cut must really find the block it is about.
    let blocks = unmapped_blocks_of_pinned_pages_at_mount(&s, 397, Torn::Data);
    assert!(
        !blocks.is_empty(),
        "point 397 no longer leaves a block of pinned, unmapped pages at the mount: find the point that does"
    );
    let r = common::run_clean(&s);
    assert!(r.recovery_crash_points > 0, "{}", r.recovery_crash_points);
    assert!(r.dry_run.protocol.get("gc_pinned_copies") > 0, "{:?}", r.dry_run);
}

/// Runs `s`'s workload with power cut at flash operation `at` (torn as
/// `torn`), mounts the NAND alone, and returns the blocks holding pinned
/// pages but no page the mapping points to: the blocks a mount must not
/// make reclaimable.
fn unmapped_blocks_of_pinned_pages_at_mount(s: &CrashSpec, at: u64, torn: Torn) -> Vec<u32> {
    let mut dev = s.device.fresh().unwrap();
    let base = dev.nand().op_count();
    dev.nand_mut().arm_power_cut(PowerCut {
        at_op: base + at,
        torn,
        seed: s.workload.seed,
    });
    let info = dev.info();
    let mut model = TxModel::new(info.logical_pages);
    let mut driver = Driver::new(info.page_size, true);
    let mut stream = OpStream::new(s.workload, info.logical_pages);
    while let Some(op) = stream.next() {
        match driver.apply(&mut *dev, op, &mut model) {
            Err(DeviceError::PowerLoss) => break,
            Ok(Outcome::TableFullAborted(tid)) => stream.forget(tid),
            _ => {}
        }
    }
    assert!(!dev.nand().is_powered(), "the cut at {at} never came");
    let mut nand = dev.into_nand();
    nand.power_off();
    nand.power_on();
    let geo = *nand.geometry();
    let hooks = BpccHooks::new(&geo, false);
    let d = Bpcc::new(Ftl::mount(nand, s.device.ftl.clone(), hooks).unwrap());
    let mapped: BTreeSet<u32> = (0..info.logical_pages)
        .filter_map(|lpn| d.ftl().mapping(lpn))
        .map(|ppn| ppn / geo.pages_per_block)
        .collect();
    let pinned: BTreeSet<u32> = d
        .ftl()
        .hooks()
        .pinned_at()
        .iter()
        .map(|&(ppn, _)| ppn / geo.pages_per_block)
        .collect();
    pinned.difference(&mapped).copied().collect()
}

/// Summary pages on (`summary-pages=1`): every data block's last page
/// holds its other pages' OOB records, written once they are all
/// programmed, host and GC blocks alike. GC moves pages out of blocks
/// with summaries, recovery reads blocks full at the checkpoint by their
/// summary alone, and every cut (a summary page's program among them, with
/// every torn variant) is also cut inside its recovery.
#[test]
fn summary_pages_under_gc_with_recovery_cuts() {
    cyclic::summary_pages_under_gc(spec("bpcc", 300, 90, shape(5, 30, 3, 0), true));
}

#[test]
fn summary_pages_torn_then_read_after_a_second_cut() {
    cyclic::summary_pages_torn_after_a_second_cut(spec("bpcc", 300, 90, shape(5, 30, 3, 0), false));
}

#[test]
fn summary_canary_is_caught() {
    cyclic::summary_canary_is_caught(spec("bpcc", 300, 90, shape(5, 30, 3, 0), false));
}
