//! Atomic-Write's on-flash format: the group flags on every data page, the
//! write-back pages of its log ring (copies of L2P table pages, or, with
//! `map-log=1`, mapping-log pages), the open group's place in each
//! checkpoint, and the variant in the superblock's root.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! Atomic-Write (Ouyang et al., HPCA 2011, as LightTx §II-C describes it)
//! appends a transaction's pages to the log and tags the last page of each
//! atomic group with flag 1, the others with flag 0. The log is the order of
//! the OOB sequence numbers (pages stripe over the dies, so the physical
//! order is not the log's). A group is the group pages (byte 1 = 1) after the
//! previous flag-1 group page, up to its own flag-1 page; no group id is
//! recorded. Byte 1 tells group pages from the pages programmed between them
//! that belong to no group: writes outside transactions, and GC copies of
//! committed data (a GC copy of an open group's page stays a group page,
//! flag 0).
//!
//! ```text
//!  0  u8   flag: 1 on the last page of a group, 0 on every other page
//!  1  u8   group: 1 on a page of an atomic group, 0 on a page of none
//!  2  u8   aborted: 1 on the last page of a group the host aborted (flag 1:
//!          it closes the group, and neither it nor the group is ever applied),
//!          0 otherwise
//!  3  [u8; 29] zero
//! ```
//!
//! # Table write-back (default: a page of the log ring, `txftl_ftl::log`)
//!
//! After a commit's flag page is on flash, every L2P table page holding a
//! logical page the group wrote is written to the ring whole: its data is
//! the table page as the framework's checkpoint lays it out (`u32` physical
//! page of each of its `E = page_size / 4` logical pages, `0xFFFF_FFFF`
//! unmapped, `txftl_ftl::checkpoint`), as the L2P holds it then. The ring
//! page's OOB protocol bytes say which table page it is and which pages
//! make up the commit's write-back:
//!
//! ```text
//!  0  u32  table page index t (logical pages t*E .. t*E+E-1)
//!  4  u16  position of this page in its commit's write-back (0 first)
//!  6  u16  pages in its commit's write-back (at least 1)
//!  8  [u8; 24] zero
//! ```
//!
//! # Mapping log (`map-log=1`: a page of the log ring)
//!
//! At every commit the group's mappings are appended to the mapping log, one
//! page per commit unless the group is larger than a page holds; the ring
//! page's OOB protocol bytes are zero:
//!
//! ```text
//!  0  [u8; 4]  magic "AWMP"
//!  4  u32      commit number (the device numbers its commits since format)
//!  8  u16      position of this page in the commit's mapping pages
//! 10  u16      the commit's mapping pages
//! 12  u32      n: entries in this page
//! 16  (u32 logical page, u32 physical page) × n
//!  ..  zero to the end of the page
//! ```
//!
//! # Log position (the checkpoint's protocol section, `txftl_ftl::checkpoint`)
//!
//! When a group was open at the checkpoint (a checkpoint the FTL took for
//! itself in the middle of a transaction), recovery may need its pages
//! programmed before it: they lie in blocks the checkpoint records in use,
//! and have sequence numbers from the group's first page's on.
//!
//! ```text
//!  0  u32  next commit number
//!  4  u64  sequence number of the open group's first page (0: no group was
//!          open, or it had no page on flash yet)
//! 12  u32  n: blocks holding pages of that group (0 when none)
//! 16  u32 × n  their block ids, ascending
//! ```
//!
//! # Root (the superblock's protocol bytes)
//!
//! ```text
//!  0  u8   write-back: 0 L2P table pages (default), 1 mapping log (`map-log=1`)
//! ```

use txftl_ftl::{DeviceError, Oob, Result, PROTOCOL_BYTES};
use txftl_nand::BlockId;

const MAGIC: &[u8; 4] = b"AWMP";
const HEADER: usize = 16;

/// A data page's group flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageFlag {
    /// The group's last page (flag 1).
    pub last: bool,
    /// A page of an atomic group.
    pub group: bool,
    /// The closing page of an aborted group.
    pub aborted: bool,
}

impl PageFlag {
    /// A page of no group.
    pub const NONE: PageFlag = PageFlag {
        last: false,
        group: false,
        aborted: false,
    };

