//! Writing the mapping checkpoint and the superblock that makes it durable.

use crate::area::Extent;
use crate::blocks::BlockState;
use crate::checkpoint::{BlockRecord, Checkpoint, RecordState};
use crate::error::{DeviceError, Result};
use crate::ftl::{CkptLoc, Ftl};
use crate::hooks::Hooks;
use crate::oob::{Oob, PageKind};
use crate::superblock::Superblock;
use txftl_nand::NandError;

/// Which metadata ring an append goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ring {
    Superblock,
    Checkpoint,
}

impl<H: Hooks> Ftl<H> {
    fn record_state(&self, b: usize) -> BlockRecord {
        let state = match self.blocks.state[b] {
            // Prefree blocks become free once this checkpoint is durable: the L2P
            // it records no longer points into them.
            BlockState::Free | BlockState::Prefree => RecordState::Free,
            BlockState::Open => RecordState::Open,
            BlockState::Full => RecordState::Used,
            BlockState::Bad => RecordState::Bad,
            BlockState::Meta => RecordState::Meta,
        };
        BlockRecord {
            erase_count: self.blocks.erase_count[b],
            write_ptr: self.blocks.write_ptr[b] as u16,
            state,
        }
    }

    /// Writes a checkpoint of the L2P and block table, then a superblock naming it.
    /// Durable when this returns; prefree blocks then join the free pool.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.check_alive()?;
        let seq = self.seq;
        self.seq += 1;
        let ckpt = Checkpoint {
            seq,
            l2p: self.l2p.clone(),
            blocks: (0..self.geo.block_count() as usize).map(|b| self.record_state(b)).collect(),
            protocol: self.hooks.checkpoint_section(),
        };
        let bytes = ckpt.encode();
        let recorded_erase_counts: Vec<u32> = ckpt.blocks.iter().map(|r| r.erase_count).collect();
        let crc = crc32fast::hash(&bytes);
        let ps = self.geo.page_size as usize;
        let pages = bytes.len().div_ceil(ps) as u32;
        let protect = self.ckpt.extent.ring_indexes(self.geo.pages_per_block, self.ckpt_area.blocks.len());
        let mut extent = Extent { index: 0, page: 0, pages };
        let mut page = vec![0u8; ps];
        for (i, chunk) in bytes.chunks(ps).enumerate() {
            page.fill(0);
            page[..chunk.len()].copy_from_slice(chunk);
            let (index, at) = self.append(Ring::Checkpoint, &protect, PageKind::Checkpoint, i as u32, seq, &page)?;
            if i == 0 {
                extent.index = index;
                extent.page = at;
            }
            self.counters.map_writes += 1;
        }
        let loc = CkptLoc {
            seq,
            extent,
            bytes: bytes.len() as u32,
            crc,
        };
        self.write_superblock(&loc)?;
        self.ckpt = loc;
        self.ckpt_erase_counts = recorded_erase_counts;
        self.programs_since_ckpt = 0;
        self.trims_pending = false;
        self.blocks.release_prefree();
        self.counters.checkpoints += 1;
        Ok(())
    }

    fn write_superblock(&mut self, loc: &CkptLoc) -> Result<()> {
        self.sb_seq += 1;
        let sb = Superblock {
            sb_seq: self.sb_seq,
            block_count: self.geo.block_count(),
            pages_per_block: self.geo.pages_per_block,
            page_size: self.geo.page_size,
            logical_pages: self.derived.logical_pages,
            protocol: self.hooks.name().to_string(),
            ckpt_seq: loc.seq,
            ckpt: loc.extent,
            ckpt_bytes: loc.bytes,
            ckpt_crc: loc.crc,
            ckpt_ring: self.ckpt_area.blocks.clone(),
            root: self.hooks.root(),
        };
        let mut page = vec![0u8; self.geo.page_size as usize];
        sb.encode(&mut page);
        // The block holding the newest superblock must survive this append.
        let protect = [self.sb_area.head_index];
        self.append(Ring::Superblock, &protect, PageKind::Superblock, 0, self.sb_seq, &page)?;
        self.counters.superblock_writes += 1;
        Ok(())
    }

    /// Appends one page to a metadata ring, erasing the next block when the head
    /// enters it. Synchronous: the clock moves to the end of the program.
    /// Returns the ring index and page index written.
    pub(crate) fn append(
        &mut self,
        ring: Ring,
        protect: &[usize],
        kind: PageKind,
        index: u32,
        seq: u64,
        data: &[u8],
    ) -> Result<(usize, u32)> {
        let ppb = self.geo.pages_per_block;
        let area = match ring {
            Ring::Superblock => &self.sb_area,
            Ring::Checkpoint => &self.ckpt_area,
        };
        let (enter, idx, page) = area.next_slot(ppb);
        let block = area.blocks[idx];
        if enter {
            if protect.contains(&idx) {
                return Err(DeviceError::WornOut(format!(
                    "{ring:?} ring of {} blocks is too small",
                    area.blocks.len()
                )));
            }
            match self.nand.erase(block, self.now_ns) {
                Ok(t) => self.now_ns = self.now_ns.max(t.done_ns),
                Err(NandError::EraseFailed(b)) | Err(NandError::BadBlock(b)) => {
                    self.blocks.state[b as usize] = BlockState::Bad;
                    self.failed = true;
                    return Err(DeviceError::WornOut(format!("{ring:?} block {b} wore out")));
                }
                Err(e) => return Err(self.fail(e)),
            }
            self.blocks.erase_count[block as usize] += 1;
            let area = match ring {
                Ring::Superblock => &mut self.sb_area,
                Ring::Checkpoint => &mut self.ckpt_area,
            };
            area.head_index = idx;
            area.head_page = 0;
        }
        let ppn = self.geo.ppn(block, page);
        Oob::new(kind, index, seq, self.blocks.erase_count[block as usize], data).encode(&mut self.oob_buf);
        match self.nand.program(ppn, self.now_ns, data, &self.oob_buf) {
            Ok(t) => self.now_ns = self.now_ns.max(t.done_ns),
            Err(e) => return Err(self.fail(e)),
        }
        let area = match ring {
            Ring::Superblock => &mut self.sb_area,
            Ring::Checkpoint => &mut self.ckpt_area,
        };
        area.head_page = page + 1;
        Ok((idx, page))
    }
}
