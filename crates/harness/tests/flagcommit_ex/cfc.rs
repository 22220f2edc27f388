//! Exhaustive page-level crash tests of CFC_ex (Flag Commit's commit-based
//! flag commit extended to pending records) on `tiny-slc` with max-c 3,
//! every flash operation with every torn variant (a torn flag program
//! clears a subset of its bits): concurrent transactions with aborts whose
//! committed entries' flags GC moves; long transactions whose pages GC
//! copies while they are open; two cuts; and the canary, whose GC copies
//! of live versions keep a committed transaction's entry FALSE. Page-level
//! workloads put one transaction's entry on a version (`write_tx`); the
//! record-level sets, several a version, are `crash_flagcommit_ex.rs`.

use crate::common;
use crate::{page_shape as shape, page_spec as spec};
use txftl_harness::Expect;

#[test]
fn concurrent_transactions_flags_moved_by_gc() {
    let mut s = spec("cfc-ex", 300, 90, shape(5, 10, 2), true);
    s.expect.push(Expect::Protocol("fcx_gc_flag_moves"));
    s.expect.push(Expect::Device("protocol_records_with_open_tx"));
    common::run_clean(&s);
}

/// Transactions of 12 pages, 4 open at once: GC copies open transactions'
/// versions and the committed ones kept under them (a page-level read's
/// last committed page); each copy of an open entry is a head the commit
/// flags too.
#[test]
fn open_transactions_copied_by_gc() {
    let mut s = spec("cfc-ex", 300, 90, shape(12, 10, 4), false);
    s.expect.push(Expect::Protocol("fcx_gc_versions_kept"));
    common::run_clean(&s);
}

/// Two cuts: what a mount records (its verdicts, the versions, the XIDs it
/// resumes above, the transactions it leaves in doubt and the first write
/// settles) is tested only this way.
#[test]
fn every_second_cut_after_recovery() {
    let mut s = spec("cfc-ex", 120, 60, shape(4, 20, 2), false);
    s.expect.retain(|&e| e != Expect::Device("gc_runs"));
    common::run_every_second_cut(s);
}

#[test]
fn canary_is_caught() {
    common::assert_caught_at_every_seed(&spec("cfc-ex-canary", 300, 90, shape(5, 10, 2), false));
}
