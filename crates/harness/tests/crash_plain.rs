//! Exhaustive crash tests of `plain` on the tiny geometry, and the canary.

mod common;
use common::assert_clean;
use txftl_harness::{crashtest, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::Torn;

/// Every plain scenario must run GC and checkpoints and tear pages whose OOB
/// survives (the `data` torn variant) so roll-forward's data check is tested.
fn spec(protocol: &str, kind: WorkloadKind, ops: u64, fill_pct: u32, seed: u64, recovery_cuts: bool) -> CrashSpec {
    CrashSpec::every_point(
        DeviceSpec::tiny(protocol),
        WorkloadSpec {
            kind,
            ops,
            fill_pct,
            seed,
            flush_every: 8,
            tx: TxShape::default(),
        },
        vec![Expect::Device("gc_runs"), Expect::Device("checkpoints"), Expect::TornDataIntactOob],
        recovery_cuts,
        format!(
            "txftl crashtest --protocol {protocol} --preset tiny --workload {} --ops {ops} --fill {fill_pct} --seed {seed} --flush-every 8",
            kind.name()
        ),
    )
}

#[test]
fn randwrite_with_gc_and_checkpoints_survives_every_cut() {
    let r = crashtest(&spec("plain", WorkloadKind::RandWrite, 260, 90, 1, true), &|_, _| {}).unwrap();
    assert!(r.dry_run.gc_runs > 0, "the workload must run GC: {:?}", r.dry_run);
    assert!(r.dry_run.checkpoints > 0, "the workload must checkpoint: {:?}", r.dry_run);
    assert!(
        r.crash_points > 3 * 300 && r.recovery_crash_points > 0,
        "{} / {}",
        r.crash_points,
        r.recovery_crash_points
    );
    assert_clean(&r);
}

#[test]
fn mixed_with_trims_survives_every_cut() {
    let mut s = spec("plain", WorkloadKind::Mixed, 200, 60, 2, true);
    s.expect = vec![Expect::Device("host_trims"), Expect::TornDataIntactOob];
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
}

#[test]
fn seqwrite_survives_every_cut() {
    let s = common::sampled(spec("plain", WorkloadKind::SeqWrite, 300, 80, 3, false), 1);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation: the free pool and tables a mount rebuilds are tested only so.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("plain", WorkloadKind::RandWrite, 60, 30, 6, false);
    s.expect = vec![Expect::TornDataIntactOob];
    common::run_every_second_cut(s);
}

/// Incremental checkpoints (scale issue, item 3): with a checkpoint every 16
/// programs, most checkpoints write only the table pages that changed and
/// leave the others where earlier checkpoints put them, and the ring moves
/// old table pages ahead of its erases. Cuts inside those checkpoints (and
/// inside the recoveries' sealing checkpoints) must recover exactly.
#[test]
fn incremental_checkpoints_survive_every_cut() {
    let r = crashtest(&incremental_spec(), &|_, _| {}).unwrap();
    assert_clean(&r);
}

/// Random writes with a checkpoint every 16 programs, which must keep
/// table pages in place and move some ahead of the ring's erases.
fn incremental_spec() -> CrashSpec {
    let mut s = spec("plain", WorkloadKind::RandWrite, 260, 90, 5, true);
    s.device.ftl.checkpoint_every_pages = 16;
    s.replay_base += " --checkpoint-every 16";
    s.expect = vec![
        Expect::Device("gc_runs"),
        Expect::Device("checkpoints"),
        Expect::Device("map_pages_kept"),
        Expect::Device("map_moves"),
        Expect::TornDataIntactOob,
    ];
    s
}

/// The checkpoint ring in stripes of two blocks, one on each die
/// (`--checkpoint-stripe 2`): a checkpoint's table pages and record go to
/// both dies at once, so a cut catches two of its programs in flight and a
/// stripe's two erases together; the ring wraps (old table pages moved
/// ahead of its erases). Every cut, and every cut of the recoveries, holds.
#[test]
fn a_striped_checkpoint_ring_survives_every_cut() {
    let mut s = incremental_spec();
    // Twice `tiny`'s blocks, so the table spans pages a checkpoint can keep.
    s.device.nand.geometry.blocks_per_plane = 32;
    s.device.ftl.checkpoint_stripe = 2;
    s.replay_base += " --blocks-per-plane 32 --checkpoint-stripe 2";
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(r.recovery_crash_points > 0);
    assert_clean(&r);
}

/// A spare area larger than the OOB record (128 bytes here, the record is 64):
/// a plain `partial` tear then often leaves the record whole over torn data, so
/// roll-forward must check the data CRC, not just the OOB's.
#[test]
fn a_spare_area_larger_than_the_oob_record() {
    let mut s = spec("plain", WorkloadKind::RandWrite, 200, 90, 4, false);
    s.device.nand.geometry.oob_size = 128;
    s.torn = vec![Torn::Partial];
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert_clean(&r);
}

/// The canary reuses GC victims before a checkpoint covers them: the harness
/// must see lost or wrong data.
#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("plain-canary", WorkloadKind::RandWrite, 260, 90, 1, false));
}