    /// A page of the open group, flag `last`.
    pub fn group(last: bool) -> PageFlag {
        PageFlag {
            last,
            group: true,
            aborted: false,
        }
    }

    /// The closing page of an aborted group.
    pub const ABORT: PageFlag = PageFlag {
        last: true,
        group: true,
        aborted: true,
    };

    /// The page that ends a group (committed or aborted).
    pub fn ends_group(&self) -> bool {
        self.group && self.last
    }

    /// The page that commits a group.
    pub fn commits(&self) -> bool {
        self.group && self.last && !self.aborted
    }

    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0] = self.last as u8;
        p[1] = self.group as u8;
        p[2] = self.aborted as u8;
        p
    }

    pub fn of(oob: &Oob) -> PageFlag {
        PageFlag {
            last: oob.protocol[0] == 1,
            group: oob.protocol[1] == 1,
            aborted: oob.protocol[2] == 1,
        }
    }
}

/// The OOB tag of a table page written back to the ring.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableTag {
    pub table: u32,
    pub position: u16,
    pub pages: u16,
}

impl TableTag {
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.table.to_le_bytes());
        p[4..6].copy_from_slice(&self.position.to_le_bytes());
        p[6..8].copy_from_slice(&self.pages.to_le_bytes());
        p
    }

    /// None: not a table page's tag (a mapping-log page's zeros), or one
    /// naming a table page beyond `map_pages`.
    pub fn decode(tag: &[u8; PROTOCOL_BYTES], map_pages: u32) -> Option<TableTag> {
        let t = TableTag {
            table: u32::from_le_bytes(tag[0..4].try_into().expect("4 bytes")),
            position: u16::from_le_bytes([tag[4], tag[5]]),
            pages: u16::from_le_bytes([tag[6], tag[7]]),
        };
        (t.pages > 0 && t.position < t.pages && t.table < map_pages && tag[8..].iter().all(|&b| b == 0)).then_some(t)
    }
}

/// A mapping page's header and entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapPage {
    pub commit: u32,
    pub position: u16,
    pub pages: u16,
    pub entries: Vec<(u32, u32)>,
}

impl MapPage {
    pub fn entries_per_page(page_size: u32) -> usize {
        (page_size as usize - HEADER) / 8
    }

    pub fn encode(&self, page: &mut [u8]) {
        page.fill(0);
        page[0..4].copy_from_slice(MAGIC);
        page[4..8].copy_from_slice(&self.commit.to_le_bytes());
        page[8..10].copy_from_slice(&self.position.to_le_bytes());
        page[10..12].copy_from_slice(&self.pages.to_le_bytes());
        page[12..16].copy_from_slice(&(self.entries.len() as u32).to_le_bytes());
        for (i, (lpn, ppn)) in self.entries.iter().enumerate() {
            let at = HEADER + 8 * i;
            page[at..at + 4].copy_from_slice(&lpn.to_le_bytes());
            page[at + 4..at + 8].copy_from_slice(&ppn.to_le_bytes());
        }
    }

    /// None: not a mapping page of this format.
    pub fn decode(page: &[u8]) -> Option<MapPage> {
        if page.len() < HEADER || &page[0..4] != MAGIC {
            return None;
        }
        let u32_at = |i: usize| u32::from_le_bytes(page[i..i + 4].try_into().expect("4 bytes"));
        let n = u32_at(12) as usize;
        if HEADER + 8 * n > page.len() {
            return None;
        }
        Some(MapPage {
            commit: u32_at(4),
            position: u16::from_le_bytes([page[8], page[9]]),
            pages: u16::from_le_bytes([page[10], page[11]]),
            entries: (0..n).map(|i| (u32_at(HEADER + 8 * i), u32_at(HEADER + 8 * i + 4))).collect(),
        })
    }
}

/// The checkpoint's protocol section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogPosition {
    pub next_commit: u32,
    /// Sequence number of the open group's first page (0: none).
    pub open_first_seq: u64,
    pub open_group_blocks: Vec<BlockId>,
}

impl Default for LogPosition {
    fn default() -> LogPosition {
        LogPosition {
            next_commit: 1,
            open_first_seq: 0,
            open_group_blocks: Vec::new(),
        }
    }
}

impl LogPosition {
    const HEADER: usize = 16;

