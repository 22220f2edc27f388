//! Cuts at instants of the device clock, for every protocol: every program
//! and erase in flight then, on any die, is torn or lost, and every proper
//! subset of those started may finish. The geometry is `tiny` with two
//! channels of one die (`tests/devices/tiny-2ch.toml`): on `tiny`'s one
//! channel a program waiting for its die holds the channel, so programs end
//! in issue order; on two channels an erase on one die overlaps programs on
//! the other. Small workloads: each instant replays the workload. One set
//! runs on four channels of one die (`tests/devices/tiny-4ch.toml`): a
//! commit there reserves pages on more units in a row, opening (and
//! erasing) a block on each.

mod common;
use txftl_harness::{CrashReport, CrashSpec, DeviceSpec, Expect, InFlight, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::Torn;
use txftl_protocols::ProtocolOptions;

const DEVICE_FILE: &str = "crates/harness/tests/devices/tiny-2ch.toml";
const DEVICE_FILE_4CH: &str = "crates/harness/tests/devices/tiny-4ch.toml";

/// `tiny` with its two dies on two channels (what `DEVICE_FILE` holds).
fn device(protocol: &str) -> DeviceSpec {
    let mut d = DeviceSpec::tiny(protocol);
    d.nand.geometry.channels = 2;
    d.nand.geometry.dies_per_channel = 1;
    d
}

/// `tiny`'s 32 blocks on four channels of one die, 8 blocks each (what
/// `DEVICE_FILE_4CH` holds).
fn device_4ch(protocol: &str) -> DeviceSpec {
    let mut d = DeviceSpec::tiny(protocol);
    d.nand.geometry.channels = 4;
    d.nand.geometry.dies_per_channel = 1;
    d.nand.geometry.blocks_per_plane = 8;
    d
}

fn tx_spec(protocol: &str, ops: u64, tx: TxShape, expect: Vec<Expect>) -> CrashSpec {
    let mut s = common::txwrite_spec(device(protocol), "", ops, 90, tx, false, expect);
    s.replay_base = s
        .replay_base
        .replacen("--workload", &format!("--config {DEVICE_FILE} --workload"), 1);
    s.in_flight = InFlight::Every;
    s
}

fn rand_spec(protocol: &str, device: DeviceSpec, flags: &str, ops: u64, expect: Vec<Expect>) -> CrashSpec {
    let mut s = CrashSpec::every_point(
        device,
        WorkloadSpec {
            kind: WorkloadKind::RandWrite,
            ops,
            fill_pct: 90,
            seed: 1,
            flush_every: 8,
            tx: TxShape::default(),
        },
        expect,
        false,
        format!(
            "txftl crashtest --protocol {protocol} --config {DEVICE_FILE}{flags} --workload randwrite --ops {ops} --fill 90 \
             --seed 1 --flush-every 8 --no-recovery-cuts"
        ),
    );
    s.in_flight = InFlight::Every;
    s
}

/// A tenth of the writes outside transactions; trims only where the
/// protocol takes them (SCC and BPCC refuse them).
fn shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, trim_pct: u32) -> TxShape {
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency,
        nontx_pct: 10,
        trim_pct,
        transactions: 0,
        cross_pct: 0,
        exclusive: false,
        end_flag: false,
        static_dynamic: None,
    }
}

/// Clean, and the instants really had several operations in flight, some
/// of them out of issue order.
fn run_clean(s: &CrashSpec) -> CrashReport {
    let r = common::run_clean(s);
    let f = r.in_flight.clone().expect("in-flight cuts were asked for");
    assert!(f.max_in_flight >= 2 && f.max_started >= 2, "{f:?}");
    assert!(f.out_of_order_points > 0, "{f:?}");
    r
}

#[test]
fn plain_randwrite() {
    run_clean(&rand_spec("plain", device("plain"), "", 150, vec![Expect::TornDataIntactOob]));
}

#[test]
fn dftl_randwrite_with_a_one_page_cache() {
    let mut d = device("dftl");
    d.nand.geometry.blocks_per_plane = 32;
    d.opts = ProtocolOptions::new().with("cmt-pages", 1);
    let flags = " --blocks-per-plane 32 --protocol-opt cmt-pages=1";
    run_clean(&rand_spec("dftl", d, flags, 120, vec![Expect::Protocol("cmt_misses")]));
}

