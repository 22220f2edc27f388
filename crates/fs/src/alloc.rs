//! The data-page allocator: a bitmap (committed, in `Fs::bitmap`) plus the
//! pages open contexts reserved (`txn.rs`). Long-lived files (databases,
//! others) grow from the low end of the data area and stay contiguous; journals
//! and WAL files, which come and go, from the high end. Extent overflow pages
//! come from the low end too (they live as long as their file).
//!
//! Two hints keep a search from rescanning the full part of the area: no page
//! below `low_hint` and none from `high_hint` on is free. Every page that
//! becomes free again lowers (raises) them ([`Fs::note_free`]), so a search
//! costs the pages it skips since the last one, not the whole bitmap.

use crate::inode::Inode;
use crate::layout::{EXTENTS_INLINE, STEP_PAGES_MAX};
use crate::txn::Ctx;
use crate::{FileClass, Fs, FsError, Ino, Lpn, Result};

/// Longest free run a journal or WAL file is started at the bottom of.
const RUN_MAX: u32 = 4096;

impl Fs {
    /// Data page `i` became free: the search hints must not skip it.
    pub(crate) fn note_free(&mut self, i: u32) {
        self.low_hint = self.low_hint.min(i);
        self.high_hint = self.high_hint.max(i + 1);
    }

    /// The lowest free data page.
    fn find_low(&mut self) -> Result<u32> {
        let n = self.layout.data_pages;
        let mut i = self.low_hint;
        while i < n {
            if i.is_multiple_of(8) && self.committed_byte_full(i) {
                i += 8;
                continue;
            }
            if self.is_free(i) {
                self.low_hint = i;
                return Ok(i);
            }
            i += 1;
        }
        self.low_hint = n;
        Err(FsError::NoSpace)
    }

    /// The highest free data page.
    fn find_high(&mut self) -> Result<u32> {
        let mut i = self.high_hint.min(self.layout.data_pages);
        while i > 0 {
            if i.is_multiple_of(8) && i >= 8 && self.committed_byte_full(i - 8) {
                i -= 8;
                continue;
            }
            i -= 1;
            if self.is_free(i) {
                self.high_hint = i + 1;
                return Ok(i);
            }
        }
        self.high_hint = 0;
        Err(FsError::NoSpace)
    }

    /// Frees the file's pages from file page `keep` on, in `ctx` (and the
    /// overflow pages its shorter extent list no longer needs).
    pub(crate) fn free_pages_from(&mut self, ctx: Ctx, ino: Ino, keep: u32) -> Result<()> {
        let data_start = self.layout.data_start;
        let per_page = self.layout.extents_per_overflow_page();
        // The dropped pages' dirty images die with them (a freed page may
        // belong to another file before a write-back would reach it); so do
        // remaps onto them, and remaps from them are copied first.
        self.drop_cached(ctx, ino, keep);
        let gone = |(i, p): crate::remap::FilePage| i == ino && p >= keep;
        self.settle_remaps(|d, s| gone(d) || gone(s), |d, _| gone(d))?;
        let inode = self.inode_mut(ctx, ino)?;
        if keep >= inode.pages() {
            return Ok(());
        }
        let dropped = inode.extents.truncate_pages(keep);
        let extents = inode.extents.len();
        let overflow = inode.overflow.split_off(Inode::overflow_needed(extents, per_page));
        for (start, len) in dropped {
            for p in start..start + len {
                self.release_page(ctx, p - data_start);
            }
        }
        for lpn in overflow {
            self.release_page(ctx, lpn - data_start);
        }
        // The last kept extent, and the link of its page to a dropped one.
        self.touch_extent(ctx, ino, extents.saturating_sub(1));
        Ok(())
    }

    /// Allocates one data page for `ino` in `ctx`: right after its last page if
    /// free, else the first free page from the low end (databases) or high end
    /// (others), with a new overflow page first if the extent list needs one.
    pub(crate) fn allocate(&mut self, ctx: Ctx, ino: Ino) -> Result<Lpn> {
        self.make_room(ctx, STEP_PAGES_MAX)?;
        let l = self.layout;
        let per_page = l.extents_per_overflow_page();
        let inode = self.inode_mut(ctx, ino)?;
        let last = inode.extents.last();
        let extents = inode.extents.len();
        let chain = inode.overflow.len();
        let class = FileClass::from_u8(inode.class);
        if let Some((start, len)) = last {
            let next = start + len;
            if next < l.total_pages && self.is_free(next - l.data_start) {
                self.take_page(ctx, next - l.data_start);
                self.inode_mut(ctx, ino)?.extents.grow_last();
                self.touch_extent(ctx, ino, extents - 1);
                return Ok(next);
            }
        }
        // A new extent: its overflow page first if the chain is full.
        let new_overflow = extents >= EXTENTS_INLINE + chain * per_page;
        if new_overflow {
            let o = self.find_low()?;
            self.take_page(ctx, o);
            self.inode_mut(ctx, ino)?.overflow.push(l.data_start + o);
        }
        // Journals and WAL files come and go: they live at the high end so the
        // long-lived files (databases, others) stay contiguous at the low end.
        let low = !matches!(class, FileClass::Journal | FileClass::Wal);
        let found = if low {
            self.find_low()
        } else {
            // The bottom of the highest free run (up to RUN_MAX pages long), so
            // the file then grows upward into the run, one extent.
            self.find_high().map(|top| {
                let mut bottom = top;
                while bottom > 0 && top - bottom < RUN_MAX && self.is_free(bottom - 1) {
                    bottom -= 1;
                }
                bottom
            })
        };
        let i = match found {
            Ok(i) => i,
            Err(e) => {
                if new_overflow {
                    let o = self.inode_mut(ctx, ino)?.overflow.pop().expect("pushed above");
                    self.release_page(ctx, o - l.data_start);
                }
                return Err(e);
            }
        };
        self.take_page(ctx, i);
        self.inode_mut(ctx, ino)?.extents.push(l.data_start + i);
        self.touch_extent(ctx, ino, extents);
        Ok(l.data_start + i)
    }

    /// Makes sure the file has `pages` pages; new pages are written with zeros
    /// (so they never show stale contents).
    pub(crate) fn ensure_pages(&mut self, ctx: Ctx, ino: Ino, pages: u32) -> Result<()> {
        let zeros = vec![0u8; self.page_size()];
        loop {
            let idx = self.inode(ctx, ino)?.pages();
            if idx >= pages {
                break;
            }
            let lpn = self.allocate(ctx, ino)?;
            self.write_page(ctx, ino, idx, lpn, &zeros)?;
        }
        Ok(())
    }
}
