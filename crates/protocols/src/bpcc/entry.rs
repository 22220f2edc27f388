//! BPCC's registry entry: its counter, and how its device is built on the framework.

use super::{Bpcc, BpccHooks};
use crate::registry::{Build, Builder, CanarySpec, ProtocolEntry, Stage, TRANSACTIONAL};
use crate::cycle::summary::{summary_pages_option, SUMMARY_PAGES};
use crate::ProtocolOptions;
use txftl_ftl::{CounterSpec, DeviceError, Ftl};
use txftl_nand::Geometry;

pub struct BpccBuild;

impl Build for BpccBuild {
    type Hooks = BpccHooks;
    type Device = Bpcc;

    /// `summary-pages` counts at format only: a mount takes the layout from the root.
    fn hooks(geo: &Geometry, opts: &ProtocolOptions, canary: bool, _stage: Stage) -> Result<BpccHooks, DeviceError> {
        Ok(BpccHooks::new(geo, canary).with_summary_pages(summary_pages_option(opts)?))
    }

    fn wrap(ftl: Ftl<BpccHooks>) -> Bpcc {
        Bpcc::new(ftl)
    }

    /// The version of each logical page's last committed version (8 bytes a
    /// page: the next write's back pointer). Its sets of open, dead and
    /// pinned pages grow with the aborts still on flash and are not counted.
    fn extra_memory(_geo: &Geometry, logical_pages: u32, _opts: &ProtocolOptions) -> u64 {
        8 * logical_pages as u64
    }
}

pub static ENTRY: ProtocolEntry = ProtocolEntry {
    transactional: true,
    // No persistent mapping table to make a trim durable in.
    trims: false,
    // Back pointers name the one last committed version of a page.
    isolation: &["strict", "no-page-conflict"],
    options: &[SUMMARY_PAGES],
    // Cyclic commit: the next page's link names the last one written.
    resident_pages_per_tx: 1,
    counters: &[CounterSpec {
        key: "gc_pinned_copies",
        help: "obsolete pages GC moved because their back pointer straddles an aborted version still guarded on flash \
               (in GC page copies)",
    }],
    sql: TRANSACTIONAL,
    canary: Some(CanarySpec {
        name: "bpcc-canary",
        // Its bug shows once aborted pages are rewritten under GC.
        workload: "txwrite",
        bug: "GC erases a pinned page",
    }),
    ..ProtocolEntry::base(
        "bpcc",
        "BPCC",
        "TxFlash's back-pointer-assisted cyclic commit (Prabhakaran et al., OSDI 2008), LightTx's baseline: \
        back pointers say which versions were aborted; pages straddling them are pinned",
        Builder::of::<BpccBuild>(),
    )
};
