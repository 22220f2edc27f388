//! On-device layout of the file system (format 2), in logical pages of the
//! device's page size. Every integer is little-endian.
//!
//! ```text
//! page 0                      superblock (immutable after format)
//! inode_start ..+inode_pages  inode table: inode_count inodes of 256 bytes
//! bitmap_start..+bitmap_pages allocation bitmap of the data area, 1 bit per page
//! journal_start..+journal     metadata journal (journaled mode only; `journal.rs`)
//! data_start ..               file data and extent overflow pages
//! ```
//!
//! Sizes chosen at format from the device and recorded in the superblock:
//! - the inode count: one inode per 8 logical pages, at least 64 and at most
//!   65,536, rounded up to whole pages of the inode table (`tiny` at 16 blocks
//!   per plane: 64 inodes in 32 pages of 512 bytes);
//! - the bitmap: one bit per page of the whole device (it covers the data area);
//! - the metadata journal: a descriptor, a commit record, and room for
//!   `journal_pages - 2` metadata page images: the bitmap pages plus the inode
//!   pages clamped to 32..=1024 (room shared with the inode and overflow pages
//!   of a journal transaction), at most what one descriptor page names. The
//!   file system commits its non-transactional metadata early, between two
//!   operations (or two page allocations of one write), before a journal
//!   transaction would outgrow it; a transaction that would still exceed it
//!   fails with [`FsError::JournalFull`](crate::FsError::JournalFull).
//!
//! Superblock (page 0):
//! ```text
//!  0 [u8; 8] magic "TXFTLFS2" (format 1, "TXFTLFS1", is refused with its name)
//!  8 u32 x 11 page size, total pages, inode count, inode start, inode pages,
//!             bitmap start, bitmap pages, journal start, journal pages,
//!             data start, data pages
//! 52 u32     extents inline in an inode (16)
//! 56 u32     extents per overflow page ((page size - 28) / 8)
//! 60 u32     CRC-32 of bytes 0..60
//! ```
//! Mount recomputes the layout from the page size, the total pages and the
//! recorded inode count and refuses a superblock any of whose fields differ.
//!
//! Inode (256 bytes; inode `n` at byte `(n % per page) * 256` of inode page
//! `n / per page`; inode 0 is the root directory):
//! ```text
//!   0 u8       kind: 0 free, 1 file, 2 directory (a free inode is all zeros)
//!   1 u8       class of a file: 0 other, 1 database, 2 rollback journal, 3 WAL
//!   2 u16      name length (1..=60; 0 for the root)
//!   4 [u8; 60] name: one path component, UTF-8, no `/`
//!  64 u64      size in bytes (0 for a directory)
//!  72 u32      extent count n (inline and overflow)
//!  76 u32      parent directory's inode (the root: 0, itself)
//!  80 16 x (u32 first page, u32 page count)   extents 0..min(n, 16), in file order
//! 208 u32      first extent overflow page (0: none; not 0 exactly when n > 16)
//! 212 u32      overflow page count: ceil((n - 16) / extents per overflow page)
//! 216 ..252    reserved (0)
//! 252 u32      CRC-32 of bytes 0..252
//! ```
//!
//! Extent overflow page (a page of the data area, allocated in the bitmap like
//! a data page; extents 16.. of one file, in order, a chain of pages):
//! ```text
//!  0 [u8; 8] magic "TXFTLFX1"
//!  8 u32     owner inode
//! 12 u32     index of this page in the owner's chain (0, 1, ...)
//! 16 u32     extent count m in this page (1..=per page; all but the last page full)
//! 20 u32     next overflow page of the chain (0: this is the last)
//! 24 m x (u32 first page, u32 page count)
//! .. zeros
//! page size - 4: u32 CRC-32 of every byte before it
//! ```
//! There are no directory data blocks: a directory is an inode, and its
//! entries are the inodes that name it as parent (an index of them is built
//! at mount).

use crate::FsError;

