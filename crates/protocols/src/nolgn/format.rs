//! NoLgn-FTL's on-flash format: the 8 bytes it adds to a data page's spare
//! area (§3.2, §3.6), and its section of the framework's checkpoints.
//!
//! Page tag, bytes 0..8 of the OOB record's protocol bytes (the framework's
//! record around them holds the LPN, the sequence number and the CRCs):
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..4 | tx word, u32 LE | bits 0..29: the transaction id (0: not transactional); bit 30: an old version GC moved off a retired block (never rolled forward as data: only a rollback, an abort or a recovery's, maps it); bit 31: the end flag (the transaction's last page: it is committed) |
//! | 4..8 | old PPN, u32 LE | the physical page the L2P named for this LPN before the transaction first wrote it (`u32::MAX`: none, the page was unmapped): the persistent copy of the P2P entry |
//!
//! A page written outside transactions, and a GC copy of a committed page,
//! carry 8 zero bytes (the paper: after commit "GC only migrates valid page
//! data"). A GC copy of an open transaction's page keeps its tag.
//!
//! Checkpoint section (all u32 LE): the next transaction id, the number of
//! open transactions with entries, then for each: its id (bit 31 set if its
//! end-flagged page is programmed: `write_end` came, `commit` had not), its
//! entry count, and the entries (LPN, old PPN). The checkpoint's L2P already
//! names each entry's new page (the L2P points to it from the write); the
//! section names what recovery rolls back to if no end flag turns up.

use txftl_ftl::{DeviceError, Lpn, Oob, Ppn, Result, PROTOCOL_BYTES};

/// The end flag, bit 31 of the tx word.
pub const END: u32 = 1 << 31;
/// An old version moved by GC, bit 30 of the tx word.
pub const OLD_COPY: u32 = 1 << 30;
/// The largest transaction id (30 bits).
pub const TX_ID_MAX: u32 = OLD_COPY - 1;
/// An old PPN that names no page: the logical page was unmapped.
pub const NO_PAGE: Ppn = u32::MAX;

/// What a data page's OOB says of its transaction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PageTag {
    pub tx_id: u32,
    pub end: bool,
    pub old_copy: bool,
    pub old_ppn: Ppn,
}

impl PageTag {
    /// A page outside transactions (or a committed page's GC copy).
    pub const PLAIN: PageTag = PageTag {
        tx_id: 0,
        end: false,
        old_copy: false,
        old_ppn: 0,
    };

    pub fn of(oob: &Oob) -> PageTag {
        let p = &oob.protocol;
        let word = u32::from_le_bytes([p[0], p[1], p[2], p[3]]);
        PageTag {
            tx_id: word & TX_ID_MAX,
            end: word & END != 0,
            old_copy: word & OLD_COPY != 0,
            old_ppn: u32::from_le_bytes([p[4], p[5], p[6], p[7]]),
        }
    }

    pub fn encode(&self) -> [u8; PROTOCOL_BYTES] {
        let mut b = [0u8; PROTOCOL_BYTES];
        let word = self.tx_id | if self.end { END } else { 0 } | if self.old_copy { OLD_COPY } else { 0 };
        b[0..4].copy_from_slice(&word.to_le_bytes());
        b[4..8].copy_from_slice(&self.old_ppn.to_le_bytes());
        b
    }

    /// A page of a transaction (not plain data, not a moved old version).
    pub fn is_tx(&self) -> bool {
        self.tx_id != 0 && !self.old_copy
    }
}

/// A transaction open at a checkpoint, as its section records it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OpenAtCheckpoint {
    pub tx_id: u32,
    /// Its end-flagged page was programmed (it is committed on flash).
    pub ended: bool,
    /// (LPN, old PPN) for each page it wrote.
    pub entries: Vec<(Lpn, Ppn)>,
}

/// NoLgn's checkpoint section.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Section {
    pub next_tx_id: u32,
    pub open: Vec<OpenAtCheckpoint>,
}

impl Section {
    /// Largest encoding with `entries` P2P entries live (one transaction each, at worst).
    pub fn len_max(entries: u32) -> usize {
        8 + entries as usize * 16
    }

    pub fn encode(&self) -> Vec<u8> {
        let n: usize = self.open.iter().map(|t| 8 + 8 * t.entries.len()).sum();
        let mut b = Vec::with_capacity(8 + n);
        b.extend_from_slice(&self.next_tx_id.to_le_bytes());
        b.extend_from_slice(&(self.open.len() as u32).to_le_bytes());
        for t in &self.open {
            let word = t.tx_id | if t.ended { END } else { 0 };
            b.extend_from_slice(&word.to_le_bytes());
            b.extend_from_slice(&(t.entries.len() as u32).to_le_bytes());
            for &(lpn, old) in &t.entries {
                b.extend_from_slice(&lpn.to_le_bytes());
                b.extend_from_slice(&old.to_le_bytes());
            }
        }
        b
    }

    /// An empty section (a checkpoint written before the device had one) is
    /// a device with nothing open.
    pub fn decode(b: &[u8]) -> Result<Section> {
        if b.is_empty() {
            return Ok(Section::default());
        }
        let mut r = Reader { b, at: 0 };
        let next_tx_id = r.u32()?;
        let n = r.u32()?;
        let mut open = Vec::new();
        for _ in 0..n {
            let word = r.u32()?;
            let m = r.u32()?;
            let mut entries = Vec::with_capacity(m.min(1 << 16) as usize);
            for _ in 0..m {
                entries.push((r.u32()?, r.u32()?));
            }
            open.push(OpenAtCheckpoint {
                tx_id: word & TX_ID_MAX,
                ended: word & END != 0,
                entries,
            });
        }
        Ok(Section { next_tx_id, open })
    }
}

struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u32(&mut self) -> Result<u32> {
        let Some(s) = self.b.get(self.at..self.at + 4) else {
            return Err(DeviceError::Corrupted(format!(
                "NoLgn's checkpoint section ends at byte {} of {}",
                self.at,
                self.b.len()
            )));
        };
        self.at += 4;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_ftl::PageKind;

    #[test]
    fn a_tag_survives_its_encoding() {
        let tag = PageTag {
            tx_id: TX_ID_MAX,
            end: true,
            old_copy: false,
            old_ppn: NO_PAGE,
        };
        let mut oob = Oob::new(PageKind::Data, 3, 9, 0, &[]);
        oob.protocol = tag.encode();
        assert_eq!(PageTag::of(&oob), tag);
        assert!(tag.is_tx());
        assert_eq!(PageTag::PLAIN.encode(), [0; PROTOCOL_BYTES]);
    }

    #[test]
    fn a_section_survives_its_encoding_and_a_cut_one_is_refused() {
        let s = Section {
            next_tx_id: 42,
            open: vec![
                OpenAtCheckpoint {
                    tx_id: 7,
                    ended: true,
                    entries: vec![(1, 100), (2, NO_PAGE)],
                },
                OpenAtCheckpoint {
                    tx_id: 9,
                    ended: false,
                    entries: vec![(5, 3)],
                },
            ],
        };
        let b = s.encode();
        assert!(b.len() <= Section::len_max(3));
        assert_eq!(Section::decode(&b).unwrap(), s);
        assert!(Section::decode(&b[..b.len() - 2]).is_err());
        assert_eq!(Section::decode(&[]).unwrap(), Section::default());
    }
}
