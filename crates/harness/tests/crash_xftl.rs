//! Exhaustive crash tests of X-FTL on the tiny geometry: concurrent
//! transactions, aborts, re-updates inside a transaction, non-transactional
//! writes mixed in, transactions spanning GC and checkpoints; and the canary.

mod common;
use txftl_harness::{crashtest, CrashReport, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::Torn;
use txftl_protocols::ProtocolOptions;

/// Every X-FTL scenario must commit, run GC and tear pages whose OOB survives;
/// each test adds what it is about.
fn spec(protocol: &str, entries: u32, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    seeded(protocol, entries, ops, fill_pct, tx, recovery_cuts, 1)
}

fn seeded(protocol: &str, entries: u32, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool, seed: u64) -> CrashSpec {
    let mut device = DeviceSpec::tiny(protocol);
    device.opts = ProtocolOptions::new().with("xl2p-entries", entries);
    CrashSpec::every_point(
        device,
        WorkloadSpec { kind: WorkloadKind::TxWrite, ops, fill_pct, seed, flush_every: 8, tx },
        vec![Expect::Device("commits"), Expect::Device("gc_runs"), Expect::TornDataIntactOob],
        recovery_cuts,
        format!(
            "txftl crashtest --protocol {protocol} --workload txwrite --ops {ops} --fill {fill_pct} --seed {seed} --protocol-opt xl2p-entries={entries} --pages-per-tx {} --abort-ratio {} --concurrency {} --nontx-pct {} --trim-pct {}",
            tx.pages_per_tx,
            tx.abort_pct as f64 / 100.0,
            tx.concurrency,
            tx.nontx_pct,
            tx.trim_pct
        ),
    )
}

/// Clean, and the transactional paths ran.
fn assert_clean(r: &CrashReport) {
    common::assert_clean(r);
    assert!(r.dry_run.commits > 0 && r.dry_run.protocol_meta_writes > 0, "{:?}", r.dry_run);
}

fn shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, nontx_pct: u32) -> TxShape {
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency,
        nontx_pct,
        trim_pct: 0,
        transactions: 0,
        cross_pct: 0,
        exclusive: false,
        end_flag: false,
        static_dynamic: None,
    }
}

#[test]
fn one_transaction_at_a_time_with_gc_and_checkpoints() {
    let r = crashtest(&spec("xftl", 24, 300, 90, shape(5, 10, 1, 0), true), &|_, _| {}).unwrap();
    assert!(r.dry_run.gc_runs > 0 && r.dry_run.checkpoints > 0, "{:?}", r.dry_run);
    assert_clean(&r);
}

#[test]
fn concurrent_transactions_with_aborts_and_reupdates() {
    let mut s = spec("xftl", 24, 250, 80, shape(5, 30, 3, 0), false);
    s.expect.extend([
        Expect::Device("aborts"),
        Expect::Device("protocol_records_with_open_tx"),
        Expect::Device("gc_protocol_copies"),
    ]);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
}

#[test]
fn non_transactional_writes_mixed_in() {
    let s = common::sampled(spec("xftl", 24, 250, 80, shape(4, 20, 2, 30), false), 1);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
}

#[test]
fn long_transactions_span_gc_and_checkpoints() {
    let mut s = spec("xftl", 30, 250, 90, shape(20, 20, 1, 0), false);
    s.expect
        .extend([Expect::Device("gc_protocol_copies"), Expect::Device("checkpoints")]);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(
        r.dry_run.gc_runs > r.dry_run.commits,
        "GC must run inside transactions: {:?}",
        r.dry_run
    );
    assert_clean(&r);
}

#[test]
fn a_small_table_reclaims_committed_entries_through_checkpoints() {
    let r = crashtest(&spec("xftl", 8, 200, 80, shape(5, 10, 1, 0), false), &|_, _| {}).unwrap();
    assert!(r.dry_run.checkpoints > 10, "{:?}", r.dry_run);
    assert_clean(&r);
}

/// Trims between commits, with concurrent transactions and plain writes: a
/// trim of a page whose commit is not yet covered by a checkpoint, followed by
/// another commit, once brought back the page's value from before the commit.
#[test]
fn trims_between_commits_never_resurrect_older_values() {
    let tx = TxShape {
        trim_pct: 15,
        ..shape(4, 20, 2, 15)
    };
    let mut s = spec("xftl", 24, 250, 60, tx, false);
    s.expect
        .extend([Expect::Device("host_trims"), Expect::Device("protocol_records_with_open_tx")]);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(r.dry_run.host_trims > 20, "{:?}", r.dry_run);
    assert_clean(&r);
}

