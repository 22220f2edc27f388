//! What the FTL keeps in DRAM to persist its tables incrementally: which L2P
//! pages changed since the current checkpoint, where the current and previous
//! checkpoints keep every table page (their directories), the block records
//! as the current checkpoint holds them, and which table page each page of
//! the checkpoint ring holds. The on-flash format is in `checkpoint.rs`; the
//! checkpoint itself, and the rule for reusing ring blocks, in `persist.rs`.

use crate::checkpoint::{BlockRecord, DirEntry, Record, TableLayout, UNMAPPED};
use txftl_nand::{BlockId, Geometry, Ppn};

/// Program failures a checkpoint may skip over before its ring size bound
/// no longer holds (a failed program costs one page; a failed record page
/// starts the record over).
const FAILED_PROGRAMS_SLACK: u32 = 2;

#[derive(Clone, Debug)]
pub(crate) struct Tables {
    pub layout: TableLayout,
    /// Most ring stripes one checkpoint enters (and erases): every table page
    /// written once, its record twice, and a few failed programs. (Ring
    /// positions count stripes, `area.rs`; a stripe is a block unless the
    /// checkpoint ring is striped over dies.)
    pub enter_max: u32,
    /// Pages of one checkpoint ring stripe.
    pub stripe_pages: u32,
    /// Most ring stripes the write-backs of a cached table's evicted pages
    /// enter between two checkpoints (B; 0 without a cached table): the
    /// checkpoint's zone ahead of the head grows by 2B (see `persist.rs`).
    pub writeback_blocks: u32,
    /// Ring stripes the write-backs entered since the last checkpoint.
    pub writeback_entered: u32,
    /// L2P pages changed since the copy the current directory names, one bit each.
    map_dirty: Vec<u64>,
    /// Directory of the durable current checkpoint.
    pub dir_cur: Vec<DirEntry>,
    /// Table pages of the previous checkpoint (the fallback if the current one
    /// is corrupted): physical page of each, [`UNMAPPED`] if none.
    pub dir_prev: Vec<Ppn>,
    /// Directory of the next checkpoint: the current one's, with the table
    /// pages written since (a cached table's write-backs between checkpoints,
    /// which make it DFTL's global translation directory in DRAM; then the
    /// checkpoint's own). Equals `dir_cur` when nothing was written back.
    pub dir_next: Vec<DirEntry>,
    /// Block records as the current checkpoint's block-table pages hold them
    /// (`None` before the first checkpoint: every block-table page is written).
    pub persisted_blocks: Option<Vec<BlockRecord>>,
    /// The block records the current ones replaced, for the next checkpoint
    /// to fill again ([`Tables::block_records_buffer`]).
    recycled_blocks: Recycled<BlockRecord>,
    /// Per page of the checkpoint ring (stripe index * stripe pages + stripe page):
    /// the table page it holds, [`UNMAPPED`] if none (a record page, or erased).
    pub holder: Vec<u32>,
}

impl Tables {
    /// `cached`: the mapping table is a cached one, whose evicted pages may
    /// be written back between checkpoints (as far as the ring has room).
    /// `ring_len`: the checkpoint ring's blocks, in stripes of `stripe`.
    pub fn new(layout: TableLayout, geo: &Geometry, protocol_section_max: usize, ring_len: usize, stripe: u32, cached: bool) -> Tables {
        let t = layout.table_pages() as usize;
        let stripe_pages = stripe * geo.pages_per_block;
        let w = Self::enter_max(&layout, geo.page_size, stripe_pages, protocol_section_max);
        // The ring must hold the head, the zone of 3W + 2B blocks ahead and
        // at least one more; a ring laid out without room for B (an image
        // of an older format) gets what it has, down to none (a checkpoint
        // at every eviction of a changed page).
        let room = (ring_len as u32 / stripe).saturating_sub(1 + 3 * w) / 2;
        Tables {
            layout,
            enter_max: w,
            stripe_pages,
            writeback_blocks: if cached { Self::writeback_blocks(w).min(room) } else { 0 },
            writeback_entered: 0,
            map_dirty: vec![0; (layout.map_pages() as usize).div_ceil(64)],
            dir_cur: vec![DirEntry::NONE; t],
            dir_prev: vec![UNMAPPED; t],
            dir_next: vec![DirEntry::NONE; t],
            persisted_blocks: None,
            recycled_blocks: Recycled(Vec::new()),
            holder: vec![UNMAPPED; ring_len * geo.pages_per_block as usize],
        }
    }

