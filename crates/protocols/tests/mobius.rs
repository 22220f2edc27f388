//! `mobius`: static transactions, their inode and flags, the buffered
//! transactional calls, merges, and what recovery makes of a cut inside a
//! transaction.

mod common;

use common::{nand, page, reads};
use txftl_ftl::extensions::{require, Extension, SwriteAck};
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn device(opts: &ProtocolOptions) -> Box<dyn AnyDevice> {
    format("mobius", nand(), FtlConfig::default(), opts).unwrap()
}

/// `tiny` on eight dies (four channels of two): pages of one transaction
/// spread so that some dies stay idle while others program.
fn eight_dies() -> Nand {
    let mut p = preset("tiny").unwrap();
    p.geometry.channels = 4;
    p.geometry.dies_per_channel = 2;
    Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

/// One inode a transaction, whose flag the next inode carries; a flush
/// with a flag pending writes a flags-only inode; everything survives a
/// power cut, and the flagged transactions need no verify read.
#[test]
fn swrite_writes_one_inode_a_transaction_and_flags_it_in_the_next() {
    let mut d = device(&ProtocolOptions::new());
    for t in 1..=5u32 {
        let data: Vec<Vec<u8>> = (0..4).map(|i| page(&*d, (t * 10 + i) as u8)).collect();
        let pages: Vec<(u32, &[u8])> = (0..4).map(|i| (t * 4 + i, data[i as usize].as_slice())).collect();
        let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
        calls.swrite(t, &pages, SwriteAck::AllPages).unwrap();
    }
    d.flush().unwrap();
    let s = d.stats();
    let p = &s.protocol;
    assert_eq!(
        (p.get("mobius_inodes"), p.get("mobius_flag_only_inodes"), p.get("mobius_flags")),
        (6, 1, 5),
        "{s:?}"
    );
    assert_eq!((s.commits, s.host_writes), (5, 20), "{s:?}");
    let mut d = mount("mobius", d.into_nand(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    for t in 1..=5u32 {
        for i in 0..4 {
            assert_eq!(reads(&mut *d, t * 4 + i), (t * 10 + i) as u8);
        }
    }
    d.check_invariants().unwrap();
}

/// begin / write_tx / commit is one S-SWRITE at commit; before it, other
/// readers see the old data and the transaction its own; an abort writes
/// nothing.
#[test]
fn the_transactional_calls_buffer_until_commit() {
    let mut d = device(&ProtocolOptions::new());
    d.write(3, &page(&*d, 1)).unwrap();
    d.begin(7).unwrap();
    d.write_tx(7, 3, &page(&*d, 2)).unwrap();
    d.write_tx(7, 4, &page(&*d, 2)).unwrap();
    let programs = d.stats().flash_programs;
    let mut buf = page(&*d, 0);
    d.read_tx(7, 3, &mut buf).unwrap();
    assert_eq!(buf[0], 2);
    assert_eq!(reads(&mut *d, 3), 1, "uncommitted pages are invisible");
    d.begin(8).unwrap();
    d.write_tx(8, 5, &page(&*d, 9)).unwrap();
    d.abort(8).unwrap();
    assert_eq!(d.stats().flash_programs, programs, "nothing is written before the commit");
    d.commit(7).unwrap();
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 4), reads(&mut *d, 5)), (2, 2, 0));
    assert!(matches!(d.commit(8), Err(DeviceError::UnknownTransaction(8))));
}

