//! Shared by the crash test files.

/// Every crash test binary includes this module: the CLI's allocator
/// (the workspace manifest says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use txftl_harness::CrashReport;

/// Fails with every violation printed, each with the command that replays it.
pub fn assert_clean(report: &CrashReport) {
    for v in &report.violations {
        eprintln!(
            "violation at op {} ({:?}, recovery cut {:?}): {}\n  replay: {}",
            v.at_op, v.torn, v.recovery_cut, v.message, v.replay
        );
    }
    assert_eq!(report.violation_count, 0);
}

/// The tiny device with protocol options `opts`, and the command-line flags
/// that give them (for the replay command).
#[allow(dead_code)]
pub fn tiny_with_options(protocol: &str, opts: &[(&str, u32)]) -> (txftl_harness::DeviceSpec, String) {
    let mut device = txftl_harness::DeviceSpec::tiny(protocol);
    let mut flags = String::new();
    for &(key, value) in opts {
        device.opts = device.opts.with(key, value);
        flags += &format!(" --protocol-opt {key}={value}");
    }
    (device, flags)
}

/// A `txwrite` shape with a tenth of the operations writes outside
/// transactions and a twentieth trims.
#[allow(dead_code)]
pub fn tx_shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, cross_pct: u32) -> txftl_harness::TxShape {
    txftl_harness::TxShape {
        pages_per_tx,
        abort_pct,
        concurrency,
        nontx_pct: 10,
        trim_pct: 5,
        transactions: 0,
        cross_pct,
        exclusive: false,
        end_flag: false,
        static_dynamic: None,
    }
}

/// A `txwrite` shape for protocols that refuse trims: a tenth of the
/// operations writes outside transactions, none trims; `cross_pct`% of
/// transactional writes to a page another open transaction has written;
/// `end_flag`: each committing transaction's last page by `write_end`.
#[allow(dead_code)]
pub fn no_trim_shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, cross_pct: u32, end_flag: bool) -> txftl_harness::TxShape {
    txftl_harness::TxShape {
        trim_pct: 0,
        end_flag,
        ..tx_shape(pages_per_tx, abort_pct, concurrency, cross_pct)
    }
}

/// `s` with summary pages on (`--protocol-opt summary-pages=1`): every data
/// block's last page holds its other pages' OOB records, and recovery must
/// write them and read blocks full at the checkpoint by them alone (and
/// read again what a summary holds as programmed: Flag Commit's flags).
#[allow(dead_code)]
pub fn with_summaries(mut s: txftl_harness::CrashSpec) -> txftl_harness::CrashSpec {
    use txftl_harness::Expect;
    s.device.opts = s.device.opts.clone().with("summary-pages", 1);
    s.replay_base = s.replay_base.replacen(" --seed 1 ", " --seed 1 --protocol-opt summary-pages=1 ", 1);
    s.expect.push(Expect::Device("summary_pages_written"));
    s.expect.push(Expect::SummariesTrusted);
    s
}

/// A `txwrite` crash scenario on the tiny geometry (seed 1, a flush every 8
/// writes, every torn variant) whose replay command names every option of
/// `tx`; `device_flags`: the device's own options, as the command line gives them.
#[allow(dead_code)] // not every crash test file builds transactional scenarios
pub fn txwrite_spec(
    device: txftl_harness::DeviceSpec,
    device_flags: &str,
    ops: u64,
    fill_pct: u32,
    tx: txftl_harness::TxShape,
    recovery_cuts: bool,
    expect: Vec<txftl_harness::Expect>,
) -> txftl_harness::CrashSpec {
    let protocol = device.protocol.clone();
    txftl_harness::CrashSpec::every_point(
        device,
        txftl_harness::WorkloadSpec {
            kind: txftl_harness::WorkloadKind::TxWrite,
            ops,
            fill_pct,
            seed: 1,
            flush_every: 8,
            tx,
        },
        expect,
        recovery_cuts,
        format!(
            "txftl crashtest --protocol {protocol} --workload txwrite --ops {ops} --fill {fill_pct} --seed 1{device_flags} --pages-per-tx {} --abort-ratio {} --concurrency {} --nontx-pct {} --trim-pct {} --cross-tx-pct {}{}{}{}{}",
            tx.pages_per_tx,
            tx.abort_pct as f64 / 100.0,
            tx.concurrency,
            tx.nontx_pct,
            tx.trim_pct,
            tx.cross_pct,
            if tx.exclusive { " --tx-exclusive" } else { "" },
            if tx.end_flag { " --tx-end-flag" } else { "" },
            tx.static_dynamic.map(|p| format!(" --tx-static-dynamic {p}")).unwrap_or_default(),
            if recovery_cuts { "" } else { " --no-recovery-cuts" },
        ),
    )
}

