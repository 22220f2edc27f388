//! Exhaustive page-level crash tests of AFC_ex (Flag Commit's abort-based
//! flag commit extended to pending records) on `tiny-slc` with max-c 3,
//! every flash operation with every torn variant (a torn flag program
//! clears a subset of its bits): concurrent transactions, half of them
//! aborted, whose FALSE GC moves before reclaiming it; long transactions
//! whose FALSE first entries GC copies while they are open; two cuts; and
//! the canary, whose GC copies of live versions keep an aborted
//! transaction's entry TRUE. Page-level workloads put one transaction's
//! entry on a version (`write_tx`); the record-level sets, several a
//! version, are `crash_flagcommit_ex.rs`.

use crate::common;
use crate::{page_shape as shape, page_spec as spec};
use txftl_harness::Expect;

#[test]
fn aborted_transactions_false_moved_by_gc() {
    let mut s = spec("afc-ex", 600, 60, shape(3, 50, 3), true);
    s.expect.push(Expect::Protocol("fcx_gc_flag_moves"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    common::run_clean(&s);
}

/// Transactions of 12 pages, 4 open at once: GC copies open transactions'
/// versions, their FALSE first entries too, which commit flips where the
/// newest copy is, and the committed versions kept under them.
#[test]
fn open_transactions_copied_by_gc() {
    let mut s = spec("afc-ex", 300, 90, shape(12, 10, 4), false);
    s.expect.push(Expect::Protocol("fcx_gc_versions_kept"));
    common::run_clean(&s);
}

#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("afc-ex", 120, 60, shape(4, 20, 2), false);
    s.expect.retain(|&e| e != Expect::Device("gc_runs"));
    common::run_every_second_cut(s);
}

#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("afc-ex-canary", 600, 60, shape(3, 50, 3), false));
}
