//! BPCC's on-flash format: the cycle fields and the back pointer of every
//! data page's OOB.
//!
//! # Page metadata (the OOB record's 32 protocol bytes, `txftl_ftl::oob`)
//!
//! TxFlash (Prabhakaran, Rodeheffer, Zhou; OSDI 2008) keeps in each page's
//! metadata its logical page, its version, a *next-link* naming the next page
//! of the transaction by (logical page, version), the last page linking back
//! to the first (the cycle SCC has too), and for BPCC a *back pointer*: the
//! version of the last committed version of the same logical page when this
//! one was written. The logical page is the framework's own OOB field
//! (`Oob::lpn`); the rest is here. Integers little-endian:
//!
//! ```text
//!  0  u32  TxID: the device's id of the transaction (never 0 on a BPCC page;
//!          a host write outside transactions is a transaction of one page)
//!  4  u64  version of this page: the device's write counter when the host
//!          sent it, unique over the device (any two versions of a logical
//!          page compare in the order they were written; never 0)
//! 12  u32  next-link, logical page of the next page of the transaction
//! 16  u64  next-link, version of that page (the first page's, on the last
//!          page; a one-page transaction links to itself)
//! 24  u64  back pointer: the version of the logical page's last committed
//!          version when this page was written (0: none was committed). Every
//!          version of the page strictly between the two, written by another
//!          transaction, is *straddled*: known aborted.
//! ```
//!
//! A GC copy keeps these bytes as they are (the framework's default), so a
//! copy stands for its original; recovery counts each (TxID, page, version)
//! once whichever copies it finds.
//!
//! There is no commit record (a transaction is committed iff its cycle is
//! complete, gaps explained by newer versions no back pointer contradicts;
//! see `recovery.rs`) and no other BPCC metadata on flash: no mapping table
//! of its own, no summary pages (the framework's per-page OOB reads stand
//! for them), nothing in the checkpoints.

use txftl_ftl::{Oob, PROTOCOL_BYTES};

/// The BPCC fields of one page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct PageRecord {
    pub tx_id: u32,
    pub version: u64,
    pub next_lpn: u32,
    pub next_version: u64,
    /// The last committed version of this page when it was written (0: none).
    pub back: u64,
}

impl PageRecord {
    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = [0u8; PROTOCOL_BYTES];
        p[0..4].copy_from_slice(&self.tx_id.to_le_bytes());
        p[4..12].copy_from_slice(&self.version.to_le_bytes());
        p[12..16].copy_from_slice(&self.next_lpn.to_le_bytes());
        p[16..24].copy_from_slice(&self.next_version.to_le_bytes());
        p[24..32].copy_from_slice(&self.back.to_le_bytes());
        p
    }

    pub fn decode(p: &[u8; PROTOCOL_BYTES]) -> PageRecord {
        let u32_at = |i: usize| u32::from_le_bytes(p[i..i + 4].try_into().expect("4 bytes"));
        let u64_at = |i: usize| u64::from_le_bytes(p[i..i + 8].try_into().expect("8 bytes"));
        PageRecord {
            tx_id: u32_at(0),
            version: u64_at(4),
            next_lpn: u32_at(12),
            next_version: u64_at(16),
            back: u64_at(24),
        }
    }

    pub fn of(oob: &Oob) -> PageRecord {
        PageRecord::decode(&oob.protocol)
    }

    /// Does this page's back pointer straddle version `v` of its logical page?
    pub fn straddles(&self, v: u64) -> bool {
        self.back < v && v < self.version
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_byte_layout() {
        let r = PageRecord {
            tx_id: 7,
            version: u64::MAX - 3,
            next_lpn: 12,
            next_version: 1 << 40,
            back: 0x0102_0304_0506_0708,
        };
        let b = r.encode();
        assert_eq!(PageRecord::decode(&b), r);
        assert_eq!(&b[0..4], &7u32.to_le_bytes());
        assert_eq!(&b[12..16], &12u32.to_le_bytes());
        assert_eq!(&b[24..32], &[8, 7, 6, 5, 4, 3, 2, 1]);
    }

    #[test]
    fn straddling_is_strictly_between() {
        let r = PageRecord {
            version: 10,
            back: 4,
            ..PageRecord::default()
        };
        assert!(r.straddles(5) && r.straddles(9));
        assert!(!r.straddles(4) && !r.straddles(10) && !r.straddles(11));
    }
}
