//! The superblock: the root of everything recovery reads. It names the current
//! checkpoint and the metadata areas. It is appended to a ring of two reserved
//! blocks (the first block of units 0 and 1), so a torn superblock write leaves
//! the previous copy as the newest valid one.
//!
//! Page layout (data area), integers little-endian:
//!
//! ```text
//!   0  [u8; 8]  magic "TXFTLSB1"
//!   8  u32      body length B (bytes covered by the CRC)
//!  12  u32      reserved (0)
//!  16  u64      superblock sequence number (newest valid copy wins)
//!  24  u32 x 4  block count, pages per block, page size, logical pages
//!  40  [u8;16]  protocol name, zero padded
//!  56  u64      checkpoint sequence number
//!  64  u32 x 5  checkpoint: ring index, first page, page count, byte length, CRC-32
//!  84  u32      checkpoint ring length N
//!  88  u32      protocol root length R
//!  92  u32 x N  checkpoint ring block ids
//!  ..  [u8; R]  protocol root (e.g. X-FTL's X-L2P table location)
//!   B  u32      CRC-32 of bytes 0..B
//! ```
//! The rest of the page is zero. The page's OOB is a `Superblock` record whose
//! `seq` is the superblock sequence number.

use crate::area::Extent;
use txftl_nand::BlockId;

const MAGIC: &[u8; 8] = b"TXFTLSB1";
const FIXED: usize = 92;

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
    pub root: Vec<u8>,
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

impl Superblock {
    pub fn encoded_len(ring_len: usize, root_len: usize) -> usize {
        FIXED + 4 * ring_len + root_len + 4
    }

    /// Encodes into a page-sized buffer. The caller checked it fits.
    pub fn encode(&self, page: &mut [u8]) {
        page.fill(0);
        let body = FIXED + 4 * self.ckpt_ring.len() + self.root.len();
        page[0..8].copy_from_slice(MAGIC);
        page[8..12].copy_from_slice(&(body as u32).to_le_bytes());
        page[16..24].copy_from_slice(&self.sb_seq.to_le_bytes());
        for (i, v) in [self.block_count, self.pages_per_block, self.page_size, self.logical_pages]
            .iter()
            .enumerate()
        {
            page[24 + 4 * i..28 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        let name = self.protocol.as_bytes();
        page[40..40 + name.len().min(16)].copy_from_slice(&name[..name.len().min(16)]);
        page[56..64].copy_from_slice(&self.ckpt_seq.to_le_bytes());
        let c = [
            self.ckpt.index as u32,
            self.ckpt.page,
            self.ckpt.pages,
            self.ckpt_bytes,
            self.ckpt_crc,
        ];
        for (i, v) in c.iter().enumerate() {
            page[64 + 4 * i..68 + 4 * i].copy_from_slice(&v.to_le_bytes());
        }
        page[84..88].copy_from_slice(&(self.ckpt_ring.len() as u32).to_le_bytes());
        page[88..92].copy_from_slice(&(self.root.len() as u32).to_le_bytes());
        let mut at = FIXED;
        for b in &self.ckpt_ring {
            page[at..at + 4].copy_from_slice(&b.to_le_bytes());
            at += 4;
        }
        page[at..at + self.root.len()].copy_from_slice(&self.root);
        let crc = crc32fast::hash(&page[..body]);
        page[body..body + 4].copy_from_slice(&crc.to_le_bytes());
    }

    /// Decodes a page; `None` if it is not an intact superblock.
    pub fn decode(page: &[u8]) -> Option<Superblock> {
        if page.len() < FIXED + 4 || &page[0..8] != MAGIC {
            return None;
        }
        let body = u32_at(page, 8) as usize;
        if body < FIXED || body + 4 > page.len() || crc32fast::hash(&page[..body]) != u32_at(page, body) {
            return None;
        }
        let ring_len = u32_at(page, 84) as usize;
        let root_len = u32_at(page, 88) as usize;
        if FIXED + 4 * ring_len + root_len != body {
            return None;
        }
        let name_end = page[40..56].iter().position(|&b| b == 0).unwrap_or(16);
        let ckpt_ring = (0..ring_len).map(|i| u32_at(page, FIXED + 4 * i)).collect();
        let root_at = FIXED + 4 * ring_len;
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
            root: page[root_at..root_at + root_len].to_vec(),
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
            root: vec![1, 2, 3],
        };
        let mut page = vec![0u8; 512];
        sb.encode(&mut page);
        assert_eq!(Superblock::decode(&page), Some(sb));
        page[30] ^= 1;
        assert_eq!(Superblock::decode(&page), None);
        assert_eq!(Superblock::decode(&vec![0xFF; 512]), None);
    }
}