#[test]
fn xftl_transactions() {
    run_clean(&tx_spec(
        "xftl",
        120,
        shape(5, 20, 2, 5),
        vec![Expect::Device("commits"), Expect::Device("aborts")],
    ));
}

/// Möbius programs a transaction's data after its inode is done, the pages
/// spread over the dies: a cut with some of them in flight leaves the inode
/// unflagged and a page missing, which recovery's verify must notice; the
/// commit returns (S-SWRITE) only once every page is done.
#[test]
fn mobius_static_transactions() {
    run_clean(&tx_spec(
        "mobius",
        120,
        shape(5, 30, 2, 5),
        vec![Expect::Device("commits"), Expect::Device("aborts")],
    ));
}

/// Möbius's A-SWRITE (`async-commit=1`): a commit returns at its inode,
/// its pages still programming. The model takes it as visible from its
/// return and maybe absent, whole, until its pages are done
/// (`Device::commit_durable_ns`); the cuts must fall in that window, and
/// each one that does takes the acknowledged transaction back whole (one
/// of its pages is torn or lost, so the verify finds it incomplete).
#[test]
fn mobius_async_commits_may_be_taken_back_whole_until_durable() {
    let mut s = tx_spec(
        "mobius",
        120,
        shape(5, 30, 2, 5),
        vec![Expect::Device("commits"), Expect::Device("aborts")],
    );
    s.device.opts = ProtocolOptions::new().with("async-commit", 1);
    s.replay_base = s.replay_base.replacen("--workload", "--protocol-opt async-commit=1 --workload", 1);
    let f = run_clean(&s).in_flight.expect("in-flight cuts");
    assert!(
        f.acked_not_durable > 0,
        "no cut fell between an A-SWRITE's return and its pages: {f:?}"
    );
    assert_eq!(f.acked_lost, f.acked_not_durable, "{f:?}");
}

/// Möbius's A-SWRITEs run concurrently: the next static transaction's
/// inode and pages queue behind the last one's pages in flight, and an
/// inode flags only the transactions whose pages are done. With `s-max=1`
/// the next inode is the last that may flag the transaction before it, so
/// it waits for that one's pages (the S_max stall): one in flight at a
/// time. The cuts fall at instants with transactions in flight: each is
/// found whole or absent, and some acknowledged but not yet durable are
/// taken back whole.
#[test]
fn mobius_async_commits_in_flight_together() {
    for s_max in [8, 1] {
        // Only transactions, few flushes: nothing else waits for the pages.
        let only_tx = TxShape {
            nontx_pct: 0,
            trim_pct: 0,
            ..shape(5, 20, 2, 0)
        };
        let mut s = tx_spec("mobius", 120, only_tx, vec![Expect::Device("commits")]);
        s.workload.flush_every = 60;
        s.device.opts = ProtocolOptions::new().with("async-commit", 1).with("s-max", s_max);
        s.replay_base = s.replay_base.replacen(
            "--workload",
            &format!("--protocol-opt async-commit=1 --protocol-opt s-max={s_max} --flush-every 60 --workload"),
            1,
        );
        let r = run_clean(&s);
        let p = &r.dry_run.protocol;
        let (peak, stalls) = (p.get("mobius_in_flight_peak"), p.get("mobius_smax_stalls"));
        if s_max == 1 {
            assert!(peak == 1 && stalls > 0, "{p:?}");
        } else {
            assert!(peak >= 2, "s-max={s_max}: {p:?}");
        }
        let f = r.in_flight.expect("in-flight cuts");
        // Not every one is lost: a cut may let all of one transaction's
        // pages finish and tear the other's.
        assert!(f.acked_not_durable > 0 && f.acked_lost > 0, "s-max={s_max}: {f:?}");
    }
}

/// Without async commits, no commit returns before it is durable.
#[test]
fn mobius_sync_commits_are_durable_when_they_return() {
    let f = run_clean(&tx_spec("mobius", 60, shape(5, 30, 2, 5), vec![Expect::Device("commits")]))
        .in_flight
        .expect("in-flight cuts");
    assert_eq!(f.acked_not_durable, 0, "{f:?}");
}