/// A transaction of more pages than an inode's items commits whole, its
/// items in as many inodes as they need (parts, then the inode binding
/// them), another transaction committing while it is open; both survive a
/// power cut. An SWRITE that large commits the same way.
#[test]
fn a_transaction_larger_than_an_inode_takes_several_inodes() {
    let mut d = device(&ProtocolOptions::new());
    let items = (512 - 96) / 8;
    let n = 2 * items + 10;
    let data = page(&*d, 3);
    let pages: Vec<(u32, &[u8])> = (400..400 + items + 1).map(|l| (l, data.as_slice())).collect();
    let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
    calls.swrite(9, &pages, SwriteAck::AllPages).unwrap();
    assert_eq!(d.stats().protocol.get("mobius_part_inodes"), 1);
    d.begin(1).unwrap();
    d.begin(2).unwrap();
    for lpn in 0..n {
        d.write_tx(1, lpn, &page(&*d, 1)).unwrap();
        if lpn < 5 {
            d.write_tx(2, 300 + lpn, &page(&*d, 2)).unwrap();
        }
    }
    d.commit(2).unwrap();
    assert_eq!(reads(&mut *d, 5), 0, "uncommitted pages are invisible");
    let mut buf = page(&*d, 0);
    d.read_tx(1, 5, &mut buf).unwrap();
    assert_eq!(buf[0], 1, "the transaction reads its own pages");
    let inodes = d.stats().protocol.get("mobius_inodes");
    d.commit(1).unwrap();
    assert_eq!(
        d.stats().protocol.get("mobius_inodes") - inodes,
        3,
        "{n} items in inodes of {items}"
    );
    assert_eq!(d.stats().protocol.get("mobius_part_inodes"), 3);
    assert!((0..n).all(|l| reads(&mut *d, l) == 1));
    let mut nand = d.into_nand();
    nand.power_off();
    nand.power_on();
    let mut d = mount("mobius", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    assert!((0..n).all(|l| reads(&mut *d, l) == 1));
    assert!((300..305).all(|l| reads(&mut *d, l) == 2));
    assert!((400..400 + items + 1).all(|l| reads(&mut *d, l) == 3));
    d.check_invariants().unwrap();
}

/// The state after a committed transaction of 1s on logical pages 0..6
/// and a second one of 2s begun on the same pages, uncommitted.
fn two_transactions(protocol: &str) -> Box<dyn AnyDevice> {
    let mut d = format(protocol, nand(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    d.begin(1).unwrap();
    for lpn in 0..6 {
        d.write_tx(1, lpn, &page(&*d, 1)).unwrap();
    }
    d.commit(1).unwrap();
    d.flush().unwrap();
    d.begin(2).unwrap();
    for lpn in 0..6 {
        d.write_tx(2, lpn, &page(&*d, 2)).unwrap();
    }
    d
}

/// What logical pages 0..6 read after a cut at the `k`-th flash operation
/// of the second commit (None: the commit ended before it), how many
/// transactions recovery found aborted, and the device's invariants.
fn cut_commit_at(protocol: &str, k: u64) -> Option<(Vec<u8>, u64, Result<(), String>)> {
    let mut d = two_transactions(protocol);
    let ops = d.nand().op_count();
    d.nand_mut().arm_power_cut(txftl_nand::PowerCut {
        at_op: ops + k,
        torn: txftl_nand::Torn::None,
        seed: 1,
    });
    if d.commit(2).is_ok() {
        return None;
    }
    let mut nand = d.into_nand();
    nand.power_on();
    let mut d = mount(protocol, nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let got = (0..6)
        .map(|lpn| {
            let mut buf = page(&*d, 0);
            d.read(lpn, &mut buf).map(|_| buf[0]).unwrap_or(0xEE)
        })
        .collect();
    Some((got, d.stats().protocol.get("mobius_aborted_found"), d.check_invariants()))
}

/// A cut at every flash operation of a commit: recovery shows the
/// transaction whole or not at all, and the cuts between its inode and its
/// last data page are found aborted by the verify reads. The canary, which
/// skips them, shows a transaction in part at one of those cuts.
#[test]
fn a_cut_inside_a_transaction_aborts_it_and_the_canary_does_not() {
    let mut aborted = 0;
    for k in 0.. {
        let Some((got, found, invariants)) = cut_commit_at("mobius", k) else {
            break;
        };
        assert!(got == vec![1; 6] || got == vec![2; 6], "cut at op {k}: {got:?}");
        invariants.unwrap();
        aborted += found;
    }
    assert!(aborted > 0, "no cut fell between an inode and its last page");
    let caught = (0..)
        .map_while(|k| cut_commit_at("mobius-canary", k))
        .any(|(got, _, invariants)| (got != vec![1; 6] && got != vec![2; 6]) || invariants.is_err());
    assert!(caught, "the canary showed no transaction in part");
}

/// A-SWRITE returns once the inode is on flash, S-SWRITE once every page
/// is; both transactions survive a flush and a power cut.
#[test]
fn a_swrite_returns_at_its_inode_and_s_swrite_at_its_last_page() {
    let latency = |ack: SwriteAck| {
        let mut d = device(&ProtocolOptions::new());
        let data: Vec<Vec<u8>> = (0..8).map(|i| page(&*d, i as u8)).collect();
        let pages: Vec<(u32, &[u8])> = (0..8).map(|i| (i as u32, data[i].as_slice())).collect();
        let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
        let t = calls.swrite(1, &pages, ack).unwrap();
        (t, d)
    };
    let (sync, _) = latency(SwriteAck::AllPages);
    let (early, mut d) = latency(SwriteAck::Record);
    assert!(early < sync, "A-SWRITE {early} ns, S-SWRITE {sync} ns");
    d.write(100, &page(&*d, 7)).unwrap();
    d.flush().unwrap();
    let mut nand = d.into_nand();
    nand.power_on();
    let mut d = mount("mobius", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    for lpn in 0..8 {
        assert_eq!(reads(&mut *d, lpn), lpn as u8);
    }
    assert_eq!(reads(&mut *d, 100), 7);
}

/// The inode carrying an A-SWRITE's commit flag (here a flags-only one, at
/// the flush that follows) starts programming only once every page of that
/// transaction is done: otherwise a power cut between the two would find
/// the flag and take a transaction with torn pages as committed. Eight dies
/// on four channels, transactions of 1 to 8 pages: some leave the ALA's die
/// idle while their pages are still being programmed.
#[test]
fn an_a_swrite_is_flagged_only_once_its_pages_are_done() {
    for n in 1..=8usize {
        let nand = eight_dies();
        let mut d = format("mobius", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
        d.nand_mut().set_op_trace(true);
        let data: Vec<Vec<u8>> = (0..n).map(|i| page(&*d, i as u8)).collect();
        let pages: Vec<(u32, &[u8])> = (0..n).map(|i| (i as u32, data[i].as_slice())).collect();
        let before = d.nand().op_trace().len();
        let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
        calls.swrite(1, &pages, SwriteAck::Record).unwrap();
        let after = d.nand().op_trace().len();
        d.flush().unwrap();
        let trace = d.nand().op_trace();
        let programs = |ops: &[txftl_nand::OpTrace]| -> Vec<txftl_nand::OpTrace> {
            ops.iter().filter(|o| o.kind == txftl_nand::FlashOp::Program).copied().collect()
        };
        let tx = programs(&trace[before..after]);
        assert_eq!(tx.len(), n + 1, "the inode and {n} pages");
        let pages_done = tx[1..].iter().map(|o| o.done_ns).max().unwrap();
        let flag_inode = programs(&trace[after..])[0];
        assert!(
            flag_inode.start_ns >= pages_done,
            "{n} pages: the flag's inode starts at {} ns, the pages are done at {pages_done} ns",
            flag_inode.start_ns
        );
        assert_eq!(d.stats().protocol.get("mobius_flag_only_inodes"), 1);
    }
}

/// A merge (a checkpoint) persists the mappings of every static transaction
/// issued and ends the active ALA: it starts only once an A-SWRITE's pages
/// in flight are done, or a power cut after it would find that transaction
/// mapped with a torn page, or unflagged before the checkpoint and so never
/// read. One page on eight dies leaves the checkpoint's dies idle; `active-
/// ala=1` makes the next static transaction merge first.
#[test]
fn a_merge_waits_for_the_a_swrite_in_flight() {
    let nand = eight_dies();
    let opts = ProtocolOptions::new().with("active-ala", 1);
    let mut d = format("mobius", nand, FtlConfig::default(), &opts).unwrap();
    d.nand_mut().set_op_trace(true);
    let one = page(&*d, 1);
    let before = d.nand().op_trace().len();
    let swrite = |d: &mut Box<dyn AnyDevice>, tid: u32, lpn: u32| {
        let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
        calls.swrite(tid, &[(lpn, one.as_slice())], SwriteAck::Record).unwrap();
    };
    swrite(&mut d, 1, 0);
    let after = d.nand().op_trace().len();
    swrite(&mut d, 2, 1);
    assert_eq!(d.stats().protocol.get("mobius_merges"), 1);
    let trace = d.nand().op_trace();
    let programs = |ops: &[txftl_nand::OpTrace]| -> Vec<txftl_nand::OpTrace> {
        ops.iter().filter(|o| o.kind == txftl_nand::FlashOp::Program).copied().collect()
    };
    let first = programs(&trace[before..after]);
    assert_eq!(first.len(), 2, "the inode and its page");
    let page_done = first[1].done_ns;
    for o in programs(&trace[after..]) {
        assert!(
            o.start_ns >= page_done,
            "{o:?} starts before the A-SWRITE's page is done at {page_done} ns"
        );
    }
}

/// A-SWRITEs come back in the order they returned (§IV-B): when recovery
/// finds an unflagged transaction's page torn, the later unflagged ones go
/// with it, whole or not, since the host may have issued them because the
/// earlier one returned. Eight dies: the second transaction's inode and
/// page go to idle dies while the first one's page still programs, so no
/// inode flags the first. The timing model ends programs in issue order,
/// so no cut reaches a later A-SWRITE whole beside an earlier one torn
/// (the crash sets cannot show this rule); a program that runs long, as an
/// MLC upper page does, can: here the first transaction's page is torn by
/// hand, after both are on flash.
#[test]
fn a_swrite_found_torn_takes_the_later_unflagged_ones_with_it() {
    let nand = eight_dies();
    let opts = ProtocolOptions::new().with("s-max", 8);
    let mut d = format("mobius", nand, FtlConfig::default(), &opts).unwrap();
    d.nand_mut().set_op_trace(true);
    let before = d.nand().op_trace().len();
    for tid in 1..=2u32 {
        let data = page(&*d, tid as u8);
        let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
        calls.swrite(tid, &[(tid, data.as_slice())], SwriteAck::Record).unwrap();
    }
    assert_eq!(d.stats().protocol.get("mobius_flags"), 0, "no inode flags the first");
    let programs: Vec<u32> = d.nand().op_trace()[before..]
        .iter()
        .filter(|o| o.kind == txftl_nand::FlashOp::Program)
        .map(|o| o.target)
        .collect();
    assert_eq!(programs.len(), 4, "two inodes and their pages: {programs:?}");
    let mut nand = d.into_nand();
    nand.power_on();
    for offset in 0..nand.config().geometry.page_size as usize {
        nand.flip_byte(programs[1], false, offset, 0xFF).unwrap();
    }
    let mut d = mount("mobius", nand, FtlConfig::default(), &opts).unwrap();
    assert_eq!(
        d.stats().protocol.get("mobius_aborted_found"),
        2,
        "both unflagged transactions aborted"
    );
    for lpn in 1..=2 {
        assert_eq!(reads(&mut *d, lpn), 0, "lpn {lpn} shows a transaction recovery must abort");
    }
}

/// A write outside transactions is durable at the inode that logs it (the
/// next flush's), a trim at the next checkpoint: until then a recovery
/// maps the page before, and the device's `durable_state` must say so. After
/// every operation of a seeded mix of writes outside transactions, trims,
/// static transactions and flushes, on `tiny` (small enough for GC), a
/// mount of a copy of the NAND rebuilds the state the device describes,
/// each page's version included (every write is a page of its own byte).
/// A checkpoint may fall inside a write: before its program (GC's, or the
/// window's: it persists the page before, and the write stays undurable;
/// a `durable_state` that took the L2P as it is fails there, as the crash
/// harness's recovery-equivalence check found after a first cut) or after
/// it (the interval's, here every 5 programs: the write is durable). Both
/// must happen, or the set proves nothing about them.
#[test]
fn durable_state_is_what_a_recovery_of_the_nand_rebuilds() {
    let (mut before, mut after) = (0, 0);
    for every in [0, 5] {
        let cfg = FtlConfig {
            checkpoint_every_pages: every,
            ..FtlConfig::default()
        };
        let (b, a) = durable_state_after_every_operation(cfg);
        eprintln!("checkpoint every {every} programs: {b} writes with a checkpoint before their program, {a} after it");
        (before, after) = (before + b, after + a);
    }
    assert!(
        before > 0 && after > 0,
        "{before} checkpoints before a write's program, {after} after it"
    );
}

/// The writes a checkpoint fell in, before their program and after it.
fn durable_state_after_every_operation(ftl: FtlConfig) -> (u32, u32) {
    use rand::{Rng, SeedableRng};
    let cfg = preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic);
    let mut d = format("mobius", Nand::new(cfg).unwrap(), ftl.clone(), &ProtocolOptions::new()).unwrap();
    let n = d.info().logical_pages;
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
    let (mut before, mut after) = (0, 0);
    for i in 0..1500u32 {
        let v = (i % 250 + 1) as u8;
        let lpn = rng.gen_range(0..n);
        let checkpoints = d.stats().checkpoints;
        let op = rng.gen_range(0..100);
        match op {
            0..60 => d.write(lpn, &page(&*d, v)).map(drop),
            60..70 => d.trim(lpn).map(drop),
            70..90 => {
                let data = page(&*d, v);
                let pages: Vec<(u32, &[u8])> = (0..3).map(|k| ((lpn + k * 7) % n, data.as_slice())).collect();
                let calls = require(d.static_tx_calls(), "mobius", Extension::StaticTx).unwrap();
                calls.swrite(i, &pages, SwriteAck::AllPages).map(drop)
            }
            _ => d.flush().map(drop),
        }
        .unwrap();
        let live = d.durable_state().unwrap();
        let mut copy = mount("mobius", d.nand().snapshot(), ftl.clone(), &ProtocolOptions::new()).unwrap();
        if let Some(why) = live.diff(&copy.durable_state().unwrap()) {
            panic!("after operation {i} (op {op}, lpn {lpn}): {why}");
        }
        if op < 60 && d.stats().checkpoints > checkpoints {
            // Durable: the checkpoint came after its program (or an
            // inode's worth of unlogged writes logged it).
            if reads(&mut *copy, lpn) == v {
                after += 1;
            } else {
                before += 1;
            }
        }
    }
    (before, after)
}
