//! Exhaustive crash tests of Atomic-Write on the tiny geometry, every flash
//! operation with every torn variant (recovery redoes committed groups from
//! the mapping log, and from the flag when a cut fell between the flagged
//! page and the mapping page): one transaction at a time (its only
//! isolation level) with aborts; long groups across GC and the checkpoints
//! the FTL takes for itself mid-group (so recovery must read the open group's
//! blocks); plain writes interleaved with groups; and the canary, which
//! flags a group's first page instead of its last.

mod common;
use txftl_harness::{crashtest, CrashReport, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::Torn;

fn spec(protocol: &str, ops: u64, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    CrashSpec {
        device: DeviceSpec::tiny(protocol),
        expect: vec![Expect::Commits, Expect::Gc, Expect::TornDataIntactOob],
        workload: WorkloadSpec {
            kind: WorkloadKind::TxWrite,
            ops,
            fill_pct: 90,
            seed: 1,
            flush_every: 8,
            tx,
        },
        torn: Torn::ALL.to_vec(),
        recovery_cuts,
        only: None,
        threads: 2,
        replay_base: format!(
            "txftl crashtest --protocol {protocol} --workload txwrite --ops {ops} --fill 90 --seed 1 --pages-per-tx {} --abort-ratio {} --concurrency 1 --nontx-pct {} --trim-pct {}",
            tx.pages_per_tx,
            tx.abort_pct as f64 / 100.0,
            tx.nontx_pct,
            tx.trim_pct,
        ),
    }
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

fn run(s: &CrashSpec) -> CrashReport {
    let r = crashtest(s, &|_, _| {}).unwrap();
    common::assert_clean(&r);
    r
}

#[test]
fn one_group_at_a_time_with_aborts() {
    let mut s = spec("atomic-write", 300, shape(5, 30, 10), true);
    s.expect.push(Expect::Aborts);
    let r = run(&s);
    // Every commit appends its mappings to the mapping log.
    assert!(r.dry_run.protocol_meta_writes >= r.dry_run.commits, "{:?}", r.dry_run);
}

#[test]
fn long_groups_across_gc_and_checkpoints() {
    let mut s = spec("atomic-write", 250, shape(20, 10, 10), false);
    s.expect.push(Expect::ZoneScans);
    run(&s);
}

#[test]
fn plain_writes_between_groups() {
    run(&spec("atomic-write", 300, shape(8, 10, 30), false));
}

#[test]
fn canary_is_caught() {
    let r = crashtest(&spec("atomic-w-canary", 250, shape(5, 10, 10), false), &|_, _| {}).unwrap();
    assert!(
        r.violation_count > 0,
        "the canary went unnoticed over {} crash points",
        r.crash_points
    );
}
