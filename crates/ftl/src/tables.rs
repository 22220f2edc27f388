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
    /// Most ring blocks one checkpoint enters (and erases): every table page
    /// written once, its record twice, and a few failed programs.
    pub enter_max: u32,
    /// L2P pages changed since the copy the current directory names, one bit each.
    map_dirty: Vec<u64>,
    /// Directory of the durable current checkpoint.
    pub dir_cur: Vec<DirEntry>,
    /// Table pages of the previous checkpoint (the fallback if the current one
    /// is corrupted): physical page of each, [`UNMAPPED`] if none.
    pub dir_prev: Vec<Ppn>,
    /// Directory of the checkpoint being written (equals `dir_cur` between checkpoints).
    pub dir_next: Vec<DirEntry>,
    /// Block records as the current checkpoint's block-table pages hold them
    /// (`None` before the first checkpoint: every block-table page is written).
    pub persisted_blocks: Option<Vec<BlockRecord>>,
    /// Per page of the checkpoint ring (ring index * pages per block + page):
    /// the table page it holds, [`UNMAPPED`] if none (a record page, or erased).
    pub holder: Vec<u32>,
}

impl Tables {
    pub fn new(layout: TableLayout, geo: &Geometry, protocol_section_max: usize, ring_len: usize) -> Tables {
        let t = layout.table_pages() as usize;
        Tables {
            layout,
            enter_max: Self::enter_max(&layout, geo, protocol_section_max),
            map_dirty: vec![0; (layout.map_pages() as usize).div_ceil(64)],
            dir_cur: vec![DirEntry::NONE; t],
            dir_prev: vec![UNMAPPED; t],
            dir_next: vec![DirEntry::NONE; t],
            persisted_blocks: None,
            holder: vec![UNMAPPED; ring_len * geo.pages_per_block as usize],
        }
    }

    /// Pages of the largest record (directory and protocol section).
    pub fn record_pages_max(layout: &TableLayout, geo: &Geometry, protocol_section_max: usize) -> u32 {
        (Record::encoded_len(layout.table_pages(), protocol_section_max) as u64).div_ceil(geo.page_size as u64) as u32
    }

    /// Most ring blocks one checkpoint can enter: W.
    pub fn enter_max(layout: &TableLayout, geo: &Geometry, protocol_section_max: usize) -> u32 {
        let k = Self::record_pages_max(layout, geo, protocol_section_max);
        (layout.table_pages() + 2 * k + FAILED_PROGRAMS_SLACK).div_ceil(geo.pages_per_block)
    }

    /// Blocks of the checkpoint ring for these tables: the head block and
    /// the 3W blocks ahead of it that every checkpoint keeps free of pages the
    /// current and previous checkpoints need (see `persist.rs`) are enough;
    /// behind the head, room for twice the tables means a table page stays in
    /// place for at least two tables' worth of ring writes before it must be
    /// moved (so moves cost at most as much as the writes themselves; a ring
    /// of just 3W + 1 blocks moves every table page at every checkpoint).
    pub fn ring_blocks(layout: &TableLayout, geo: &Geometry, protocol_section_max: usize) -> u32 {
        let w = Self::enter_max(layout, geo, protocol_section_max);
        1 + 3 * w + 2 * layout.table_pages() / geo.pages_per_block
    }

    /// Logical page `lpn`'s mapping changed.
    #[inline]
    pub fn mark_lpn(&mut self, lpn: u32) {
        let t = self.layout.map_page_of(lpn) as usize;
        self.map_dirty[t / 64] |= 1 << (t % 64);
    }

    /// Forgets that L2P page `t` changed (a cached table's canary, which
    /// drops a changed page without writing it).
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
        self.persisted_blocks = Some(blocks);
        self.map_dirty.fill(0);
        dead
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
    }

    /// After `loaded`: which table page each page of the checkpoint ring
    /// (`ring`, in ring order) holds, as far as the two directories say.
    pub fn rebuild_holder(&mut self, ring: &[BlockId], geo: &Geometry) {
        let ppb = geo.pages_per_block as usize;
        self.holder = vec![UNMAPPED; ring.len() * ppb];
        let index: std::collections::HashMap<BlockId, usize> = ring.iter().enumerate().map(|(i, &b)| (b, i)).collect();
        let prev = self.dir_prev.iter().copied();
        let cur = self.dir_cur.iter().map(|e| e.ppn);
        for (t, ppn) in prev.enumerate().chain(cur.enumerate()) {
            if ppn == UNMAPPED {
                continue;
            }
            if let Some(&idx) = index.get(&geo.block_of(ppn)) {
                self.holder[idx * ppb + geo.page_index_of(ppn) as usize] = t as u32;
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
