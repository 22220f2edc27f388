//! AFC_ex's registry entry (its device is built by `flagcommit_ex::ExBuild`).

use super::AfcExRule;
use crate::flagcommit_ex::{self, ExBuild, ExDevice};
use crate::registry::{Builder, CanarySpec, NandNeeds, ProtocolEntry, TRANSACTIONAL};
use txftl_ftl::Extension;

any_device_over_ftl!(ExDevice<AfcExRule>, ENTRY);

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
        name: "afc-ex-canary",
        // Its bug needs aborted transactions' versions copied and reclaimed by GC.
        workload: "txwrite",
        bug: "a live version's GC copy keeps an aborted transaction's entry TRUE as programmed, so its FALSE can be reclaimed",
    }),
    ..ProtocolEntry::base(
        "afc-ex",
        "AFC_ex",
        "Flag Commit's abort-based flag commit per pending record (On et al., IEEE TKDE, sec. 4): a transaction's first \
        pending record is written FALSE and flipped by a partial program at commit; up to max_c transactions a page version",
        Builder::of::<ExBuild<AfcExRule>>(),
    )
};
