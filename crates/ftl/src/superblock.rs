//! The superblock: the root of everything recovery reads. It names the current
//! checkpoint's record (which names the checkpoint's table pages, see
//! `checkpoint.rs`), the previous one, and the metadata areas. It is appended to a ring of two reserved
//! blocks (the first block of units 0 and 1), so a torn superblock write leaves
//! the previous copy as the newest valid one.
//!
//! A copy takes as many pages as its body needs, `ceil((B + 4) / page
//! size)`, programmed one after another inside one superblock block (a copy
//! that would not fit in the rest of the block starts the next one, and the
//! rest stays erased). Page `i` of a copy carries `i` in its OOB record's
//! `lpn`; the copy is intact only if every page is, with the same sequence
//! number, and the CRC below holds. The checkpoint ring's block list grows
//! with the tables, so the copy grows with the device: one page up to about
//! 770 GiB on `jasmine` (8 KiB pages), three at 2 TiB, eleven at 8 TiB. A
//! format refuses a geometry whose copy would not fit a block.
//!
//! Layout of a copy (its pages' data areas, concatenated), integers little-endian:
//!
//! ```text
//!   0  [u8; 8]  magic "TXFTLSB2" (on-flash format 2: incremental checkpoints;
//!               "TXFTLSB1", format 1, had whole checkpoints and is refused)
//!   8  u32      body length B (bytes covered by the CRC)
//!  12  u32      checkpoint ring stripe D: the ring is entered D blocks at a
//!               time, each on its own die, and the record's ring index and
//!               page count stripes and stripe pages (`area.rs`); 0 reads as 1
//!  16  u64      superblock sequence number (newest valid copy wins)
//!  24  u32 x 4  block count, pages per block, page size, logical pages
//!  40  [u8;16]  protocol name, zero padded
//!  56  u64      checkpoint sequence number
//!  64  u32 x 5  checkpoint record: stripe index, first stripe page, page count, byte
//!               length, CRC-32
//!  84  u32      checkpoint ring length N
//!  88  u32      protocol root length R
//!  92  u64      previous checkpoint's sequence number (0: none)
//! 100  u32 x 5  previous checkpoint's record: stripe index, first page, page
//!               count, byte length, CRC-32 (still intact, with every table
//!               page it names: the ring never erases a block holding a page
//!               of the current or the previous checkpoint; recovery falls
//!               back to it when the current one is corrupted)
//! 120  u32 x N  checkpoint ring block ids (N a multiple of D, stripe by stripe)
//!  ..  [u8; R]  protocol root (opaque to the framework)
//!  ..  u32      protocol ring count P, then per ring:
//!               u32 length M, u32 x M ring block ids, oldest first
//!   B  u32      CRC-32 of bytes 0..B
//! ```
//!
//! A protocol ring is a log of the protocol's own pages (X-FTL's X-L2P table
//! pages), appended without a superblock: each page is self-describing (its OOB
//! record has a data CRC and a sequence number) and recovery reads the ring
//! newest first. The superblock only names the ring's blocks, which change when
//! a worn ring block is swapped for a fresh one from the data pool.
//! The rest of the copy's last page is zero. Each page's OOB is a
//! `Superblock` record whose `seq` is the superblock sequence number.

use crate::area::Extent;
use txftl_nand::BlockId;

const MAGIC: &[u8; 8] = b"TXFTLSB2";
/// The magic of on-flash format 1 (whole checkpoints), which this version refuses.
const MAGIC_FORMAT_1: &[u8; 8] = b"TXFTLSB1";
const FIXED: usize = 120;

/// Bytes of the protocol name the superblock holds (a longer name could not
/// be told apart at mount).
pub const PROTOCOL_NAME_MAX: usize = 16;

/// A protocol ring, as the superblock names it.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct RingRecord {
    pub blocks: Vec<BlockId>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Superblock {
    pub sb_seq: u64,
    pub block_count: u32,
    pub pages_per_block: u32,
    pub page_size: u32,
    pub logical_pages: u32,
    pub protocol: String,
    pub ckpt_seq: u64,
    pub ckpt: Extent,
    pub ckpt_bytes: u32,
    pub ckpt_crc: u32,
    pub ckpt_ring: Vec<BlockId>,
    /// Blocks per checkpoint ring stripe (`area.rs`).
    pub ckpt_stripe: u32,
    /// The checkpoint before the current one (seq 0: none).
    pub prev_ckpt: PrevCheckpoint,
    pub root: Vec<u8>,
    pub protocol_rings: Vec<RingRecord>,
}