/// Möbius's dynamic transactions (and static ones) mixed: the inode after
/// a REAR must not be on flash before a page of its chain in flight on the
/// other die.
#[test]
fn mobius_dynamic_transactions() {
    let mut s = tx_spec(
        "mobius",
        120,
        TxShape {
            exclusive: true,
            end_flag: false,
            static_dynamic: None,
            ..shape(5, 30, 1, 5)
        },
        vec![Expect::Device("commits"), Expect::Protocol("mobius_head_records")],
    );
    s.device.opts = ProtocolOptions::new().with("dynamic-pct", 50);
    s.replay_base = s.replay_base.replacen("--workload", "--protocol-opt dynamic-pct=50 --workload", 1);
    run_clean(&s);
}

/// Möbius's transactions through its own calls (swrite S- and A-, dwrite,
/// dabort): an A-SWRITE returns at its inode, so some cuts fall between
/// its return and its last page, and take it back whole.
#[test]
fn mobius_static_and_dynamic_calls() {
    let tx = TxShape {
        static_dynamic: Some(50),
        ..shape(4, 40, 2, 5)
    };
    let f = run_clean(&tx_spec(
        "mobius",
        120,
        tx,
        vec![Expect::Device("commits"), Expect::Device("aborts")],
    ))
    .in_flight
    .expect("in-flight cuts");
    assert!(f.acked_not_durable > 0 && f.acked_lost > 0, "{f:?}");
}

/// Atomic-Write redoes a group whose flagged (last) page is on flash, which
/// proves the group whole only if the pages before it finished first. Its
/// pages spread over the dies; before the flag page waited for them, a flag
/// page that finished first with an earlier page lost made an
/// unacknowledged commit partly visible (30 violations on this set).
#[test]
fn atomic_write_groups() {
    run_clean(&tx_spec("atomic-write", 120, shape(4, 0, 1, 5), vec![Expect::Device("commits")]));
}

/// Atomic-Write with aborts, both write-backs (the default's table pages,
/// `map-log=1`'s mapping log): the page closing an aborted group must be on
/// flash before the next group's flag page, or the aborted pages would join
/// that group.
#[test]
fn atomic_write_groups_with_aborts() {
    for map_log in [0, 1] {
        let mut s = tx_spec(
            "atomic-write",
            120,
            shape(4, 30, 1, 5),
            vec![Expect::Device("commits"), Expect::Device("aborts")],
        );
        s.device.opts = ProtocolOptions::new().with("map-log", map_log);
        s.replay_base = s
            .replay_base
            .replacen(" --workload", &format!(" --protocol-opt map-log={map_log} --workload"), 1);
        run_clean(&s);
    }
}

#[test]
fn scc_transactions() {
    run_clean(&tx_spec("scc", 100, shape(4, 20, 1, 0), vec![Expect::Device("commits")]));
}

#[test]
fn bpcc_transactions() {
    run_clean(&tx_spec("bpcc", 100, shape(4, 20, 2, 0), vec![Expect::Device("commits")]));
}

/// NoLgn's end-flagged page waits for the transaction's other pages (its OOB
/// has no page count), and a rollback never names an old version the cut
/// tore (a plain write in flight beside a transaction's first page of it).
#[test]
fn nolgn_transactions() {
    let mut aborts = 0;
    for seed in 1..=3 {
        let mut s = tx_spec(
            "nolgn",
            120,
            shape(5, 20, 2, 5),
            vec![Expect::Device("commits"), Expect::Device("gc_runs")],
        );
        s.workload.seed = seed;
        s.replay_base = s.replay_base.replace(" --seed 1 ", &format!(" --seed {seed} "));
        aborts += run_clean(&s).exercised.dry_run.aborts;
    }
    assert!(aborts > 0);
}

/// LightTx's page-count rule at work: a commit page on flash while an
/// earlier page of its transaction is torn or lost, which recovery must
/// reject (no cut at a single operation makes one: every page before the
/// commit page has finished).
#[test]
fn lighttx_rejects_a_commit_page_with_a_page_missing() {
    let s = tx_spec(
        "lighttx",
        120,
        shape(5, 20, 2, 5),
        vec![Expect::Device("commits"), Expect::Device("aborts"), Expect::CommitsRejected],
    );
    let r = run_clean(&s);
    assert!(r.exercised.commits_rejected > 0, "{:?}", r.exercised);
}

