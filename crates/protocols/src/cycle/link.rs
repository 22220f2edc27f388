//! The cycle fields TxFlash's cyclic commits (SCC and BPCC) keep in every
//! data page's OOB: the first 24 of the record's 32 protocol bytes
//! (`txftl_ftl::oob`). What each protocol puts after them, and its full OOB
//! layout, is in its own `format.rs`.
//!
//! # Bytes 0..24 (integers little-endian)
//!
//! TxFlash (Prabhakaran, Rodeheffer, Zhou; OSDI 2008) keeps in each page's
//! metadata its logical page, its version and a *next-link* naming the next
//! page of the transaction by (logical page, version); the last page links
//! back to the first, closing the cycle. The logical page is the framework's
//! own OOB field (`Oob::lpn`); the rest is here:
//!
//! ```text
//!  0  u32  TxID: the device's id of the transaction (never 0 on a cycle
//!          page; a host write outside transactions is a transaction of one
//!          page)
//!  4  u64  version of this page: the device's write counter when the host
//!          sent it, unique over the device (so one logical page written
//!          twice inside a transaction has two versions, and any two versions
//!          of a logical page compare in the order they were written; never 0)
//! 12  u32  next-link, logical page of the next page of the transaction
//! 16  u64  next-link, version of that page (the first page's, on the last
//!          page; a one-page transaction links to itself)
//! ```
//!
//! A GC copy keeps these bytes as they are (the framework's default), so a
//! copy stands for its original; recovery counts each (TxID, page, version)
//! once whichever copies it finds.

use txftl_ftl::{Oob, PROTOCOL_BYTES};

/// How many of the protocol bytes the cycle fields take: 0..24.
pub const LINK_BYTES: usize = 24;

/// The cycle fields of one page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageLink {
    pub tx_id: u32,
    pub version: u64,
    pub next_lpn: u32,
    pub next_version: u64,
}

impl PageLink {
    /// The protocol bytes with the cycle fields in 0..24 and zeros after.
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.tx_id.to_le_bytes());
        p[4..12].copy_from_slice(&self.version.to_le_bytes());
        p[12..16].copy_from_slice(&self.next_lpn.to_le_bytes());
        p[16..24].copy_from_slice(&self.next_version.to_le_bytes());
        p
    }

    /// The cycle fields of protocol bytes 0..24 (the rest is not read).
    pub fn decode(p: &[u8; PROTOCOL_BYTES]) -> PageLink {
        PageLink {
            tx_id: u32_at(p, 0),
            version: u64_at(p, 4),
            next_lpn: u32_at(p, 12),
            next_version: u64_at(p, 16),
        }
    }

    pub fn of(oob: &Oob) -> PageLink {
        PageLink::decode(&oob.protocol)
    }
}

/// The little-endian `u32` at byte `i` of the protocol bytes.
pub(crate) fn u32_at(p: &[u8; PROTOCOL_BYTES], i: usize) -> u32 {
    u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"))
}

/// The little-endian `u64` at byte `i` of the protocol bytes.
pub(crate) fn u64_at(p: &[u8; PROTOCOL_BYTES], i: usize) -> u64 {
    u64::from_le_bytes(p[i..i + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_byte_layout() {
        let l = PageLink {
            tx_id: 7,
            version: u64::MAX - 3,
            next_lpn: 12,
            next_version: 1 << 40,
        };
        let b = l.encode();
        assert_eq!(PageLink::decode(&b), l);
        assert_eq!(&b[0..4], &7u32.to_le_bytes());
        assert_eq!(&b[4..12], &(u64::MAX - 3).to_le_bytes());
        assert_eq!(&b[12..16], &12u32.to_le_bytes());
        assert_eq!(&b[16..24], &(1u64 << 40).to_le_bytes());
        assert_eq!(&b[LINK_BYTES..], &[0u8; PROTOCOL_BYTES - LINK_BYTES]);
    }

    #[test]
    fn decode_ignores_the_bytes_after_the_link() {
        let l = PageLink {
            tx_id: 1,
            version: 2,
            next_lpn: 3,
            next_version: 4,
        };
        let mut b = l.encode();
        b[LINK_BYTES..].fill(0xAB);
        assert_eq!(PageLink::decode(&b), l);
    }
}
