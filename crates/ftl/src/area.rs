//! A metadata log area: a ring of reserved blocks that records are appended to,
//! page by page. Entering a block erases it first, and the blocks holding the
//! live record are protected, so a torn append never damages the last good
//! record. The superblock uses a ring of two blocks (two copies); checkpoints
//! use a larger ring.

use txftl_nand::{BlockId, Ppn};

#[derive(Clone, Debug)]
pub struct LogArea {
    /// The ring, in order.
    pub blocks: Vec<BlockId>,
    /// Ring index of the block being written.
    pub head_index: usize,
    /// Next page to program in that block (pages_per_block: move on first).
    pub head_page: u32,
}

/// Where a record lies in an area: ring index and page of its first page, and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Extent {
    pub index: usize,
    pub page: u32,
    pub pages: u32,
}

impl Extent {
    /// Ring indexes of the blocks this record occupies.
    pub fn ring_indexes(&self, pages_per_block: u32, ring_len: usize) -> Vec<usize> {
        if self.pages == 0 {
            return Vec::new();
        }
        let last = self.page + self.pages - 1;
        (0..=(last / pages_per_block) as usize)
            .map(|i| (self.index + i) % ring_len)
            .collect()
    }

    /// Physical pages of the record, in order.
    pub fn ppns(&self, area: &LogArea, pages_per_block: u32) -> Vec<Ppn> {
        (0..self.pages)
            .map(|i| {
                let p = self.page + i;
                let block = area.blocks[(self.index + (p / pages_per_block) as usize) % area.blocks.len()];
                block * pages_per_block + p % pages_per_block
            })
            .collect()
    }
}

impl LogArea {
    pub fn new(blocks: Vec<BlockId>, pages_per_block: u32) -> LogArea {
        // The head starts "past the end" of the last block so the first append
        // enters (and erases) block 0.
        LogArea {
            head_index: blocks.len() - 1,
            head_page: pages_per_block,
            blocks,
        }
    }

    /// Where the next append goes, without moving: (needs_new_block, ring index, page).
    pub fn next_slot(&self, pages_per_block: u32) -> (bool, usize, u32) {
        if self.head_page >= pages_per_block {
            (true, (self.head_index + 1) % self.blocks.len(), 0)
        } else {
            (false, self.head_index, self.head_page)
        }
    }
}
