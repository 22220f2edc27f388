//! Writing the mapping checkpoint and the superblock that makes it durable.

use crate::area::Extent;
use crate::area::LogArea;
use crate::blocks::BlockState;
use crate::checkpoint::{encode_block_page, BlockRecord, DirEntry, Record, RecordState, UNMAPPED};
use crate::config::Canary;
use crate::error::{DeviceError, Result};
use crate::ftl::{Ftl, RecordLoc};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::{Oob, PageKind, PROTOCOL_BYTES};
use crate::superblock::{PrevCheckpoint, RingRecord, Superblock};
use txftl_nand::{BlockId, NandError};

/// The protocol bytes of every ring page but a protocol's tagged log pages.
pub(crate) const NO_TAG: [u8; PROTOCOL_BYTES] = [0; PROTOCOL_BYTES];

/// Which metadata ring an append goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ring {
    Superblock,
    Checkpoint,
    /// A protocol's ring, by index.
    Protocol(usize),
}

impl std::fmt::Display for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ring::Superblock => f.write_str("superblock"),
            Ring::Checkpoint => f.write_str("checkpoint"),
            Ring::Protocol(i) => write!(f, "protocol record {i}"),
        }
    }
}

impl<H: Hooks> Ftl<H> {
    fn record_state(&self, b: usize) -> BlockRecord {
        let state = match self.blocks.state[b] {
            // A ready block: in the window, or prefree and joining it once
            // this checkpoint is durable (`BlockTable::refill_window`).
            BlockState::Free | BlockState::Prefree
                if self.blocks.is_ready(b as BlockId) && self.cfg.canary != Some(Canary::UnrecordedWindow) =>
            {
                RecordState::Ready
            }
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

    /// Writes a checkpoint, then a superblock naming it. Durable when this
    /// returns; prefree blocks then join the free pool.
    ///
    /// Incremental (format in `checkpoint.rs`): it writes the table pages that
    /// changed since the current checkpoint (L2P pages with a mapping changed,
    /// block-table pages with a record changed), then the record whose
    /// directory names where every table page lies, old or new. A protocol
    /// that keeps no mapping table (`Mapping::PERSISTED` false) gets no L2P
    /// page written: only block-table pages and the record.
    ///
    /// The ring's rule, which keeps the previous checkpoint intact as a
    /// fallback: the ring enters (erases) a block only if no page of the
    /// current or the previous checkpoint (record or table page) lies in it
    /// (`ckpt_block_pinned`; a typed error otherwise). So that the blocks
    /// ahead are always free of them, every checkpoint also writes again the
    /// table pages the next directory names in the 3W + 2B ring blocks ahead
    /// of the head, W being the most blocks one checkpoint can enter and B the
    /// most that a cached table's write-backs enter between two checkpoints
    /// (`write_back_table_page`; 0 for other tables): the new checkpoint then
    /// has no page there but the ones it wrote itself within W blocks, the one
    /// before it none within 3W + 2B - (W + B) = 2W + B blocks of where this
    /// one starts, and until the checkpoint after the next is durable (when
    /// this one stops being a fallback) the ring enters at most B + W + B + W
    /// blocks past this one's own. (Write-backs lie behind the head when they
    /// are written, so a checkpoint never needs to move them.)
    ///
    /// It starts once every flash operation issued is done. What it persists
    /// is DRAM's state, which counts an operation at its issue: the block
    /// records an erase count raised when the erase was issued (an
    /// allocation does not wait for its erase, `erase_for_use`), the L2P a
    /// host page or GC copy whose program is still running. Its own pages go
    /// to other dies, where they can be done first: a power cut between would
    /// leave a durable checkpoint counting an erase the block never had, or
    /// mapping a logical page to a page its program never reached (erased, or
    /// still holding another page's old data when the erase before the
    /// program was lost too), the version before it lost.
    pub fn checkpoint(&mut self) -> Result<()> {
        self.check_writable("checkpoint")?;
        self.wait_idle();
        self.now_ns = self.now_ns.max(self.hooks.checkpoint_after_ns());
        let seq = self.seq;
        self.seq += 1;
        // The zone slide of an allocation window: free blocks join it up to
        // its size before the records name them (prefree ones join the pool
        // only once this checkpoint is durable, so they wait for the next).
        if self.cfg.alloc_window_blocks > 0 {
            self.blocks.refill_window(self.cfg.alloc_window_blocks);
        }
        let mut blocks = self.tables.block_records_buffer();
        blocks.extend((0..self.geo.block_count() as usize).map(|b| self.record_state(b)));
        // What the records and the L2P say is on the NAND is done (see above).
        assert!(
            self.nand.all_idle_ns() <= self.now_ns,
            "checkpoint {seq} records the device at {} ns with flash operations in flight until {} ns",
            self.now_ns,
            self.nand.all_idle_ns()
        );
        // The next directory already names the pages written back since the
        // current checkpoint.
        let write = self.table_pages_to_write(&blocks);
        let ps = self.geo.page_size as usize;
        let mut page = std::mem::take(&mut self.meta_buf);
        page.resize(ps, 0);
        let kept = self.tables.dir_next.iter().filter(|e| e.ppn != UNMAPPED).count()
            - write
                .iter()
                .filter(|&&(t, _)| self.tables.dir_next[t as usize].ppn != UNMAPPED)
                .count();
        let written = self.write_table_pages(&write, &blocks, seq, &mut page);
        let extent_bytes = written.and_then(|()| self.write_record(seq, &mut page));
        self.meta_buf = page;
        let (extent, bytes, crc) = extent_bytes?;
        let loc = RecordLoc { seq, extent, bytes, crc };
        let prev = self.ckpt;
        // Checkpoints are ordered by their sequence numbers: recovery takes
        // the highest the superblock names, and rolls forward past it.
        assert!(loc.seq > prev.seq, "checkpoint {} written after checkpoint {}", loc.seq, prev.seq);
        // Its pages were issued without waiting, one stripe's dies at a time
        // (`append`); the superblock that names them follows them all. The
        // device was idle when it started, so this waits for them alone.
        self.wait_idle();
        self.write_superblock(&loc, &prev)?;
        // The checkpoint before the previous one is no fallback any more: a
        // metadata-only array may forget its pages' data (not the pages).
        let gone = std::mem::replace(&mut self.prev_ckpt, prev);
        if gone.seq > 0 && gone.seq != prev.seq {
            for ppn in gone.extent.ppns(&self.ckpt_area, self.geo.pages_per_block) {
                self.nand.forget_data(ppn);
            }
        }
        self.ckpt = loc;
        for ppn in self.tables.checkpoint_durable(blocks) {
            self.nand.forget_data(ppn);
        }
        self.counters.map_pages_kept += kept as u64;
        self.programs_since_ckpt = 0;
        self.trims_pending = false;
        if !self.blocks.prefree().is_empty() {
            self.hooks.blocks_released(self.blocks.prefree());
        }
        self.blocks.release_prefree();
        self.counters.checkpoints += 1;
        self.hooks.checkpoint_durable();
        Ok(())
    }

    /// Table pages the next checkpoint writes, in order: those that changed,
    /// and those the next directory names in the 3W + 2B ring blocks ahead of
    /// the head (see `checkpoint`), with whether each is only moved (unchanged).
    fn table_pages_to_write(&self, blocks: &[BlockRecord]) -> Vec<(u32, bool)> {
        let layout = self.tables.layout;
        let mut changed = vec![false; layout.table_pages() as usize];
        // Without L2P persistence (`Mapping::PERSISTED`) no L2P page is
        // ever written: the directory keeps naming none.
        if <H::Mapping as Mapping>::PERSISTED {
            for t in 0..layout.map_pages() {
                changed[t as usize] = self.cfg.checkpoint_whole_map || self.tables.map_page_dirty(t);
            }
        }
        for t in layout.map_pages()..layout.table_pages() {
            changed[t as usize] = self.tables.blocks_changed(t, blocks);
        }
        let mut moved = vec![false; layout.table_pages() as usize];
        let ppb = self.geo.pages_per_block;
        let sp = self.tables.stripe_pages;
        let n = self.ckpt_area.stripes();
        let zone = (self.tables.zone_blocks() as usize).min(n - 1);
        for d in 1..=zone {
            let idx = (self.ckpt_area.head_index + d) % n;
            for page in 0..sp {
                let t = self.tables.holder[idx * sp as usize + page as usize];
                if t != UNMAPPED && self.tables.dir_next[t as usize].ppn == self.ckpt_area.ppn(idx, page, ppb) {
                    moved[t as usize] = !changed[t as usize];
                }
            }
        }
        (0..layout.table_pages())
            .filter(|&t| changed[t as usize] || moved[t as usize])
            .map(|t| (t, moved[t as usize]))
            .collect()
    }

    /// Writes table pages `write` to the checkpoint ring, each with its index
    /// in the OOB, and notes where they landed in the next directory. An L2P
    /// page with no mapping is not written (its directory entry says so).
    fn write_table_pages(&mut self, write: &[(u32, bool)], blocks: &[BlockRecord], seq: u64, page: &mut [u8]) -> Result<()> {
        let layout = self.tables.layout;
        let (ppb, sp) = (self.geo.pages_per_block, self.tables.stripe_pages);
        for &(t, moved) in write {
            if t < layout.map_pages() {
                let entries = self.l2p.entries();
                if !entries.any_mapped(layout.lpns_of(t)) {
                    self.tables.dir_next[t as usize] = DirEntry::NONE;
                    continue;
                }
                entries.encode_page(layout.lpns_of(t), page);
            } else {
                encode_block_page(&blocks[layout.blocks_of(t)], page);
            }
            // The version it replaces: a metadata-only array keeps the new
            // one as a patch against it (the two differ in a few entries).
            let like = Some(self.tables.dir_next[t as usize].ppn).filter(|&p| p != UNMAPPED);
            // Not waited for: consecutive pages go to the stripe's other
            // dies and overlap; the superblock waits for them all.
            let (idx, at) = self.append(Ring::Checkpoint, &[], (PageKind::Map, &NO_TAG), t, seq, page, true, like, false)?;
            let ppn = self.ckpt_area.ppn(idx, at, ppb);
            self.tables.dir_next[t as usize] = DirEntry {
                ppn,
                crc: crc32fast::hash(page),
            };
            self.tables.holder[idx * sp as usize + at as usize] = t;
            self.counters.map_writes += 1;
            if t < layout.map_pages() {
                self.counters.map_l2p_writes += 1;
            } else {
                self.counters.map_block_writes += 1;
            }
            self.counters.map_moves += moved as u64;
        }
        Ok(())
    }

    /// Writes the record (the next directory and the protocol's section) as
    /// consecutive ring pages. Returns where it lies, its length and its CRC.
    fn write_record(&mut self, seq: u64, page: &mut [u8]) -> Result<(Extent, u32, u32)> {
        let layout = self.tables.layout;
        let record = Record {
            seq,
            logical_pages: layout.logical_pages,
            block_count: layout.block_count,
            map_pages: layout.map_pages(),
            block_pages: layout.block_pages(),
            directory: self.tables.dir_next.clone(),
            protocol: self.hooks.checkpoint_section(),
            window: self.blocks.windowed(),
        };
        let bytes = record.encode();
        let crc = crc32fast::hash(&bytes);
        let ps = self.geo.page_size as usize;
        let pages = bytes.len().div_ceil(ps) as u32;
        let mut extent = Extent { index: 0, page: 0, pages };
        let sp = self.tables.stripe_pages;
        let ring_len = self.ckpt_area.stripes();
        // A record is read back as consecutive ring pages: when a program
        // fails (the append skips the failed page), the record starts over
        // after it.
        'record: loop {
            let mut expected = None;
            for (i, chunk) in bytes.chunks(ps).enumerate() {
                page.fill(0);
                page[..chunk.len()].copy_from_slice(chunk);
                let (index, at) = self.append(
                    Ring::Checkpoint,
                    &[],
                    (PageKind::Checkpoint, &NO_TAG),
                    i as u32,
                    seq,
                    page,
                    false,
                    None,
                    false,
                )?;
                self.counters.map_writes += 1;
                self.counters.map_record_writes += 1;
                if expected.is_some_and(|e| e != (index, at)) {
                    continue 'record;
                }
                if i == 0 {
                    extent.index = index;
                    extent.page = at;
                }
                expected = Some(if at + 1 < sp {
                    (index, at + 1)
                } else {
                    ((index + 1) % ring_len, 0)
                });
            }
            break;
        }
        Ok((extent, bytes.len() as u32, crc))
    }

    /// May the checkpoint ring enter (erase) its stripe at `idx`? Not if a
    /// page of the current or previous checkpoint (record or table page), or
    /// of the one being written, lies in it.
    pub(crate) fn ckpt_block_pinned(&self, idx: usize) -> bool {
        let (ppb, sp) = (self.geo.pages_per_block, self.tables.stripe_pages);
        let n = self.ckpt_area.stripes();
        let records = [self.ckpt, self.prev_ckpt];
        if records.iter().any(|r| r.seq > 0 && r.extent.ring_indexes(sp, n).contains(&idx)) {
            return true;
        }
        (0..sp).any(|page| {
            let t = self.tables.holder[idx * sp as usize + page as usize];
            let ppn = self.ckpt_area.ppn(idx, page, ppb);
            t != UNMAPPED
                && (self.tables.dir_cur[t as usize].ppn == ppn
                    || self.tables.dir_prev[t as usize] == ppn
                    || self.tables.dir_next[t as usize].ppn == ppn)
        })
    }

    /// Writes a superblock naming checkpoint `loc` (and `prev`, the one before it).
    pub(crate) fn write_superblock(&mut self, loc: &RecordLoc, prev: &RecordLoc) -> Result<()> {
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
            ckpt_stripe: self.ckpt_area.stripe,
            prev_ckpt: PrevCheckpoint {
                seq: prev.seq,
                extent: prev.extent,
                bytes: prev.bytes,
                crc: prev.crc,
            },
            root: self.hooks.root(),
            protocol_rings: self
                .proto_rings
                .iter()
                .map(|area| RingRecord {
                    blocks: area.blocks.clone(),
                })
                .collect(),
        };
        // With an image synced at flushes, what this superblock names (the
        // checkpoint, the log pages before it) reaches the host's disk before it.
        self.nand.flush_image()?;
        let ps = self.geo.page_size as usize;
        let ppb = self.geo.pages_per_block;
        let mut bytes = std::mem::take(&mut self.meta_buf);
        sb.encode(&mut bytes, ps);
        let pages = (bytes.len() / ps) as u32;
        assert!((1..=ppb).contains(&pages), "format refuses a superblock of {pages} pages");
        // The block holding the newest superblock must survive this copy.
        let protect = [self.sb_area.head_index];
        loop {
            // A copy lies in one block, so recovery reads it whole from its
            // first page; one that does not fit the rest of this block starts
            // the other (the rest stays erased).
            if self.sb_area.head_page + pages > ppb {
                self.sb_area.head_page = ppb;
            }
            let mut placed: Option<(usize, u32)> = None;
            let mut contiguous = true;
            for i in 0..pages {
                // The same page of the copy before, when it lies just behind
                // the head: a hint to the array (it differs in a few fields).
                let head = self.sb_area.head_page;
                let like = (head >= pages).then(|| self.geo.ppn(self.sb_area.blocks[self.sb_area.head_index], head - pages));
                let chunk = &bytes[i as usize * ps..(i as usize + 1) * ps];
                let at = self.append(
                    Ring::Superblock,
                    &protect,
                    (PageKind::Superblock, &NO_TAG),
                    i,
                    self.sb_seq,
                    chunk,
                    false,
                    like,
                    true,
                )?;
                let first = *placed.get_or_insert(at);
                contiguous &= at == (first.0, first.1 + i);
            }
            if contiguous {
                break;
            }
            // A failed program moved a page of the copy (`append` wrote it
            // again further on): the copy is not whole where recovery looks,
            // so it is written again.
        }
        // The buffer goes back page-sized, as its other users expect.
        bytes.truncate(ps);
        self.meta_buf = bytes;
        self.counters.superblock_writes += 1;
        Ok(())
    }

