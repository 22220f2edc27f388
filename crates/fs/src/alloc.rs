//! The data-page allocator: a bitmap (committed, in `Fs::bitmap`) plus the
//! pages open contexts reserved (`txn.rs`). Long-lived files (databases,
//! others) grow from the low end of the data area and stay contiguous; journals
//! and WAL files, which come and go, from the high end.

use crate::txn::Ctx;
use crate::{FileClass, Fs, FsError, Ino, Lpn, Result, EXTENTS_MAX};

/// Longest free run a journal or WAL file is started at the bottom of.
const RUN_MAX: u32 = 4096;

impl Fs {
    /// Frees the file's pages from file page `keep` on, in `ctx`.
    pub(crate) fn free_pages_from(&mut self, ctx: Ctx, ino: Ino, keep: u32) -> Result<()> {
        let data_start = self.layout.data_start;
        let extents = std::mem::take(&mut self.inode_mut(ctx, ino)?.extents);
        let mut kept = Vec::new();
        let mut seen = 0;
        for (start, len) in extents {
            let keep_here = keep.saturating_sub(seen).min(len);
            if keep_here > 0 {
                kept.push((start, keep_here));
            }
            for p in start + keep_here..start + len {
                self.release_page(ctx, p - data_start);
            }
            seen += len;
        }
        self.inode_mut(ctx, ino)?.extents = kept;
        Ok(())
    }

    /// Allocates one data page for `ino` in `ctx`: right after its last page if
    /// free, else the first free page from the low end (databases) or high end (others).
    pub(crate) fn allocate(&mut self, ctx: Ctx, ino: Ino) -> Result<Lpn> {
        let l = self.layout;
        let inode = self.inode_mut(ctx, ino)?;
        let last = inode.extents.last().copied();
        let extents = inode.extents.len();
        let class = FileClass::from_u8(inode.class);
        if let Some((start, len)) = last {
            let next = start + len;
            if next < l.total_pages && self.is_free(next - l.data_start) {
                self.take_page(ctx, next - l.data_start);
                self.inode_mut(ctx, ino)?.extents.last_mut().expect("last extent").1 += 1;
                return Ok(next);
            }
        }
        if extents >= EXTENTS_MAX {
            return Err(FsError::TooFragmented(self.inode_mut(ctx, ino)?.name.clone()));
        }
        // Journals and WAL files come and go: they live at the high end so the
        // long-lived files (databases, others) stay contiguous at the low end.
        let low = !matches!(class, FileClass::Journal | FileClass::Wal);
        let i = if low {
            (0..l.data_pages).find(|&i| self.is_free(i)).ok_or(FsError::NoSpace)?
        } else {
            // The bottom of the highest free run (up to RUN_MAX pages long), so
            // the file then grows upward into the run, one extent.
            let top = (0..l.data_pages).rev().find(|&i| self.is_free(i)).ok_or(FsError::NoSpace)?;
            let mut bottom = top;
            while bottom > 0 && top - bottom < RUN_MAX && self.is_free(bottom - 1) {
                bottom -= 1;
            }
            bottom
        };
        self.take_page(ctx, i);
        self.inode_mut(ctx, ino)?.extents.push((l.data_start + i, 1));
        Ok(l.data_start + i)
    }

    /// Makes sure the file has `pages` pages; new pages are written with zeros
    /// (so they never show stale contents).
    pub(crate) fn ensure_pages(&mut self, ctx: Ctx, ino: Ino, pages: u32) -> Result<()> {
        let zeros = vec![0u8; self.page_size()];
        while self.inode(ctx, ino)?.pages() < pages {
            let lpn = self.allocate(ctx, ino)?;
            self.write_page(ctx, ino, lpn, &zeros)?;
        }
        Ok(())
    }
}
