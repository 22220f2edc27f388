//! `dftl`: the page-mapping FTL with DFTL's demand-paged mapping table
//! (Gupta, Kim, Urgaonkar; ASPLOS 2009), the mapping layer Möbius builds on
//! and a baseline of its own. No transactions: like `plain`, a host keeps a
//! journal on it.
//!
//! The framework's cached table (`txftl_ftl::Cached`) does the work: the
//! checkpoint's L2P pages are DFTL's translation pages and its directory the
//! global translation directory; the device's DRAM caches `cmt-pages` of
//! them. A host read, write or trim whose translation page is not cached
//! reads it from flash first (`map_reads`), least recently used pages leave,
//! and a page that changed since the last checkpoint is written out before
//! it leaves, by a checkpoint. Recovery is the framework's: the checkpoint,
//! then the pages programmed after it rolled forward from their spare areas.
//!
//! Where it differs from DFTL: the cache holds whole translation pages, not
//! single entries; a changed page is written out by a checkpoint (every
//! changed page at once, with the block table, a record and a superblock)
//! rather than alone; GC's moves change entries without a lookup cost.
//!
//! The canary `dftl-canary` lets a changed translation page leave the cache
//! without writing it: its changes are lost, and the next miss reads back
//! its stale flash copy, so the device maps pages to old locations.

mod entry;

pub use entry::ENTRY;

use txftl_ftl::{
    Cached, Capabilities, Device, DeviceError, DeviceStats, EventHooks, Ftl, GcHooks, Hooks, Lpn, Mapping, PersistHooks,
    ProtocolCounters, RecoveryHooks, Result,
};

/// DFTL's hooks: its name and the size of its cache.
#[derive(Clone, Copy, Debug)]
pub struct DftlHooks {
    canary: bool,
    /// Translation pages the device's DRAM holds (its CMT).
    cmt_pages: u32,
}

impl DftlHooks {
    pub fn new(cmt_pages: u32, canary: bool) -> DftlHooks {
        DftlHooks { canary, cmt_pages }
    }
}

impl Hooks for DftlHooks {
    type Mapping = Cached;
    const CAPABILITIES: Capabilities = Capabilities::NONE;

    fn name(&self) -> &'static str {
        if self.canary {
            "dftl-canary"
        } else {
            "dftl"
        }
    }

    fn mapping_table(&self, logical_pages: u32, entries_per_page: u32) -> Result<Cached, DeviceError> {
        Cached::new(logical_pages, entries_per_page, self.cmt_pages)
    }
}

impl GcHooks for DftlHooks {}

impl PersistHooks for DftlHooks {}

impl RecoveryHooks for DftlHooks {}

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
        let (misses, changed_victims) = self.ftl.mapping_table().cache_counts();
        s.protocol = ProtocolCounters::new(ENTRY.counters);
        s.protocol.add("cmt_misses", misses);
        s.protocol.add("cmt_changed_victims", changed_victims);
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        self.ftl.mapping_table_mut().reset_cache_counts();
    }
}

any_device_over_ftl!(Dftl, ENTRY);
