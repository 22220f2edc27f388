//! DFTL's write-back of one translation page: a cached table's page that
//! changed must leave the device's DRAM (`fetch.rs`), and it is written
//! alone to the checkpoint ring, where checkpoints write table pages.
//!
//! The page is an ordinary L2P table page (the format in `checkpoint.rs`:
//! OOB kind `Map`, its index in the OOB's LPN field, a fresh sequence number
//! below the next checkpoint's). The next directory (`Tables::dir_next`,
//! the global translation directory in DRAM) names it from then on: a miss
//! reads it back, and the next checkpoint's record names it without writing
//! the page again. Until that record is durable it is redundant: recovery
//! takes the durable checkpoint and rolls forward the data pages programmed
//! after it, which hold every mapping the write-back holds.
//!
//! The ring's rule (`persist.rs`) counts on write-backs entering at most B
//! ring blocks between two checkpoints (`Tables::writeback_blocks`): when
//! the next write-back would enter one more, the caller takes a checkpoint
//! instead. (A failed program skips its page, and the retry may enter one
//! block more; as for a checkpoint's failed programs beyond its slack, the
//! ring's rule then refuses to enter a block a checkpoint still needs, with
//! a typed error, rather than lose it.)

use crate::checkpoint::{DirEntry, UNMAPPED};
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::PageKind;
use crate::persist::{Ring, NO_TAG};

impl<H: Hooks> Ftl<H> {
    /// Writes L2P page `t` alone and names the copy in the next directory;
    /// `t` is clean afterwards. False (nothing written) if the write-backs
    /// since the last checkpoint used up the ring's room for them: the caller
    /// takes a checkpoint, which writes `t` with every other changed page.
    pub(crate) fn write_back_table_page(&mut self, t: u32) -> Result<bool> {
        let ppb = self.geo.pages_per_block;
        let (enter, _, _) = self.ckpt_area.next_slot(ppb);
        let tables = &self.tables;
        if tables.writeback_entered + enter as u32 > tables.writeback_blocks {
            return Ok(false);
        }
        let layout = tables.layout;
        let old = tables.dir_next[t as usize];
        if !self.l2p.entries().any_mapped(layout.lpns_of(t)) {
            // As a checkpoint does: a page with no mapping is not written,
            // its directory entry says so.
            self.tables.dir_next[t as usize] = DirEntry::NONE;
        } else {
            let mut page = std::mem::take(&mut self.meta_buf);
            page.resize(self.geo.page_size as usize, 0);
            self.l2p.entries().encode_page(layout.lpns_of(t), &mut page);
            let seq = self.seq;
            self.seq += 1;
            let head = self.ckpt_area.head_index;
            let like = Some(old.ppn).filter(|&p| p != UNMAPPED);
            let appended = self.append(Ring::Checkpoint, &[], (PageKind::Map, &NO_TAG), t, seq, &page, true, like, true);
            let crc = crc32fast::hash(&page);
            self.meta_buf = page;
            let (idx, at) = appended?;
            let n = self.ckpt_area.stripes();
            self.tables.writeback_entered += ((idx + n - head) % n) as u32;
            self.tables.dir_next[t as usize] = DirEntry {
                ppn: self.ckpt_area.ppn(idx, at, ppb),
                crc,
            };
            self.tables.holder[idx * self.tables.stripe_pages as usize + at as usize] = t;
            self.counters.map_writes += 1;
            self.counters.map_l2p_writes += 1;
        }
        // An earlier write-back no checkpoint names is garbage now: a
        // metadata-only array may forget its data.
        if old.ppn != UNMAPPED && old.ppn != self.tables.dir_cur[t as usize].ppn && old.ppn != self.tables.dir_prev[t as usize] {
            self.nand.forget_data(old.ppn);
        }
        self.tables.clear_map_dirty(t);
        Ok(true)
    }
}
