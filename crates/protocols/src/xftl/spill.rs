//! The X-L2P table's spilled part: when the DRAM table has no free slot for a
//! write, the active entries of one transaction leave it for *spill pages*,
//! table pages of that transaction alone, programmed to the data pool (the log
//! ring is sized for the DRAM table, while a transaction may be as large as
//! the device's free space). The DRAM slots are then free again.
//!
//! A spill page is written when it is made, and again whenever one of its
//! entries changes (the transaction rewrites the page, or GC moves a page an
//! entry names): it is marked dirty in DRAM and written again before the
//! transaction commits, like a DRAM table page. Commit writes, in its commit
//! group in the log ring, *spill index pages* naming every current spill page
//! of the transaction with the CRC of its bytes (`page.rs`); recovery reads
//! the pages they name (and nothing else) and applies their entries at the
//! commit. A commit that spilled is followed by a checkpoint before it
//! returns, so the spill pages are needed only between the commit group and
//! that checkpoint, and GC never moves them in between (nothing programs a
//! data page there).
//!
//! In DRAM: per spilled transaction, its spill pages (where each is, its CRC,
//! its logical pages, dirty or not) and its spilled entries as a compact map
//! (logical page -> physical page and spill page number, 12 bytes, against a
//! table slot's 64), which serves reads of the transaction's own writes, GC's
//! pins and the rewrites; and per pinned physical page, what pins it.

use super::table::Entry;
use std::collections::BTreeMap;
use txftl_ftl::{Lpn, Ppn, Tid};

/// Spill page header bytes (see [`encode_page`]).
pub const SPILL_HEADER_BYTES: usize = 24;
const SPILL_MAGIC: &[u8; 8] = b"TXFTLXE1";
/// Bytes of a spilled entry on flash: logical page, physical page.
pub const SPILL_ENTRY_BYTES: usize = 8;

/// Spilled entries one spill page holds.
pub fn entries_per_spill_page(page_size: u32) -> u32 {
    (page_size.saturating_sub(SPILL_HEADER_BYTES as u32) / SPILL_ENTRY_BYTES as u32).max(1)
}

/// What pins a physical page for GC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pin {
    /// The uncommitted copy of `lpn` a spilled entry of `tid` names.
    Data { tid: Tid, lpn: Lpn },
    /// Spill page number `n` of `tid`.
    Page { tid: Tid, n: u32 },
}

#[derive(Clone, Debug, Default)]
struct SpillPage {
    lpns: Vec<Lpn>,
    /// Where its current version is on flash, and the CRC-32 of its bytes.
    at: Option<(Ppn, u32)>,
    /// Changed since written (or never written).
    dirty: bool,
}

#[derive(Clone, Debug, Default)]
struct SpillTx {
    pages: Vec<SpillPage>,
    /// Logical page -> (physical page, spill page number).
    entries: BTreeMap<Lpn, (Ppn, u32)>,
}

/// The spilled part of the table, for every active transaction that spilled.
#[derive(Clone, Debug, Default)]
pub struct Spill {
    txs: BTreeMap<Tid, SpillTx>,
    pins: BTreeMap<Ppn, Pin>,
}

impl Spill {
    pub fn has(&self, tid: Tid) -> bool {
        self.txs.contains_key(&tid)
    }

    /// `tid`'s spilled copy of `lpn`.
    pub fn get(&self, tid: Tid, lpn: Lpn) -> Option<Ppn> {
        self.txs.get(&tid)?.entries.get(&lpn).map(|&(ppn, _)| ppn)
    }

    pub fn is_pinned(&self, ppn: Ppn) -> bool {
        self.pins.contains_key(&ppn)
    }

    /// Pinned pages in `first..end` (a range query: GC asks per block).
    pub fn pinned_in(&self, first: Ppn, end: Ppn) -> u32 {
        self.pins.range(first..end).count() as u32
    }

    /// Does a spilled entry of `tid` name a page in `first..end`?
    pub fn names_data_of(&self, tid: Tid, first: Ppn, end: Ppn) -> bool {
        self.pins.range(first..end).any(|(_, pin)| matches!(pin, Pin::Data { tid: t, .. } if *t == tid))
    }

