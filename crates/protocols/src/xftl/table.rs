//! The X-L2P table: one entry (tid, logical page, new physical page, status)
//! per page a transaction updated, beside the L2P (X-FTL, SIGMOD 2013, sec. 5.3).
//!
//! On flash the whole table is one record of the protocol's ring, written
//! copy-on-write at every commit (integers little-endian):
//!
//! ```text
//!  0  [u8; 8]  magic "TXFTLXT1"
//!  8  u32      capacity C (entries)
//! 12  u32      reserved (0)
//! 16  C x 16   entries: u32 tid, u32 logical page, u32 physical page,
//!              u8 status (0 free slot, 1 active, 2 committed, 3 aborted), 3 bytes reserved
//! ```
//! 500 entries take 8,016 bytes: one 8 KiB page, as in the paper. The record's
//! sequence number and CRC live in the superblock that names it.

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Ppn, Tid};

pub const ENTRY_BYTES: usize = 16;
const HEADER_BYTES: usize = 16;
const MAGIC: &[u8; 8] = b"TXFTLXT1";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Active = 1,
    Committed = 2,
    Aborted = 3,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tid: Tid,
    pub lpn: Lpn,
    pub ppn: Ppn,
    pub status: Status,
}

/// The table is full of active entries: the host must commit or abort a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

#[derive(Clone, Debug)]
pub struct XL2P {
    slots: Vec<Option<Entry>>,
    /// (tid, lpn) -> slot.
    by_tx: BTreeMap<(Tid, Lpn), usize>,
    /// physical page -> slot.
    by_ppn: BTreeMap<Ppn, usize>,
    /// lpn -> committed slots (at most one, kept as a set for safety).
    committed_by_lpn: BTreeMap<Lpn, BTreeSet<usize>>,
    free: BTreeSet<usize>,
    /// The table as it goes to flash, kept up to date slot by slot (a commit
    /// writes it as is instead of encoding 500 entries).
    encoded: Vec<u8>,
}

impl XL2P {
    pub fn new(capacity: u32) -> XL2P {
        XL2P {
            slots: vec![None; capacity as usize],
            by_tx: BTreeMap::new(),
            by_ppn: BTreeMap::new(),
            committed_by_lpn: BTreeMap::new(),
            free: (0..capacity as usize).collect(),
            encoded: {
                let mut e = vec![0u8; Self::encoded_len(capacity)];
                e[0..8].copy_from_slice(MAGIC);
                e[8..12].copy_from_slice(&capacity.to_le_bytes());
                e
            },
        }
    }

    /// Re-encodes one slot into the table image.
    fn sync_slot(&mut self, slot: usize) {
        let rec = &mut self.encoded[HEADER_BYTES + slot * ENTRY_BYTES..HEADER_BYTES + (slot + 1) * ENTRY_BYTES];
        rec.fill(0);
        if let Some(e) = &self.slots[slot] {
            rec[0..4].copy_from_slice(&e.tid.to_le_bytes());
            rec[4..8].copy_from_slice(&e.lpn.to_le_bytes());
            rec[8..12].copy_from_slice(&e.ppn.to_le_bytes());
            rec[12] = e.status as u8;
        }
    }

