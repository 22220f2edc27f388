//! Exhaustive crash tests of Möbius on the tiny geometry, every flash
//! operation with every torn variant. What makes it special is the atom
//! inode written before a static transaction's data, whose transaction
//! recovery verifies page by page when no later inode flags it (every
//! commit's cuts between its inode and its last data page test that), and
//! the dynamic transaction chained through its pages' spare areas, which
//! recovery walks from the newest head record when no inode decided it.
//! The sets: two static transactions open at once (each buffered until its
//! commit, so inodes are written with another transaction open), with
//! aborts, plain writes and trims; merges mid-run (a checkpoint every two
//! inodes); transactions of 20 pages over several blocks; static and
//! dynamic transactions mixed with plain writes and trims between them;
//! the same transactions issued through Möbius's own calls (swrite,
//! sread, dwrite, dabort) rather than begin/commit; two cuts, of each
//! kind; and the canary, which takes an unflagged inode as
//! committed without reading its pages and a chain's intact prefix as
//! committed without checking that it closes, on each kind.

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
        exclusive: false,
        end_flag: false,
        static_dynamic: None,
    }
}

/// `shape`'s, with `dynamic_pct`% of the transactions run as the dynamic
/// one: one open at a time, plain writes and trims only between them.
fn mixed_spec(protocol: &str, ops: u64, pages_per_tx: u32, abort_pct: u32, dynamic_pct: u32, recovery_cuts: bool) -> CrashSpec {
    let tx = TxShape {
        exclusive: true,
        end_flag: false,
        static_dynamic: None,
        ..shape(pages_per_tx, abort_pct, 1)
    };
    let mut s = spec(protocol, ops, tx, None, recovery_cuts);
    s.device.opts = ProtocolOptions::new().with("dynamic-pct", dynamic_pct);
    s.replay_base = s
        .replay_base
        .replacen("--workload", &format!("--protocol-opt dynamic-pct={dynamic_pct} --workload"), 1);
    s.expect
        .extend([Expect::Protocol("mobius_dynamic_inodes"), Expect::Protocol("mobius_head_records")]);
    if dynamic_pct == 100 {
        // No static transaction: no commit flags.
        s.expect.retain(|e| *e != Expect::Protocol("mobius_flags"));
    }
    s
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
        Expect::Device("commits"),
        Expect::Device("gc_runs"),
        Expect::TornDataIntactOob,
        Expect::Protocol("mobius_inodes"),
        Expect::Protocol("mobius_flags"),
    ];
    common::txwrite_spec(d, &flags, ops, 90, tx, recovery_cuts, expect)
}