    /// Appends one page to a metadata ring, erasing the next stripe when the
    /// head enters it. `wait`: the clock moves to the end of the program (and
    /// of the erases before it); otherwise the program is issued at the
    /// current time and the caller waits for it (a checkpoint's pages overlap
    /// on the stripe's dies, each die taking its pages in ring order).
    /// `with_crc`: the OOB records a CRC of the data (log pages, which nothing
    /// else checks); records named by a superblock carry their own CRC there.
    /// `like`: a page whose data this one resembles (the version of a table
    /// page it replaces), a hint to the array (`Nand::program_like`).
    /// `tag`: the OOB record's protocol bytes (a protocol's log page may
    /// carry some; every other ring page carries zeros).
    /// Returns the stripe index and stripe page written.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn append(
        &mut self,
        ring: Ring,
        protect: &[usize],
        (kind, tag): (PageKind, &[u8; PROTOCOL_BYTES]),
        index: u32,
        seq: u64,
        data: &[u8],
        with_crc: bool,
        like: Option<txftl_nand::Ppn>,
        wait: bool,
    ) -> Result<(usize, u32)> {
        let ppb = self.geo.pages_per_block;
        let (enter, idx, page) = self.ring_area(ring).next_slot(ppb);
        if enter {
            self.enter_stripe(ring, idx, protect, wait)?;
        }
        let area = self.ring_area(ring);
        let ppn = area.ppn(idx, page, ppb);
        let block = self.geo.block_of(ppn);
        let crc_over: &[u8] = if with_crc { data } else { &[] };
        let mut oob = Oob::new(kind, index, seq, self.blocks.erase_count[block as usize], crc_over);
        oob.protocol = *tag;
        oob.encode(&mut self.oob_buf);
        let programmed = match like {
            Some(like) => self.nand.program_like(ppn, self.now_ns, data, &self.oob_buf, like),
            None => self.nand.program(ppn, self.now_ns, data, &self.oob_buf),
        };
        match programmed {
            Ok(t) if wait => self.now_ns = self.now_ns.max(t.done_ns),
            Ok(_) => {}
            Err(NandError::ProgramFailed { done_ns, .. }) => {
                // The page holds garbage, which every reader skips (its OOB
                // fails its CRC): write this page again at the next slot. The
                // block stays in the ring; its next erase decides whether it
                // is still good.
                self.now_ns = self.now_ns.max(done_ns);
                self.ring_area_mut(ring).head_page = page + 1;
                return self.append(ring, protect, (kind, tag), index, seq, data, with_crc, like, wait);
            }
            Err(e) => return Err(self.fail(e)),
        }
        self.ring_area_mut(ring).head_page = page + 1;
        Ok((idx, page))
    }

    /// Moves `ring`'s head into its stripe `idx`, erasing the stripe's blocks
    /// (issued together: they sit on different dies) unless pages recovery
    /// needs lie there (`protect`: the superblock ring's stripes to keep).
    fn enter_stripe(&mut self, ring: Ring, idx: usize, protect: &[usize], wait: bool) -> Result<()> {
        let area = self.ring_area(ring);
        let pinned = match ring {
            Ring::Checkpoint => self.ckpt_block_pinned(idx),
            _ => protect.contains(&idx),
        };
        if pinned {
            return Err(DeviceError::WornOut(format!(
                "{ring} ring of {} blocks is too small: its next block still holds pages recovery needs",
                area.blocks.len()
            )));
        }
        let d = area.stripe as usize;
        let issue = self.now_ns;
        let mut done_max = issue;
        for bi in idx * d..(idx + 1) * d {
            if ring != Ring::Superblock {
                self.swap_worn_ring_block(ring, bi);
            }
            let block = loop {
                let block = self.ring_area(ring).blocks[bi];
                if self.blocks.clean[block as usize] {
                    // Erased and not programmed since: no erase needed.
                    break block;
                }
                match self.nand.erase(block, issue) {
                    Ok(t) => {
                        done_max = done_max.max(t.done_ns);
                        self.blocks.erase_count[block as usize] += 1;
                        // A ring may take a block that held data (a swap with the pool).
                        self.hooks.on_erase(block);
                        break block;
                    }
                    Err(NandError::EraseFailed(b)) | Err(NandError::BadBlock(b)) => {
                        self.blocks.state[b as usize] = BlockState::Bad;
                        self.counters.bad_blocks += 1;
                        // A bad ring block gives its place to a free block of
                        // the pool (the superblock's two blocks are fixed:
                        // recovery finds them from the geometry alone).
                        if ring == Ring::Superblock || !self.replace_ring_block(ring, bi) {
                            self.failed = true;
                            return Err(DeviceError::WornOut(format!("{ring} block {b} went bad")));
                        }
                    }
                    Err(e) => return Err(self.fail(e)),
                }
            };
            // Its first program ends the clean state.
            self.blocks.clean[block as usize] = false;
        }
        if wait {
            self.now_ns = done_max;
        }
        if ring == Ring::Checkpoint {
            let sp = self.tables.stripe_pages as usize;
            self.tables.holder[idx * sp..(idx + 1) * sp].fill(UNMAPPED);
        }
        let area = self.ring_area_mut(ring);
        area.head_index = idx;
        area.head_page = 0;
        Ok(())
    }

    /// Puts the least-worn free block in place of the ring's (bad) block at
    /// `idx`. False if the pool has no block to spare beyond GC's reserve.
    fn replace_ring_block(&mut self, ring: Ring, idx: usize) -> bool {
        let Some((_, fresh)) = self.spare_free_block() else {
            return false;
        };
        self.install_ring_block(ring, idx, fresh);
        true
    }

    /// Metadata rings share the wear with data blocks: before a ring erases its
    /// block at `idx`, if that block is worn well past the least-worn free block
    /// (by more than half the static wear-leveling spread), the two trade
    /// places. The worn block goes back to the pool as prefree (its stale
    /// records stay readable until the next checkpoint, which recovery's scan
    /// relies on), the fresh one joins the ring. The ring's new block list is
    /// durable with the next superblock, which the caller writes before relying
    /// on the new block (a checkpoint writes one anyway; a log append writes one).
    fn swap_worn_ring_block(&mut self, ring: Ring, idx: usize) {
        let old = self.ring_area(ring).blocks[idx];
        let Some((fresh_count, fresh)) = self.spare_free_block() else {
            return;
        };
        if self.blocks.erase_count[old as usize] <= fresh_count + self.cfg.wear_spread_max / 2 {
            return;
        }
        self.blocks.valid[old as usize] = 0;
        self.blocks.write_ptr[old as usize] = self.geo.pages_per_block;
        self.blocks.set_prefree(old);
        self.install_ring_block(ring, idx, fresh);
    }

    /// The least-worn free block (erase count, block), if the pool can spare
    /// one beyond the free blocks GC needs.
    fn spare_free_block(&self) -> Option<(u32, BlockId)> {
        if self.blocks.free_count() <= self.derived.reserve + 1 {
            return None;
        }
        self.blocks.least_worn_free()
    }

    /// Takes free block `fresh` out of the pool into the ring at `idx` (a
    /// change of ring block lists, which the next superblock records).
    fn install_ring_block(&mut self, ring: Ring, idx: usize, fresh: BlockId) {
        self.blocks.take_block(fresh);
        // Its clean state carries over: a free block this mount erased (or
        // that was shipped erased) needs no erase when the ring enters it.
        self.blocks.state[fresh as usize] = BlockState::Meta;
        self.ring_area_mut(ring).blocks[idx] = fresh;
        self.ring_swaps += 1;
        self.counters.ring_swaps += 1;
    }

    fn ring_area(&self, ring: Ring) -> &LogArea {
        match ring {
            Ring::Superblock => &self.sb_area,
            Ring::Checkpoint => &self.ckpt_area,
            Ring::Protocol(i) => &self.proto_rings[i],
        }
    }

    fn ring_area_mut(&mut self, ring: Ring) -> &mut LogArea {
        match ring {
            Ring::Superblock => &mut self.sb_area,
            Ring::Checkpoint => &mut self.ckpt_area,
            Ring::Protocol(i) => &mut self.proto_rings[i],
        }
    }
}