    /// Pages of the largest record (directory and protocol section).
    pub fn record_pages_max(layout: &TableLayout, page_size: u32, protocol_section_max: usize) -> u32 {
        (Record::encoded_len(layout.table_pages(), protocol_section_max) as u64).div_ceil(page_size as u64) as u32
    }

    /// Most ring stripes (of `stripe_pages` pages) one checkpoint can enter: W.
    pub fn enter_max(layout: &TableLayout, page_size: u32, stripe_pages: u32, protocol_section_max: usize) -> u32 {
        let k = Self::record_pages_max(layout, page_size, protocol_section_max);
        (layout.table_pages() + 2 * k + FAILED_PROGRAMS_SLACK).div_ceil(stripe_pages)
    }

    /// B for a cached table: the write-backs may enter as many blocks as one
    /// checkpoint can (so a checkpoint they force comes after at least a
    /// table's worth of them), at least one.
    fn writeback_blocks(w: u32) -> u32 {
        w.max(1)
    }

    /// Stripes of the checkpoint ring for these tables (of `stripe` blocks
    /// each): the head stripe and the 3W + 2B stripes ahead of it that every checkpoint keeps free of pages
    /// the current and previous checkpoints need (see `persist.rs`; B is 0
    /// unless the table is `cached`) are enough;
    /// behind the head, room for twice the tables means a table page stays in
    /// place for at least two tables' worth of ring writes before it must be
    /// moved (so moves cost at most as much as the writes themselves; a ring
    /// of just 3W + 1 blocks moves every table page at every checkpoint).
    pub fn ring_stripes(layout: &TableLayout, geo: &Geometry, stripe: u32, protocol_section_max: usize, cached: bool) -> u32 {
        let stripe_pages = stripe * geo.pages_per_block;
        let w = Self::enter_max(layout, geo.page_size, stripe_pages, protocol_section_max);
        let b = if cached { Self::writeback_blocks(w) } else { 0 };
        // Twice the tables, in whole blocks, then in stripes: a striped
        // ring whose tables fill less than a stripe still keeps a stripe
        // behind the head (else the zone reaches every table page, and
        // every checkpoint moves them all).
        let behind = (2 * layout.table_pages() / geo.pages_per_block).div_ceil(stripe);
        1 + 3 * w + 2 * b + behind
    }

    /// Stripes ahead of the checkpoint ring's head that a checkpoint keeps
    /// free of the current checkpoint's pages: 3W + 2B (see `persist.rs`).
    pub fn zone_blocks(&self) -> u32 {
        3 * self.enter_max + 2 * self.writeback_blocks
    }

    /// Logical page `lpn`'s mapping changed.
    #[inline]
    pub fn mark_lpn(&mut self, lpn: u32) {
        let t = self.layout.map_page_of(lpn) as usize;
        self.map_dirty[t / 64] |= 1 << (t % 64);
    }

    /// [`Tables::mark_lpn`] of every logical page of `lpns` (not empty).
    pub fn mark_lpns(&mut self, lpns: std::ops::Range<u32>) {
        debug_assert!(!lpns.is_empty());
        for t in self.layout.map_page_of(lpns.start)..=self.layout.map_page_of(lpns.end - 1) {
            self.map_dirty[t as usize / 64] |= 1 << (t % 64);
        }
    }

    /// Forgets that L2P page `t` changed (it was written back alone, or a
    /// cached table's canary dropped it without writing it).
    pub fn clear_map_dirty(&mut self, t: u32) {
        self.map_dirty[t as usize / 64] &= !(1 << (t % 64));
    }

    pub fn map_page_dirty(&self, t: u32) -> bool {
        self.map_dirty[t as usize / 64] & (1 << (t % 64)) != 0
    }

