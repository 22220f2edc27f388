//! On-device layout of the file system, in logical pages of the device's page size.
//!
//! ```text
//! page 0                      superblock (immutable after format)
//! inode_start ..+inode_pages  inode table: 64 inodes of 256 bytes
//! bitmap_start..+bitmap_pages allocation bitmap of the data area, 1 bit per page
//! journal_start..+journal     metadata journal (journaled mode only)
//! data_start ..               file data
//! ```
//!
//! Superblock, little-endian:
//! ```text
//!  0 [u8; 8] magic "TXFTLFS1"
//!  8 u32 x 11 page size, total pages, inode count, inode start, inode pages,
//!             bitmap start, bitmap pages, journal start, journal pages,
//!             data start, data pages
//! 52 u32     CRC-32 of bytes 0..52
//! ```
//!
//! Inode (256 bytes):
//! ```text
//!   0 u8       used (1) or free (0)
//!   1 u8       class: 0 other, 1 database, 2 rollback journal, 3 WAL
//!   2 u16      name length (at most 60)
//!   4 [u8; 60] name
//!  64 u64      size in bytes
//!  72 u32      extent count (at most 16)
//!  76 u32      reserved (0)
//!  80 16 x (u32 first page, u32 page count)   extents, in file order
//! 208 ..256    reserved (0)
//! ```

use crate::FsError;

pub const INODE_COUNT: u32 = 64;
pub const INODE_BYTES: usize = 256;
pub const NAME_MAX: usize = 60;
pub const EXTENTS_MAX: usize = 16;
const MAGIC: &[u8; 8] = b"TXFTLFS1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub page_size: u32,
    pub total_pages: u32,
    pub inode_start: u32,
    pub inode_pages: u32,
    pub bitmap_start: u32,
    pub bitmap_pages: u32,
    pub journal_start: u32,
    pub journal_pages: u32,
    pub data_start: u32,
    pub data_pages: u32,
}

impl Layout {
    pub fn new(page_size: u32, total_pages: u32) -> Result<Layout, FsError> {
        let ps = page_size as usize;
        let inode_pages = (INODE_COUNT as usize * INODE_BYTES).div_ceil(ps) as u32;
        let inode_start = 1;
        let bitmap_start = inode_start + inode_pages;
        // The bitmap covers at most the whole device.
        let bitmap_pages = (total_pages as usize).div_ceil(8 * ps) as u32;
        let journal_start = bitmap_start + bitmap_pages;
        // A journal transaction: descriptor + every metadata page + commit record.
        let journal_pages = 2 + inode_pages + bitmap_pages;
        let data_start = journal_start + journal_pages;
        if total_pages <= data_start + 8 {
            return Err(FsError::Format(format!("{total_pages} pages are too few for a file system")));
        }
        if ps < INODE_BYTES {
            return Err(FsError::Format(format!("page size {ps} is below the inode size")));
        }
        Ok(Layout {
            page_size,
            total_pages,
            inode_start,
            inode_pages,
            bitmap_start,
            bitmap_pages,
            journal_start,
            journal_pages,
            data_start,
            data_pages: total_pages - data_start,
        })
    }

    /// Pages holding metadata that changes (inodes and bitmap).
    pub fn meta_pages(&self) -> std::ops::Range<u32> {
        self.inode_start..self.bitmap_start + self.bitmap_pages
    }

    pub fn encode(&self, page: &mut [u8]) {
        page.fill(0);
        page[0..8].copy_from_slice(MAGIC);
        let f = [
            self.page_size,
            self.total_pages,
            INODE_COUNT,
            self.inode_start,
            self.inode_pages,
            self.bitmap_start,
            self.bitmap_pages,
            self.journal_start,
            self.journal_pages,
            self.data_start,
            self.data_pages,
        ];
        for (i, v) in f.iter().enumerate() {
            page[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32fast::hash(&page[..52]);
        page[52..56].copy_from_slice(&crc.to_le_bytes());
    }

    pub fn decode(page: &[u8]) -> Result<Layout, FsError> {
        if page.len() < 56 || &page[0..8] != MAGIC {
            return Err(FsError::Format("no txftl file system on this device (bad magic)".into()));
        }
        let u = |i: usize| u32::from_le_bytes(page[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
        if crc32fast::hash(&page[..52]) != u32::from_le_bytes(page[52..56].try_into().expect("4 bytes")) {
            return Err(FsError::Format("file system superblock checksum mismatch".into()));
        }
        let l = Layout::new(u(0), u(1))?;
        if u(2) != INODE_COUNT || l.data_start != u(9) {
            return Err(FsError::Format("file system superblock does not match this build's layout".into()));
        }
        Ok(l)
    }
}