#[cfg(test)]
mod stripe_tests {
    use crate::config::FtlConfig;
    use crate::device::Device;
    use crate::error::DeviceError;
    use crate::test_hooks::Bare;
    use crate::Ftl;
    use std::collections::BTreeSet;
    use txftl_nand::{DataMode, Nand, ViolationPolicy};

    fn nand() -> Nand {
        let mut p = txftl_nand::preset("jasmine").unwrap();
        p.geometry.blocks_per_plane = 64;
        p.geometry.page_size = 2048;
        Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
    }

    fn page(lpn: u32) -> Vec<u8> {
        vec![(lpn % 251) as u8 + 1; 2048]
    }

    /// A device filled with every logical page, then the time one
    /// checkpoint writing every L2P page takes, and the device.
    fn filled(stripe: u32) -> (Ftl<Bare>, u64) {
        let cfg = FtlConfig {
            checkpoint_stripe: stripe,
            checkpoint_whole_map: true,
            ..FtlConfig::default()
        };
        let mut f = Ftl::format(nand(), cfg, Bare).unwrap();
        for lpn in 0..f.logical_pages() {
            f.write(lpn, &page(lpn)).unwrap();
        }
        f.wait_idle();
        let start = f.now();
        f.checkpoint().unwrap();
        let took = f.now() - start;
        (f, took)
    }

