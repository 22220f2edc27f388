//! Flag Commit's on-flash format (On et al., IEEE TKDE, §3.1, Fig. 4): the
//! spare area of every data page, shared by CFC and AFC.
//!
//! # Page metadata (the OOB record, `txftl_ftl::oob`)
//!
//! The paper's fields are LBA, Version, XID, Link and the commit flag; it
//! gives no sizes. The LBA is the framework's own field (`Oob::lpn`). The
//! rest are the first 12 of the record's 32 protocol bytes (bytes 4..16 of
//! the record, inside its CRC), and the flag is the first of the record's
//! four flag bytes (byte 56, outside the CRC, so that a partial program may
//! clear its bits later). Integers little-endian:
//!
//! ```text
//! protocol bytes
//!  0  u32  XID: the device's transaction id (never 0; never reused: a
//!          mount resumes above the largest found on flash)
//!  4  u32  Version: a device-wide write stamp, one above every Version
//!          written or found on flash before (the first write is 1; a mount
//!          resumes above the largest found), so a logical page's newer
//!          write carries the larger Version. A GC copy keeps it: the
//!          framework's sequence number is fresh for every copy. DRAM keeps
//!          only the last one, not one a logical page (§3.1.2).
//!  8  u32  Link: the physical page of the same transaction this page links
//!          to (its transaction's previous page; for a GC copy, the planned
//!          target), or 0xFFFF_FFFF: none
//! 12..32   zero
//! flag bytes (record bytes 56..60)
//!  0  u8   commit flag (CFC: bit 0; AFC: bits 1..0), see below
//!  1..4    0xFF
//! ```
//!
//! CFC's flag is one bit: 1 FALSE (as programmed), 0 TRUE (one partial
//! program clears it): 0xFF FALSE, 0xFE TRUE. AFC's is two bits, read as
//! bits 1..0: "11" FALSE as programmed (a transaction's first page), "10"
//! TRUE as programmed (its other pages) or after a commit's partial program
//! clears bit 0, "00" FALSE after GC's partial program clears bit 1 (§3.2).
//! A torn partial program clears a subset of the bits it was clearing, so a
//! flag reads as either its old or its new value.
//!
//! A link counts only if the page it names is on flash in a block in use,
//! of the same XID, and older (a smaller sequence number): a link into a
//! page erased and programmed again names some other page, or a younger
//! page of the same transaction (digest A8.2).

use txftl_ftl::{Oob, SpareBytes, FLAG_BYTES, PROTOCOL_BYTES};
use txftl_nand::Ppn;

/// No link.
pub const NO_LINK: u32 = u32::MAX;

/// Protocol bytes a page uses (the packed width a metadata-only array keeps).
pub const USED_BYTES: usize = 12;

/// CFC's FALSE and TRUE, and the bit a commit clears.
pub const CFC_FALSE: u8 = 0xFF;
pub const CFC_TRUE: u8 = 0xFE;
/// AFC's "11", "10" and "00" (bits 1..0 of the flag byte).
pub const AFC_FALSE: u8 = 0xFF;
pub const AFC_TRUE: u8 = 0xFE;
pub const AFC_FALSE_AGAIN: u8 = 0xFC;
/// The bit a commit clears (CFC: FALSE -> TRUE; AFC: "11" -> "10").
pub const COMMIT_BIT: u8 = 0x01;
/// The bit AFC's GC clears to move a FALSE ("10" -> "00").
pub const FALSE_BIT: u8 = 0x02;

/// A flag program's mask: clear `bits` of the commit flag.
pub fn clear(bits: u8) -> [u8; FLAG_BYTES] {
    let mut c = [0u8; FLAG_BYTES];
    c[0] = bits;
    c
}

/// The Flag Commit fields of one page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageMeta {
    pub xid: u32,
    pub version: u32,
    pub link: Option<Ppn>,
    /// The commit flag byte as it reads.
    pub flag: u8,
}

impl PageMeta {
    /// The fields of `oob`, or None: not a Flag Commit page (XID 0).
    pub fn of(oob: &Oob) -> Option<PageMeta> {
        let u = |i: usize| u32::from_le_bytes(oob.protocol[i..i + 4].try_into().expect("4 bytes"));
        let xid = u(0);
        (xid != 0).then(|| PageMeta {
            xid,
            version: u(4),
            link: Some(u(8)).filter(|&l| l != NO_LINK),
            flag: oob.flag_bytes[0],
        })
    }

    /// The record's bytes: protocol bytes and flags.
    pub fn bytes(&self) -> SpareBytes {
        let mut protocol = [0u8; PROTOCOL_BYTES];
        protocol[0..4].copy_from_slice(&self.xid.to_le_bytes());
        protocol[4..8].copy_from_slice(&self.version.to_le_bytes());
        protocol[8..12].copy_from_slice(&self.link.unwrap_or(NO_LINK).to_le_bytes());
        let mut flags = [0xFF; FLAG_BYTES];
        flags[0] = self.flag;
        SpareBytes { protocol, flags }
    }
}

/// CFC: the flag reads TRUE.
pub fn cfc_true(flag: u8) -> bool {
    flag & COMMIT_BIT == 0
}

/// AFC: the flag reads TRUE ("10").
pub fn afc_true(flag: u8) -> bool {
    flag & 0x03 == 0x02
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_ftl::PageKind;

    #[test]
    fn page_meta_round_trips_through_the_record() {
        let m = PageMeta {
            xid: 7,
            version: 3,
            link: Some(1234),
            flag: CFC_TRUE,
        };
        let mut oob = Oob::new(PageKind::Data, 5, 9, 0, &[]);
        let b = m.bytes();
        oob.protocol = b.protocol;
        oob.flag_bytes = b.flags;
        assert_eq!(PageMeta::of(&oob), Some(m));
        let none = PageMeta { link: None, ..m };
        oob.protocol = none.bytes().protocol;
        assert_eq!(PageMeta::of(&oob).unwrap().link, None);
        assert!(cfc_true(CFC_TRUE) && !cfc_true(CFC_FALSE));
        assert!(afc_true(AFC_TRUE) && !afc_true(AFC_FALSE) && !afc_true(AFC_FALSE_AGAIN));
        // A torn AFC GC move ("10" -> "00", bit 1 cleared or not) reads old or new.
        assert!(afc_true(AFC_TRUE) && !afc_true(AFC_TRUE & !FALSE_BIT));
    }
}
