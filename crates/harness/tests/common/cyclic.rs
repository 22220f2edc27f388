//! The scenario sets SCC and BPCC (TxFlash's cyclic commits) share, for
//! `crash_scc.rs` and `crash_bpcc.rs`: the same workload shapes, and what
//! every scenario of either must show.

use crate::common;
use txftl_harness::{CrashSpec, DeviceSpec, Expect, TxShape};

/// A cyclic commit's scenario must commit, abort, run GC and tear pages
/// whose OOB survives; recovery reads every block in use (the whole
/// device). Trims are off: both protocols refuse them. `own`: what the
/// protocol must show besides (SCC: forced erases).
pub fn spec(protocol: &str, ops: u64, fill_pct: u32, tx: TxShape, recovery_cuts: bool, own: &[Expect]) -> CrashSpec {
    let mut expect = vec![
        Expect::Device("commits"),
        Expect::Device("aborts"),
        Expect::Device("gc_runs"),
        Expect::TornDataIntactOob,
        Expect::ZoneScans,
    ];
    expect.extend_from_slice(own);
    common::txwrite_spec(DeviceSpec::tiny(protocol), "", ops, fill_pct, tx, recovery_cuts, expect)
}

/// Transactions of `pages_per_tx` pages, `abort_pct`% aborted, `concurrency`
/// open at once, `cross_pct`% of transactional writes to a page another
/// open transaction has written (`TxShape::cross_pct`); a tenth of the
/// writes outside transactions, no trims.
pub fn shape(pages_per_tx: u32, abort_pct: u32, concurrency: u32, cross_pct: u32) -> TxShape {
    common::no_trim_shape(pages_per_tx, abort_pct, concurrency, cross_pct, false)
}

#[allow(unused_imports)]
pub use common::with_summaries;

/// Prints what a summary-page set ran (`--nocapture` shows it).
#[allow(dead_code)]
pub fn print_summary_figures(r: &txftl_harness::CrashReport) {
    let x = &r.exercised;
    eprintln!(
        "{} crash points, {} recovery cuts, {} second cuts, {} violations; summaries: {} written (dry run), \
         {} blocks read by summary and {} summaries refused over the recoveries; {} GC runs",
        r.crash_points,
        r.recovery_crash_points,
        r.second_crash_points,
        r.violation_count,
        x.dry_run.summary_pages_written,
        x.summaries_trusted,
        x.summary_fallbacks,
        x.dry_run.gc_runs
    );
}

/// Summary pages on, GC active, every crash point and its recovery cuts.
#[allow(dead_code)]
pub fn summary_pages_under_gc(s: CrashSpec) {
    let mut s = with_summaries(s);
    s.expect.push(Expect::Device("checkpoints"));
    print_summary_figures(&common::run_clean(&s));
}

/// Summary pages on, one second cut per crash point: the first recovery
/// seals a checkpoint naming a block whose summary program the cut tore as
/// full, so the mount after the second cut reads that torn summary, must
/// refuse it and read the block page by page.
#[allow(dead_code)]
pub fn summary_pages_torn_after_a_second_cut(s: CrashSpec) {
    let mut s = common::sampled(with_summaries(s), 1);
    s.expect.push(Expect::SummaryFallbacks);
    let r = common::run_clean(&s);
    print_summary_figures(&r);
    assert_eq!(r.second_crash_points, r.crash_points, "one second cut per crash point");
}

/// The summary canary, a bug planted in the framework
/// (`txftl_ftl::Canary::TrustUncheckedSummary`, set in the FTL
/// configuration; no command-line flag, so the replay commands lack it):
/// recovery trusts a summary page without checking its CRCs or its
/// sequence number, so a summary a cut tore is believed and the pages of
/// its lost records are missed. The scenario of the set above.
#[allow(dead_code)]
pub fn summary_canary_is_caught(s: CrashSpec) {
    let mut s = common::sampled(with_summaries(s), 1);
    s.device.ftl.canary = Some(txftl_ftl::Canary::TrustUncheckedSummary);
    common::assert_caught_at_every_seed(&s);
}