    /// A checkpoint is durable: its directory becomes the current one, the
    /// current one the previous, and nothing is dirty any more. Returns the
    /// table pages no checkpoint recovery may use names any more (the old
    /// previous checkpoint's, unless a newer one still names them).
    pub fn checkpoint_durable(&mut self, blocks: Vec<BlockRecord>) -> Vec<Ppn> {
        let mut dead = Vec::new();
        for ((prev, cur), next) in self.dir_prev.iter_mut().zip(&self.dir_cur).zip(&self.dir_next) {
            if *prev != UNMAPPED && *prev != cur.ppn && *prev != next.ppn {
                dead.push(*prev);
            }
            *prev = cur.ppn;
        }
        self.dir_cur.clone_from(&self.dir_next);
        if let Some(old) = self.persisted_blocks.replace(blocks) {
            self.recycled_blocks = Recycled(old);
        }
        self.map_dirty.fill(0);
        self.writeback_entered = 0;
        dead
    }

    /// The erase count the last durable checkpoint records for block `b`
    /// (`None` before the first).
    pub fn persisted_erase_count(&self, b: usize) -> Option<u32> {
        self.persisted_blocks.as_ref().and_then(|p| p.get(b)).map(|r| r.erase_count)
    }

    /// An empty vector for the next checkpoint's block records, with the
    /// room of those two checkpoints back. A checkpoint records every
    /// block: a fresh allocation each time (megabytes on a large device)
    /// would have the allocator hand its pages back to the kernel and the
    /// kernel zero them again at the next, hundreds of times in a fill.
    pub fn block_records_buffer(&mut self) -> Vec<BlockRecord> {
        let mut v = std::mem::take(&mut self.recycled_blocks.0);
        v.clear();
        v
    }

    /// After recovery loaded a checkpoint: its directory is current, `prev`
    /// (the previous checkpoint's, if it could be read) the previous one.
    pub fn loaded(&mut self, directory: Vec<DirEntry>, prev: Option<Vec<DirEntry>>, blocks: Vec<BlockRecord>) {
        self.dir_prev = match prev {
            Some(p) if p.len() == directory.len() => p.iter().map(|e| e.ppn).collect(),
            _ => vec![UNMAPPED; directory.len()],
        };
        self.dir_next.clone_from(&directory);
        self.dir_cur = directory;
        self.persisted_blocks = Some(blocks);
        self.map_dirty.fill(0);
        self.writeback_entered = 0;
    }

    /// After `loaded`: which table page each page of the checkpoint ring
    /// (`ring`, in stripes of `stripe` blocks) holds, as far as the two
    /// directories say.
    pub fn rebuild_holder(&mut self, ring: &[BlockId], stripe: u32, geo: &Geometry) {
        let ppb = geo.pages_per_block;
        self.holder = vec![UNMAPPED; ring.len() * ppb as usize];
        // Block -> its position in the ring.
        let index: std::collections::HashMap<BlockId, usize> = ring.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let prev = self.dir_prev.iter().copied();
        let cur = self.dir_cur.iter().map(|e| e.ppn);
        for (t, ppn) in prev.enumerate().chain(cur.enumerate()) {
            if ppn == UNMAPPED {
                continue;
            }
            if let Some(&i) = index.get(&geo.block_of(ppn)) {
                let (idx, page) = crate::area::stripe_page(i, geo.page_index_of(ppn), stripe);
                self.holder[idx * self.stripe_pages as usize + page as usize] = t as u32;
            }
        }
    }

    /// Does a block record state match what a checkpoint records? (Used to
    /// tell which block-table pages changed.)
    pub fn blocks_changed(&self, t: u32, records: &[BlockRecord]) -> bool {
        match &self.persisted_blocks {
            None => true,
            Some(p) => {
                let r = self.layout.blocks_of(t);
                p[r.clone()] != records[r]
            }
        }
    }
}

/// A buffer kept only for its allocation: a clone (a RAM snapshot of the
/// device) starts without one, as its contents mean nothing.
#[derive(Debug, Default)]
struct Recycled<T>(Vec<T>);

impl<T> Clone for Recycled<T> {
    fn clone(&self) -> Self {
        Recycled(Vec::new())
    }
}
