//! Protocols for the framework's own unit tests: [`Bare`], of no hooks at
//! all (the page-mapping FTL as the framework runs it alone), and
//! [`Summarized`], which recovers from summary pages.

use crate::error::Result;
use crate::hooks::{Capabilities, EventHooks, GcHooks, Hooks, PersistHooks, RecoveredUpdate, RecoveryHooks, ScannedPage};
use crate::mapping::{Dense, Unpersisted};
use crate::oob::Oob;
use crate::scan::ScannedPages;
use txftl_nand::{BlockId, Ppn};

#[derive(Clone, Copy)]
pub(crate) struct Bare;

impl Hooks for Bare {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities::NONE;
    fn name(&self) -> &'static str {
        "bare"
    }
}
impl GcHooks for Bare {}
impl PersistHooks for Bare {}
impl RecoveryHooks for Bare {}
impl EventHooks for Bare {
    const SEES_PROGRAMS: bool = false;
}

/// A freshly formatted [`Bare`] FTL on the `tiny` preset, metadata only,
/// violations panicking: the framework's unit tests' default device.
pub(crate) fn tiny_bare() -> crate::Ftl<Bare> {
    use txftl_nand::{DataMode, Nand, ViolationPolicy};
    let p = txftl_nand::preset("tiny").unwrap();
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
    crate::Ftl::format(nand, crate::FtlConfig::default(), Bare).unwrap()
}

/// A protocol with summary pages and no mapping table on flash, as SCC with
/// `summary-pages=1`: recovery rebuilds every mapping from its scan of every
/// block in use (the newest sequence number of each logical page wins), then
/// rereads the live spare areas of the pages named in `reread`. Its summary
/// records hold 8 protocol bytes and 2 flag bytes a page (`summary.rs`).
#[derive(Clone, Default)]
pub(crate) struct Summarized {
    /// Blocks of the array (the scan names them all).
    pub blocks: u32,
    /// Pages whose live spare area recovery rereads after its scan.
    pub reread: Vec<Ppn>,
    /// What the last recovery's scan visited, in order.
    pub visited: Vec<ScannedPage>,
    /// What the rereads of `reread` found, in its order.
    pub live: Vec<Option<Oob>>,
}

impl Hooks for Summarized {
    type Mapping = Unpersisted;
    const CAPABILITIES: Capabilities = Capabilities {
        scans_pages: true,
        ..Capabilities::NONE
    };
    fn name(&self) -> &'static str {
        "summarized"
    }
}
impl GcHooks for Summarized {}
impl EventHooks for Summarized {}

impl PersistHooks for Summarized {
    fn summary_pages(&self) -> bool {
        true
    }
    fn packed_protocol_bytes(&self) -> usize {
        8
    }
    fn flag_bytes(&self) -> usize {
        2
    }
}

impl RecoveryHooks for Summarized {
    /// Every mapping comes from `recover_scanned`.
    fn roll_forward(&self, _oob: &Oob) -> bool {
        false
    }

    fn zone_blocks(&self) -> Vec<BlockId> {
        (0..self.blocks).collect()
    }

    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let mut visited = Vec::new();
        let mut live = pages.for_each(|p| visited.push(*p))?;
        // After the visit, on the handle it returned: the scan is done.
        self.live = self.reread.iter().map(|&ppn| live.live_oob(ppn)).collect::<Result<_>>()?;
        let updates = visited
            .iter()
            .map(|p| RecoveredUpdate {
                seq: p.oob.seq,
                lpn: p.oob.lpn,
                ppn: p.ppn,
            })
            .collect();
        self.visited = visited;
        Ok(updates)
    }
}
