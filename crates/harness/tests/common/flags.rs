//! The scenario sets Flag Commit's protocols share, for `crash_cfc.rs`,
//! `crash_afc.rs` and the page-level sets of `crash_flagcommit_ex.rs`: the
//! workload shapes, and what every scenario of them must show.

use crate::common;
use txftl_harness::{CrashSpec, Expect, TxShape};

/// A Flag Commit scenario must commit (flag programs, counted by the
/// protocol's `commit_counter`), abort, run GC, tear pages whose OOB
/// survives (and partial programs: the torn variants include them), and
/// read every block in use at recovery. Trims are off: every Flag Commit
/// protocol refuses them. `options`: the protocol's (`--protocol-opt`).
pub fn flag_spec(
    protocol: &str,
    options: &[(&str, u32)],
    commit_counter: &'static str,
    ops: u64,
    fill_pct: u32,
    tx: TxShape,
    recovery_cuts: bool,
) -> CrashSpec {
    let expect = vec![
        Expect::Device("commits"),
        Expect::Device("aborts"),
        Expect::Device("gc_runs"),
        Expect::TornDataIntactOob,
        Expect::ZoneScans,
        Expect::Protocol(commit_counter),
    ];
    let (device, flags) = common::tiny_with_options(protocol, options);
    common::txwrite_spec(device, &flags, ops, fill_pct, tx, recovery_cuts, expect)
}

/// A CFC or AFC scenario ([`flag_spec`]); `block_flags`: the `block-flags` option.
#[allow(dead_code)] // the `_ex` protocols' tests take flag_spec alone
pub fn spec(protocol: &str, block_flags: bool, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool) -> CrashSpec {
    let options = [("block-flags", block_flags as u32)];
    flag_spec(protocol, &options, "fc_commit_flag_programs", ops, fill_pct, tx, recovery_cuts)
}

/// Transactions of `pages_per_tx` pages, `abort_pct`% aborted, `concurrency`
/// open at once; a tenth of the writes outside transactions, no trims;
/// `end_flag`: each committing transaction's last page by `write_end`.
pub fn shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, end_flag: bool) -> TxShape {
    common::no_trim_shape(pages_per_tx, abort_pct, concurrency, 0, end_flag)
}

#[allow(dead_code)] // the `_ex` protocols' tests run no summary pages
/// Runs `s` with summary pages on ([`common::with_summaries`]) and checks it is clean,
/// large enough, and read blocks by their summaries; prints its figures.
pub fn run_with_summaries(s: CrashSpec) -> txftl_harness::CrashReport {
    let r = common::run_clean(&common::with_summaries(s));
    assert!(
        r.crash_points > 1000 && r.exercised.summaries_trusted > 0,
        "{} crash points",
        r.crash_points
    );
    eprintln!(
        "{} crash points, {} blocks read by summary",
        r.crash_points, r.exercised.summaries_trusted
    );
    r
}
