//! AFC's registry entry (its device is built by `flagcommit::FlagBuild`).

use super::AfcRule;
use crate::flagcommit::{self, FlagBuild, FlagDevice};
use crate::registry::{Builder, CanarySpec, NandNeeds, ProtocolEntry, TRANSACTIONAL};
use txftl_ftl::Extension;

any_device_over_ftl!(FlagDevice<AfcRule>, ENTRY);

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
    // A page's program, and one partial program for its flag (a commit's
    // flip, or GC's FALSE on an aborted transaction's page, never both).
    nand: NandNeeds::slc(2),
    canary: Some(CanarySpec {
        name: "afc-canary",
        // Its bug needs aborted transactions' pages reclaimed under GC.
        workload: "txwrite",
        bug: "GC reclaims an aborted transaction's last FALSE page without moving the FALSE (Fig. 7a skipped)",
    }),
    ..ProtocolEntry::base(
        "afc",
        "AFC",
        "Flag Commit's abort-based flag commit (On et al., IEEE TKDE): a transaction's first page is written FALSE \
        and flipped TRUE by a partial program at commit; no log, no commit record, abort programs nothing",
        Builder::of::<FlagBuild<AfcRule>>(),
    )
};
