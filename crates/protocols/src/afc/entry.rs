//! AFC's registry entry, and how its device is built on the framework.

use super::{Afc, AfcHooks, AfcRule};
use crate::flagcommit::{self, FlagDevice, FlagHooks};
use crate::registry::{Build, Builder, CanarySpec, NandNeeds, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::ProtocolOptions;
use txftl_ftl::{DeviceError, Extension, Ftl};
use txftl_nand::Geometry;

pub struct AfcBuild;

impl Build for AfcBuild {
    type Hooks = AfcHooks;
    type Device = Afc;

    /// `block-flags` and `summary-pages` count at format only: a mount takes the layout from the root.
    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<AfcHooks, DeviceError> {
        let summaries = crate::cycle::summary::summary_pages_option(opts)?;
        Ok(FlagHooks::new(geo, flagcommit::block_flags_option(opts)?, canary).with_summary_pages(summaries))
    }

    fn wrap(ftl: Ftl<AfcHooks>) -> Afc {
        FlagDevice::new(ftl)
    }

    /// Each logical page's last Version (4 bytes a page). The transaction
    /// table grows with the open transactions and the aborted ones still on
    /// flash, and is not counted.
    fn extra_memory(_geo: &Geometry, logical_pages: u32, _opts: &ProtocolOptions) -> u64 {
        4 * logical_pages as u64
    }
}

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
        Builder::of::<AfcBuild>(),
    )
};
