//! The extended Flag Commit's on-flash format (On et al., IEEE TKDE, §4.2,
//! Fig. 10): the spare area of every data page, shared by CFC_ex and AFC_ex.
//!
//! # Page metadata (the OOB record, `txftl_ftl::oob`)
//!
//! A page version holds the whole logical page as the host wrote it, with
//! up to four *entries*: one per open transaction whose record in the page
//! is pending. The paper's entry is ⟨RID, Link, XID, CommitFlag⟩ plus the
//! page's Version and Back. The record's 32 protocol bytes hold the
//! Version and four entries of XID and Link; the four flag bytes (outside
//! the record's CRC, so a partial program can clear their bits) hold one
//! commit flag each. Integers little-endian:
//!
//! ```text
//! protocol bytes
//!  0  u32  Version: a device-wide write stamp, one above every Version
//!          written or found on flash before; a GC copy keeps it. A
//!          logical page's versions are ordered by it.
//!  4 + 7i, i in 0..4: entry i
//!     u24  XID: the device's transaction id (0: no entry i; never reused:
//!          a mount resumes above the largest found)
//!     u32  Link: the physical page holding the transaction's previous
//!          entry (its entry there is the one of the same XID), or
//!          0xFFFF_FFFF: none
//! flag bytes (record bytes 56..60)
//!  i  u8   entry i's commit flag (CFC: bit 0; AFC: bits 1..0), 0xFF for
//!          no entry; byte 0's bit 7, programmed 0 (never cleared later):
//!          the version is *self-contained*: its host's layout holds every
//!          pending record's committed value beneath it, so a reader needs
//!          no older version (`RecordTx::write_contained`); bit 6,
//!          programmed 0: a *whole-page* version (`write_tx`: its one
//!          entry's record is the whole page, so once that aborted it holds
//!          nothing a reader takes)
//! ```
//!
//! The flags read as the basic protocols' do (`crate::flagcommit::format`):
//! CFC 0xFF FALSE, 0xFE TRUE; AFC "11" FALSE as programmed (a transaction's
//! first entry), "10" TRUE, "00" FALSE again (GC moved it, or a copy of an
//! aborted transaction's entry).
//!
//! Deviations, both forced by the paper's 64-byte spare area (footnote 9
//! assumes room for the pending records): the XID is 24 bits (a device
//! takes 16,777,214 transactions, then refuses with a typed error), and
//! the record ids (RID) and the Back pointer are not in the spare area.
//! The RIDs are the host's: its page layout lists its pending records in
//! entry order (`txftl_dbms` does). Back is implied: a mount scans every
//! page and orders a logical page's versions by Version, which is what the
//! paper's Back chain is for (§4.3, merging versions).

use txftl_ftl::{Oob, SpareBytes, FLAG_BYTES, PROTOCOL_BYTES};
use txftl_nand::Ppn;

/// Entries a page holds at most (the format's bound on `max_c`).
pub const MAX_ENTRIES: usize = 4;
/// No link.
pub const NO_LINK: u32 = u32::MAX;
/// The largest XID 24 bits hold.
pub const XID_MAX: u32 = (1 << 24) - 1;
/// Protocol bytes a page uses (all of them).
pub const USED_BYTES: usize = 4 + 7 * MAX_ENTRIES;
const _: () = assert!(USED_BYTES <= PROTOCOL_BYTES && MAX_ENTRIES <= FLAG_BYTES);

/// One entry: a pending record's transaction, link and flag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub xid: u32,
    pub link: Option<Ppn>,
    pub flag: u8,
}

/// The extended Flag Commit fields of one page version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionMeta {
    pub version: u32,
    pub entries: Vec<Entry>,
    /// Self-contained (flag byte 0, bit 7 programmed 0; only with entries).
    pub contained: bool,
    /// Whole-page (flag byte 0, bit 6 programmed 0; only with entries).
    pub whole: bool,
}

/// Flag byte 0's bit that, programmed 0, marks a self-contained version.
pub const CONTAINED_BIT: u8 = 0x80;
/// Flag byte 0's bit that, programmed 0, marks a whole-page version.
pub const WHOLE_BIT: u8 = 0x40;
/// Flag byte 0's bits that are not entry 0's flag.
const MARK_BITS: u8 = CONTAINED_BIT | WHOLE_BIT;

