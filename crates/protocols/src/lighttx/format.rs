//! LightTx's on-flash format: the transaction fields of every data page's OOB,
//! and the zone metadata each checkpoint carries.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! The paper's Fig. 3 gives 12 bytes: TxID, TxCnt, TxVer, 4 bytes each. A GC
//! copy of a page of a transaction still open adds where it came from.
//! Integers little-endian:
//!
//! ```text
//!  0  u32  TxID: the device's id of the transaction (0: not transactional,
//!          a host write outside transactions or a GC copy of committed data)
//!  4  u32  TxCnt: on the last page of a transaction (its commit page) the
//!          number of pages the transaction programmed, this one included;
//!          0 on its other pages; 1 on a non-transactional page
//!  8  u32  TxVer: on a commit page, the commit's version (commit order);
//!          0 on the other pages of a transaction; on a non-transactional
//!          page, the version of the last commit before it
//! 12  u64  origin: 0, or, on a GC copy of a page of an open transaction,
//!          the sequence number of the page as the transaction programmed it
//!          (so recovery counts the page once, whichever copy it finds)
//! 20  [u8; 12] zero
//! ```
//!
//! The TxID is the device's, not the host's: the host may reuse its ids as
//! soon as a transaction ends, while pages of the ended transaction still lie
//! in the zones recovery reads. The device hands out ids in increasing order
//! and never reuses one (the next id is in every checkpoint, and recovery
//! also passes every id it reads).
//!
//! # Zone metadata (the checkpoint's protocol section, `txftl_ftl::checkpoint`)
//!
//! The paper's "zone metadata page" written at each zone slide: here it is
//! the checkpoint record's protocol section, so the record's CRC covers it
//! and it is durable exactly when the checkpoint is (a cut while it is
//! written leaves the previous checkpoint, and its zones, in force):
//!
//! ```text
//!  0  u32  next TxID the device hands out
//!  4  u32  next TxVer (commit version)
//!  8  u32  n: blocks in the Unavailable Zone
//! 12  u32 × n  their block ids, ascending
//!  .  u32  m: blocks of the Available Zone still open at the slide
//!  .  u32 × m  their block ids, ascending
//! ```
//!
//! With the paper's zones (the default): the Available Zone is the blocks
//! still open at the slide, listed here, and the free blocks the slide
//! pre-allocates, which the checkpoint's block table records *ready*
//! (`txftl_ftl::checkpoint`, the allocation window): no page is programmed
//! anywhere else until the next slide. The Unavailable Zone is the full
//! blocks holding a page of (1) a transaction open at the slide or (2) a
//! dead one with a page in an open Available block. Recovery reads every
//! page of both zones (the open blocks from page 0) and no other block.
//!
//! With `interval-zones=1` (the variant the paper's zones replaced): m is 0,
//! the Available Zone is every block programmed since the checkpoint (the
//! framework's roll-forward reads every block free or open at it), and the
//! Unavailable Zone is the blocks holding a page of a transaction open at the
//! checkpoint, open blocks included.
//!
//! Every other block is in the Checkpointed Zone: its transactions are dead
//! (their pages are in the checkpoint's L2P or nowhere).

use txftl_ftl::{DeviceError, Oob, Result, PROTOCOL_BYTES};
use txftl_nand::BlockId;

/// The transaction fields of one page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageTx {
    pub tx_id: u32,
    pub tx_cnt: u32,
    pub tx_ver: u32,
    pub origin: u64,
}

impl PageTx {
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.tx_id.to_le_bytes());
        p[4..8].copy_from_slice(&self.tx_cnt.to_le_bytes());
        p[8..12].copy_from_slice(&self.tx_ver.to_le_bytes());
        p[12..20].copy_from_slice(&self.origin.to_le_bytes());
        p
    }

    pub fn decode(p: &[u8; PROTOCOL_BYTES]) -> PageTx {
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
        PageTx {
            tx_id: u32_at(0),
            tx_cnt: u32_at(4),
            tx_ver: u32_at(8),
            origin: u64::from_le_bytes(p[12..20].try_into().expect("8 bytes")),
        }
    }

    pub fn of(oob: &Oob) -> PageTx {
        PageTx::decode(&oob.protocol)
    }
}