    pub fn len_max(blocks: u32) -> usize {
        Self::HEADER + 4 * blocks as usize
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::HEADER + 4 * self.open_group_blocks.len());
        out.extend_from_slice(&self.next_commit.to_le_bytes());
        out.extend_from_slice(&self.open_first_seq.to_le_bytes());
        out.extend_from_slice(&(self.open_group_blocks.len() as u32).to_le_bytes());
        for b in &self.open_group_blocks {
            out.extend_from_slice(&b.to_le_bytes());
        }
        out
    }

    /// An empty section (the checkpoint `format` writes) is the zero state.
    pub fn decode(bytes: &[u8]) -> Result<LogPosition> {
        if bytes.is_empty() {
            return Ok(LogPosition::default());
        }
        let bad = || DeviceError::Corrupted(format!("Atomic-Write log position of {} bytes does not decode", bytes.len()));
        if bytes.len() < Self::HEADER {
            return Err(bad());
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let n = u32_at(12) as usize;
        if bytes.len() != Self::HEADER + 4 * n {
            return Err(bad());
        }
        Ok(LogPosition {
            next_commit: u32_at(0),
            open_first_seq: u64::from_le_bytes(bytes[4..12].try_into().expect("8 bytes")),
            open_group_blocks: (0..n).map(|i| u32_at(Self::HEADER + 4 * i)).collect(),
        })
    }
}

/// The write-back variant the superblock's root records.
pub fn encode_root(map_log: bool) -> Vec<u8> {
    vec![map_log as u8]
}

/// The variant (true: mapping log), or an error for a root of another shape.
pub fn decode_root(root: &[u8]) -> Result<bool> {
    match *root {
        [v @ (0 | 1)] => Ok(v == 1),
        _ => Err(DeviceError::Corrupted(format!(
            "the superblock's Atomic-Write root ({} bytes) does not record its write-back variant \
             (an image formatted before it did: format it again)",
            root.len()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_tags_positions_and_roots_round_trip() {
        let p = PageFlag::group(true).encode();
        assert_eq!(&p[..4], &[1, 1, 0, 0]);
        assert_eq!(&PageFlag::ABORT.encode()[..3], &[1, 1, 1]);
        assert_eq!(PageFlag::NONE.encode(), [0; PROTOCOL_BYTES]);
        let mut oob = Oob::new(txftl_ftl::PageKind::Data, 3, 9, 0, &[]);
        oob.protocol = p;
        assert!(PageFlag::of(&oob).commits());
        oob.protocol = PageFlag::ABORT.encode();
        assert!(PageFlag::of(&oob).ends_group() && !PageFlag::of(&oob).commits());

        let t = TableTag {
            table: 258,
            position: 1,
            pages: 3,
        };
        let tag = t.encode();
        assert_eq!(&tag[..8], &[2, 1, 0, 0, 1, 0, 3, 0]);
        assert_eq!(TableTag::decode(&tag, 300), Some(t));
        assert_eq!(TableTag::decode(&tag, 258), None, "beyond the table");
        assert_eq!(TableTag::decode(&[0; PROTOCOL_BYTES], 300), None, "a mapping-log page");

        let pos = LogPosition {
            next_commit: 9,
            open_first_seq: 0x1_0000_0002,
            open_group_blocks: vec![4, 7],
        };
        let bytes = pos.encode();
        assert_eq!(bytes.len(), LogPosition::len_max(2));
        assert_eq!(&bytes[4..12], &[2, 0, 0, 0, 1, 0, 0, 0]);
        assert_eq!(LogPosition::decode(&bytes).unwrap(), pos);
        assert!(LogPosition::decode(&[1, 2, 3]).is_err());
        assert_eq!(LogPosition::decode(&[]).unwrap(), LogPosition::default());

        let m = MapPage {
            commit: 3,
            position: 1,
            pages: 2,
            entries: vec![(7, 70), (8, 81)],
        };
        let mut page = vec![0xEE; 512];
        m.encode(&mut page);
        assert_eq!(&page[0..4], b"AWMP");
        assert_eq!(MapPage::decode(&page), Some(m));
        assert_eq!(MapPage::entries_per_page(512), 62);

        assert!(decode_root(&encode_root(true)).unwrap());
        assert!(!decode_root(&encode_root(false)).unwrap());
        assert!(decode_root(&[]).is_err() && decode_root(&[2]).is_err());
    }
}