/// Transactions far larger than the DRAM table (8 entries, 20 pages a
/// transaction, two open at once, aborts, plain writes and trims mixed in,
/// GC running): a full table spills a transaction's entries to spill pages
/// in the data pool, several per transaction; commit names them in its
/// group. Every program and erase is cut with every torn variant, and every
/// recovery at its own programs and erases.
#[test]
fn a_full_table_spills_to_flash_and_every_cut_holds() {
    let tx = TxShape {
        trim_pct: 5,
        ..shape(20, 25, 2, 10)
    };
    let mut s = spec("xftl", 8, 300, 60, tx, true);
    s.expect.extend([
        Expect::Device("aborts"),
        Expect::Device("protocol_records_with_open_tx"),
        Expect::Device("gc_protocol_copies"),
        Expect::Protocol("xl2p_spill_pages"),
    ]);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    let spill_pages = r.dry_run.protocol.get("xl2p_spill_pages");
    assert!(
        spill_pages >= 2 * r.dry_run.commits,
        "several spill pages a transaction: {spill_pages} for {} commits",
        r.dry_run.commits
    );
    assert_clean(&r);
}

/// The set: a 200-entry table (seven table pages on `tiny`), 40
/// pages a transaction, two open at once: a transaction's entries span two
/// table pages (and, when both are open, the table fills and spills).
#[test]
fn a_transaction_spanning_two_table_pages() {
    let tx = TxShape {
        trim_pct: 5,
        ..shape(40, 15, 2, 10)
    };
    let mut s = spec("xftl", 200, 300, 60, tx, true);
    s.expect
        .extend([Expect::Device("aborts"), Expect::Device("protocol_records_with_open_tx")]);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
}

/// With spilling off (`xl2p-spill=0`, the paper's fixed table), a table this
/// small with three transactions open fills with uncommitted entries: the
/// host aborts the transaction that cannot write and goes on, and every
/// crash point along that path must hold.
#[test]
fn a_full_table_that_does_not_spill_is_aborted_by_the_host() {
    let tx = TxShape {
        trim_pct: 5,
        ..shape(5, 10, 3, 10)
    };
    let mut s = spec("xftl", 8, 200, 60, tx, false);
    s.device.opts = s.device.opts.with("xl2p-spill", 0);
    s.replay_base += " --protocol-opt xl2p-spill=0";
    s.expect.push(Expect::TableFull);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_eq!(r.dry_run.protocol.get("xl2p_spill_pages"), 0);
    assert_clean(&r);
}

/// The default mix (two transactions open, plain writes and trims mixed in, a
/// small table) over several seeds, each enumerated whole: a bug that shows
/// under one interleaving only is caught by some seed.
#[test]
fn seed_sweep_of_the_default_mix() {
    let tx = TxShape {
        trim_pct: 5,
        ..shape(4, 15, 2, 10)
    };
    for seed in 2..=7 {
        let mut s = seeded("xftl", 16, 150, 70, tx, false, seed);
        s.torn = vec![Torn::None, Torn::Data];
        s.expect.push(Expect::Device("host_trims"));
        let r = crashtest(&s, &|_, _| {}).unwrap();
        assert_clean(&r);
    }
}

/// A table of several pages (200 entries, 29 a page on `tiny`), concurrent
/// transactions with aborts and plain writes: commits write only the table
/// pages they changed, as one group, the atomic unit. (Moving pages ahead of the
/// log ring's erases is enumerated in txftl-protocols' `xftl_log_ring` test.)
#[test]
fn a_table_of_several_pages_commits_only_what_changed() {
    let mut s = spec("xftl", 200, 300, 60, shape(6, 15, 3, 10), false);
    s.expect
        .extend([Expect::Device("protocol_records_with_open_tx"), Expect::Device("checkpoints")]);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(
        r.dry_run.protocol_meta_writes < 7 * r.dry_run.commits,
        "a commit writes only the pages it changed, not all seven: {:?}",
        r.dry_run
    );
    assert_clean(&r);
}

/// Metadata rings share the wear: with a small wear-leveling spread the
/// checkpoint ring and the X-L2P log ring trade worn blocks for fresh ones of
/// the pool while transactions run, and every cut holds.
#[test]
fn worn_ring_blocks_are_swapped_with_the_pool() {
    let mut s = spec("xftl", 24, 700, 30, shape(1, 5, 1, 0), false);
    s.device.ftl.wear_spread_max = 2;
    s.torn = vec![Torn::None, Torn::Data];
    s.expect.push(Expect::Device("ring_swaps"));
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation: the X-L2P table a mount rebuilds is tested only so.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("xftl", 24, 60, 30, shape(4, 30, 1, 10), false);
    s.expect = vec![Expect::Device("commits"), Expect::Device("aborts"), Expect::TornDataIntactOob];
    common::run_every_second_cut(s);
}

/// The canary acknowledges a commit before its X-L2P table is durable.
#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("xftl-canary", 24, 200, 60, shape(5, 30, 2, 10), false));
}