/// Bytes of one inode record.
pub const INODE_BYTES: usize = 256;
/// Longest name of one path component, in bytes.
pub const NAME_MAX: usize = 60;
/// Extents kept in the inode itself; more go to overflow pages.
pub const EXTENTS_INLINE: usize = 16;
/// Fewest and most inodes a file system is formatted with by default.
pub const INODE_COUNT_MIN: u32 = 64;
pub const INODE_COUNT_MAX: u32 = 65_536;
/// Logical pages per inode when sizing the inode table.
pub const PAGES_PER_INODE: u32 = 8;
/// Metadata pages one single step of a non-transactional operation can touch
/// besides the bitmap pages (the inode page, the overflow pages of the last
/// extent and the one before it, a new overflow page, and its bitmap page):
/// the journal must always hold at least one step.
pub const STEP_PAGES_MAX: u32 = 8;
/// The inode number of the root directory.
pub const ROOT: u32 = 0;
pub(crate) const OVERFLOW_HEADER: usize = 24;
const MAGIC: &[u8; 8] = b"TXFTLFS2";
const MAGIC_V1: &[u8; 8] = b"TXFTLFS1";
pub(crate) const OVERFLOW_MAGIC: &[u8; 8] = b"TXFTLFX1";
const SUPER_CRC_AT: usize = 60;