/// Every crash point is forked from one rolling run of the workload and
/// every recovery cut redone from the recovery's log: they must find what
/// replaying from a fresh device finds, point for point (the canary's
/// violations, and a clean set's recovery cuts).
#[test]
fn forked_points_match_replayed_ones() {
    for (protocol, ops, fill_pct, recovery_cuts) in [("plain-canary", 260, 90, false), ("plain", 60, 30, true)] {
        let mut s = spec(protocol, WorkloadKind::RandWrite, ops, fill_pct, 1, recovery_cuts);
        s.expect.clear();
        let forked = crashtest(&s, &|_, _| {}).unwrap();
        s.replay_from_scratch = true;
        let replayed = crashtest(&s, &|_, _| {}).unwrap();
        let counts = |r: &txftl_harness::CrashReport| (r.crash_points, r.recovery_crash_points, r.violation_count, r.exercised);
        assert_eq!(counts(&forked), counts(&replayed), "{protocol}");
        assert_eq!(
            format!("{:?}", forked.violations),
            format!("{:?}", replayed.violations),
            "{protocol}"
        );
        assert!(forked.violation_count > 0 || recovery_cuts, "{protocol}: the canary must show");
        assert!(forked.recovery_crash_points > 0 || !recovery_cuts, "{protocol}");
    }
}

/// A workload long enough for a block to wear out (endurance 24; blocks
/// shipped erased spend no cycle before their first program): GC retires it as
/// bad mid-run, and every crash point still holds the contract. Wear leveling
/// keeps the blocks' erase counts close, so the first bad block comes near the
/// device's end of life: seed 8 leaves the most room after it (1 bad block at
/// 2,750 writes, 2 at 2,800; seed 1 has its first at 2,780 and a cut's
/// continuation there wears the device out).
#[test]
fn grown_bad_block_survives_every_cut() {
    let mut s = spec("plain", WorkloadKind::RandWrite, 2750, 90, 8, false);
    s.device.nand.endurance = 24;
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(r.dry_run.bad_blocks > 0, "a block must wear out: {:?}", r.dry_run);
    assert_clean(&r);
}

/// The comparison every recovery cut makes (`same_logical_state`) finds
/// what decoding every page finds: nothing on the device the bytes were
/// kept from, and the first page whose content changed, with its content,
/// once pages were rewritten, trimmed or written for the first time; a
/// page rewritten with the bytes it held is the same content.
#[test]
fn recovery_cut_comparison_finds_the_first_changed_page() {
    use txftl_harness::data::{fill, Content};
    use txftl_harness::run::{logical_state, logical_state_kept, same_logical_state};
    let mut dev = DeviceSpec::tiny("plain").fresh().unwrap();
    let info = dev.info();
    let mut page = vec![0u8; info.page_size as usize];
    for lpn in 0..info.logical_pages / 2 {
        fill(&mut page, lpn, 1);
        dev.write(lpn, &page).unwrap();
    }
    let mut bytes = Vec::new();
    let state = logical_state_kept(&mut *dev, Some(&mut bytes)).unwrap();
    assert_eq!(state, logical_state(&mut *dev).unwrap());
    assert_eq!(same_logical_state(&mut *dev, &state, &bytes).unwrap(), None);
    // The same bytes again: the same content.
    fill(&mut page, 3, 1);
    dev.write(3, &page).unwrap();
    assert_eq!(same_logical_state(&mut *dev, &state, &bytes).unwrap(), None);
    let unwritten = info.logical_pages - 1;
    fill(&mut page, unwritten, 1);
    dev.write(unwritten, &page).unwrap();
    fill(&mut page, 9, 2);
    dev.write(9, &page).unwrap();
    dev.trim(4).unwrap();
    let changed = Content::Written { lpn: 4, version: 1 };
    assert_ne!(logical_state(&mut *dev).unwrap()[4], changed);
    let first = same_logical_state(&mut *dev, &state, &bytes).unwrap();
    assert_eq!(first, Some((4, logical_state(&mut *dev).unwrap()[4])));
    dev.write(4, &bytes[4 * page.len()..5 * page.len()]).unwrap();
    assert_eq!(
        same_logical_state(&mut *dev, &state, &bytes).unwrap(),
        Some((9, Content::Written { lpn: 9, version: 2 }))
    );
}