    /// Striped over 4 dies, a checkpoint's table pages lie on 4 dies and
    /// program in parallel: the checkpoint takes less than half the time it
    /// takes in a ring entered a block at a time; recovery reads the striped
    /// ring back (the superblock names the stripe) and every page returns.
    #[test]
    fn a_striped_checkpoint_overlaps_its_programs_and_mounts() {
        let (one, t1) = filled(1);
        let (four, t4) = filled(4);
        assert_eq!(one.ckpt_area.stripe, 1);
        assert_eq!(four.ckpt_area.stripe, 4);
        let pages = four.tables.layout.table_pages() as u64;
        assert!(pages >= 16, "{pages} table pages");
        assert!(2 * t4 < t1, "striped {t4} ns, one die at a time {t1} ns");
        let geo = four.geo;
        let dies: BTreeSet<u32> = four
            .tables
            .dir_cur
            .iter()
            .filter(|e| e.ppn != crate::checkpoint::UNMAPPED)
            .map(|e| geo.unit_of_block(geo.block_of(e.ppn)))
            .collect();
        assert_eq!(dies.len(), 4, "table pages on dies {dies:?}");
        four.check_invariants().unwrap();
        let n = four.logical_pages();
        // The power cut: DRAM lost.
        let mut f = Ftl::mount(four.into_nand(), FtlConfig::default(), Bare).unwrap();
        assert_eq!(f.ckpt_area.stripe, 4, "the superblock names the stripe");
        let mut buf = vec![0u8; 2048];
        for lpn in 0..n {
            f.read(lpn, &mut buf).unwrap();
            assert_eq!(buf, page(lpn), "lpn {lpn}");
        }
        f.check_invariants().unwrap();
    }

    /// A stripe wider than the array's dies is refused, typed.
    #[test]
    fn a_stripe_wider_than_the_dies_is_refused() {
        let cfg = FtlConfig {
            checkpoint_stripe: 9,
            ..FtlConfig::default()
        };
        let e = Ftl::format(nand(), cfg, Bare).err().expect("refused");
        assert!(matches!(&e, DeviceError::Config(m) if m.contains("8")), "{e}");
    }
}
