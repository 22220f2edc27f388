//! CFC's registry entry (its device is built by `flagcommit::FlagBuild`).

use super::CfcRule;
use crate::flagcommit::{self, FlagBuild, FlagDevice};
use crate::registry::{Builder, CanarySpec, NandNeeds, ProtocolEntry, TRANSACTIONAL};
use txftl_ftl::Extension;

any_device_over_ftl!(FlagDevice<CfcRule>, ENTRY);

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    // No persistent mapping table to make a trim durable in.
    trims: false,
    extensions: &[Extension::TxEnd],
    // A page's versions are ordered by one counter: one open writer a page.
    isolation: &["strict", "no-page-conflict"],
    options: &[flagcommit::BLOCK_FLAGS, crate::cycle::summary::SUMMARY_PAGES],
    counters: flagcommit::COUNTERS,
    sql: TRANSACTIONAL,
    // A page's program, and one partial program for its flag.
    nand: NandNeeds::slc(2),
    canary: Some(CanarySpec {
        name: "cfc-canary",
        // Its bug needs committed transactions' pages reclaimed mid-chain.
        workload: "txwrite",
        bug: "GC moves a reclaimed page's flag only when the page is a TRUE head (Fig. 5a), not mid-chain (Fig. 5b)",
    }),
    ..ProtocolEntry::base(
        "cfc",
        "CFC",
        "Flag Commit's commit-based flag commit (On et al., IEEE TKDE): a transaction commits by a partial program \
        clearing one bit on its last page; no log, no commit record, abort programs nothing",
        Builder::of::<FlagBuild<CfcRule>>(),
    )
};