    pub fn capacity(&self) -> u32 {
        self.slots.len() as u32
    }
    pub fn len(&self) -> usize {
        self.slots.len() - self.free.len()
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    pub fn encoded_len(capacity: u32) -> usize {
        HEADER_BYTES + ENTRY_BYTES * capacity as usize
    }

    pub fn entries(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.slots.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    pub fn get(&self, tid: Tid, lpn: Lpn) -> Option<Entry> {
        self.by_tx.get(&(tid, lpn)).and_then(|&s| self.slots[s])
    }

    pub fn by_ppn(&self, ppn: Ppn) -> Option<Entry> {
        self.by_ppn.get(&ppn).and_then(|&s| self.slots[s])
    }

    /// Active entries pointing into physical pages `first..end`.
    pub fn active_in(&self, first: Ppn, end: Ppn) -> u32 {
        self.by_ppn
            .range(first..end)
            .filter(|(_, &s)| self.slots[s].is_some_and(|e| e.status == Status::Active))
            .count() as u32
    }

    pub fn has_committed(&self) -> bool {
        !self.committed_by_lpn.is_empty()
    }

    /// Would a write by `tid` to `lpn` need a new slot that is not there?
    pub fn needs_slot(&self, tid: Tid, lpn: Lpn) -> bool {
        !self.by_tx.contains_key(&(tid, lpn)) && self.free.is_empty()
    }

    /// Records that `tid` wrote `lpn` at `ppn`: a new active entry, or the
    /// existing entry updated (a page updated again by the same transaction).
    /// Returns the physical page the entry pointed to before, if any.
    pub fn upsert(&mut self, tid: Tid, lpn: Lpn, ppn: Ppn) -> Result<Option<Ppn>, Full> {
        if let Some(&slot) = self.by_tx.get(&(tid, lpn)) {
            let e = self.slots[slot].as_mut().expect("indexed slot is used");
            let old = e.ppn;
            self.by_ppn.remove(&old);
            e.ppn = ppn;
            self.by_ppn.insert(ppn, slot);
            self.sync_slot(slot);
            return Ok(Some(old));
        }
        let slot = self.free.pop_first().ok_or(Full)?;
        self.slots[slot] = Some(Entry {
            tid,
            lpn,
            ppn,
            status: Status::Active,
        });
        self.by_tx.insert((tid, lpn), slot);
        self.by_ppn.insert(ppn, slot);
        self.sync_slot(slot);
        Ok(None)
    }

    /// Slots of a transaction's entries.
    pub fn slots_of(&self, tid: Tid) -> Vec<usize> {
        self.by_tx.range((tid, 0)..=(tid, Lpn::MAX)).map(|(_, &s)| s).collect()
    }

    pub fn entry(&self, slot: usize) -> Entry {
        self.slots[slot].expect("slot in use")
    }

    pub fn set_status(&mut self, slot: usize, status: Status) {
        let e = self.slots[slot].expect("slot in use");
        if e.status == Status::Committed {
            self.unindex_committed(e.lpn, slot);
        }
        self.slots[slot].as_mut().expect("slot in use").status = status;
        if status == Status::Committed {
            self.committed_by_lpn.entry(e.lpn).or_default().insert(slot);
        }
        self.sync_slot(slot);
    }

    fn unindex_committed(&mut self, lpn: Lpn, slot: usize) {
        if let Some(set) = self.committed_by_lpn.get_mut(&lpn) {
            set.remove(&slot);
            if set.is_empty() {
                self.committed_by_lpn.remove(&lpn);
            }
        }
    }

    pub fn remove(&mut self, slot: usize) {
        if let Some(e) = self.slots[slot].take() {
            self.by_tx.remove(&(e.tid, e.lpn));
            if self.by_ppn.get(&e.ppn) == Some(&slot) {
                self.by_ppn.remove(&e.ppn);
            }
            if e.status == Status::Committed {
                self.unindex_committed(e.lpn, slot);
            }
            self.free.insert(slot);
            self.sync_slot(slot);
        }
    }

    /// Drops committed entries for `lpn`: a newer write, trim or commit superseded them.
    pub fn drop_committed_for(&mut self, lpn: Lpn) {
        if let Some(set) = self.committed_by_lpn.remove(&lpn) {
            for slot in set {
                self.remove(slot);
            }
        }
    }

    /// Drops every committed entry: a durable L2P checkpoint covers them.
    pub fn drop_committed(&mut self) {
        let slots: Vec<usize> = self.committed_by_lpn.values().flatten().copied().collect();
        for slot in slots {
            self.remove(slot);
        }
    }

    /// GC moved a page an entry points to.
    pub fn relocate(&mut self, old: Ppn, new: Ppn) {
        if let Some(slot) = self.by_ppn.remove(&old) {
            self.slots[slot].as_mut().expect("indexed slot is used").ppn = new;
            self.by_ppn.insert(new, slot);
            self.sync_slot(slot);
        }
    }

    /// The whole table as it goes to flash, free slots included (the paper
    /// writes the entire table at every commit).
    pub fn image(&self) -> &[u8] {
        &self.encoded
    }

    /// Lends the table image out (until `put_image`); the table must not change meanwhile.
    pub fn take_image(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.encoded)
    }

    pub fn put_image(&mut self, image: Vec<u8>) {
        self.encoded = image;
    }

    /// Encodes the table from its entries (the reference `image` is checked against).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len(self.capacity()));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.capacity().to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        for slot in &self.slots {
            let mut rec = [0u8; ENTRY_BYTES];
            if let Some(e) = slot {
                rec[0..4].copy_from_slice(&e.tid.to_le_bytes());
                rec[4..8].copy_from_slice(&e.lpn.to_le_bytes());
                rec[8..12].copy_from_slice(&e.ppn.to_le_bytes());
                rec[12] = e.status as u8;
            }
            out.extend_from_slice(&rec);
        }
        out
    }

    /// Decodes a table record into its used entries.
    pub fn decode(bytes: &[u8]) -> Result<Vec<Entry>, String> {
        if bytes.len() < HEADER_BYTES || &bytes[0..8] != MAGIC {
            return Err("X-L2P table magic missing".into());
        }
        let capacity = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes")) as usize;
        if bytes.len() != Self::encoded_len(capacity as u32) {
            return Err(format!("X-L2P table of {} bytes does not match capacity {capacity}", bytes.len()));
        }
        let mut out = Vec::new();
        for rec in bytes[HEADER_BYTES..].chunks_exact(ENTRY_BYTES) {
            let u = |at: usize| u32::from_le_bytes(rec[at..at + 4].try_into().expect("4 bytes"));
            let status = match rec[12] {
                0 => continue,
                1 => Status::Active,
                2 => Status::Committed,
                3 => Status::Aborted,
                s => return Err(format!("X-L2P entry with unknown status {s}")),
            };
            out.push(Entry {
                tid: u(0),
                lpn: u(4),
                ppn: u(8),
                status,
            });
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_sizes() {
        assert_eq!(XL2P::encoded_len(500), 8016);
        assert!(XL2P::encoded_len(500) <= 8192, "500 entries fit one 8 KiB page");
    }

    #[test]
    fn upsert_update_commit_round_trip() {
        let mut t = XL2P::new(3);
        assert_eq!(t.upsert(7, 10, 100), Ok(None));
        assert_eq!(t.upsert(7, 10, 101), Ok(Some(100)), "same page again updates the entry");
        assert_eq!(t.len(), 1);
        t.upsert(8, 10, 102).unwrap();
        t.upsert(8, 11, 103).unwrap();
        assert_eq!(t.upsert(9, 12, 104), Err(Full));
        assert!(t.needs_slot(9, 12) && !t.needs_slot(8, 11));
        for s in t.slots_of(7) {
            t.set_status(s, Status::Committed);
        }
        assert_eq!(t.image(), &t.encode()[..], "the incremental image matches a full encoding");
        let decoded = XL2P::decode(&t.encode()).unwrap();
        assert_eq!(decoded.len(), 3);
        assert!(decoded.contains(&Entry {
            tid: 7,
            lpn: 10,
            ppn: 101,
            status: Status::Committed
        }));
        t.relocate(103, 200);
        assert_eq!(t.by_ppn(200).unwrap().lpn, 11);
        t.drop_committed_for(10);
        assert!(
            t.get(7, 10).is_none() && t.get(8, 10).is_some(),
            "only committed entries are dropped"
        );
        t.drop_committed();
        assert_eq!(t.len(), 2);
        assert_eq!(t.image(), &t.encode()[..]);
        assert!(XL2P::decode(&t.encode()[..20]).is_err());
    }
}
