//! Exhaustive crash tests of SCC (TxFlash's simple cyclic commit) on the tiny
//! geometry, every flash operation with every torn variant: concurrent
//! transactions with aborts; long transactions across GC and checkpoints;
//! re-updates of pages inside a transaction and across transactions (aborted
//! versions then rewritten: what makes SCC force erases); and the canary,
//! which skips the forced erase.

mod common;
#[path = "common/cyclic.rs"]
mod cyclic;
use cyclic::shape;
use txftl_harness::{CrashSpec, Expect, TxShape};

/// Every SCC scenario must also force erases (`cyclic::spec` has the rest).
fn spec(protocol: &str, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    cyclic::spec(protocol, ops, fill_pct, tx, recovery_cuts, &[Expect::Protocol("forced_erases")])
}

#[test]
fn three_open_transactions_with_aborts() {
    let mut s = spec("scc", 300, 90, shape(5, 30, 3, 0), true);
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    common::run_clean(&s);
}

#[test]
fn long_transactions_across_gc_and_checkpoints() {
    let mut s = common::sampled(spec("scc", 250, 90, shape(20, 20, 2, 0), false), 1);
    s.expect.push(Expect::Device("checkpoints"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    let r = common::run_clean(&s);
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
}

/// A small working set: pages are written again inside a transaction and
/// by later transactions after an abort left an uncommitted version of
/// them on flash, which must be erased first; writes to a page another
/// open transaction wrote are refused (no serializable isolation).
#[test]
fn re_updates_inside_and_across_transactions() {
    let mut s = spec("scc", 300, 50, shape(8, 40, 3, 40), false);
    // Half the device is filled: space is reclaimed by the forced erases
    // here, not by GC (the other two scenarios run it).
    s.expect.retain(|&e| e != Expect::Device("gc_runs"));
    s.expect.push(Expect::CrossTxUpdates);
    let r = common::run_clean(&s);
    assert!(r.dry_run.protocol.get("forced_erases") > 5, "{:?}", r.dry_run);
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation. The claims a mount rebuilds (the pages no newer version
/// may be written of while a dead transaction is on flash) are tested only
/// this way: a claim that forgets the page a dead transaction linked to
/// survives every single cut, and after a second cut an aborted version
/// comes back (16 violations here).
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("scc", 60, 30, shape(4, 30, 1, 0), false);
    // Too short for GC or a checkpoint (whose blocks recovery would read).
    s.expect
        .retain(|&e| e != Expect::Device("gc_runs") && e != Expect::ZoneScans && e != Expect::Protocol("forced_erases"));
    common::run_every_second_cut(s);
}

/// The canary skips the forced erase: an aborted page whose link a newer
/// version of the page it linked to now explains looks committed.
#[test]
fn canary_is_caught() {
    let mut s = spec("scc-canary", 300, 50, shape(8, 40, 3, 0), false);
    s.expect.retain(|&e| e != Expect::Protocol("forced_erases"));
    common::assert_caught_at_every_seed(&s);
}

/// Summary pages on (`summary-pages=1`): every data block's last page
/// holds its other pages' OOB records, written once they are all
/// programmed, host and GC blocks alike. GC moves pages out of blocks
/// with summaries, recovery reads blocks full at the checkpoint by their
/// summary alone, and every cut (a summary page's program among them, with
/// every torn variant) is also cut inside its recovery.
#[test]
fn summary_pages_under_gc_with_recovery_cuts() {
    cyclic::summary_pages_under_gc(spec("scc", 300, 90, shape(5, 30, 3, 0), true));
}

#[test]
fn summary_pages_torn_then_read_after_a_second_cut() {
    cyclic::summary_pages_torn_after_a_second_cut(spec("scc", 300, 90, shape(5, 30, 3, 0), false));
}

#[test]
fn summary_canary_is_caught() {
    cyclic::summary_canary_is_caught(spec("scc", 300, 90, shape(5, 30, 3, 0), false));
}