    pub fn pins(&self) -> impl Iterator<Item = (Ppn, Pin)> + '_ {
        self.pins.iter().map(|(&p, &pin)| (p, pin))
    }

    /// Moves `tid`'s active entries `entries` (taken out of the DRAM table)
    /// to new spill pages of at most `per_page` entries each, dirty.
    pub fn add(&mut self, tid: Tid, entries: &[Entry], per_page: u32) {
        let tx = self.txs.entry(tid).or_default();
        for chunk in entries.chunks(per_page.max(1) as usize) {
            let n = tx.pages.len() as u32;
            for e in chunk {
                debug_assert!(!tx.entries.contains_key(&e.lpn), "a transaction's page is in the DRAM table or spilled, not both");
                tx.entries.insert(e.lpn, (e.ppn, n));
                self.pins.insert(e.ppn, Pin::Data { tid, lpn: e.lpn });
            }
            tx.pages.push(SpillPage {
                lpns: chunk.iter().map(|e| e.lpn).collect(),
                at: None,
                dirty: true,
            });
        }
    }

    /// `tid` wrote `lpn` again, at `ppn`: if the entry is spilled, it is
    /// updated (its page is dirty, the older copy is dead). False otherwise.
    pub fn update(&mut self, tid: Tid, lpn: Lpn, ppn: Ppn) -> bool {
        let Some(tx) = self.txs.get_mut(&tid) else { return false };
        let Some(slot) = tx.entries.get_mut(&lpn) else { return false };
        self.pins.remove(&slot.0);
        slot.0 = ppn;
        tx.pages[slot.1 as usize].dirty = true;
        self.pins.insert(ppn, Pin::Data { tid, lpn });
        true
    }

    /// GC moved a page from `old` to `new`: a pinned one keeps its pin, and
    /// a spilled entry naming it makes its spill page dirty.
    pub fn relocate(&mut self, old: Ppn, new: Ppn) {
        let Some(pin) = self.pins.remove(&old) else { return };
        self.pins.insert(new, pin);
        match pin {
            Pin::Data { tid, lpn } => {
                let tx = self.txs.get_mut(&tid).expect("a pin's transaction spilled");
                let slot = tx.entries.get_mut(&lpn).expect("a pin's entry is spilled");
                slot.0 = new;
                tx.pages[slot.1 as usize].dirty = true;
            }
            Pin::Page { tid, n } => {
                let page = &mut self.txs.get_mut(&tid).expect("a pin's transaction spilled").pages[n as usize];
                let crc = page.at.expect("a pinned spill page is written").1;
                page.at = Some((new, crc));
            }
        }
    }

    /// `tid`'s spill pages that must be written (again), in order.
    pub fn dirty_pages(&self, tid: Tid) -> Vec<u32> {
        let Some(tx) = self.txs.get(&tid) else { return Vec::new() };
        (0..tx.pages.len() as u32).filter(|&n| tx.pages[n as usize].dirty).collect()
    }

    /// The first logical page of spill page `n` (its OOB names it, as a
    /// data page's does).
    pub fn first_lpn(&self, tid: Tid, n: u32) -> Lpn {
        self.txs[&tid].pages[n as usize].lpns[0]
    }

    /// Encodes spill page `n` of `tid` into `page` and marks it clean (a
    /// change from now on makes it dirty again). Returns its CRC-32.
    pub fn encode(&mut self, tid: Tid, n: u32, page: &mut [u8]) -> u32 {
        let tx = self.txs.get_mut(&tid).expect("encoded page's transaction spilled");
        let entries: Vec<(Lpn, Ppn)> = tx.pages[n as usize].lpns.iter().map(|l| (*l, tx.entries[l].0)).collect();
        tx.pages[n as usize].dirty = false;
        encode_page(tid, n, &entries, page);
        crc32fast::hash(page)
    }

    /// Spill page `n` of `tid` must be written (again): its write failed.
    pub fn mark_dirty(&mut self, tid: Tid, n: u32) {
        if let Some(tx) = self.txs.get_mut(&tid) {
            tx.pages[n as usize].dirty = true;
        }
    }

    /// Spill page `n` of `tid` is on flash at `ppn`: the previous version is dead.
    pub fn written(&mut self, tid: Tid, n: u32, ppn: Ppn, crc: u32) {
        let page = &mut self.txs.get_mut(&tid).expect("written page's transaction spilled").pages[n as usize];
        if let Some((old, _)) = page.at.replace((ppn, crc)) {
            self.pins.remove(&old);
        }
        self.pins.insert(ppn, Pin::Page { tid, n });
    }

    /// Where `tid`'s spill pages are, with their CRCs (every one written).
    pub fn refs(&self, tid: Tid) -> Vec<(Ppn, u32)> {
        let Some(tx) = self.txs.get(&tid) else { return Vec::new() };
        tx.pages.iter().map(|p| p.at.expect("every spill page is written before commit")).collect()
    }

    /// `tid`'s spilled entries (logical page, physical page).
    pub fn entries(&self, tid: Tid) -> Vec<(Lpn, Ppn)> {
        let Some(tx) = self.txs.get(&tid) else { return Vec::new() };
        tx.entries.iter().map(|(&l, &(p, _))| (l, p)).collect()
    }

    /// `tid` ended (committed and checkpointed, or aborted): its spilled
    /// entries and pages go, and their pins.
    pub fn drop_tx(&mut self, tid: Tid) {
        let Some(tx) = self.txs.remove(&tid) else { return };
        for (ppn, _) in tx.entries.values() {
            self.pins.remove(ppn);
        }
        for (ppn, _) in tx.pages.iter().filter_map(|p| p.at) {
            self.pins.remove(&ppn);
        }
    }
}

