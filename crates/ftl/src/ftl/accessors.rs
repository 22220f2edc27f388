//! Accessors: the NAND, the mapping table, the hooks, the configuration,
//! and what checkers and reports read of the FTL's state.

use super::Ftl;
use crate::checkpoint::UNMAPPED;
use crate::config::FtlConfig;
use crate::device::{Lpn, RecoveryReport};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use txftl_nand::{Nand, Ppn};

impl<H: Hooks> Ftl<H> {
    pub fn nand(&self) -> &Nand {
        &self.nand
    }
    /// An independent copy of the whole device, DRAM state and NAND (in RAM).
    /// For benchmarks that replay one segment from the same state many times.
    pub fn duplicate(&self) -> Ftl<H>
    where
        H: Clone,
    {
        self.clone()
    }

    /// The NAND, for fault injection (arming a power cut on a live device).
    pub fn nand_mut(&mut self) -> &mut Nand {
        &mut self.nand
    }
    /// Hands the NAND back, dropping every piece of DRAM state: what a power cut does.
    pub fn into_nand(self) -> Nand {
        self.nand
    }
    /// The mapping table, for its protocol's report (a cached table's counts).
    pub fn mapping_table(&self) -> &H::Mapping {
        &self.l2p
    }
    pub fn mapping_table_mut(&mut self) -> &mut H::Mapping {
        &mut self.l2p
    }
    pub fn hooks(&self) -> &H {
        &self.hooks
    }
    pub fn hooks_mut(&mut self) -> &mut H {
        &mut self.hooks
    }
    pub fn config(&self) -> &FtlConfig {
        &self.cfg
    }
    pub fn logical_pages(&self) -> u32 {
        self.derived.logical_pages
    }
    pub fn page_size(&self) -> u32 {
        self.geo.page_size
    }
    /// What the last mount's recovery did (None after `format`).
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        self.recovery
    }
    /// Current mapping of a logical page (for checkers and reports).
    pub fn mapping(&self, lpn: Lpn) -> Option<Ppn> {
        Some(lpn)
            .filter(|&l| l < self.l2p.len())
            .map(|l| self.l2p.get(l))
            .filter(|&p| p != UNMAPPED)
    }
    /// Erase counts as the FTL knows them.
    pub fn erase_counts(&self) -> &[u32] {
        &self.blocks.erase_count
    }
    /// Erase counts recorded in the last durable checkpoint (none before
    /// the first): recovery never goes below them.
    pub fn checkpoint_erase_counts(&self) -> Vec<u32> {
        let records = self.tables.persisted_blocks.as_deref().unwrap_or_default();
        records.iter().map(|r| r.erase_count).collect()
    }
    /// (min, max) erase count over data blocks.
    pub fn wear_spread(&self) -> (u32, u32) {
        self.blocks.wear_spread()
    }
    pub fn free_blocks(&self) -> u32 {
        self.blocks.free_count()
    }
}
