//! Exhaustive crash tests of NoLgn-FTL on the tiny geometry, every flash
//! operation with every torn variant: concurrent transactions whose old
//! pages share blocks (locked blocks GC skips, counted), GC moving open
//! transactions' pages (their tags kept) and committed ones (plain data),
//! aborts (rolled back in DRAM, and again by recovery, which finds no end
//! flag), checkpoints written with transactions open (their section names
//! the old versions recovery rolls back to), writes refused on a page
//! another open transaction wrote, a P2P table that fills, the full-scan
//! recovery, second cuts after recovery, and the canary with the paper's
//! one lock bit per block.

mod common;
use common::tx_shape as shape;
use txftl_harness::{CrashSpec, Expect, TxShape};

/// Every NoLgn scenario must commit and abort, run GC with a block kept back
/// by its lock, move an open transaction's page, write a checkpoint with a
/// transaction open, and tear pages whose OOB survives.
fn spec(protocol: &str, ops: u64, opts: &[(&str, u32)], tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    let (device, flags) = common::tiny_with_options(protocol, opts);
    let expect = vec![
        Expect::Device("commits"),
        Expect::Device("aborts"),
        Expect::Device("gc_runs"),
        Expect::Device("protocol_records_with_open_tx"),
        Expect::TornDataIntactOob,
        Expect::Protocol("nolgn_gc_open_copies"),
    ];
    common::txwrite_spec(device, &flags, ops, 90, tx, recovery_cuts, expect)
}

/// The set the canary runs, with recovery cuts too.
#[test]
fn three_open_transactions_with_aborts() {
    let mut s = common::sampled(spec("nolgn", 300, &[], shape(5, 30, 3, 0), true), 2);
    s.expect.push(Expect::Device("gc_victims_skipped"));
    let r = common::run_clean(&s);
    assert!(r.exercised.protocol_updates_applied > 0, "{:?}", r.exercised);
}

/// Long transactions: many old pages pinned at once across GC and checkpoints.
#[test]
fn long_transactions_across_gc_and_checkpoints() {
    let mut s = common::sampled(spec("nolgn", 300, &[], shape(10, 20, 2, 0), false), 1);
    s.expect
        .extend([Expect::Device("checkpoints"), Expect::Device("gc_victims_skipped")]);
    let r = common::run_clean(&s);
    assert!(r.dry_run.protocol.get("nolgn_locked_blocks_peak") >= 4, "{:?}", r.dry_run);
}

/// End-flagged commits (`write_end`, NoLgn's §3.2, as SQLite's VFS sends
/// them): a committing transaction's last page carries the end flag when
/// written, so a cut after it and before the commit returns may recover the
/// transaction, whole; the commit then programs nothing.
#[test]
fn end_flagged_commits() {
    let tx = TxShape {
        end_flag: true,
        static_dynamic: None,
        ..shape(5, 30, 3, 0)
    };
    let mut s = common::sampled(spec("nolgn", 300, &[], tx, false), 1);
    s.expect.push(Expect::Protocol("nolgn_end_writes"));
    let r = common::run_clean(&s);
    // Only the transactions the end of the stream closes early commit
    // without one.
    let p = &r.dry_run.protocol;
    assert!(p.get("nolgn_end_writes") > 5 * p.get("nolgn_commit_programs"), "{:?}", r.dry_run);
}

/// Writes to a page another open transaction wrote are refused (the old
/// version is the L2P's: no-page-conflict isolation), and nothing changes.
#[test]
fn writes_to_another_open_transactions_page_are_refused() {
    let mut s = spec("nolgn", 250, &[], shape(6, 20, 3, 40), false);
    s.expect.push(Expect::CrossTxUpdates);
    common::run_clean(&s);
}

/// A P2P table of 6 entries under three open transactions of 5 pages: writes
/// that need an entry are refused with `TableFull`, and the host aborts.
#[test]
fn a_full_p2p_table_refuses_writes() {
    let mut s = spec("nolgn", 250, &[("p2p-entries", 6)], shape(5, 10, 3, 0), false);
    s.expect.push(Expect::TableFull);
    common::run_clean(&s);
}

/// The paper's full-scan recovery reads every block in use too; the same
/// pages decide.
#[test]
fn full_scan_recovery() {
    let mut s = spec("nolgn", 200, &[("full-scan", 1)], shape(5, 30, 3, 0), false);
    s.expect.push(Expect::ZoneScans);
    common::run_clean(&s);
}

/// Recover, go on, cut again at every operation of the continuation: the
/// transaction ids a mount hands out never repeat one on flash, and the
/// pages a recovery rolled back stay rolled back.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("nolgn", 80, &[], shape(4, 30, 2, 0), false);
    s.expect = vec![Expect::Device("commits"), Expect::Device("aborts")];
    common::run_every_second_cut(s);
}

/// The canary unlocks a block at the first commit of a transaction with an
/// old page there: GC moves another open transaction's old page, and its
/// rollback (an abort, or recovery) names the erased original. The set of
/// `three_open_transactions_with_aborts` (without its recovery cuts), run to
/// 340 operations: at 300, seed 4's canary run has GC move no open
/// transaction's page, so it would prove nothing there.
#[test]
fn canary_is_caught() {
    let s = common::sampled(spec("nolgn-canary", 340, &[], shape(5, 30, 3, 0), false), 2);
    common::assert_caught_at_every_seed(&s);
}
