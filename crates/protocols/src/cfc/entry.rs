//! CFC's registry entry, and how its device is built on the framework.

use super::{Cfc, CfcHooks, CfcRule};
use crate::flagcommit::{self, FlagDevice, FlagHooks};
use crate::registry::{Build, Builder, CanarySpec, NandNeeds, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::ProtocolOptions;
use txftl_ftl::{DeviceError, Extension, Ftl};
use txftl_nand::Geometry;

pub struct CfcBuild;

impl Build for CfcBuild {
    type Hooks = CfcHooks;
    type Device = Cfc;

    /// `block-flags` and `summary-pages` count at format only: a mount takes the layout from the root.
    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<CfcHooks, DeviceError> {
        let summaries = crate::cycle::summary::summary_pages_option(opts)?;
        Ok(FlagHooks::new(geo, flagcommit::block_flags_option(opts)?, canary).with_summary_pages(summaries))
    }

    fn wrap(ftl: Ftl<CfcHooks>) -> Cfc {
        FlagDevice::new(ftl)
    }

    /// Each logical page's last Version (4 bytes a page). The transaction
    /// table grows with the open transactions and the aborted ones still on
    /// flash, and is not counted.
    fn extra_memory(_geo: &Geometry, logical_pages: u32, _opts: &ProtocolOptions) -> u64 {
        4 * logical_pages as u64
    }
}

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
        Builder::of::<CfcBuild>(),
    )
};
