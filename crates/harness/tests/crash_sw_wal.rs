//! Exhaustive crash tests of SW-WAL on the tiny geometry, every flash
//! operation with every torn variant, on the `remap` workload (a log in the
//! working set's last quarter, checkpointed by remapping its frames onto
//! the database's pages): remaps cut before the flush that makes them
//! durable (the frame must stay in the log or be in the database, never
//! gone from both), GC moving frames and remapped pages (copied as the
//! database pages they became), remaps the device refuses (a wrong guess of
//! the host's, and every remap after a mount, whose targets the device no
//! longer knows: the host copies), second cuts after recovery, and the
//! canary that remaps whatever it is asked to.

mod common;
use txftl_harness::{CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};

/// Record pages of 8 entries: a checkpoint of more remaps spans pages, and
/// the set cuts inside those groups.
const RECORD_PAGE_ENTRIES: u32 = 8;

fn spec(protocol: &str, ops: u64, fill_pct: u32, recovery_cuts: bool) -> CrashSpec {
    let mut device = DeviceSpec::tiny(protocol);
    if protocol != "plain" {
        device.opts = txftl_protocols::ProtocolOptions::new().with("record-page-entries", RECORD_PAGE_ENTRIES);
    }
    CrashSpec::every_point(
        device,
        WorkloadSpec {
            kind: WorkloadKind::Remap,
            ops,
            fill_pct,
            seed: 1,
            flush_every: 0,
            tx: TxShape::default(),
        },
        vec![
            Expect::Device("gc_runs"),
            Expect::Device("checkpoints"),
            Expect::TornDataIntactOob,
            Expect::Protocol("sw_wal_remaps"),
            Expect::Protocol("sw_wal_remaps_refused"),
            Expect::Protocol("sw_wal_gc_tagged_copies"),
            Expect::Protocol("sw_wal_record_groups"),
        ],
        recovery_cuts,
        format!(
            "txftl crashtest --protocol {protocol} --workload remap --ops {ops} --fill {fill_pct} --seed 1 --flush-every 0{}{}",
            if protocol == "plain" {
                String::new()
            } else {
                format!(" --protocol-opt record-page-entries={RECORD_PAGE_ENTRIES}")
            },
            if recovery_cuts { "" } else { " --no-recovery-cuts" }
        ),
    )
}

/// The main set (the canary's): recovery cuts and two second cuts per point,
/// whose continuations remap frames the device forgot at the mount.
#[test]
fn remaps_cut_before_and_after_their_flush() {
    let s = common::sampled(spec("sw-wal", 300, 90, true), 2);
    let r = common::run_clean(&s);
    let p = &r.dry_run.protocol;
    assert!(p.get("sw_wal_remaps") > 50, "{p:?}");
    // Flushes made their remaps durable by record groups, some of them
    // over one page, and none by a checkpoint of their own.
    assert!(p.get("sw_wal_record_pages") > p.get("sw_wal_record_groups"), "{p:?}");
    assert_eq!(p.get("sw_wal_flush_checkpoints"), 0, "{p:?}");
    assert!(r.second_crash_points > 0);
}

/// Recover, go on, cut again at every operation of the continuation: its
/// first checkpoint's remaps are refused (the targets were in DRAM) and the
/// host copies; the frames a recovery kept stay readable.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("sw-wal", 80, 90, false);
    s.expect = vec![Expect::Protocol("sw_wal_remaps")];
    common::run_every_second_cut(s);
}

/// The same workload on `plain`, which has no remap: frames are plain
/// writes, every checkpoint copies (the harness's Base-WAL).
#[test]
fn the_workload_copies_on_a_device_without_remap() {
    let mut s = spec("plain", 200, 90, false);
    s.expect = vec![Expect::Device("gc_runs")];
    s.replay_base = s.replay_base.replace("sw-wal", "plain");
    let r = common::run_clean(&s);
    assert_eq!(r.dry_run.protocol.get("sw_wal_remaps"), 0);
}

/// The canary remaps a frame its spare area names for another page (a
/// wrong guess of the host's, or a frame written before the mount): the
/// database page then maps a page that names another.
#[test]
fn canary_is_caught() {
    let s = common::sampled(spec("sw-wal-canary", 300, 90, false), 2);
    common::assert_caught_at_every_seed(&s);
}