impl VersionMeta {
    /// The fields of `oob`, or None: not a page of this format (Version 0).
    pub fn of(oob: &Oob) -> Option<VersionMeta> {
        let p = &oob.protocol;
        let version = u32::from_le_bytes(p[0..4].try_into().expect("4 bytes"));
        if version == 0 {
            return None;
        }
        let mut entries = Vec::new();
        for i in 0..MAX_ENTRIES {
            let at = 4 + 7 * i;
            let xid = u32::from_le_bytes([p[at], p[at + 1], p[at + 2], 0]);
            if xid == 0 {
                continue;
            }
            let link = u32::from_le_bytes(p[at + 3..at + 7].try_into().expect("4 bytes"));
            // Byte 0's marks are not the flag's: read as programmed 1.
            let marks = if i == 0 { MARK_BITS } else { 0 };
            entries.push(Entry {
                xid,
                link: Some(link).filter(|&l| l != NO_LINK),
                flag: oob.flag_bytes[i] | marks,
            });
        }
        let contained = !entries.is_empty() && oob.flag_bytes[0] & CONTAINED_BIT == 0;
        let whole = !entries.is_empty() && oob.flag_bytes[0] & WHOLE_BIT == 0;
        Some(VersionMeta {
            version,
            entries,
            contained,
            whole,
        })
    }

    /// The record's bytes: protocol bytes and flags.
    pub fn bytes(&self) -> SpareBytes {
        assert!(self.version != 0, "Version 0 marks a page of no version");
        assert!(self.entries.len() <= MAX_ENTRIES, "{} entries in one page", self.entries.len());
        let mut protocol = [0u8; PROTOCOL_BYTES];
        protocol[0..4].copy_from_slice(&self.version.to_le_bytes());
        let mut flags = [0xFF; FLAG_BYTES];
        for (i, e) in self.entries.iter().enumerate() {
            assert!(e.xid != 0 && e.xid <= XID_MAX, "XID {} does not fit 24 bits", e.xid);
            let at = 4 + 7 * i;
            protocol[at..at + 3].copy_from_slice(&e.xid.to_le_bytes()[..3]);
            protocol[at + 3..at + 7].copy_from_slice(&e.link.unwrap_or(NO_LINK).to_le_bytes());
            flags[i] = e.flag;
        }
        if self.contained && !self.entries.is_empty() {
            flags[0] &= !CONTAINED_BIT;
        }
        if self.whole && !self.entries.is_empty() {
            flags[0] &= !WHOLE_BIT;
        }
        SpareBytes { protocol, flags }
    }

    /// The index of `xid`'s entry.
    pub fn index_of(&self, xid: u32) -> Option<usize> {
        self.entries.iter().position(|e| e.xid == xid)
    }
}

/// A flag program's mask: clear `bits` of entry `index`'s flag.
pub fn clear_at(index: usize, bits: u8) -> [u8; FLAG_BYTES] {
    let mut c = [0u8; FLAG_BYTES];
    c[index] = bits;
    c
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_ftl::PageKind;

    #[test]
    fn version_meta_round_trips_through_the_record() {
        let m = VersionMeta {
            version: 9,
            entries: vec![
                Entry {
                    xid: 3,
                    link: None,
                    flag: 0xFF,
                },
                Entry {
                    xid: XID_MAX,
                    link: Some(77),
                    flag: 0xFE,
                },
            ],
            contained: true,
            whole: false,
        };
        let mut oob = Oob::new(PageKind::Data, 5, 9, 0, &[]);
        let b = m.bytes();
        oob.protocol = b.protocol;
        oob.flag_bytes = b.flags;
        assert_eq!(VersionMeta::of(&oob), Some(m.clone()));
        assert_eq!(m.index_of(XID_MAX), Some(1));
        assert_eq!(b.flags[0], 0x7F, "entry 0's flag beside the contained bit");
        let plain = VersionMeta {
            version: 1,
            entries: vec![],
            contained: false,
            whole: false,
        };
        oob.protocol = plain.bytes().protocol;
        assert_eq!(VersionMeta::of(&oob).unwrap().entries, vec![]);
        oob.protocol = [0; PROTOCOL_BYTES];
        assert_eq!(VersionMeta::of(&oob), None);
        assert_eq!(clear_at(2, 1), [0, 0, 1, 0]);
    }
}
