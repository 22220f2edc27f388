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
    /// Full blocks by valid-page count (greedy victims without a scan).
    by_valid: ByValid,
    /// Free blocks per unit taken into the allocation window (ready), ordered
    /// as `free`; counted in `free_count`. Empty without a window.
    window: Vec<BTreeSet<(u32, BlockId)>>,
    window_count: u32,
    ready: Vec<bool>,
    /// Allocation is confined to the window (`FtlConfig::alloc_window_blocks`).
    windowed: bool,
    /// Each unit's share of the window at the last refill: a stream whose
    /// unit used its share up slides the window rather than take another
    /// unit's block (two streams on one die halve its parallelism).
    window_share: Vec<u32>,
    /// Blocks each unit took from the window since the last refill: the
    /// next refill shares the window in these proportions.
    window_taken: Vec<u32>,
    /// The unit the next refill's remainder (size mod units) starts at.
    window_cursor: u32,
    free_count: u32,
    prefree: Vec<BlockId>,
    blocks_per_unit: u32,
    pages_per_block: u32,
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
            by_valid: ByValid::new(n, geo.pages_per_block),
            window: vec![BTreeSet::new(); geo.unit_count() as usize],
            window_count: 0,
            ready: vec![false; n],
            windowed: false,
            window_share: vec![0; geo.unit_count() as usize],
            window_taken: vec![0; geo.unit_count() as usize],
            window_cursor: 0,
            free_count: 0,
            prefree: Vec::new(),
            blocks_per_unit: geo.blocks_per_unit(),
            pages_per_block: geo.pages_per_block,
        }
    }

    /// A block becomes full (closed): it joins the greedy victim index.
    pub fn set_full(&mut self, b: BlockId) {
        self.state[b as usize] = BlockState::Full;
        self.by_valid.put(b, self.valid[b as usize]);
    }

    /// One more valid page in block `b`.
    #[inline]
    pub fn valid_inc(&mut self, b: BlockId) {
        assert!(
            self.valid[b as usize] < self.pages_per_block,
            "block {b}: a valid page more than it has pages ({})",
            self.pages_per_block
        );
        self.valid[b as usize] += 1;
        self.reindex(b);
    }

    /// `n` more valid pages in block `b` (a run's pages of it, mapped at once).
    #[inline]
    pub fn valid_add(&mut self, b: BlockId, n: u32) {
        assert!(
            self.valid[b as usize] + n <= self.pages_per_block,
            "block {b}: {n} valid pages more than it has pages ({})",
            self.pages_per_block
        );
        self.valid[b as usize] += n;
        self.reindex(b);
    }

    /// One valid page fewer in block `b`.
    #[inline]
    pub fn valid_dec(&mut self, b: BlockId) {
        assert!(self.valid[b as usize] > 0, "block {b}: a valid page fewer than none");
        self.valid[b as usize] -= 1;
        self.reindex(b);
    }

    #[inline]
    fn reindex(&mut self, b: BlockId) {
        if self.by_valid.contains(b) {
            if self.state[b as usize] == BlockState::Full {
                self.by_valid.put(b, self.valid[b as usize]);
            } else {
                self.by_valid.take(b);
            }
        }
    }

    /// Rebuilds the victim index from the states and valid counts (after recovery).
    pub fn rebuild_index(&mut self) {
        self.by_valid.clear();
        for b in 0..self.state.len() as BlockId {
            if self.state[b as usize] == BlockState::Full {
                self.by_valid.put(b, self.valid[b as usize]);
            }
        }
    }

    /// The greedy victim: among full blocks with fewer than `below` valid
    /// pages, the one with the fewest, then the least worn, then the lowest
    /// id; `None` if there is none. Blocks that left the full state since
    /// they were indexed are dropped from the index on the way.
    pub fn greedy_victim(&mut self, below: u32) -> Option<BlockId> {
        for v in 0..below {
            let mut best: Option<(u32, BlockId)> = None;
            let mut at = self.by_valid.head[v as usize];
            while at != NONE {
                let next = self.by_valid.next[at as usize];
                if self.state[at as usize] != BlockState::Full {
                    self.by_valid.take(at);
                } else {
                    let key = (self.erase_count[at as usize], at);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
                at = next;
            }
            if let Some((_, b)) = best {
                return Some(b);
            }
        }
        None
    }

    /// The greedy victim when a protocol keeps pages the L2P does not map or
    /// skips some blocks: `live(block, valid, write_ptr)` gives a full block's
    /// live pages (at least its valid ones), or None if it may not be a
    /// victim. Among full blocks with fewer than `below` live pages: the
    /// fewest, then the least worn, then the lowest id (as a scan would pick).
    /// Walks the index from the fewest valid pages up and stops once no
    /// block further up can have fewer live pages than the best found.
    pub fn greedy_victim_by(&mut self, below: u32, mut live: impl FnMut(BlockId, u32, u32) -> Option<u32>) -> Option<BlockId> {
        let mut best: Option<(u32, u32, BlockId)> = None;
        for v in 0..below {
            if best.is_some_and(|(l, _, _)| v > l) {
                break;
            }
            let mut at = self.by_valid.head[v as usize];
            while at != NONE {
                let next = self.by_valid.next[at as usize];
                if self.state[at as usize] != BlockState::Full {
                    self.by_valid.take(at);
                } else if let Some(l) = live(at, v, self.write_ptr[at as usize]).filter(|&l| l < below) {
                    let key = (l, self.erase_count[at as usize], at);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
                at = next;
            }
        }
        best.map(|(_, _, b)| b)
    }

    /// Is every full block indexed under its valid count? (For the invariant check.)
    pub fn index_consistent(&self) -> Result<(), String> {
        for (b, &s) in self.state.iter().enumerate() {
            if s == BlockState::Full && self.by_valid.at[b] != self.valid[b] {
                return Err(format!(
                    "full block {b} with {} valid pages is indexed under {}",
                    self.valid[b], self.by_valid.at[b] as i64
                ));
            }
        }
        Ok(())
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
        assert_eq!(self.valid[b as usize], 0, "block {b} freed with valid pages");
        self.state[b as usize] = BlockState::Free;
        let unit = b / self.blocks_per_unit;
        if self.free[unit as usize].insert((self.erase_count[b as usize], b)) {
            self.free_count += 1;
        }
    }

    /// [`BlockTable::set_free`] for many blocks at once (format, mount):
    /// each unit's pool is built from its sorted entries in one pass, not by
    /// one B-tree insertion a block (2 million blocks at 2 TiB).
    pub fn set_free_all(&mut self, blocks: impl IntoIterator<Item = BlockId>) {
        let mut add: Vec<Vec<(u32, BlockId)>> = vec![Vec::new(); self.free.len()];
        for b in blocks {
            assert_eq!(self.valid[b as usize], 0, "block {b} freed with valid pages");
            self.state[b as usize] = BlockState::Free;
            add[(b / self.blocks_per_unit) as usize].push((self.erase_count[b as usize], b));
        }
        for (set, mut new) in self.free.iter_mut().zip(add) {
            if new.is_empty() {
                continue;
            }
            let before = set.len();
            new.extend(std::mem::take(set));
            // `collect` sorts (runs already in order cost one pass) and
            // builds the tree bottom-up; duplicates are dropped as by insert.
            *set = new.into_iter().collect();
            self.free_count += (set.len() - before) as u32;
        }
    }

    pub fn set_prefree(&mut self, b: BlockId) {
        assert_eq!(self.valid[b as usize], 0, "block {b} prefreed with valid pages");
        self.state[b as usize] = BlockState::Prefree;
        self.prefree.push(b);
    }

    /// After a durable checkpoint: prefree blocks join the free pool.
    pub fn release_prefree(&mut self) {
        for b in std::mem::take(&mut self.prefree) {
            self.set_free(b);
            // Recorded ready by the checkpoint that released it.
            if self.ready[b as usize] {
                self.set_ready(b);
            }
        }
    }

    /// Takes a free block for a stream: from `unit` if it has one, else from the
    /// first unit that does. Host streams get the least-worn block, GC the
    /// most-worn. With an allocation window, from the window only: recovery
    /// reads no other free block (the caller slides the window when it is
    /// used up).
    pub fn take_free(&mut self, unit: u32, purpose: AllocFor) -> Option<BlockId> {
        if self.windowed {
            let b = Self::take_from(&mut self.window, unit, purpose)?;
            self.window_taken[(b / self.blocks_per_unit) as usize] += 1;
            self.window_count -= 1;
            self.free_count -= 1;
            self.ready[b as usize] = false;
            self.assert_taken_free(b);
            return Some(b);
        }
        let b = Self::take_from(&mut self.free, unit, purpose)?;
        self.free_count -= 1;
        self.assert_taken_free(b);
        Some(b)
    }

    /// A block leaving the free pool is free and holds no valid page.
    fn assert_taken_free(&self, b: BlockId) {
        assert!(
            self.state[b as usize] == BlockState::Free && self.valid[b as usize] == 0,
            "block {b} taken from the free pool: {:?} with {} valid pages",
            self.state[b as usize],
            self.valid[b as usize]
        );
    }

    fn take_from(sets: &mut [BTreeSet<(u32, BlockId)>], unit: u32, purpose: AllocFor) -> Option<BlockId> {
        let units = sets.len() as u32;
        let u = (0..units).map(|i| (unit + i) % units).find(|&u| !sets[u as usize].is_empty())?;
        let set = &mut sets[u as usize];
        let (_, b) = match purpose {
            AllocFor::Host => set.pop_first(),
            AllocFor::Gc => set.pop_last(),
        }?;
        Some(b)
    }

    /// Confines allocation to a window (set once, as the FTL is built).
    pub fn set_windowed(&mut self, on: bool) {
        self.windowed = on;
    }
    pub fn windowed(&self) -> bool {
        self.windowed
    }
    /// Ready blocks: free, in the window.
    pub fn window_count(&self) -> u32 {
        self.window_count
    }
    /// Free blocks outside the window (all of them without one).
    pub fn pool_count(&self) -> u32 {
        self.free_count - self.window_count
    }
    /// The window is used up but the pool could refill it: time for a slide.
    pub fn window_spent(&self) -> bool {
        self.windowed && self.window_count == 0 && self.pool_count() > 0
    }
    pub fn is_ready(&self, b: BlockId) -> bool {
        self.ready[b as usize]
    }

    /// Tops the window up to `size` blocks over the units, each unit's
    /// least-worn free blocks first. The shares follow what each unit took
    /// since the last refill (evenly at first, and at least one block each
    /// when the window has one per unit): the units then use theirs up at
    /// about the same time, and the stream that slides the window is not
    /// one that took more than the rest. A unit whose pool runs short stays short.
    ///
    /// Prefree blocks come first: the checkpoint being written records them
    /// ready, and they join the window when it is durable
    /// (`release_prefree`), as they would join the pool. Only then can a
    /// stream take one, so the checkpoint before, whose L2P may still point
    /// into them, stays whole until this one is.
    pub fn refill_window(&mut self, size: u32) {
        let shares = self.window_shares(size);
        // Per unit: blocks the window has (ready, or prefree and already
        // recorded ready), and the prefree blocks that may join it.
        let mut have: Vec<usize> = self.window.iter().map(|w| w.len()).collect();
        let mut prefree: Vec<Vec<BlockId>> = vec![Vec::new(); shares.len()];
        for &b in &self.prefree {
            let u = (b / self.blocks_per_unit) as usize;
            if self.ready[b as usize] {
                have[u] += 1;
            } else {
                prefree[u].push(b);
            }
        }
        for (u, &share) in shares.iter().enumerate() {
            self.window_share[u] = share;
            let share = share as usize;
            for &b in prefree[u].iter().take(share.saturating_sub(have[u])) {
                self.ready[b as usize] = true;
                have[u] += 1;
            }
            while have[u] < share {
                let Some(entry) = self.free[u].pop_first() else { break };
                self.window[u].insert(entry);
                self.window_count += 1;
                self.ready[entry.1 as usize] = true;
                have[u] += 1;
            }
        }
        self.window_taken.fill(0);
    }

    /// Each unit's share of a window of `size` blocks (see `refill_window`).
    fn window_shares(&mut self, size: u32) -> Vec<u32> {
        let units = self.free.len() as u32;
        let floor = (size >= units) as u32;
        let taken: u64 = self.window_taken.iter().map(|&t| t as u64).sum();
        let mut shares = vec![floor; units as usize];
        let rest = size - floor * units;
        if taken == 0 {
            for i in 0..rest {
                shares[((self.window_cursor + i) % units) as usize] += 1;
            }
            self.window_cursor = (self.window_cursor + rest % units) % units;
            return shares;
        }
        // Largest remainders: the rounding goes to the units that took most.
        let exact: Vec<u64> = self.window_taken.iter().map(|&t| t as u64 * rest as u64).collect();
        let mut given = 0;
        for (s, &e) in shares.iter_mut().zip(&exact) {
            *s += (e / taken) as u32;
            given += (e / taken) as u32;
        }
        let mut order: Vec<usize> = (0..units as usize).collect();
        order.sort_by_key(|&u| (std::cmp::Reverse(exact[u] % taken), u));
        for &u in order.iter().take((rest - given) as usize) {
            shares[u] += 1;
        }
        shares
    }

    /// Does `unit` have a free block a stream can take without borrowing
    /// another unit's (from the window, with one)?
    pub fn unit_has_free(&self, unit: u32) -> bool {
        let u = unit as usize;
        if self.windowed {
            !self.window[u].is_empty()
        } else {
            !self.free[u].is_empty()
        }
    }

    /// `unit` used its share of the window up and its pool could give it
    /// another: its stream slides the window rather than borrow a block.
    pub fn unit_window_spent(&self, unit: u32) -> bool {
        let u = unit as usize;
        self.windowed && self.window_share[u] > 0 && self.window[u].is_empty() && !self.free[u].is_empty()
    }

    /// Puts a free block found ready at a mount back into the window.
    pub fn set_ready(&mut self, b: BlockId) {
        let unit = b / self.blocks_per_unit;
        let entry = (self.erase_count[b as usize], b);
        if self.free[unit as usize].remove(&entry) && self.window[unit as usize].insert(entry) {
            self.window_count += 1;
            self.ready[b as usize] = true;
        }
    }

    /// The least-worn free block over every unit, with its erase count.
    pub fn least_worn_free(&self) -> Option<(u32, BlockId)> {
        self.free.iter().filter_map(|set| set.first().copied()).min()
    }

    /// Takes a given block out of the free pool.
    pub fn take_block(&mut self, b: BlockId) {
        let unit = b / self.blocks_per_unit;
        let entry = (self.erase_count[b as usize], b);
        if self.free[unit as usize].remove(&entry) {
            self.free_count -= 1;
        } else if self.window[unit as usize].remove(&entry) {
            self.free_count -= 1;
            self.window_count -= 1;
            self.ready[b as usize] = false;
        }
    }

    pub fn is_in_free_pool(&self, b: BlockId) -> bool {
        let unit = b / self.blocks_per_unit;
        let entry = (self.erase_count[b as usize], b);
        self.free[unit as usize].contains(&entry) || self.window[unit as usize].contains(&entry)
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

const NONE: u32 = u32::MAX;

/// Blocks by valid-page count: one doubly linked list per count, so moving a
/// block between counts is O(1) (every page write and invalidation may).
#[derive(Clone)]
struct ByValid {
    /// First block of each count's list.
    head: Vec<u32>,
    next: Vec<u32>,
    prev: Vec<u32>,
    /// The count each block is listed under (`NONE`: not listed).
    at: Vec<u32>,
}

impl ByValid {
    fn new(blocks: usize, pages_per_block: u32) -> ByValid {
        ByValid {
            head: vec![NONE; pages_per_block as usize + 1],
            next: vec![NONE; blocks],
            prev: vec![NONE; blocks],
            at: vec![NONE; blocks],
        }
    }

    #[inline]
    fn contains(&self, b: BlockId) -> bool {
        self.at[b as usize] != NONE
    }

    fn clear(&mut self) {
        self.head.fill(NONE);
        self.at.fill(NONE);
    }

    #[inline]
    fn take(&mut self, b: BlockId) {
        let v = self.at[b as usize];
        if v == NONE {
            return;
        }
        let (p, n) = (self.prev[b as usize], self.next[b as usize]);
        if p == NONE {
            self.head[v as usize] = n;
        } else {
            self.next[p as usize] = n;
        }
        if n != NONE {
            self.prev[n as usize] = p;
        }
        self.at[b as usize] = NONE;
    }

    /// Lists `b` under count `v` (moving it if it is listed elsewhere).
    #[inline]
    fn put(&mut self, b: BlockId, v: u32) {
        if self.at[b as usize] == v {
            return;
        }
        self.take(b);
        let h = self.head[v as usize];
        self.next[b as usize] = h;
        self.prev[b as usize] = NONE;
        if h != NONE {
            self.prev[h as usize] = b;
        }
        self.head[v as usize] = b;
        self.at[b as usize] = v;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freeing_blocks_at_once_builds_the_same_pools_as_one_by_one() {
        let geo = txftl_nand::preset("tiny").unwrap().geometry;
        let (mut one, mut all) = (BlockTable::new(&geo), BlockTable::new(&geo));
        for t in [&mut one, &mut all] {
            for b in 0..geo.block_count() {
                t.erase_count[b as usize] = (b * 7919) % 13;
            }
        }
        let first: Vec<BlockId> = (0..geo.block_count()).filter(|b| b % 3 != 0).collect();
        let second: Vec<BlockId> = (0..geo.block_count()).filter(|b| b % 3 == 0 && b % 2 == 0).collect();
        for &b in first.iter().chain(&second) {
            one.set_free(b);
        }
        all.set_free_all(first.iter().copied());
        all.set_free_all(second.iter().copied());
        assert_eq!(one.free, all.free);
        assert_eq!(one.free_count, all.free_count);
        assert_eq!(one.state, all.state);
        for purpose in [AllocFor::Host, AllocFor::Gc, AllocFor::Host] {
            assert_eq!(one.take_free(1, purpose), all.take_free(1, purpose));
        }
    }

    #[test]
    fn the_greedy_victim_is_the_full_block_with_fewest_valid_then_least_worn_then_lowest() {
        let geo = txftl_nand::preset("tiny").unwrap().geometry;
        let mut t = BlockTable::new(&geo);
        let ppb = geo.pages_per_block;
        for b in 0..t.state.len() {
            t.state[b] = BlockState::Free;
        }
        assert_eq!(t.greedy_victim(ppb), None);
        for (b, valid, ec) in [(3, 5, 2), (4, 2, 9), (5, 2, 1), (6, 2, 1), (7, 8, 0)] {
            t.valid[b as usize] = valid;
            t.erase_count[b as usize] = ec;
            t.set_full(b);
        }
        assert_eq!(t.greedy_victim(ppb), Some(5), "fewest valid, then least worn, then lowest id");
        t.valid_dec(3);
        t.valid_dec(3);
        t.valid_dec(3);
        t.valid_dec(3);
        assert_eq!(t.greedy_victim(ppb), Some(3));
        // Leaving the full state drops a block from the index on the way.
        t.state[3] = BlockState::Prefree;
        assert_eq!(t.greedy_victim(ppb), Some(5));
        t.state[5] = BlockState::Open;
        t.valid_inc(5);
        assert_eq!(t.greedy_victim(ppb), Some(6));
        t.index_consistent().unwrap();
        // A block with every page valid gains nothing.
        for b in [4, 6] {
            t.state[b] = BlockState::Free;
        }
        assert_eq!(t.greedy_victim(ppb), None, "block 7 is all valid");
        t.valid_dec(7);
        assert_eq!(t.greedy_victim(ppb), Some(7));
        t.rebuild_index();
        t.index_consistent().unwrap();
        assert_eq!(t.greedy_victim(ppb), Some(7));
    }
}
