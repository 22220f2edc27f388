//! Exhaustive crash tests of `dftl`: random writes on a device with several
//! translation pages and a cache of one, so nearly every write misses and
//! nearly every miss must write out a changed page (a checkpoint) first.

mod common;
use common::assert_clean;
use txftl_harness::{crashtest, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::Torn;
use txftl_protocols::ProtocolOptions;

/// `tiny` at 32 blocks per plane (3 translation pages) with a cache of one.
fn spec(protocol: &str, ops: u64, fill_pct: u32, recovery_cuts: bool) -> CrashSpec {
    let mut device = DeviceSpec::tiny(protocol);
    device.nand.geometry.blocks_per_plane = 32;
    device.opts = ProtocolOptions::new().with("cmt-pages", 1);
    CrashSpec {
        device,
        workload: WorkloadSpec {
            kind: WorkloadKind::RandWrite,
            ops,
            fill_pct,
            seed: 1,
            flush_every: 8,
            tx: TxShape::default(),
        },
        torn: Torn::ALL.to_vec(),
        recovery_cuts,
        second_cuts: txftl_harness::SecondCuts::Off,
        second_ops: 30,
        only: None,
        then_only: None,
        replay_from_scratch: false,
        threads: 2,
        in_flight: txftl_harness::InFlight::Off,
        replay_base: format!(
            "txftl crashtest --protocol {protocol} --preset tiny --blocks-per-plane 32 --protocol-opt cmt-pages=1 \
             --workload randwrite --ops {ops} --fill {fill_pct} --seed 1 --flush-every 8"
        ),
        expect: vec![
            Expect::Gc,
            Expect::Checkpoints,
            Expect::TornDataIntactOob,
            Expect::Protocol("cmt_misses"),
            Expect::Protocol("cmt_changed_victims"),
        ],
    }
}

#[test]
fn random_writes_through_a_one_page_cache_survive_every_cut() {
    let r = crashtest(&spec("dftl", 200, 90, true), &|_, _| {}).unwrap();
    let p = &r.dry_run.protocol;
    assert!(p.get("cmt_changed_victims") > 50, "{:?}", r.dry_run);
    assert!(r.dry_run.map_reads > 0, "misses read translation pages: {:?}", r.dry_run);
    assert!(r.recovery_crash_points > 0);
    assert_clean(&r);
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
