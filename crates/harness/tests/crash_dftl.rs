//! Exhaustive crash tests of `dftl`: random writes on a device with several
//! translation pages and a cache of one, so nearly every write misses and
//! nearly every miss must write out a changed page first: alone (DFTL's
//! write-back, between checkpoints, with a checkpoint when the ring's room
//! for them is used up), or by a checkpoint (`evict-checkpoint=1`); and
//! the recovery that scans the whole device (`scan-recovery=1`, Möbius's
//! DFTL) cut at every one of its reads.

mod common;
use common::assert_clean;
use txftl_harness::{crashtest, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_protocols::ProtocolOptions;

/// `tiny` at 32 blocks per plane (3 translation pages) with a cache of one.
fn spec(protocol: &str, ops: u64, fill_pct: u32, recovery_cuts: bool) -> CrashSpec {
    spec_with(protocol, ops, fill_pct, recovery_cuts, None)
}

/// `spec`, with one more protocol option set to 1 (`evict-checkpoint` or
/// `scan-recovery`), which the replay command names too.
fn spec_with(protocol: &str, ops: u64, fill_pct: u32, recovery_cuts: bool, option: Option<&str>) -> CrashSpec {
    let mut device = DeviceSpec::tiny(protocol);
    device.nand.geometry.blocks_per_plane = 32;
    device.opts = ProtocolOptions::new().with("cmt-pages", 1);
    let extra = option.map_or(String::new(), |k| format!(" --protocol-opt {k}=1"));
    if let Some(k) = option {
        device.opts = device.opts.with(k, 1);
    }
    let by_checkpoint = option == Some("evict-checkpoint");
    CrashSpec::every_point(
        device,
        WorkloadSpec {
            kind: WorkloadKind::RandWrite,
            ops,
            fill_pct,
            seed: 1,
            flush_every: 8,
            tx: TxShape::default(),
        },
        vec![
            Expect::Device("gc_runs"),
            Expect::Device("checkpoints"),
            Expect::TornDataIntactOob,
            Expect::Protocol("cmt_misses"),
            Expect::Protocol(if by_checkpoint {
                "cmt_eviction_checkpoints"
            } else {
                "cmt_write_backs"
            }),
        ],
        recovery_cuts,
        format!(
            "txftl crashtest --protocol {protocol} --preset tiny --blocks-per-plane 32 --protocol-opt cmt-pages=1{extra} \
             --workload randwrite --ops {ops} --fill {fill_pct} --seed 1 --flush-every 8"
        ),
    )
}

/// Write-backs between checkpoints: cuts land in them, in the checkpoints
/// GC takes and in those the ring's room for write-backs forces.
#[test]
fn random_writes_through_a_one_page_cache_survive_every_cut() {
    let r = crashtest(&spec("dftl", 200, 90, true), &|_, _| {}).unwrap();
    let p = &r.dry_run.protocol;
    assert!(p.get("cmt_write_backs") > 50, "{:?}", r.dry_run);
    assert!(r.dry_run.map_reads > 0, "misses read translation pages: {:?}", r.dry_run);
    assert!(r.recovery_crash_points > 0);
    assert_clean(&r);
}

/// Few GC checkpoints (60% full: 4 GC runs), so the write-backs use up the
/// ring's room and evictions take checkpoints of their own.
#[test]
fn write_backs_that_fill_the_rings_room_survive_every_cut() {
    let r = crashtest(&spec("dftl", 200, 60, true), &|_, _| {}).unwrap();
    let p = &r.dry_run.protocol;
    assert!(
        p.get("cmt_eviction_checkpoints") > 0 && p.get("cmt_write_backs") > 50,
        "{:?}",
        r.dry_run
    );
    assert_clean(&r);
}

/// Write-backs into a checkpoint ring in stripes of two blocks on the two
/// dies (`--checkpoint-stripe 2`): a write-back that enters a stripe
/// erases both its blocks; its room counts stripes.
#[test]
fn write_backs_into_a_striped_ring_survive_every_cut() {
    let mut s = spec("dftl", 200, 90, true);
    s.device.ftl.checkpoint_stripe = 2;
    s.replay_base += " --checkpoint-stripe 2";
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(r.dry_run.protocol.get("cmt_write_backs") > 50, "{:?}", r.dry_run);
    assert_clean(&r);
}

/// `evict-checkpoint=1`: every changed victim is written by a checkpoint.
#[test]
fn evicting_by_checkpoint_survives_every_cut() {
    let r = crashtest(&spec_with("dftl", 200, 90, true, Some("evict-checkpoint")), &|_, _| {}).unwrap();
    let p = &r.dry_run.protocol;
    assert!(
        p.get("cmt_eviction_checkpoints") > 50 && p.get("cmt_write_backs") == 0,
        "{:?}",
        r.dry_run
    );
    assert_clean(&r);
}

/// `scan-recovery=1`: every recovery also reads every page of the blocks
/// in use at its checkpoint, and maps what the roll-forward maps, at every
/// cut and every cut of the recovery itself.
#[test]
fn whole_device_scan_recovery_survives_every_cut() {
    let scan = crashtest(&spec_with("dftl", 100, 90, true, Some("scan-recovery")), &|_, _| {}).unwrap();
    // Every recovery read the blocks written before its checkpoint (the
    // roll-forward reads none of them: `zone_pages_scanned` stays 0 there).
    assert!(
        scan.exercised.zone_pages_scanned > 100 * scan.crash_points,
        "{} pages over {} cuts",
        scan.exercised.zone_pages_scanned,
        scan.crash_points
    );
    assert_clean(&scan);
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation: the cached mapping a mount starts from is tested only so.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("dftl", 40, 20, false);
    s.expect = vec![Expect::TornDataIntactOob, Expect::Protocol("cmt_misses")];
    common::run_every_second_cut(s);
}

/// The canary lets a changed translation page leave the cache unwritten:
/// its stale flash copy comes back at the next miss, and the live device's
/// invariants break in the dry run, before any cut.
#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("dftl-canary", 200, 90, false));
}