#[test]
fn two_open_transactions_with_aborts_plain_writes_and_trims() {
    let mut s = spec("mobius", 300, shape(5, 30, 2), None, true);
    s.expect.extend([
        Expect::Device("aborts"),
        Expect::Device("host_trims"),
        Expect::Device("protocol_records_with_open_tx"),
    ]);
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
    s.expect = vec![Expect::Device("commits"), Expect::TornDataIntactOob];
    s.replay_base = s.replay_base.replace("--fill 90", "--fill 30");
    let r = common::run_every_second_cut(s);
    eprintln!("{} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("mobius-canary", 250, shape(5, 10, 2), None, false));
}

/// Half the transactions dynamic, half static, plain writes and trims
/// between them, 20% aborted: cuts fall inside chains (head record, each
/// page, the inode after the REAR) and recovery walks the newest chain.
#[test]
fn static_and_dynamic_transactions_mixed_with_plain_writes() {
    let mut s = mixed_spec("mobius", 300, 5, 20, 50, true);
    s.expect.extend([Expect::Device("aborts"), Expect::Device("host_trims")]);
    let r = common::run_clean(&s);
    eprintln!("{} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

/// Two cuts with dynamic transactions: a chain the first recovery found
/// closed, without its inode, stays committed after a second cut (its
/// inode is written before anything else; a later head record would hide
/// the chain, and without that write this set fails).
#[test]
fn every_second_cut_with_dynamic_transactions() {
    let mut s = mixed_spec("mobius", 60, 4, 20, 100, false);
    s.workload.fill_pct = 30;
    s.expect = vec![Expect::Device("commits"), Expect::Protocol("mobius_head_records")];
    s.replay_base = s.replay_base.replace("--fill 90", "--fill 30");
    let r = common::run_every_second_cut(s);
    eprintln!("{} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

#[test]
fn canary_is_caught_on_dynamic_transactions() {
    common::assert_caught_at_every_seed(&mixed_spec("mobius-canary", 250, 5, 10, 100, false));
}

/// `shape`'s, the transactions issued through Möbius's own calls
/// (`TxShape::static_dynamic`): static ones staged and sent in one swrite
/// (S-SWRITE and A-SWRITE), `dynamic_pct`% dynamic (dwrite HEAD, BODY...,
/// a REAR or a dabort), two open at once.
fn calls_spec(protocol: &str, ops: u64, dynamic_pct: u32, recovery_cuts: bool) -> CrashSpec {
    let tx = TxShape {
        static_dynamic: Some(dynamic_pct),
        ..shape(4, 20, 2)
    };
    let mut s = spec(protocol, ops, tx, None, recovery_cuts);
    s.expect.extend([
        Expect::Device("aborts"),
        Expect::Device("host_trims"),
        Expect::Protocol("mobius_dynamic_inodes"),
        Expect::Protocol("mobius_head_records"),
    ]);
    s
}

/// The enumerator issues swrite, sread, dwrite and dabort directly (no
/// begin/commit mapped onto them): cuts fall inside an swrite (its inode,
/// each page) and a chain (head record, each page, the REAR's inode, a
/// dabort's), and recovery verifies unflagged inodes and walks the chain.
#[test]
fn static_and_dynamic_calls_issued_directly() {
    let r = common::run_clean(&calls_spec("mobius", 250, 40, true));
    eprintln!("{} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

#[test]
fn canary_is_caught_on_static_and_dynamic_calls() {
    common::assert_caught_at_every_seed(&calls_spec("mobius-canary", 250, 40, false));
}

/// S_max of 2, flushes rare, and 200 operations after each first cut, cut
/// twice more: a transaction the first recovery found committed only by
/// its verify reads must be flagged by the next inodes, or a second mount
/// finds it unflagged and older than S_max, and aborts it (this set fails
/// without the flags recovery queues).
#[test]
fn transactions_verified_at_recovery_are_flagged_after_it() {
    let mut s = spec("mobius", 300, shape(5, 10, 1), None, false);
    s.device.opts = ProtocolOptions::new().with("s-max", 2);
    s.workload.flush_every = 1000;
    s.workload.tx.nontx_pct = 0;
    s.workload.tx.trim_pct = 0;
    s.torn = vec![txftl_nand::Torn::None, txftl_nand::Torn::Oob];
    s.second_cuts = txftl_harness::SecondCuts::Sample(2);
    s.second_ops = 200;
    s.expect = vec![Expect::Device("commits"), Expect::Protocol("mobius_flags")];
    s.replay_base = s
        .replay_base
        .replacen("--workload", "--protocol-opt s-max=2 --workload", 1)
        .replacen(" --seed 1", " --seed 1 --flush-every 1000", 1)
        .replace("--nontx-pct 10 --trim-pct 5", "--nontx-pct 0 --trim-pct 0");
    let r = common::run_clean(&s);
    eprintln!("{} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

/// Transactions larger than an inode: `items-max=4` and 10-page
/// transactions, three inodes each (two parts, then the inode binding
/// them). Static ones write them before their data, two open at once;
/// `dynamic-pct` of them (one at a time) after their REAR. Cuts fall
/// between the inodes: recovery must abort a static transaction whose
/// inodes are not all there and walk a dynamic one's chain, never take the
/// parts or the last inode alone.
fn large_spec(protocol: &str, ops: u64, concurrency: u32, dynamic_pct: u32, recovery_cuts: bool) -> CrashSpec {
    let mut s = if dynamic_pct == 0 {
        spec(protocol, ops, shape(10, 20, concurrency), None, recovery_cuts)
    } else {
        mixed_spec(protocol, ops, 10, 20, dynamic_pct, recovery_cuts)
    };
    s.device.opts = s.device.opts.clone().with("items-max", 4);
    s.replay_base = s.replay_base.replacen("--workload", "--protocol-opt items-max=4 --workload", 1);
    s.expect.push(Expect::Protocol("mobius_part_inodes"));
    s
}

#[test]
fn transactions_larger_than_an_inode() {
    let mut s = large_spec("mobius", 250, 2, 0, true);
    s.expect.extend([
        Expect::Device("aborts"),
        Expect::Device("host_trims"),
        Expect::Device("protocol_records_with_open_tx"),
    ]);
    let r = common::run_clean(&s);
    let parts = r.dry_run.protocol.get("mobius_part_inodes");
    eprintln!(
        "{} crash points, {} recovery cuts, {parts} part inodes",
        r.crash_points, r.recovery_crash_points
    );
}

/// Static and dynamic transactions larger than an inode, mixed.
#[test]
fn static_and_dynamic_transactions_larger_than_an_inode() {
    let mut s = large_spec("mobius", 250, 1, 50, true);
    s.expect.extend([Expect::Device("aborts"), Expect::Device("host_trims")]);
    let r = common::run_clean(&s);
    eprintln!("{} crash points, {} recovery cuts", r.crash_points, r.recovery_crash_points);
}

/// Two cuts: a chain of several inodes the first recovery found closed
/// without all of them is committed after a second cut (its inodes are
/// written again, all of them, before anything else).
#[test]
fn every_second_cut_with_transactions_larger_than_an_inode() {
    let mut s = large_spec("mobius", 50, 1, 50, false);
    s.workload.fill_pct = 30;
    s.expect = vec![Expect::Device("commits"), Expect::Protocol("mobius_part_inodes")];
    s.replay_base = s.replay_base.replace("--fill 90", "--fill 30");
    let r = common::run_every_second_cut(s);
    eprintln!("{} crash points, {} second cuts", r.crash_points, r.second_crash_points);
}

#[test]
fn canary_is_caught_on_transactions_larger_than_an_inode() {
    common::assert_caught_at_every_seed(&large_spec("mobius-canary", 300, 2, 0, false));
}
