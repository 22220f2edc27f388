//! Exhaustive crash tests of Atomic-Write on the tiny geometry, every flash
//! operation with every torn variant (recovery redoes committed groups from
//! the mapping log, and from the flag when a cut fell between the flagged
//! page and the mapping page): one transaction at a time (its only
//! isolation level) with aborts; long groups across GC and the checkpoints
//! the FTL takes for itself mid-group (so recovery must read the open group's
//! blocks); plain writes interleaved with groups; and the canary, which
//! flags a group's first page instead of its last.

mod common;
use txftl_harness::{CrashSpec, DeviceSpec, Expect, TxShape};

fn spec(protocol: &str, ops: u64, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    let expect = vec![Expect::Commits, Expect::Gc, Expect::TornDataIntactOob];
    common::txwrite_spec(DeviceSpec::tiny(protocol), "", ops, 90, tx, recovery_cuts, expect)
}

fn shape(pages_per_tx: u32, abort_pct: u32, nontx_pct: u32) -> TxShape {
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency: 1,
        nontx_pct,
        trim_pct: 5,
        transactions: 0,
        cross_pct: 0,
    }
}

#[test]
fn one_group_at_a_time_with_aborts() {
    let mut s = spec("atomic-write", 300, shape(5, 30, 10), true);
    s.expect.push(Expect::Aborts);
    let r = common::run_clean(&s);
    // Every commit appends its mappings to the mapping log.
    assert!(r.dry_run.protocol_meta_writes >= r.dry_run.commits, "{:?}", r.dry_run);
}

#[test]
fn long_groups_across_gc_and_checkpoints() {
    let mut s = spec("atomic-write", 250, shape(20, 10, 10), false);
    s.expect.push(Expect::ZoneScans);
    common::run_clean(&s);
}

#[test]
fn plain_writes_between_groups() {
    let r = common::run_clean(&common::sampled(spec("atomic-write", 300, shape(8, 10, 30), false), 1));
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
}

/// Two cuts: recover, go on, cut again, at every operation of the
/// continuation: the mapping log a mount rebuilds is tested only so.
#[test]
fn every_second_cut_after_recovery() {
    let expect = vec![Expect::Commits, Expect::Aborts, Expect::TornDataIntactOob];
    let s = common::txwrite_spec(DeviceSpec::tiny("atomic-write"), "", 60, 30, shape(4, 30, 10), false, expect);
    common::run_every_second_cut(s);
}

#[test]
fn canary_is_caught() {
    // 20% aborts: at 10% one seed of eight aborts no group.
    common::assert_caught_at_every_seed(&spec("atomic-w-canary", 250, shape(5, 20, 10), false));
}
