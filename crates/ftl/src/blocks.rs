//! The block manager: what every physical block is doing, its valid-page count,
//! its erase count as the FTL knows it, and the free pool per parallel unit.

use std::collections::BTreeSet;
use txftl_nand::{BlockId, Geometry};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockState {
    /// In the free pool. Its contents are stale; it is erased when allocated.
    Free,
    /// Being filled by a write stream.
    Open,
    /// Closed (full, or closed by recovery); holds valid pages or awaits GC.
    Full,
    /// Reclaimed by GC but not reusable until the next checkpoint is durable: the
    /// last checkpoint's L2P may still point into it, and recovery only scans blocks
    /// that were free or open at the checkpoint (F2FS's "prefree" rule).
    Prefree,
    /// Worn out or failed: never used again.
    Bad,
    /// Owned by a metadata area (superblock, checkpoints, protocol areas).
    Meta,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocFor {
    /// Hot data: the least-worn free block (dynamic wear leveling).
    Host,
    /// Data GC moves is cold: the most-worn free block.
    Gc,
}

#[derive(Clone)]
pub struct BlockTable {
    pub state: Vec<BlockState>,
    pub valid: Vec<u32>,
    pub erase_count: Vec<u32>,
    /// Next page index to program in an Open block; pages programmed in a Full one.
    pub write_ptr: Vec<u32>,
    /// Sequence number of the last page programmed (cost-benefit age).
    pub last_seq: Vec<u64>,
    /// Erased and not programmed since, as this mount knows it (erased by this
    /// mount, or shipped erased on an array formatted fresh): allocation and a
    /// ring entering the block skip the erase. Never persisted: a mount
    /// starts with no clean block (a torn program can read as erased).
    pub clean: Vec<bool>,
    /// Free blocks per unit, ordered by (erase count, block).
    free: Vec<BTreeSet<(u32, BlockId)>>,
    free_count: u32,
    prefree: Vec<BlockId>,
    blocks_per_unit: u32,
}

impl BlockTable {
    pub fn new(geo: &Geometry) -> BlockTable {
        let n = geo.block_count() as usize;
        BlockTable {
            state: vec![BlockState::Full; n],
            valid: vec![0; n],
            erase_count: vec![0; n],
            write_ptr: vec![0; n],
            last_seq: vec![0; n],
            clean: vec![false; n],
            free: vec![BTreeSet::new(); geo.unit_count() as usize],
            free_count: 0,
            prefree: Vec::new(),
            blocks_per_unit: geo.blocks_per_unit(),
        }
    }

    pub fn free_count(&self) -> u32 {
        self.free_count
    }
    pub fn prefree_count(&self) -> u32 {
        self.prefree.len() as u32
    }
    pub fn prefree(&self) -> &[BlockId] {
        &self.prefree
    }

    pub fn set_free(&mut self, b: BlockId) {
        debug_assert_eq!(self.valid[b as usize], 0, "block {b} freed with valid pages");
        self.state[b as usize] = BlockState::Free;
        let unit = b / self.blocks_per_unit;
        if self.free[unit as usize].insert((self.erase_count[b as usize], b)) {
            self.free_count += 1;
        }
    }

    pub fn set_prefree(&mut self, b: BlockId) {
        debug_assert_eq!(self.valid[b as usize], 0, "block {b} prefreed with valid pages");
        self.state[b as usize] = BlockState::Prefree;
        self.prefree.push(b);
    }

    /// After a durable checkpoint: prefree blocks join the free pool.
    pub fn release_prefree(&mut self) {
        for b in std::mem::take(&mut self.prefree) {
            self.set_free(b);
        }
    }

    /// Takes a free block for a stream: from `unit` if it has one, else from the
    /// first unit that does. Host streams get the least-worn block, GC the most-worn.
    pub fn take_free(&mut self, unit: u32, purpose: AllocFor) -> Option<BlockId> {
        let units = self.free.len() as u32;
        let u = (0..units)
            .map(|i| (unit + i) % units)
            .find(|&u| !self.free[u as usize].is_empty())?;
        let set = &mut self.free[u as usize];
        let (_, b) = match purpose {
            AllocFor::Host => set.pop_first(),
            AllocFor::Gc => set.pop_last(),
        }?;
        self.free_count -= 1;
        Some(b)
    }

    /// The least-worn free block over every unit, with its erase count.
    pub fn least_worn_free(&self) -> Option<(u32, BlockId)> {
        self.free.iter().filter_map(|set| set.first().copied()).min()
    }

    /// Takes a given block out of the free pool.
    pub fn take_block(&mut self, b: BlockId) {
        let unit = b / self.blocks_per_unit;
        if self.free[unit as usize].remove(&(self.erase_count[b as usize], b)) {
            self.free_count -= 1;
        }
    }

    pub fn is_in_free_pool(&self, b: BlockId) -> bool {
        let unit = b / self.blocks_per_unit;
        self.free[unit as usize].contains(&(self.erase_count[b as usize], b))
    }

    /// Smallest and largest erase count over blocks holding data or free.
    pub fn wear_spread(&self) -> (u32, u32) {
        let mut lo = u32::MAX;
        let mut hi = 0;
        for (b, s) in self.state.iter().enumerate() {
            if matches!(s, BlockState::Free | BlockState::Full | BlockState::Open | BlockState::Prefree) {
                lo = lo.min(self.erase_count[b]);
                hi = hi.max(self.erase_count[b]);
            }
        }
        (lo.min(hi), hi)
    }
}
