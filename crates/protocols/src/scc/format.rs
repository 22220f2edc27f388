//! SCC's on-flash format: the cycle fields of every data page's OOB.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! TxFlash (Prabhakaran, Rodeheffer, Zhou; OSDI 2008) keeps in each page's
//! metadata its logical page, its version and a *next-link* naming the next
//! page of the transaction by (logical page, version); the last page links
//! back to the first, closing the cycle. The logical page is the framework's
//! own OOB field (`Oob::lpn`); the rest is here. Integers little-endian:
//!
//! ```text
//!  0  u32  TxID: the device's id of the transaction (never 0 on an SCC page;
//!          a host write outside transactions is a transaction of one page)
//!  4  u64  version of this page: the device's write counter when the host
//!          sent it, unique over the device (so one logical page written
//!          twice inside a transaction has two versions, and any two versions
//!          of a logical page compare in the order they were written)
//! 12  u32  next-link, logical page of the next page of the transaction
//! 16  u64  next-link, version of that page (the first page's, on the last
//!          page; a one-page transaction links to itself)
//! 24  [u8; 8] zero
//! ```
//!
//! A GC copy keeps these bytes as they are (the framework's default), so a
//! copy stands for its original; recovery counts each (TxID, page, version)
//! once whichever copies it finds.
//!
//! There is no commit record and no other SCC metadata on flash: no mapping
//! table of its own, no summary pages (the framework's per-page OOB reads
//! stand for them), nothing in the checkpoints.

use txftl_ftl::{Oob, PROTOCOL_BYTES};

/// The cycle fields of one page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageLink {
    pub tx_id: u32,
    pub version: u64,
    pub next_lpn: u32,
    pub next_version: u64,
}

impl PageLink {
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.tx_id.to_le_bytes());
        p[4..12].copy_from_slice(&self.version.to_le_bytes());
        p[12..16].copy_from_slice(&self.next_lpn.to_le_bytes());
        p[16..24].copy_from_slice(&self.next_version.to_le_bytes());
        p
    }

    pub fn decode(p: &[u8; PROTOCOL_BYTES]) -> PageLink {
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(p[i..i + 8].try_into().expect("8 bytes"));
        PageLink {
            tx_id: u32_at(0),
            version: u64_at(4),
            next_lpn: u32_at(12),
            next_version: u64_at(16),
        }
    }

    pub fn of(oob: &Oob) -> PageLink {
        PageLink::decode(&oob.protocol)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let l = PageLink {
            tx_id: 7,
            version: u64::MAX - 3,
            next_lpn: 12,
            next_version: 1 << 40,
        };
        let b = l.encode();
        assert_eq!(PageLink::decode(&b), l);
        assert_eq!(&b[24..], &[0u8; 8]);
        assert_eq!(&b[0..4], &7u32.to_le_bytes());
    }
}
