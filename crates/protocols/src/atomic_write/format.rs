//! Atomic-Write's on-flash format: a commit flag on every data page, and the
//! open group's log position in each checkpoint.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! Atomic-Write (Ouyang et al., HPCA 2011, as LightTx §II-C describes it)
//! appends a transaction's pages to the log and tags the last page of each
//! atomic group with flag 1, the others with flag 0. Integers little-endian:
//!
//! ```text
//!  0  u32  group id: the device's id of the transaction (0: a write outside
//!          transactions, or a GC copy of committed data)
//!  4  u8   flag: 1 on the last page of a group (its commit), 0 on the others
//!          (and on non-transactional pages, which are no group)
//!  5  [u8; 27] zero
//! ```
//!
//! # Log position (the checkpoint's protocol section, `txftl_ftl::checkpoint`)
//!
//! The mapping table is written back at every commit, so recovery replays
//! the log only from there: the pages programmed after the checkpoint (the
//! framework's roll-forward), and, when a group was open at the checkpoint
//! (a checkpoint the FTL took for itself in the middle of a transaction),
//! the pages that group had already appended, which lie in blocks the
//! checkpoint records in use:
//!
//! ```text
//!  0  u32  next group id the device hands out
//!  4  u32  n: blocks holding pages of the group open at the checkpoint (0: none open)
//!  8  u32 × n  their block ids, ascending
//! ```

//! # Mapping write-back (a page of Atomic-Write's log ring, `txftl_ftl::log`)
//!
//! At every commit the group's mappings are appended to the mapping log, one
//! page per commit unless the group is larger than a page holds; recovery
//! redoes the groups whose mapping pages are all there (the log's pages since
//! the checkpoint; a checkpoint is taken before the ring would erase one):
//!
//! ```text
//!  0  [u8; 4]  magic "AWMP"
//!  4  u32      group id
//!  8  u16      position of this page in the group's mapping pages
//! 10  u16      the group's mapping pages
//! 12  u32      n: entries in this page
//! 16  (u32 logical page, u32 physical page) × n
//!  ..  zero to the end of the page
//! ```

use txftl_ftl::{DeviceError, Oob, Result, PROTOCOL_BYTES};

const MAGIC: &[u8; 4] = b"AWMP";
const HEADER: usize = 16;

/// A mapping page's header and entries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapPage {
    pub group: u32,
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
        page[4..8].copy_from_slice(&self.group.to_le_bytes());
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
            group: u32_at(4),
            position: u16::from_le_bytes([page[8], page[9]]),
            pages: u16::from_le_bytes([page[10], page[11]]),
            entries: (0..n).map(|i| (u32_at(HEADER + 8 * i), u32_at(HEADER + 8 * i + 4))).collect(),
        })
    }
}
use txftl_nand::BlockId;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageFlag {
    pub group: u32,
    pub last: bool,
}

impl PageFlag {
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.group.to_le_bytes());
        p[4] = self.last as u8;
        p
    }

    pub fn of(oob: &Oob) -> PageFlag {
        PageFlag {
            group: u32::from_le_bytes(oob.protocol[0..4].try_into().expect("4 bytes")),
            last: oob.protocol[4] == 1,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogPosition {
    pub next_group: u32,
    pub open_group_blocks: Vec<BlockId>,
}

impl LogPosition {
    pub fn len_max(blocks: u32) -> usize {
        8 + 4 * blocks as usize
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(8 + 4 * self.open_group_blocks.len());
        out.extend_from_slice(&self.next_group.to_le_bytes());
        out.extend_from_slice(&(self.open_group_blocks.len() as u32).to_le_bytes());
        for b in &self.open_group_blocks {
            out.extend_from_slice(&b.to_le_bytes());
        }
        out
    }

    /// An empty section (the checkpoint `format` writes) is the zero state.
    pub fn decode(bytes: &[u8]) -> Result<LogPosition> {
        if bytes.is_empty() {
            return Ok(LogPosition {
                next_group: 1,
                open_group_blocks: Vec::new(),
            });
        }
        let bad = || DeviceError::Corrupted(format!("Atomic-Write log position of {} bytes does not decode", bytes.len()));
        if bytes.len() < 8 {
            return Err(bad());
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let n = u32_at(4) as usize;
        if bytes.len() != 8 + 4 * n {
            return Err(bad());
        }
        Ok(LogPosition {
            next_group: u32_at(0),
            open_group_blocks: (0..n).map(|i| u32_at(8 + 4 * i)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_positions_round_trip() {
        let p = PageFlag { group: 258, last: true }.encode();
        assert_eq!(&p[..5], &[2, 1, 0, 0, 1]);
        let pos = LogPosition {
            next_group: 9,
            open_group_blocks: vec![4, 7],
        };
        assert_eq!(LogPosition::decode(&pos.encode()).unwrap(), pos);
        assert!(LogPosition::decode(&[1, 2, 3]).is_err());
        let m = MapPage {
            group: 3,
            position: 1,
            pages: 2,
            entries: vec![(7, 70), (8, 81)],
        };
        let mut page = vec![0xEE; 512];
        m.encode(&mut page);
        assert_eq!(&page[0..4], b"AWMP");
        assert_eq!(MapPage::decode(&page), Some(m));
        assert_eq!(MapPage::entries_per_page(512), 62);
    }
}
