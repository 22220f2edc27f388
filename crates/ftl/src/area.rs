//! A metadata log area: a ring of reserved blocks that records are appended to,
//! page by page. Entering a block erases it first, and the blocks holding the
//! live record are protected, so a torn append never damages the last good
//! record. The superblock uses a ring of two blocks (two copies); checkpoints
//! use a larger ring.
//!
//! A ring is entered a *stripe* at a time: `stripe` consecutive ring blocks,
//! each on its own die (`reserve_rings` lays rings out so), erased together
//! and written as one unit whose page `p` lies in the stripe's block
//! `p % stripe`, at page `p / stripe`. Consecutive pages then go to
//! different dies and their programs overlap (the checkpoint ring's table
//! pages). Ring indexes, extents and the head count stripes and stripe
//! pages; with a stripe of one block (the superblock and protocol rings)
//! a stripe is a block.

use txftl_nand::{BlockId, Ppn};

#[derive(Clone, Debug)]
pub struct LogArea {
    /// The ring, in order (a multiple of `stripe` blocks).
    pub blocks: Vec<BlockId>,
    /// Blocks per stripe (1: the ring is entered block by block).
    pub stripe: u32,
    /// Stripe index of the stripe being written.
    pub head_index: usize,
    /// Next stripe page to program in it (`stripe_pages`: move on first).
    pub head_page: u32,
}

/// Where a record lies in an area: stripe index and stripe page of its first page, and its length.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Extent {
    pub index: usize,
    pub page: u32,
    pub pages: u32,
}

impl Extent {
    /// Stripe indexes of the stripes this record occupies.
    pub fn ring_indexes(&self, stripe_pages: u32, stripes: usize) -> Vec<usize> {
        if self.pages == 0 {
            return Vec::new();
        }
        let last = self.page + self.pages - 1;
        (0..=(last / stripe_pages) as usize).map(|i| (self.index + i) % stripes).collect()
    }

    /// Physical pages of the record, in order.
    pub fn ppns(&self, area: &LogArea, pages_per_block: u32) -> Vec<Ppn> {
        let sp = area.stripe_pages(pages_per_block);
        (0..self.pages)
            .map(|i| {
                let p = self.page + i;
                area.ppn((self.index + (p / sp) as usize) % area.stripes(), p % sp, pages_per_block)
            })
            .collect()
    }
}

/// Stripe index and stripe page of page `page` of the ring's block at
/// position `i`, in stripes of `stripe` blocks (the inverse of
/// [`LogArea::ppn`]).
pub fn stripe_page(i: usize, page: u32, stripe: u32) -> (usize, u32) {
    let d = stripe as usize;
    (i / d, page * stripe + (i % d) as u32)
}

impl LogArea {
    pub fn new(blocks: Vec<BlockId>, stripe: u32, pages_per_block: u32) -> LogArea {
        assert!(
            stripe >= 1 && blocks.len().is_multiple_of(stripe as usize),
            "a ring of {} blocks in stripes of {stripe}",
            blocks.len()
        );
        // The head starts "past the end" of the last stripe so the first
        // append enters (and erases) stripe 0.
        let stripes = blocks.len() / stripe as usize;
        LogArea {
            head_index: stripes - 1,
            head_page: stripe * pages_per_block,
            stripe,
            blocks,
        }
    }

    /// Stripes in the ring.
    pub fn stripes(&self) -> usize {
        self.blocks.len() / self.stripe as usize
    }

    /// Pages of one stripe.
    pub fn stripe_pages(&self, pages_per_block: u32) -> u32 {
        self.stripe * pages_per_block
    }

    /// The blocks of stripe `index`.
    pub fn stripe_blocks(&self, index: usize) -> &[BlockId] {
        let d = self.stripe as usize;
        &self.blocks[index * d..(index + 1) * d]
    }

    /// Physical page of stripe page `page` of stripe `index`.
    pub fn ppn(&self, index: usize, page: u32, pages_per_block: u32) -> Ppn {
        let block = self.blocks[index * self.stripe as usize + (page % self.stripe) as usize];
        block * pages_per_block + page / self.stripe
    }

    /// Stripe index and stripe page of physical page `ppn`, if it lies in the ring.
    pub fn locate(&self, ppn: Ppn, pages_per_block: u32) -> Option<(usize, u32)> {
        let (block, page) = (ppn / pages_per_block, ppn % pages_per_block);
        let i = self.blocks.iter().position(|&b| b == block)?;
        Some(stripe_page(i, page, self.stripe))
    }

    /// Where the next append goes, without moving: (needs_new_stripe, stripe index, stripe page).
    pub fn next_slot(&self, pages_per_block: u32) -> (bool, usize, u32) {
        if self.head_page >= self.stripe_pages(pages_per_block) {
            (true, (self.head_index + 1) % self.stripes(), 0)
        } else {
            (false, self.head_index, self.head_page)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stripe_deals_its_pages_over_its_blocks_and_locate_inverts_it() {
        let area = LogArea::new(vec![10, 20, 30, 40, 50, 60], 3, 4);
        assert_eq!(area.stripes(), 2);
        assert_eq!(area.stripe_blocks(1), &[40, 50, 60]);
        // Page 4 of stripe 1: block 50 (4 % 3 = 1), page 1 (4 / 3).
        assert_eq!(area.ppn(1, 4, 4), 50 * 4 + 1);
        for index in 0..2 {
            for page in 0..12 {
                assert_eq!(area.locate(area.ppn(index, page, 4), 4), Some((index, page)));
            }
        }
        assert_eq!(area.locate(0, 4), None);
        let e = Extent {
            index: 1,
            page: 10,
            pages: 4,
        };
        assert_eq!(e.ring_indexes(12, 2), vec![1, 0]);
        assert_eq!(e.ppns(&area, 4), vec![50 * 4 + 3, 60 * 4 + 3, 10 * 4, 20 * 4]);
    }

    #[test]
    fn a_stripe_of_one_block_is_the_block() {
        let area = LogArea::new(vec![7, 8, 9], 1, 4);
        assert_eq!((area.stripes(), area.head_index, area.head_page), (3, 2, 4));
        assert_eq!(area.ppn(1, 3, 4), 8 * 4 + 3);
        assert_eq!(
            Extent {
                index: 2,
                page: 3,
                pages: 2
            }
            .ppns(&area, 4),
            vec![9 * 4 + 3, 7 * 4]
        );
    }
}