/// The zone metadata of one checkpoint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ZoneMeta {
    pub next_tx_id: u32,
    pub next_tx_ver: u32,
    pub unavailable: Vec<BlockId>,
    /// The Available Zone's blocks still open at the slide (paper's zones).
    pub available: Vec<BlockId>,
}

impl ZoneMeta {
    /// Largest section for a device of `blocks` blocks (the two lists are disjoint).
    pub fn len_max(blocks: u32) -> usize {
        16 + 4 * blocks as usize
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(12 + 4 * self.unavailable.len());
        out.extend_from_slice(&self.next_tx_id.to_le_bytes());
        out.extend_from_slice(&self.next_tx_ver.to_le_bytes());
        out.extend_from_slice(&(self.unavailable.len() as u32).to_le_bytes());
        for b in &self.unavailable {
            out.extend_from_slice(&b.to_le_bytes());
        }
        out.extend_from_slice(&(self.available.len() as u32).to_le_bytes());
        for b in &self.available {
            out.extend_from_slice(&b.to_le_bytes());
        }
        out
    }

    /// Decodes a section; an empty one (the checkpoint `format` writes before
    /// any transaction) is the zero state.
    pub fn decode(bytes: &[u8]) -> Result<ZoneMeta> {
        if bytes.is_empty() {
            return Ok(ZoneMeta {
                next_tx_id: 1,
                next_tx_ver: 1,
                unavailable: Vec::new(),
                available: Vec::new(),
            });
        }
        let bad = || DeviceError::Corrupted(format!("LightTx zone metadata of {} bytes does not decode", bytes.len()));
        if bytes.len() < 12 {
            return Err(bad());
        }
        let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
        let n = u32_at(8) as usize;
        let m_at = 12 + 4 * n;
        // A section that ends after the Unavailable Zone is the layout before
        // the open Available blocks were listed (images formatted then): no
        // open block is listed, as with `interval-zones=1`. The record's CRC
        // covers the section, so a cut cannot shorten it to this.
        if bytes.len() == m_at {
            return Ok(ZoneMeta {
                next_tx_id: u32_at(0),
                next_tx_ver: u32_at(4),
                unavailable: (0..n).map(|i| u32_at(12 + 4 * i)).collect(),
                available: Vec::new(),
            });
        }
        if bytes.len() < m_at + 4 {
            return Err(bad());
        }
        let m = u32_at(m_at) as usize;
        if bytes.len() != m_at + 4 + 4 * m {
            return Err(bad());
        }
        Ok(ZoneMeta {
            next_tx_id: u32_at(0),
            next_tx_ver: u32_at(4),
            unavailable: (0..n).map(|i| u32_at(12 + 4 * i)).collect(),
            available: (0..m).map(|i| u32_at(m_at + 4 + 4 * i)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_fields_round_trip_at_their_offsets() {
        let t = PageTx {
            tx_id: 0x0403_0201,
            tx_cnt: 7,
            tx_ver: 9,
            origin: 0x1122_3344_5566,
        };
        let p = t.encode();
        assert_eq!(&p[0..4], &[1, 2, 3, 4]);
        assert_eq!(p[4], 7);
        assert_eq!(p[8], 9);
        assert_eq!(p[12], 0x66);
        assert!(p[20..].iter().all(|&b| b == 0));
        assert_eq!(PageTx::decode(&p), t);
    }

    #[test]
    fn zone_metadata_round_trips_and_refuses_a_bad_length() {
        let z = ZoneMeta {
            next_tx_id: 12,
            next_tx_ver: 5,
            unavailable: vec![3, 9, 40],
            available: vec![7],
        };
        let bytes = z.encode();
        assert_eq!(bytes.len(), 32);
        assert_eq!(&bytes[24..32], &[1, 0, 0, 0, 7, 0, 0, 0]);
        assert_eq!(ZoneMeta::decode(&bytes).unwrap(), z);
        assert!(ZoneMeta::decode(&bytes[..28]).is_err());
        assert!(ZoneMeta::decode(&bytes[..26]).is_err());
        // The layout without the open-block list reads as listing none.
        let old = ZoneMeta::decode(&bytes[..24]).unwrap();
        assert_eq!((old.unavailable, old.available), (vec![3, 9, 40], vec![]));
        assert_eq!(ZoneMeta::decode(&[]).unwrap().next_tx_id, 1);
    }
}
