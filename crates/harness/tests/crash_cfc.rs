//! Exhaustive crash tests of CFC (Flag Commit's commit-based flag commit)
//! on `tiny-slc`, every flash operation with every torn variant (a torn
//! flag program clears a subset of its bits): concurrent transactions with
//! aborts whose flags GC moves, with block-based and page-based flags; long
//! transactions whose pages GC copies while they are open (the copies are
//! the extra heads commit flags); last pages written by `write_end`; two
//! cuts; and the canary, which moves a reclaimed page's flag only when it is
//! a TRUE head.

mod common;
#[path = "common/flags.rs"]
mod flags;
use flags::{run_with_summaries, shape, spec};
use txftl_harness::Expect;

#[test]
fn block_flags_moved_and_folded_by_gc() {
    let mut s = spec("cfc", true, 300, 90, shape(5, 10, 2, false), true);
    s.expect.push(Expect::Protocol("fc_gc_flag_moves"));
    s.expect.push(Expect::Protocol("fc_gc_flags_folded"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    common::run_clean(&s);
}

#[test]
fn page_flags_moved_by_gc() {
    let mut s = spec("cfc", false, 300, 90, shape(5, 10, 2, false), false);
    s.expect.push(Expect::Protocol("fc_gc_flag_moves"));
    common::run_clean(&s);
}

/// Transactions of 12 pages, 4 open at once: GC copies open transactions'
/// pages, each copy a head the commit must flag too (§3.1.3's subchains).
#[test]
fn open_transactions_copied_by_gc_and_their_heads() {
    let mut s = spec("cfc", true, 300, 90, shape(12, 10, 4, false), false);
    s.expect.push(Expect::Protocol("fc_gc_open_copies"));
    common::run_clean(&s);
}

/// The last page by `write_end`, programmed TRUE: the commit is on flash
/// when it returns.
#[test]
fn last_pages_written_true_by_write_end() {
    let mut s = spec("cfc", true, 300, 90, shape(5, 30, 2, true), false);
    s.expect.push(Expect::Protocol("fc_end_writes"));
    common::run_clean(&s);
}

/// Two cuts: what a mount records (its verdicts, the versions, the XIDs it
/// resumes above) is tested only this way.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("cfc", true, 120, 60, shape(4, 20, 2, false), false);
    s.expect.retain(|&e| e != Expect::Device("gc_runs"));
    common::run_every_second_cut(s);
}

#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("cfc-canary", true, 300, 90, shape(5, 10, 2, false), false));
}

/// Summary pages on: recovery reads full blocks by their summary and reads
/// again the flags the summaries hold as programmed (with those rereads
/// skipped, `txftl crashtest --protocol cfc --protocol-opt summary-pages=1
/// --trim-pct 0`, CFC's first set with recovery cuts, found 11,745 violations).
#[test]
fn summary_pages_and_flags_read_again() {
    run_with_summaries(spec("cfc", true, 300, 90, shape(5, 10, 2, false), false));
}