/// A checkpoint persists the device as DRAM has it, which counts an erase
/// or a program from its issue, and its pages go to other dies, where they
/// can be done first: so it waits for every operation in flight. Two sets
/// on four dies, at 95% fill, where a checkpoint that does not wait is done
/// before what it records (each passes every operation cut):
/// - Möbius reserves a commit's pages over the units, opening a block on
///   each, whose erase an allocation does not wait for; the next unit's
///   block makes room with a checkpoint that records the new erase count.
///   A cut that loses the erase and keeps the checkpoint leaves "block 4:
///   FTL erase count 1 exceeds the physical 0" after recovery (16
///   violations without the wait);
/// - Atomic-Write checkpoints right after GC, its copies still queued
///   behind an erase: a cut that loses both leaves the recovered L2P naming
///   a page erased or still holding another page's old data, the older
///   version of the page lost (7 violations without the wait).
///
/// Only the `none` variant (the bugs need no torn page) keeps it quick.
#[test]
fn checkpoints_wait_for_the_erases_and_copies_they_record() {
    let config = |replay: String| replay.replacen("--workload", &format!("--config {DEVICE_FILE_4CH} --workload"), 1);
    let mut mobius = common::txwrite_spec(
        device_4ch("mobius"),
        "",
        240,
        95,
        common::tx_shape(5, 10, 2, 0),
        false,
        vec![Expect::Device("commits"), Expect::Device("checkpoints")],
    );
    mobius.replay_base = config(mobius.replay_base);
    let mut atomic_write = rand_spec(
        "atomic-write",
        device_4ch("atomic-write"),
        "",
        250,
        vec![Expect::Device("gc_runs"), Expect::Device("checkpoints")],
    );
    atomic_write.workload.fill_pct = 95;
    atomic_write.replay_base = atomic_write
        .replay_base
        .replace(DEVICE_FILE, DEVICE_FILE_4CH)
        .replace(" --fill 90 ", " --fill 95 ");
    for mut s in [mobius, atomic_write] {
        s.in_flight = InFlight::Every;
        s.torn = vec![Torn::None];
        let r = run_clean(&s);
        assert!(r.exercised.dry_run.flash_erases > 0, "{:?}", r.exercised.dry_run);
    }
}

/// A `txwrite` set on four dies at 95% fill, a flush every 60 operations,
/// only the `none` variant (the bugs below need no torn page), every cut
/// at an instant; `seed` and the protocol as given.
fn tx_spec_4ch(protocol: &str, seed: u64, expect: Vec<Expect>) -> CrashSpec {
    let mut s = common::txwrite_spec(device_4ch(protocol), "", 300, 95, shape(5, 10, 2, 0), false, expect);
    s.workload.seed = seed;
    s.workload.flush_every = 60;
    s.replay_base = s
        .replay_base
        .replacen("--workload", &format!("--config {DEVICE_FILE_4CH} --flush-every 60 --workload"), 1);
    s.replay_base = s.replay_base.replacen(" --seed 1 ", &format!(" --seed {seed} "), 1);
    s.in_flight = InFlight::Every;
    s.torn = vec![Torn::None];
    s
}

/// A page is issued once its block is taken, after the checkpoint that
/// taking it may write. SCC's forced erase leaves a block erased and
/// prefree; the next host page needs a block, a checkpoint frees that one,
/// and the page went to it issued at the time the write began, before the
/// checkpoint's superblock: done first on its idle die, with the
/// superblock lost, recovery knew the block by the checkpoint before, one
/// erase behind its page ("erase count of block 27 recovered as 1 but its
/// pages record 2", 2 violations before the page waited).
#[test]
fn a_page_in_a_block_a_checkpoint_freed_is_issued_after_the_checkpoint() {
    let s = tx_spec_4ch("scc", 2, vec![Expect::Device("checkpoints"), Expect::Protocol("forced_erases")]);
    run_clean(&s);
}

/// A cyclic commit's page that rewrites a logical page its transaction
/// wrote before waits for the transaction's earlier pages. Recovery takes a
/// link to a version a newer one supersedes as explained; the transaction's
/// own newer version explained the gap of an earlier one the cut lost, and
/// the pages that one linked to went unchecked: transaction 66 -> 44 -> 23
/// -> 25 -> 23' (the commit page) -> 66, with 23 and 25 lost and 23' done,
/// recovered whole but for page 25 ("the commit in flight is partly
/// visible: pages [23, 44, 66] of [23, 25, 44, 66]", SCC and BPCC alike,
/// before the wait).
#[test]
fn a_cyclic_commit_rewrites_a_page_after_the_pages_before() {
    for protocol in ["scc", "bpcc"] {
        run_clean(&tx_spec_4ch(protocol, 1, vec![Expect::Device("commits")]));
    }
}
