//! Crash tests with flash faults on: bit errors (the `stress` profile, baked
//! for 100 days so some pages are beyond ECC even after read retry) and
//! program failures, every crash point enumerated. Every loss must be
//! reported (a read refused with `DataLost`, checked to be a page really
//! beyond ECC), never silent; and a canary that lets GC copy an uncorrectable
//! page as if it were good must be caught.

mod common;
use common::assert_clean;
use txftl_harness::{crashtest, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::FaultModel;

fn faults() -> FaultModel {
    FaultModel {
        retention_days: 100.0,
        ..FaultModel::profile("stress", 1).unwrap()
    }
}

fn spec(protocol: &str, kind: WorkloadKind, ops: u64, recovery_cuts: bool) -> CrashSpec {
    let mut device = DeviceSpec::tiny(protocol);
    device.faults = Some(faults());
    let tx = TxShape {
        concurrency: 2,
        nontx_pct: 10,
        trim_pct: 5,
        ..TxShape::default()
    };
    CrashSpec::every_point(
        device,
        WorkloadSpec {
            kind,
            ops,
            fill_pct: 90,
            seed: 1,
            flush_every: 8,
            tx,
        },
        vec![
            Expect::Device("gc_runs"),
            Expect::Device("corrected_bits"),
            Expect::Device("read_retries"),
            Expect::Device("program_failures"),
            Expect::Device("bad_blocks"),
        ],
        recovery_cuts,
        format!(
            "txftl crashtest --protocol {protocol} --preset tiny --workload {} --ops {ops} --fill 90 --seed 1 --flush-every 8 --faults stress --fault-seed 1 --retention-days 100",
            kind.name()
        ),
    )
}

#[test]
fn plain_with_bit_errors_and_program_failures_loses_nothing_silently() {
    let mut s = spec("plain", WorkloadKind::RandWrite, 300, false);
    s.expect.push(Expect::Device("uncorrectable_reads"));
    let r = crashtest(&s, &|_, _| {}).unwrap();
    let e = &r.exercised;
    eprintln!("{e:?}");
    // GC met pages beyond ECC and copied them marked lost; recoveries met
    // unreadable pages (torn GC copies among them, skipped for their source).
    assert!(e.dry_run.lost_page_copies > 0 && e.unreadable_pages > 0, "{e:?}");
    assert!(e.dry_run.retired_blocks > 0, "{e:?}");
    assert_clean(&r);
}

#[test]
fn xftl_with_bit_errors_and_program_failures_survives_every_cut() {
    let r = crashtest(&spec("xftl", WorkloadKind::TxWrite, 300, true), &|_, _| {}).unwrap();
    eprintln!("{:?}", r.exercised);
    assert!(r.recovery_crash_points > 0);
    assert_clean(&r);
}

/// LightTx counts a transaction's pages at recovery: a page of the
/// Unavailable Zone whose data is beyond ECC still counts (its spare area
/// says whose it is), or the commit it belongs to would be lost.
#[test]
fn lighttx_with_bit_errors_and_program_failures_survives_every_cut() {
    let mut s = spec("lighttx", WorkloadKind::TxWrite, 300, false);
    s.workload.tx.concurrency = 3;
    s.replay_base += " --concurrency 3 --no-recovery-cuts";
    let r = crashtest(&s, &|_, _| {}).unwrap();
    eprintln!("{:?}", r.exercised);
    assert!(
        r.exercised.zone_pages_scanned > 0 && r.exercised.unreadable_pages > 0,
        "{:?}",
        r.exercised
    );
    assert_clean(&r);
}

#[test]
fn canary_gc_copying_an_uncorrectable_page_as_good_is_caught() {
    let mut s = spec("plain", WorkloadKind::RandWrite, 300, false);
    s.device.ftl.canary = Some(txftl_ftl::Canary::IgnoreUncorrectable);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(r.violation_count > 0, "the canary went unnoticed: {:?}", r.exercised);
    eprintln!("caught: {}", r.violations[0].message);
}
