//! SCC's registry entry: its counters, and how its device is built on the framework.

use super::{Scc, SccHooks};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::cycle::summary::{summary_pages_option, SUMMARY_PAGES};
use crate::ProtocolOptions;
use txftl_ftl::{CounterSpec, DeviceError, Ftl};
use txftl_nand::Geometry;

pub struct SccBuild;

impl Build for SccBuild {
    type Hooks = SccHooks;
    type Device = Scc;

    /// `summary-pages` counts at format only: a mount takes the layout from the root.
    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<SccHooks, DeviceError> {
        Ok(SccHooks::new(geo, canary).with_summary_pages(summary_pages_option(opts)?))
    }

    fn wrap(ftl: Ftl<SccHooks>) -> Scc {
        Scc::new(ftl)
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    // No persistent mapping table to make a trim durable in.
    trims: false,
    // A page's older versions must be settled before a new one is written.
    isolation: &["strict", "no-page-conflict"],
    options: &[SUMMARY_PAGES],
    // Cyclic commit: the next page's link names the last one written.
    resident_pages_per_tx: 1,
    counters: &[
        CounterSpec {
            key: "forced_erases",
            help: "blocks erased because an uncommitted version of a page had to go before a newer one was written",
        },
        CounterSpec {
            key: "forced_erase_moves",
            help: "live pages moved out of those blocks first (in GC page copies)",
        },
    ],
    sql: TRANSACTIONAL,
    canary: Some(CanarySpec {
        name: "scc-canary",
        workload: "txwrite",
        bug: "the forced erase is skipped: the uncommitted transaction is forgotten, its pages stay",
    }),
    ..ProtocolEntry::base(
        "scc",
        "SCC",
        "TxFlash's simple cyclic commit (Prabhakaran et al., OSDI 2008), LightTx's baseline: \
        pages linked in a cycle, an uncommitted version erased before a newer one is written",
        Builder::of::<SccBuild>(),
    )
};
