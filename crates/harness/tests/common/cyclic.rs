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
        Expect::Commits,
        Expect::Aborts,
        Expect::Gc,
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
    TxShape {
        pages_per_tx,
        abort_pct,
        concurrency,
        nontx_pct: 10,
        trim_pct: 0,
        transactions: 0,
        cross_pct,
    }
}
