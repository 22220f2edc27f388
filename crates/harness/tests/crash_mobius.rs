//! Exhaustive crash tests of Möbius's static transactions on the tiny
//! geometry, every flash operation with every torn variant. What makes it
//! special is the atom inode written before the data, whose transaction
//! recovery verifies page by page when no later inode flags it: every
//! commit's cuts between its inode and its last data page test that. The
//! sets: two transactions open at once (each buffered until its commit, so
//! inodes are written with another transaction open), with aborts, plain
//! writes and trims; merges mid-run (a checkpoint every two inodes);
//! transactions of 20 pages over several blocks; two cuts; and the canary,
//! which takes an unflagged inode as committed without reading its pages.

mod common;
use txftl_harness::{CrashSpec, DeviceSpec, Expect, TxShape};
use txftl_protocols::ProtocolOptions;

fn shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32) -> TxShape {
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency,
        nontx_pct: 10,
        trim_pct: 5,
        transactions: 0,
        cross_pct: 0,
    }
}

/// `tiny`, with `active-ala` if given.
fn spec(protocol: &str, ops: u64, tx: TxShape, active_ala: Option<u32>, recovery_cuts: bool) -> CrashSpec {
    let mut d = DeviceSpec::tiny(protocol);
    let mut flags = String::new();
    if let Some(a) = active_ala {
        d.opts = ProtocolOptions::new().with("active-ala", a);
        flags = format!(" --protocol-opt active-ala={a}");
    }
    let expect = vec![
        Expect::Commits,
        Expect::Gc,
        Expect::TornDataIntactOob,
        Expect::Protocol("mobius_inodes"),
        Expect::Protocol("mobius_flags"),
    ];
    common::txwrite_spec(d, &flags, ops, 90, tx, recovery_cuts, expect)
}

#[test]
fn two_open_transactions_with_aborts_plain_writes_and_trims() {
    let mut s = spec("mobius", 300, shape(5, 30, 2), None, true);
    s.expect.extend([Expect::Aborts, Expect::Trims, Expect::RecordsWithOpenTx]);
    let r = common::run_clean(&s);
    eprintln!("{} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

/// A merge (checkpoint) every two inodes: the active ALA is emptied often,
/// and cuts fall inside merges and just after them.
#[test]
fn merges_mid_run() {
    let s = spec("mobius", 300, shape(5, 10, 2), Some(2), true);
    let r = common::run_clean(&s);
    assert!(r.dry_run.protocol.get("mobius_merges") > 5, "{:?}", r.dry_run);
    eprintln!("{} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

/// Transactions of 20 pages: their pages span several blocks, reserved
/// before the inode, and GC runs inside the reservation.
#[test]
fn transactions_over_several_blocks() {
    let s = spec("mobius", 250, shape(20, 10, 1), None, false);
    let r = common::run_clean(&s);
    eprintln!("{} crash points", r.crash_points);
}

/// Two cuts: what a mount rebuilds (the next transaction id above every
/// id in the ALA, the active ALA's blocks kept from the ring) is tested
/// only so.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("mobius", 60, shape(4, 30, 2), None, false);
    s.workload.fill_pct = 30;
    s.expect = vec![Expect::Commits, Expect::TornDataIntactOob];
    s.replay_base = s.replay_base.replace("--fill 90", "--fill 30");
    let r = common::run_every_second_cut(s);
    eprintln!("{} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("mobius-canary", 250, shape(5, 10, 2), None, false));
}
