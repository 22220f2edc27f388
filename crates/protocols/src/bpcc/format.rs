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
//! (`Oob::lpn`). Bytes 0..24 are SCC's cycle fields, encoded by
//! `crate::cycle::link` (`PageLink`, where each field is described); the
//! back pointer follows them. Integers little-endian:
//!
//! ```text
//!  0  u32  TxID (never 0 on a BPCC page)            } cycle::link
//!  4  u64  version of this page (never 0)            }
//! 12  u32  next-link, logical page                   }
//! 16  u64  next-link, version                        }
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
//! of its own, nothing in the checkpoints. With `summary-pages=1` the last
//! page of every data block is the framework's summary page (`txftl_ftl`'s
//! `summary.rs`), and the root records that at format
//! (`crate::cycle::summary`).

use crate::cycle::{link::u64_at, PageLink, LINK_BYTES};
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
    /// Its cycle fields, bytes 0..24.
    pub fn link(&self) -> PageLink {
        PageLink {
            tx_id: self.tx_id,
            version: self.version,
            next_lpn: self.next_lpn,
            next_version: self.next_version,
        }
    }

    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut p = self.link().encode();
        p[LINK_BYTES..LINK_BYTES + 8].copy_from_slice(&self.back.to_le_bytes());
        p
    }

    pub fn decode(p: &[u8; PROTOCOL_BYTES]) -> PageRecord {
        let l = PageLink::decode(p);
        PageRecord {
            tx_id: l.tx_id,
            version: l.version,
            next_lpn: l.next_lpn,
            next_version: l.next_version,
            back: u64_at(p, LINK_BYTES),
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
        // The cycle fields are SCC's, byte for byte.
        assert_eq!(&b[..LINK_BYTES], &r.link().encode()[..LINK_BYTES]);
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
