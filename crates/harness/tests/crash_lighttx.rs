//! Exhaustive crash tests of LightTx on the tiny geometry, every flash
//! operation with every torn variant: concurrent transactions with aborts;
//! transactions straddling zone slides, so that open blocks stay in the
//! Available Zone and recovery must read the Unavailable Zone (both of its
//! cases: live transactions, and dead ones with a page in an open Available
//! block); GC in the Checkpointed Zone while transactions are open in the
//! zones; re-updates of a page inside a transaction and across open
//! transactions; the `interval-zones=1` variant; and the canary, whose zone
//! metadata forgets the Unavailable Zone. Every set is exhaustive, so the
//! zone metadata (the checkpoint record's section) is cut at each of its
//! page programs, torn each way, in every slide the run makes with a
//! transaction open (`RecordsWithOpenTx`).

mod common;
use common::tx_shape as shape;
use txftl_harness::{CrashSpec, DeviceSpec, Expect, TxShape};

/// Every LightTx scenario must commit, run GC, slide its zones with a
/// transaction open (a non-empty Unavailable Zone), make recovery read that
/// zone, and tear pages whose OOB survives; each test adds what it is about.
fn spec(protocol: &str, ops: u64, zone_blocks: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    spec_with(protocol, ops, &[("zone-blocks", zone_blocks)], tx, recovery_cuts)
}

/// `spec` with protocol options (a 0 value: the option left out).
fn spec_with(protocol: &str, ops: u64, opts: &[(&str, u32)], tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    let given: Vec<(&str, u32)> = opts.iter().copied().filter(|o| o.1 > 0).collect();
    let (device, zone) = common::tiny_with_options(protocol, &given);
    let expect = vec![
        Expect::Device("commits"),
        Expect::Device("gc_runs"),
        Expect::TornDataIntactOob,
        Expect::Device("protocol_records_with_open_tx"),
        Expect::ZoneScans,
    ];
    common::txwrite_spec(device, &zone, ops, 90, tx, recovery_cuts, expect)
}

#[test]
fn three_open_transactions_with_aborts() {
    let mut s = spec("lighttx", 300, 0, shape(5, 30, 3, 0), true);
    s.expect.push(Expect::Device("aborts"));
    common::run_clean(&s);
}

#[test]
fn transactions_straddle_zone_slides() {
    // A zone of one block: the zones slide each time the pre-allocated block
    // is used up, so 20-page transactions stay open across several slides;
    // blocks open at a slide stay Available, and dead transactions with a
    // page in one keep their other blocks Unavailable.
    let mut s = spec("lighttx", 250, 1, shape(20, 10, 2, 0), false);
    s.expect.extend([
        Expect::Device("checkpoints"),
        Expect::Protocol("open_blocks_kept"),
        Expect::Protocol("unavailable_for_dead"),
    ]);
    let r = common::run_clean(&s);
    assert!(r.dry_run.checkpoints > 10, "{:?}", r.dry_run);
}

#[test]
fn gc_in_the_checkpointed_zone_while_transactions_are_open() {
    // Nearly full, three transactions open at once: GC victims (from the
    // Checkpointed Zone only) are moved while pages of open transactions lie
    // in the Available and Unavailable Zones, and recovery is cut too.
    let mut s = spec("lighttx", 300, 2, shape(6, 20, 3, 0), true);
    s.workload.fill_pct = 95;
    s.replay_base = s.replay_base.replace(" --fill 90 ", " --fill 95 ");
    s.expect.push(Expect::Protocol("gc_moves_with_open_tx"));
    common::run_clean(&s);
}

#[test]
fn the_interval_zones_variant() {
    let mut s = spec_with(
        "lighttx",
        250,
        &[("zone-blocks", 1), ("interval-zones", 1)],
        shape(20, 10, 2, 0),
        false,
    );
    s.expect.push(Expect::Device("checkpoints"));
    common::run_clean(&s);
}

#[test]
fn several_uncommitted_versions_of_one_page() {
    let mut s = common::sampled(spec("lighttx", 300, 0, shape(8, 10, 3, 40), false), 1);
    s.expect.push(Expect::CrossTxUpdates);
    let r = common::run_clean(&s);
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
    assert!(r.exercised.cross_tx_updates > 10, "{:?}", r.exercised);
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation: the zones and tables a mount rebuilds are tested only so.
#[test]
fn every_second_cut_after_recovery() {
    let expect = vec![
        Expect::Device("commits"),
        Expect::Device("aborts"),
        Expect::Device("protocol_records_with_open_tx"),
        Expect::TornDataIntactOob,
    ];
    let s = common::txwrite_spec(DeviceSpec::tiny("lighttx"), "", 60, 30, shape(4, 30, 2, 0), false, expect);
    common::run_every_second_cut(s);
}

/// The canary's zone metadata records no Unavailable Zone: a transaction open
/// across a slide and committed after it loses the pages it wrote before it.
#[test]
fn canary_is_caught() {
    // No aborts: the bug is in commits across a slide, and at 10% aborts
    // some seeds abort none of their 8 transactions (the run would be
    // refused as not exercising aborts).
    let mut s = spec("lighttx-canary", 250, 1, shape(20, 0, 2, 0), false);
    // It records no zone, so recovery reads none: that is its bug.
    s.expect.retain(|&e| e != Expect::ZoneScans);
    common::assert_caught_at_every_seed(&s);
}

/// A framework bug planted under LightTx's zones (`Canary::UnrecordedWindow`,
/// set through the device's FTL configuration, so the replay lines below do
/// not name it): the checkpoint records the pre-allocated Available blocks as
/// free, and recovery, which reads no free block, misses what went into them.
#[test]
fn an_unrecorded_available_zone_is_caught() {
    let mut s = spec("lighttx", 250, 1, shape(20, 0, 2, 0), false);
    s.device.ftl.canary = Some(txftl_ftl::Canary::UnrecordedWindow);
    s.expect.retain(|&e| e != Expect::ZoneScans);
    common::assert_caught_at_every_seed(&s);
}

/// Summary pages on (`summary-pages=1`, sec. IV-D: "used in both SCC/BPCC
/// and LightTx"): every data block's last page holds its other pages'
/// records. Recovery reads an Unavailable Zone block full at the checkpoint
/// by its summary, and an Available Zone block filled since by its first
/// new page and its summary (the roll-forward); every cut, a summary's
/// program among them (torn each way), with recovery cuts.
#[test]
fn summary_pages_in_both_zones_with_recovery_cuts() {
    let mut s = spec_with(
        "lighttx",
        300,
        &[("zone-blocks", 2), ("summary-pages", 1)],
        shape(5, 30, 3, 0),
        true,
    );
    s.expect.extend([Expect::SummariesTrusted, Expect::SummaryFallbacks]);
    let r = common::run_clean(&s);
    assert!(r.dry_run.checkpoints > 3, "{:?}", r.dry_run);
}

/// The summary canary (`Canary::TrustUncheckedSummary`, set in the FTL
/// configuration): recovery believes a summary a cut tore, and misses the
/// pages of its lost records.
#[test]
fn summary_canary_is_caught() {
    let mut s = common::sampled(
        spec_with(
            "lighttx",
            300,
            &[("zone-blocks", 2), ("summary-pages", 1)],
            shape(5, 30, 3, 0),
            false,
        ),
        1,
    );
    s.device.ftl.canary = Some(txftl_ftl::Canary::TrustUncheckedSummary);
    common::assert_caught_at_every_seed(&s);
}
