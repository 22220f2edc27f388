//! Exhaustive crash tests of AFC (Flag Commit's abort-based flag commit)
//! on `tiny-slc`, every flash operation with every torn variant (a torn
//! flag program clears a subset of its bits): concurrent transactions, half
//! of them aborted, whose FALSE GC moves before reclaiming it, with
//! block-based and page-based flags; long transactions whose FALSE first
//! pages GC copies while they are open; last pages by `write_end`; two
//! cuts; and the canary, which reclaims an aborted transaction's last FALSE
//! without moving it.

mod common;
#[path = "common/flags.rs"]
mod flags;
use flags::{run_with_summaries, shape, spec};
use txftl_harness::Expect;

#[test]
fn aborted_transactions_false_moved_by_gc() {
    let mut s = spec("afc", true, 600, 60, shape(3, 50, 3, false), true);
    s.expect.push(Expect::Protocol("fc_gc_flag_moves"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    common::run_clean(&s);
}

#[test]
fn page_flags() {
    let mut s = spec("afc", false, 600, 60, shape(3, 50, 3, false), false);
    s.expect.push(Expect::Protocol("fc_gc_flag_moves"));
    common::run_clean(&s);
}

/// Transactions of 12 pages, 4 open at once: GC copies open transactions'
/// pages, their FALSE first pages too, which commit flips where the newest copy is.
#[test]
fn open_transactions_copied_by_gc() {
    let mut s = spec("afc", true, 300, 90, shape(12, 10, 4, false), false);
    s.expect.push(Expect::Protocol("fc_gc_open_copies"));
    common::run_clean(&s);
}

#[test]
fn last_pages_by_write_end() {
    let mut s = spec("afc", true, 300, 90, shape(5, 30, 2, true), false);
    s.expect.push(Expect::Protocol("fc_end_writes"));
    common::run_clean(&s);
}

#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("afc", true, 120, 60, shape(4, 20, 2, false), false);
    s.expect.retain(|&e| e != Expect::Device("gc_runs"));
    common::run_every_second_cut(s);
}

#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("afc-canary", true, 600, 60, shape(3, 50, 3, false), false));
}

/// Summary pages on: recovery reads full blocks by their summary and reads
/// again the flags the summaries hold as programmed (with those rereads
/// skipped, `txftl crashtest --protocol afc --protocol-opt summary-pages=1
/// --trim-pct 0`, CFC's first set with recovery cuts, found 11,566 violations).
#[test]
fn summary_pages_and_flags_read_again() {
    run_with_summaries(spec("afc", true, 600, 60, shape(3, 50, 3, false), false));
}
