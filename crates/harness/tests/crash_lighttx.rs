//! Exhaustive crash tests of LightTx on the tiny geometry, every flash
//! operation with every torn variant: concurrent transactions with aborts;
//! transactions spanning GC and zone slides (checkpoints) so that recovery
//! must read the Unavailable Zone; re-updates of a page inside a transaction
//! and across open transactions (several uncommitted versions of one page);
//! and the canary, whose zone metadata forgets the Unavailable Zone.

mod common;
use txftl_harness::{crashtest, CrashReport, CrashSpec, DeviceSpec, Expect, TxShape, WorkloadKind, WorkloadSpec};
use txftl_nand::Torn;
use txftl_protocols::ProtocolOptions;

/// Every LightTx scenario must commit, run GC, slide its zones with a
/// transaction open (a non-empty Unavailable Zone), make recovery read that
/// zone, and tear pages whose OOB survives; each test adds what it is about.
fn spec(protocol: &str, ops: u64, zone_blocks: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    let mut device = DeviceSpec::tiny(protocol);
    device.opts = ProtocolOptions {
        zone_blocks,
        ..Default::default()
    };
    let zone = if zone_blocks > 0 {
        format!(" --zone-blocks {zone_blocks}")
    } else {
        String::new()
    };
    CrashSpec {
        device,
        expect: vec![
            Expect::Commits,
            Expect::Gc,
            Expect::TornDataIntactOob,
            Expect::RecordsWithOpenTx,
            Expect::ZoneScans,
        ],
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
            "txftl crashtest --protocol {protocol} --workload txwrite --ops {ops} --fill 90 --seed 1{zone} --pages-per-tx {} --abort-ratio {} --concurrency {} --nontx-pct {} --trim-pct {} --cross-tx-pct {}",
            tx.pages_per_tx,
            tx.abort_pct as f64 / 100.0,
            tx.concurrency,
            tx.nontx_pct,
            tx.trim_pct,
            tx.cross_pct
        ),
    }
}

fn shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, cross_pct: u32) -> TxShape {
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency,
        nontx_pct: 10,
        trim_pct: 5,
        transactions: 0,
        cross_pct,
    }
}

fn run(s: &CrashSpec) -> CrashReport {
    let r = crashtest(s, &|_, _| {}).unwrap();
    common::assert_clean(&r);
    r
}

#[test]
fn three_open_transactions_with_aborts() {
    let mut s = spec("lighttx", 300, 0, shape(5, 30, 3, 0), true);
    s.expect.push(Expect::Aborts);
    run(&s);
}

#[test]
fn long_transactions_across_gc_and_zone_slides() {
    // A zone of one block: the zones slide every block's worth of programs,
    // so 20-page transactions stay open across several slides.
    let mut s = spec("lighttx", 250, 1, shape(20, 10, 2, 0), false);
    s.expect.push(Expect::Checkpoints);
    let r = run(&s);
    assert!(r.dry_run.checkpoints > 10, "{:?}", r.dry_run);
}

#[test]
fn several_uncommitted_versions_of_one_page() {
    let mut s = spec("lighttx", 300, 0, shape(8, 10, 3, 40), false);
    s.expect.push(Expect::CrossTxUpdates);
    let r = run(&s);
    assert!(r.exercised.cross_tx_updates > 10, "{:?}", r.exercised);
}

/// The canary's zone metadata records no Unavailable Zone: a transaction open
/// across a slide and committed after it loses the pages it wrote before it.
#[test]
fn canary_is_caught() {
    let mut s = spec("lighttx-canary", 250, 1, shape(20, 10, 2, 0), false);
    // It records no zone, so recovery reads none: that is its bug.
    s.expect.retain(|&e| e != Expect::ZoneScans);
    let r = crashtest(&s, &|_, _| {}).unwrap();
    assert!(
        r.violation_count > 0,
        "the canary went unnoticed over {} crash points",
        r.crash_points
    );
}
