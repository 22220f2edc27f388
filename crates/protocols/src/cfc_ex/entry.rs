//! CFC_ex's registry entry (its device is built by `flagcommit_ex::ExBuild`).

use super::CfcExRule;
use crate::flagcommit_ex::{self, ExBuild, ExDevice};
use crate::registry::{Builder, CanarySpec, NandNeeds, ProtocolEntry, TRANSACTIONAL};
use txftl_ftl::Extension;

any_device_over_ftl!(ExDevice<CfcExRule>, ENTRY);

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    // No persistent mapping table to make a trim durable in.
    trims: false,
    extensions: &[Extension::RecordTx],
    // Page-level writes (`write_tx`): one open writer a page; record-level
    // ones (`write_records`) take up to max_c.
    isolation: &["strict", "no-page-conflict"],
    options: &[flagcommit_ex::MAX_C],
    counters: flagcommit_ex::COUNTERS,
    sql: TRANSACTIONAL,
    // A page's program and one partial program for a one-entry version's
    // flag; each entry past NOP - 1 on one page costs a copy.
    nand: NandNeeds::slc(2),
    canary: Some(CanarySpec {
        name: "cfc-ex-canary",
        // Its bug needs committed transactions' live versions copied by GC.
        workload: "txwrite",
        bug: "a live version's GC copy keeps a committed transaction's entry FALSE as programmed (a FALSE head)",
    }),
    ..ProtocolEntry::base(
        "cfc-ex",
        "CFC_ex",
        "Flag Commit's commit-based flag commit per pending record (On et al., IEEE TKDE, sec. 4): a page version \
        holds the pending records of up to max_c transactions, each committed by a partial program of its own flag",
        Builder::of::<ExBuild<CfcExRule>>(),
    )
};