/// Where everything is, in logical pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    pub page_size: u32,
    pub total_pages: u32,
    pub inode_count: u32,
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
    /// The default layout of a device: the inode count from its size.
    pub fn new(page_size: u32, total_pages: u32) -> Result<Layout, FsError> {
        let count = (total_pages / PAGES_PER_INODE).clamp(INODE_COUNT_MIN, INODE_COUNT_MAX);
        Layout::with_inodes(page_size, total_pages, count)
    }

    /// The layout with (at least) `inode_count` inodes: rounded up to whole
    /// pages of the inode table.
    pub fn with_inodes(page_size: u32, total_pages: u32, inode_count: u32) -> Result<Layout, FsError> {
        let ps = page_size as usize;
        if ps < INODE_BYTES || !ps.is_power_of_two() {
            return Err(FsError::Format(format!(
                "page size {ps} is not a power of two of at least {INODE_BYTES} bytes"
            )));
        }
        if inode_count == 0 || inode_count > INODE_COUNT_MAX {
            return Err(FsError::Format(format!(
                "{inode_count} inodes: a file system has 1 to {INODE_COUNT_MAX}"
            )));
        }
        let per_page = (ps / INODE_BYTES) as u32;
        let inode_pages = inode_count.div_ceil(per_page);
        let inode_count = (inode_pages * per_page).min(INODE_COUNT_MAX);
        let inode_start = 1;
        let bitmap_start = inode_start + inode_pages;
        // The bitmap covers at most the whole device.
        let bitmap_pages = (total_pages as usize).div_ceil(8 * ps) as u32;
        let journal_start = bitmap_start + bitmap_pages;
        let journal_images = (bitmap_pages + inode_pages.clamp(32, 1024)).min(journal_names_max(page_size));
        if journal_images < bitmap_pages + STEP_PAGES_MAX {
            return Err(FsError::Format(format!(
                "{total_pages} pages of {ps} bytes: the bitmap ({bitmap_pages} pages) does not fit one \
                 metadata journal transaction ({} pages at most); use larger pages",
                journal_names_max(page_size)
            )));
        }
        let journal_pages = 2 + journal_images;
        let data_start = journal_start + journal_pages;
        if total_pages <= data_start + 8 {
            return Err(FsError::Format(format!("{total_pages} pages are too few for a file system")));
        }
        Ok(Layout {
            page_size,
            total_pages,
            inode_count,
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

    /// Pages of the inode table and the bitmap (the fixed metadata that changes).
    pub fn meta_pages(&self) -> std::ops::Range<u32> {
        self.inode_start..self.bitmap_start + self.bitmap_pages
    }

    /// Inodes in one page of the inode table.
    pub fn inodes_per_page(&self) -> u32 {
        self.page_size / INODE_BYTES as u32
    }

    /// Extents one overflow page holds.
    pub fn extents_per_overflow_page(&self) -> usize {
        (self.page_size as usize - OVERFLOW_HEADER - 4) / 8
    }

    /// Metadata page images one journal transaction holds.
    pub fn journal_images(&self) -> u32 {
        self.journal_pages - 2
    }

    /// Is `lpn` in the data area (data and overflow pages)?
    pub fn in_data(&self, lpn: u32) -> bool {
        (self.data_start..self.total_pages).contains(&lpn)
    }

    pub fn encode(&self, page: &mut [u8]) {
        page.fill(0);
        page[0..8].copy_from_slice(MAGIC);
        let f = [
            self.page_size,
            self.total_pages,
            self.inode_count,
            self.inode_start,
            self.inode_pages,
            self.bitmap_start,
            self.bitmap_pages,
            self.journal_start,
            self.journal_pages,
            self.data_start,
            self.data_pages,
            EXTENTS_INLINE as u32,
            self.extents_per_overflow_page() as u32,
        ];
        for (i, v) in f.iter().enumerate() {
            page[8 + 4 * i..12 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        let crc = crc32fast::hash(&page[..SUPER_CRC_AT]);
        page[SUPER_CRC_AT..SUPER_CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    }

    pub fn decode(page: &[u8]) -> Result<Layout, FsError> {
        if page.len() >= 8 && &page[0..8] == MAGIC_V1 {
            return Err(FsError::Format(
                "the device holds a format-1 txftl file system (TXFTLFS1: 64 inodes, 16 extents a file); \
                 this build reads format 2 (TXFTLFS2) only: format the device again"
                    .into(),
            ));
        }
        if page.len() < SUPER_CRC_AT + 4 || &page[0..8] != MAGIC {
            return Err(FsError::Format("no txftl file system on this device (bad magic)".into()));
        }
        let u = |i: usize| u32::from_le_bytes(page[8 + 4 * i..12 + 4 * i].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(page[SUPER_CRC_AT..SUPER_CRC_AT + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&page[..SUPER_CRC_AT]) != crc {
            return Err(FsError::Format("file system superblock checksum mismatch".into()));
        }
        let l = Layout::with_inodes(u(0), u(1), u(2))?;
        let recorded = [u(2), u(3), u(4), u(5), u(6), u(7), u(8), u(9), u(10), u(11), u(12)];
        let computed = [
            l.inode_count,
            l.inode_start,
            l.inode_pages,
            l.bitmap_start,
            l.bitmap_pages,
            l.journal_start,
            l.journal_pages,
            l.data_start,
            l.data_pages,
            EXTENTS_INLINE as u32,
            l.extents_per_overflow_page() as u32,
        ];
        if recorded != computed {
            return Err(FsError::Format(format!(
                "file system superblock does not match the layout it describes (recorded {recorded:?}, \
                 computed {computed:?})"
            )));
        }
        Ok(l)
    }
}

/// Home pages one journal descriptor page names.
fn journal_names_max(page_size: u32) -> u32 {
    (page_size - 24) / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tiny_keeps_its_fixed_areas_and_large_devices_get_more_inodes() {
        // `tiny` at 16 blocks per plane on X-FTL: 112 pages of 512 bytes.
        let l = Layout::new(512, 112).unwrap();
        assert_eq!((l.inode_count, l.inode_pages, l.bitmap_pages, l.journal_pages), (64, 32, 1, 35));
        assert_eq!(l.data_start, 69);
        let l = Layout::new(4096, 1 << 20).unwrap();
        assert_eq!(l.inode_count, 65_536);
        assert_eq!(l.inode_pages, 4096);
        assert_eq!(l.bitmap_pages, 32);
        assert_eq!(l.journal_images(), 1018, "32 bitmap + 1024 inode pages, capped by one descriptor");
        let l = Layout::new(8192, 100_000).unwrap();
        assert_eq!(l.inode_count, 12_512, "100,000 / 8 rounded up to whole pages of 32 inodes");
        let mut page = vec![0u8; 8192];
        l.encode(&mut page);
        assert_eq!(Layout::decode(&page).unwrap(), l);
        page[8 + 4 * 2] ^= 1; // the inode count
        assert!(matches!(Layout::decode(&page), Err(FsError::Format(_))));
    }

    #[test]
    fn a_format_1_superblock_is_refused_by_name() {
        let mut page = vec![0u8; 512];
        page[0..8].copy_from_slice(MAGIC_V1);
        let e = Layout::decode(&page).unwrap_err().to_string();
        assert!(e.contains("TXFTLFS1") && e.contains("format 2"), "{e}");
    }
}