/// Runs a scenario and fails on any violation.
#[allow(dead_code)]
pub fn run_clean(s: &txftl_harness::CrashSpec) -> CrashReport {
    let r = txftl_harness::crashtest(s, &|_, _| {}).unwrap();
    assert_clean(&r);
    r
}

/// The canary of `s` is caught at each of the seeds 1 to 8: its crash points
/// report violations, or the uncut dry run finds the live device's
/// invariants broken. One lucky seed proves little; a canary caught at
/// every seed of its own set shows the set reaches its bug, not a workload
/// that happened to.
#[allow(dead_code)]
pub fn assert_caught_at_every_seed(s: &txftl_harness::CrashSpec) {
    use txftl_harness::crash::CrashError;
    let mut missed = Vec::new();
    for seed in 1..=8u64 {
        let mut s = s.clone();
        s.workload.seed = seed;
        assert!(s.replay_base.contains(" --seed 1 "), "{}", s.replay_base);
        s.replay_base = s.replay_base.replacen(" --seed 1 ", &format!(" --seed {seed} "), 1);
        match txftl_harness::crashtest(&s, &|_, _| {}) {
            Ok(r) if r.violation_count > 0 => {
                eprintln!(
                    "seed {seed}: caught, {} violations over {} crash points; first: {:?}",
                    r.violation_count,
                    r.crash_points,
                    r.violations.first().map(|v| (v.at_op, v.torn, v.second_cut, &v.message))
                )
            }
            Ok(r) => missed.push(format!(
                "seed {seed}: 0 violations over {} crash points: {}",
                r.crash_points, s.replay_base
            )),
            Err(CrashError::DryRun(why)) if why.contains("invariant broken") => eprintln!("seed {seed}: caught by the dry run"),
            Err(e) => missed.push(format!("seed {seed}: {e}: {}", s.replay_base)),
        }
    }
    assert!(missed.is_empty(), "the canary went unnoticed:\n{}", missed.join("\n"));
}

/// A small set for two-cut runs, every second cut: the cut before the
/// operation and the one tearing its data only (the `data` variant keeps
/// its expectation), continuations of 12 host operations. Fails unless
/// continuations were cut.
#[allow(dead_code)]
pub fn run_every_second_cut(mut s: txftl_harness::CrashSpec) -> CrashReport {
    s.torn = vec![txftl_nand::Torn::None, txftl_nand::Torn::Data];
    s.second_cuts = txftl_harness::SecondCuts::Every;
    s.second_ops = 12;
    let r = run_clean(&s);
    assert!(
        r.continued_points == r.crash_points && r.second_crash_points > 10 * r.crash_points,
        "{} points continued, {} second cuts over {} crash points",
        r.continued_points,
        r.second_crash_points,
        r.crash_points
    );
    r
}

/// Sampled two-cut runs for a larger set: `n` second cuts per crash point.
#[allow(dead_code)]
pub fn sampled(mut s: txftl_harness::CrashSpec, n: u32) -> txftl_harness::CrashSpec {
    s.second_cuts = txftl_harness::SecondCuts::Sample(n);
    s
}
