//! Step 4 of the mount (the module doc): the block table, the reverse map,
//! the valid counts and the free pool, from the checkpoint's block records,
//! what the roll-forward scan found, and the L2P.

use super::{Mounted, Scanned};
use crate::blocks::BlockState;
use crate::checkpoint::{RecordState, UNMAPPED};
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use txftl_nand::BlockId;

impl<H: Hooks> Ftl<H> {
    /// Block table, reverse map, valid counts.
    pub(super) fn rebuild_block_table(&mut self, m: &Mounted<H::Mapping>, scanned: &[Scanned]) -> Result<()> {
        self.restore_block_states(m, scanned);
        self.count_mapped_pages()?;
        self.rebuild_pools(m.ck.seq);
        // Ready blocks the scan found unwritten stay in the window: the
        // checkpoint's record still confines allocation to them.
        if self.blocks.windowed() && m.ck.window && !m.fallback {
            for (b, rec) in m.ck.blocks.iter().enumerate() {
                if rec.state == RecordState::Ready && self.blocks.state[b] == BlockState::Free {
                    self.blocks.set_ready(b as BlockId);
                }
            }
        }
        Ok(())
    }

    /// Each block's state and write pointer: as the checkpoint recorded it,
    /// the rings' blocks metadata, and the blocks the scan found written
    /// (closed) or reclaimed since (free).
    fn restore_block_states(&mut self, m: &Mounted<H::Mapping>, scanned: &[Scanned]) {
        let geo = self.geo;
        let (ck, ring_owned) = (&m.ck, &m.ring_owned);
        for (b, rec) in ck.blocks.iter().enumerate() {
            let (state, wp) = match rec.state {
                RecordState::Bad => (BlockState::Bad, 0),
                RecordState::Meta => (BlockState::Meta, 0),
                RecordState::Used => (BlockState::Full, rec.write_ptr as u32),
                RecordState::Free | RecordState::Open | RecordState::Ready => (BlockState::Free, 0), // fixed below
            };
            self.blocks.state[b] = state;
            self.blocks.write_ptr[b] = wp;
        }
        for (b, rec) in ck.blocks.iter().enumerate() {
            if ring_owned.contains(&(b as BlockId)) {
                self.blocks.state[b] = BlockState::Meta;
            } else if rec.state == RecordState::Meta {
                self.blocks.state[b] = BlockState::Full;
                self.blocks.write_ptr[b] = geo.pages_per_block;
            }
        }
        for sc in scanned {
            let b = sc.block as usize;
            if ring_owned.contains(&sc.block) {
                continue;
            }
            let was = ck.blocks[b].state;
            if sc.written || was == RecordState::Open {
                self.blocks.state[b] = BlockState::Full;
                self.blocks.write_ptr[b] = sc.write_ptr;
            } else if was == RecordState::Used && !sc.first_page_old {
                // Reclaimed and erased after the checkpoint (fallback only).
                self.blocks.state[b] = BlockState::Free;
                self.blocks.write_ptr[b] = 0;
            }
        }
    }

    /// Marks every mapped physical page and counts it in its block's valid
    /// pages; a page mapped twice, or past the array, is corruption.
    fn count_mapped_pages(&mut self) -> Result<()> {
        let geo = self.geo;
        for (lpn, ppn) in self.l2p.entries().iter().enumerate() {
            if ppn == UNMAPPED {
                continue;
            }
            if ppn >= geo.page_count() || self.mapped.get(ppn) {
                return Err(DeviceError::Corrupted(format!(
                    "logical page {lpn} maps to invalid or shared physical page {ppn}"
                )));
            }
            self.mapped.set(ppn, true);
            self.blocks.valid[geo.block_of(ppn) as usize] += 1;
        }
        Ok(())
    }

    /// Free blocks go to the pool; full blocks holding no live page become
    /// prefree (reclaimable once a checkpoint says so).
    fn rebuild_pools(&mut self, ckpt_seq: u64) {
        let geo = self.geo;
        let free: Vec<BlockId> = (0..geo.block_count())
            .filter(|&b| self.blocks.state[b as usize] == BlockState::Free)
            .collect();
        self.blocks.set_free_all(free);
        for b in 0..geo.block_count() {
            if self.blocks.state[b as usize] != BlockState::Full {
                continue;
            }
            self.blocks.last_seq[b as usize] = ckpt_seq;
            // Not only mapped pages are live: pages the protocol keeps
            // (BPCC's pinned straddlers, rebuilt by the protocol's recovery
            // above) must not go with a block reclaimed for holding no
            // mapped page. A protocol that plans its victims (Flag Commit
            // moves flags off dead pages first) has GC reclaim it, planned.
            if self.live_pages(b) == 0 && !H::CAPABILITIES.plans_victims {
                self.blocks.set_prefree(b);
            }
        }
        self.blocks.rebuild_index();
    }
}