/// Where the previous checkpoint lies, for falling back to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PrevCheckpoint {
    pub seq: u64,
    pub extent: Extent,
    pub bytes: u32,
    pub crc: u32,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Superblock {
    pub fn encoded_len(ring_len: usize, root_len: usize, protocol_ring_lens: &[usize]) -> usize {
        FIXED + 4 * ring_len + root_len + 4 + protocol_ring_lens.iter().map(|m| 4 + 4 * m).sum::<usize>() + 4
    }

    /// Pages a copy of `len` encoded bytes takes.
    pub fn pages(len: usize, page_size: usize) -> usize {
        len.div_ceil(page_size)
    }

    /// Pages of the copy whose first page is `page` (read from its header's
    /// body length), if `page` starts a superblock of this format.
    pub fn copy_pages(page: &[u8]) -> Option<usize> {
        if page.len() < FIXED + 4 || &page[0..8] != MAGIC {
            return None;
        }
        let body = u32_at(page, 8) as usize;
        (body >= FIXED).then(|| Self::pages(body + 4, page.len()))
    }

    /// Encodes a copy into `out`, resized to its whole pages of `page_size`
    /// bytes (the caller checked at format that a copy fits a block).
    pub fn encode(&self, out: &mut Vec<u8>, page_size: usize) {
        let rings: Vec<usize> = self.protocol_rings.iter().map(|r| r.blocks.len()).collect();
        let len = Self::encoded_len(self.ckpt_ring.len(), self.root.len(), &rings);
        out.clear();
        out.resize(Self::pages(len, page_size) * page_size, 0);
        let page = out.as_mut_slice();
        // Written straight into the buffer; `w` is the write position.
        let mut w = 0usize;
        let mut put = |page: &mut [u8], bytes: &[u8]| {
            page[w..w + bytes.len()].copy_from_slice(bytes);
            w += bytes.len();
        };
        put(page, MAGIC);
        put(page, &0u32.to_le_bytes()); // body length, patched below
        put(page, &self.ckpt_stripe.to_le_bytes());
        put(page, &self.sb_seq.to_le_bytes());
        for v in [self.block_count, self.pages_per_block, self.page_size, self.logical_pages] {
            put(page, &v.to_le_bytes());
        }
        let mut name = [0u8; 16];
        let n = self.protocol.len().min(16);
        name[..n].copy_from_slice(&self.protocol.as_bytes()[..n]);
        put(page, &name);
        put(page, &self.ckpt_seq.to_le_bytes());
        for v in [
            self.ckpt.index as u32,
            self.ckpt.page,
            self.ckpt.pages,
            self.ckpt_bytes,
            self.ckpt_crc,
        ] {
            put(page, &v.to_le_bytes());
        }
        put(page, &(self.ckpt_ring.len() as u32).to_le_bytes());
        put(page, &(self.root.len() as u32).to_le_bytes());
        let prev = &self.prev_ckpt;
        put(page, &prev.seq.to_le_bytes());
        for v in [prev.extent.index as u32, prev.extent.page, prev.extent.pages, prev.bytes, prev.crc] {
            put(page, &v.to_le_bytes());
        }
        for b in &self.ckpt_ring {
            put(page, &b.to_le_bytes());
        }
        put(page, &self.root);
        put(page, &(self.protocol_rings.len() as u32).to_le_bytes());
        for r in &self.protocol_rings {
            put(page, &(r.blocks.len() as u32).to_le_bytes());
            for b in &r.blocks {
                put(page, &b.to_le_bytes());
            }
        }
        let body = w;
        page[8..12].copy_from_slice(&(body as u32).to_le_bytes());
        debug_assert_eq!(body + 4, len, "encoded_len agrees with encode");
        let crc = crc32fast::hash(&page[..body]);
        page[body..body + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Is `page` a superblock of on-flash format 1 (whole checkpoints)?
    pub fn is_format_1(page: &[u8]) -> bool {
        page.len() >= 8 && &page[0..8] == MAGIC_FORMAT_1
    }

    /// Decodes a copy (its pages' data concatenated); `None` if it is not an
    /// intact superblock.
    pub fn decode(page: &[u8]) -> Option<Superblock> {
        if page.len() < FIXED + 4 || &page[0..8] != MAGIC {
            return None;
        }
        let body = u32_at(page, 8) as usize;
        if body < FIXED || body + 4 > page.len() || crc32fast::hash(&page[..body]) != u32_at(page, body) {
            return None;
        }
        let page = &page[..body];
        let ring_len = u32_at(page, 84) as usize;
        let ckpt_stripe = u32_at(page, 12).max(1);
        if ring_len == 0 || !ring_len.is_multiple_of(ckpt_stripe as usize) {
            return None;
        }
        let root_len = u32_at(page, 88) as usize;
        let mut at = FIXED;
        let take = |at: &mut usize, n: usize| -> Option<usize> {
            let start = *at;
            *at = at.checked_add(n).filter(|&end| end <= page.len())?;
            Some(start)
        };
        let ring_at = take(&mut at, 4 * ring_len)?;
        let ckpt_ring = (0..ring_len).map(|i| u32_at(page, ring_at + 4 * i)).collect();
        let root_at = take(&mut at, root_len)?;
        let root = page[root_at..root_at + root_len].to_vec();
        let count_at = take(&mut at, 4)?;
        let mut protocol_rings = Vec::new();
        for _ in 0..u32_at(page, count_at) {
            let h = take(&mut at, 4)?;
            let m = u32_at(page, h) as usize;
            let blocks_at = take(&mut at, 4 * m)?;
            protocol_rings.push(RingRecord {
                blocks: (0..m).map(|i| u32_at(page, blocks_at + 4 * i)).collect(),
            });
        }
        if at != body {
            return None;
        }
        let name_end = page[40..56].iter().position(|&b| b == 0).unwrap_or(16);
        Some(Superblock {
            sb_seq: u64_at(page, 16),
            block_count: u32_at(page, 24),
            pages_per_block: u32_at(page, 28),
            page_size: u32_at(page, 32),
            logical_pages: u32_at(page, 36),
            protocol: String::from_utf8_lossy(&page[40..40 + name_end]).into_owned(),
            ckpt_seq: u64_at(page, 56),
            ckpt: Extent {
                index: u32_at(page, 64) as usize,
                page: u32_at(page, 68),
                pages: u32_at(page, 72),
            },
            ckpt_bytes: u32_at(page, 76),
            ckpt_crc: u32_at(page, 80),
            ckpt_ring,
            ckpt_stripe,
            prev_ckpt: PrevCheckpoint {
                seq: u64_at(page, 92),
                extent: Extent {
                    index: u32_at(page, 100) as usize,
                    page: u32_at(page, 104),
                    pages: u32_at(page, 108),
                },
                bytes: u32_at(page, 112),
                crc: u32_at(page, 116),
            },
            root,
            protocol_rings,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_corruption() {
        let sb = Superblock {
            sb_seq: 7,
            block_count: 32,
            pages_per_block: 8,
            page_size: 512,
            logical_pages: 150,
            protocol: "plain".into(),
            ckpt_seq: 99,
            ckpt: Extent {
                index: 1,
                page: 3,
                pages: 2,
            },
            ckpt_bytes: 900,
            ckpt_crc: 0xDEAD,
            ckpt_ring: vec![1, 17, 2, 18],
            ckpt_stripe: 2,
            prev_ckpt: PrevCheckpoint {
                seq: 50,
                extent: Extent {
                    index: 0,
                    page: 6,
                    pages: 2,
                },
                bytes: 880,
                crc: 0xBEEF,
            },
            root: vec![1, 2, 3],
            protocol_rings: vec![RingRecord { blocks: vec![3, 19, 4] }],
        };
        let mut page = Vec::new();
        assert!(Superblock::encoded_len(4, 3, &[3]) <= 512);
        sb.encode(&mut page, 512);
        assert_eq!((page.len(), Superblock::copy_pages(&page)), (512, Some(1)));
        assert_eq!(Superblock::decode(&page).as_ref(), Some(&sb));
        assert!(!Superblock::is_format_1(&page));
        page[30] ^= 1;
        assert_eq!(Superblock::decode(&page), None);
        page[..8].copy_from_slice(b"TXFTLSB1");
        assert!(Superblock::is_format_1(&page));
        assert_eq!(Superblock::decode(&vec![0xFF; 512]), None);
        // A stripe that does not divide the ring names no ring.
        Superblock {
            ckpt_stripe: 3,
            ..sb.clone()
        }
        .encode(&mut page, 512);
        assert_eq!(Superblock::decode(&page), None);
        // An image from before stripes (offset 12 reserved, 0): one block a stripe.
        Superblock { ckpt_stripe: 0, ..sb }.encode(&mut page, 512);
        assert_eq!(Superblock::decode(&page).map(|s| s.ckpt_stripe), Some(1));
    }

    #[test]
    fn a_long_ring_spreads_a_copy_over_pages_and_any_torn_page_voids_it() {
        let sb = Superblock {
            sb_seq: 3,
            block_count: 40_000,
            pages_per_block: 8,
            page_size: 512,
            logical_pages: 250_000,
            protocol: "plain".into(),
            ckpt_seq: 12,
            ckpt: Extent::default(),
            ckpt_bytes: 0,
            ckpt_crc: 0,
            ckpt_ring: (100..400).collect(),
            ckpt_stripe: 4,
            prev_ckpt: PrevCheckpoint::default(),
            root: vec![9; 40],
            protocol_rings: vec![RingRecord { blocks: vec![7, 8, 9] }],
        };
        let mut bytes = Vec::new();
        sb.encode(&mut bytes, 512);
        let len = Superblock::encoded_len(300, 40, &[3]);
        assert_eq!(bytes.len(), 3 * 512, "{len} bytes take three pages");
        assert_eq!(Superblock::copy_pages(&bytes[..512]), Some(3));
        assert_eq!(Superblock::decode(&bytes).as_ref(), Some(&sb));
        // Only the whole copy decodes: its first page alone, or any page changed, does not.
        assert_eq!(Superblock::decode(&bytes[..512]), None);
        for at in [0, 700, len - 5] {
            let mut torn = bytes.clone();
            torn[at] ^= 0x10;
            assert_eq!(Superblock::decode(&torn), None, "byte {at} changed");
        }
    }
}
