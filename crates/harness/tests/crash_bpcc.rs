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
use txftl_harness::{crashtest, CrashSpec, Expect, TxShape};

/// No forced erases: that is SCC's cost, not BPCC's (`cyclic::spec` has
/// what every scenario must show).
fn spec(protocol: &str, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    cyclic::spec(protocol, ops, fill_pct, tx, recovery_cuts, &[])
}

#[test]
fn three_open_transactions_with_aborts() {
    let mut s = spec("bpcc", 300, 90, shape(5, 30, 3, 0), true);
    s.expect.push(Expect::RecordsWithOpenTx);
    let r = common::run_clean(&s);
    assert_eq!(r.dry_run.forced_erases, 0, "{:?}", r.dry_run);
}

#[test]
fn long_transactions_across_gc_and_checkpoints() {
    let mut s = spec("bpcc", 250, 90, shape(20, 20, 2, 0), false);
    s.expect.push(Expect::Checkpoints);
    s.expect.push(Expect::RecordsWithOpenTx);
    common::run_clean(&s);
}

/// A small working set rewritten inside and across transactions: aborted
/// versions are written again by later transactions (their back pointers
/// straddle them) and GC, under pressure, moves the pinned straddlers;
/// writes to a page another open transaction wrote are refused.
#[test]
fn aborted_pages_rewritten_under_gc_pressure() {
    let mut s = spec("bpcc", 600, 30, shape(8, 50, 2, 30), false);
    s.expect.push(Expect::CrossTxUpdates);
    s.expect.push(Expect::PinnedCopies);
    let r = common::run_clean(&s);
    assert_eq!(r.dry_run.forced_erases, 0, "{:?}", r.dry_run);
}

/// The canary lets GC erase a pinned page: an aborted transaction's gap
/// then looks explained by a newer version that does not straddle it. It
/// shows when a transaction of two pages aborts, its second (never
/// programmed) page is written again twice, the first of those is erased,
/// and its first page is still the newest version of its page: short
/// transactions, half of them aborted, a working set GC keeps busy.
#[test]
fn canary_is_caught() {
    let s = spec("bpcc-canary", 600, 60, shape(2, 50, 3, 0), false);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(
        r.violation_count > 0,
        "the canary went unnoticed over {} crash points",
        r.crash_points
    );
}
