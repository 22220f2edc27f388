//! `dftl`: the page-mapping FTL with DFTL's demand-paged mapping table
//! (Gupta, Kim, Urgaonkar; ASPLOS 2009), the mapping layer Möbius builds on
//! and a baseline of its own. No transactions: like `plain`, a host keeps a
//! journal on it.
//!
//! The framework's cached table (`txftl_ftl::Cached`) does the work: the
//! checkpoint's L2P pages are DFTL's translation pages, the directory the
//! FTL keeps in DRAM (the next checkpoint's) its global translation
//! directory; the device's DRAM caches `cmt-pages` of them. A host read,
//! write or trim whose translation page is not cached reads it from flash
//! first (`map_reads`), least recently used pages leave, and a page that
//! changed since it was last written is written back alone before it leaves
//! (`cmt_write_backs`), to the checkpoint ring. Checkpoints persist the
//! directory (and the block table) and write the pages still changed.
//! Recovery is the framework's: the durable checkpoint, then the pages
//! programmed after it rolled forward from their spare areas (the
//! write-backs since it are redundant with them).
//!
//! Where it differs from DFTL: the cache holds whole translation pages, not
//! single entries; GC's moves change entries without a lookup cost; the
//! write-backs between two checkpoints may fill at most as many ring blocks
//! as a checkpoint (the ring's rule, `txftl_ftl`'s `persist.rs`), past which
//! an eviction takes a checkpoint (`cmt_eviction_checkpoints`).
//! `evict-checkpoint=1` keeps the simpler model where every changed victim
//! is written by a checkpoint.
//!
//! `scan-recovery=1` is the DFTL the Möbius paper measures (its sec. III-F:
//! "Whole SSD scanning is needed to avoid data lost, otherwise DFTL can
//! only promise data persistence under GTD protection"): recovery also
//! reads the spare area of every page of every block in use at the
//! checkpoint, on the device clock, as a DFTL without the framework's
//! record of which blocks were written since must. The mappings it decides
//! are the roll-forward's (a page before the checkpoint is older than what
//! the checkpoint maps), so only the time and the reads differ.
//!
//! The canary `dftl-canary` lets a changed translation page leave the cache
//! without writing it: its changes are lost, and the next miss reads back
//! its stale flash copy, so the device maps pages to old locations.

mod entry;

pub use entry::{default_cmt_pages, table_pages, ENTRY};

use txftl_ftl::{
    BlockId, Cached, Capabilities, Device, DeviceError, DeviceStats, EventHooks, Eviction, Ftl, GcHooks, Hooks, Lpn, Mapping,
    PersistHooks, ProtocolCounters, RecoveredUpdate, RecoveryHooks, Result, ScannedPages,
};

/// DFTL's hooks: its name, the size of its cache and how changed pages
/// leave it.
#[derive(Clone, Copy, Debug)]
pub struct DftlHooks {
    canary: bool,
    /// Translation pages the device's DRAM holds (its CMT).
    cmt_pages: u32,
    eviction: Eviction,
    /// Blocks recovery reads whole (`scan-recovery=1`: every block of the
    /// device; empty otherwise).
    scan_blocks: u32,
}

impl DftlHooks {
    pub fn new(cmt_pages: u32, eviction: Eviction, canary: bool) -> DftlHooks {
        DftlHooks {
            canary,
            cmt_pages,
            eviction,
            scan_blocks: 0,
        }
    }

    /// Recovery reads every page of every block in use among the device's
    /// `blocks` (the whole-SSD scan), not only those written since the
    /// checkpoint.
    pub fn with_scan_recovery(mut self, blocks: u32) -> DftlHooks {
        self.scan_blocks = blocks;
        self
    }
}

impl Hooks for DftlHooks {
    type Mapping = Cached;
    // Scanning is only asked for with `scan-recovery=1` (`zone_blocks` is
    // empty otherwise, and the scan then reads nothing).
    const CAPABILITIES: Capabilities = Capabilities {
        scans_pages: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "dftl-canary"
        } else {
            "dftl"
        }
    }

    fn mapping_table(&self, logical_pages: u32, entries_per_page: u32) -> Result<Cached, DeviceError> {
        Ok(Cached::new(logical_pages, entries_per_page, self.cmt_pages)?.with_eviction(self.eviction))
    }
}

impl GcHooks for DftlHooks {}

impl PersistHooks for DftlHooks {}

impl RecoveryHooks for DftlHooks {
    fn zone_blocks(&self) -> Vec<BlockId> {
        (0..self.scan_blocks).collect()
    }

    /// The scan's reads are the whole-SSD scan's cost; the mappings are the
    /// checkpoint's and the roll-forward's (every page read before the
    /// checkpoint is older than what it maps).
    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        pages.for_each(|_| {})?;
        Ok(Vec::new())
    }
}

impl EventHooks for DftlHooks {}

/// The DFTL device: the framework's FTL, with the cache's counts reported.
#[derive(Clone)]
pub struct Dftl {
    ftl: Ftl<DftlHooks>,
}

impl Dftl {
    pub fn new(ftl: Ftl<DftlHooks>) -> Dftl {
        Dftl { ftl }
    }

    pub fn ftl(&self) -> &Ftl<DftlHooks> {
        &self.ftl
    }
}

impl Device for Dftl {
    device_basics_over_ftl!();
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.write_page(lpn, data)
    }
    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.ftl.trim_page(lpn)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let c = self.ftl.mapping_table().cache_counts();
        s.protocol = ProtocolCounters::new(ENTRY.counters);
        s.protocol.add("cmt_misses", c.misses);
        s.protocol.add("cmt_write_backs", c.written_back);
        s.protocol.add("cmt_eviction_checkpoints", c.checkpointed);
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        self.ftl.mapping_table_mut().reset_cache_counts();
    }
}

any_device_over_ftl!(Dftl, ENTRY);

impl crate::DurableParts for Dftl {}