/// Writes a spill page (the data area of a data-pool page), integers little-endian:
///
/// ```text
///  0  [u8; 8]  magic "TXFTLXE1"
///  8  u32      transaction id t
/// 12  u32      spill page number n of t (0-based, in the order t spilled)
/// 16  u32      entries N
/// 20  u32      0
/// 24  N x 8    entries: u32 logical page, u32 physical page of t's copy
/// ```
/// The rest of the page is zero. The page's OOB record is a data page's
/// (kind `Data`, the first entry's logical page, a sequence number, the CRC
/// of these bytes) with protocol bytes 0..4 = t and byte 4 = 1 (a spill page,
/// not t's data): it is never rolled forward (t is not 0). The commit's
/// spill index pages (`page.rs`) name it with the CRC-32 of these bytes, so
/// recovery knows it holds the version the commit meant.
pub fn encode_page(tid: Tid, n: u32, entries: &[(Lpn, Ppn)], page: &mut [u8]) {
    assert!(SPILL_HEADER_BYTES + entries.len() * SPILL_ENTRY_BYTES <= page.len(), "spill page overflows");
    page.fill(0);
    page[0..8].copy_from_slice(SPILL_MAGIC);
    page[8..12].copy_from_slice(&tid.to_le_bytes());
    page[12..16].copy_from_slice(&n.to_le_bytes());
    page[16..20].copy_from_slice(&(entries.len() as u32).to_le_bytes());
    for (i, (lpn, ppn)) in entries.iter().enumerate() {
        let at = SPILL_HEADER_BYTES + i * SPILL_ENTRY_BYTES;
        page[at..at + 4].copy_from_slice(&lpn.to_le_bytes());
        page[at + 4..at + 8].copy_from_slice(&ppn.to_le_bytes());
    }
}

/// Reads a spill page of `tid`: its entries, or why it is not one.
pub fn decode_page(tid: Tid, page: &[u8]) -> Result<Vec<(Lpn, Ppn)>, String> {
    if page.len() < SPILL_HEADER_BYTES || &page[0..8] != SPILL_MAGIC {
        return Err("not a spill page".into());
    }
    let u32_at = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().expect("4 bytes"));
    if u32_at(8) != tid {
        return Err(format!("spill page of transaction {}, not {tid}", u32_at(8)));
    }
    let count = u32_at(16) as usize;
    if SPILL_HEADER_BYTES + count * SPILL_ENTRY_BYTES > page.len() {
        return Err(format!("spill page claims {count} entries"));
    }
    Ok((0..count)
        .map(|i| {
            let at = SPILL_HEADER_BYTES + i * SPILL_ENTRY_BYTES;
            (u32_at(at), u32_at(at + 4))
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::xftl::table::Status;

    fn active(lpn: Lpn, ppn: Ppn) -> Entry {
        Entry {
            tid: 7,
            lpn,
            ppn,
            status: Status::Active,
        }
    }

    #[test]
    fn round_trip_and_pins_follow_gc() {
        let mut s = Spill::default();
        s.add(7, &[active(1, 10), active(2, 11), active(3, 12)], 2);
        assert_eq!(s.dirty_pages(7), vec![0, 1]);
        let mut buf = vec![0xAAu8; 512];
        for n in 0..2 {
            let crc = s.encode(7, n, &mut buf);
            s.written(7, n, 100 + n, crc);
        }
        assert!(s.dirty_pages(7).is_empty());
        assert_eq!(decode_page(7, &buf), Ok(vec![(3, 12)]));
        assert!(decode_page(8, &buf).is_err());
        // GC moves a data page an entry names: the entry follows, its page is dirty.
        s.relocate(11, 50);
        assert_eq!((s.get(7, 2), s.dirty_pages(7)), (Some(50), vec![0]));
        // GC moves a spill page: it stays clean, at its new place.
        s.relocate(101, 60);
        assert_eq!(s.refs(7)[1].0, 60);
        assert!(s.update(7, 3, 13) && !s.is_pinned(12) && s.is_pinned(13));
        assert_eq!(s.pinned_in(0, 100), 4, "3 data pages and the moved spill page");
        s.drop_tx(7);
        assert_eq!(s.pinned_in(0, u32::MAX), 0);
    }
}
