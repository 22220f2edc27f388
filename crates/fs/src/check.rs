//! A consistency check of the committed metadata (an fsck that repairs
//! nothing), for tests and tools: after any crash and mount, it must pass.

use crate::layout::ROOT;
use crate::{Fs, FsError, Ino, Result, Tid};

/// What [`Fs::check`] counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckReport {
    pub files: u32,
    pub directories: u32,
    /// Data pages of files.
    pub data_pages: u32,
    /// Extent overflow pages.
    pub overflow_pages: u32,
    /// Free data pages in the committed bitmap.
    pub free_pages: u32,
}

impl Fs {
    /// Checks the committed state: every page of every file (data and
    /// overflow) lies in the data area, belongs to one file only and is
    /// allocated in the bitmap, every allocated page belongs to a file (no
    /// leak), and every inode's directory is a directory.
    pub fn check(&self) -> Result<CheckReport> {
        let l = self.layout;
        let bad = |why: String| Err(FsError::Format(format!("check: {why}")));
        let mut owner: Vec<Option<Ino>> = vec![None; l.data_pages as usize];
        let mut report = CheckReport::default();
        for (ino, inode) in self.inodes.iter().enumerate() {
            let ino = ino as Ino;
            if !inode.used() {
                continue;
            }
            if inode.is_dir() {
                report.directories += 1;
            } else {
                report.files += 1;
            }
            if ino != ROOT && !self.inodes.get(inode.parent as usize).is_some_and(|p| p.is_dir()) {
                return bad(format!("inode {ino}'s directory {} is not one", inode.parent));
            }
            let overflow = inode.overflow.iter().map(|&lpn| (lpn, 1));
            for (i, (start, len)) in inode.extents.as_slice().iter().copied().chain(overflow).enumerate() {
                for lpn in start..start + len {
                    if !l.in_data(lpn) {
                        return bad(format!("inode {ino}: page {lpn} is outside the data area"));
                    }
                    let idx = (lpn - l.data_start) as usize;
                    if let Some(other) = owner[idx] {
                        return bad(format!("page {lpn} belongs to inodes {other} and {ino}"));
                    }
                    owner[idx] = Some(ino);
                    if self.bitmap[idx / 8] & (1 << (idx % 8)) == 0 {
                        return bad(format!("inode {ino}: page {lpn} is free in the bitmap"));
                    }
                    if i < inode.extents.len() {
                        report.data_pages += 1;
                    } else {
                        report.overflow_pages += 1;
                    }
                }
            }
        }
        for (idx, o) in owner.iter().enumerate() {
            let allocated = self.bitmap[idx / 8] & (1 << (idx % 8)) != 0;
            match (allocated, o) {
                (true, None) => return bad(format!("page {} is allocated but no file's", l.data_start + idx as u32)),
                (false, _) => report.free_pages += 1,
                _ => {}
            }
        }
        Ok(report)
    }

    /// Extents of the file as `tx` sees it.
    pub fn extent_count(&self, tx: Option<Tid>, ino: Ino) -> Result<usize> {
        Ok(self.file(self.context(tx)?, ino)?.extents.len())
    }

    /// Extent overflow pages of the file as `tx` sees it.
    pub fn overflow_page_count(&self, tx: Option<Tid>, ino: Ino) -> Result<usize> {
        Ok(self.file(self.context(tx)?, ino)?.overflow.len())
    }
}
