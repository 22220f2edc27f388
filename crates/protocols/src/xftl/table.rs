//! The X-L2P table: one entry (tid, logical page, new physical page, status)
//! per page a transaction updated, beside the L2P (X-FTL, SIGMOD 2013, sec. 5.3).
//!
//! On flash the table is cut into pages of whole entries (see `page.rs`); the
//! DRAM table keeps the entries' on-flash bytes up to date slot by slot, and
//! which table pages changed since they were last written.

use std::collections::BTreeMap;
use txftl_ftl::{Lpn, Ppn, Tid};

pub const ENTRY_BYTES: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Active = 1,
    Committed = 2,
    Aborted = 3,
    /// DRAM only: a committed entry whose page the host trimmed since. On flash
    /// it stays a committed entry (status 2) until a checkpoint covers it,
    /// because the trim itself is durable only at the next flush (through a
    /// checkpoint): until then recovery may bring the committed value back,
    /// and must never go back to the value from before the commit, which it
    /// would if the next table were written without the entry.
    Trimmed = 4,
}

impl Status {
    /// Committed, trimmed or not: the entries a checkpoint covers.
    fn is_committed(self) -> bool {
        matches!(self, Status::Committed | Status::Trimmed)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    pub tid: Tid,
    pub lpn: Lpn,
    pub ppn: Ppn,
    pub status: Status,
}

/// The table full of active entries: the host must commit or abort a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Full;

/// "No slot" in the dense indexes.
const NONE: u32 = u32::MAX;

/// The table in DRAM. Every operation on the write and commit path is O(1) or
/// O(entries of one page or one transaction): the indexes are dense arrays by
/// page number (grown on demand, at most one word per page, like the L2P) and
/// chains through the slots, not search trees, because X-FTL updates them on
/// every write.
#[derive(Clone, Debug)]
pub struct XL2P {
    slots: Vec<Option<Entry>>,
    /// Per slot, the next slot holding the same logical page (a chain; NONE ends it).
    next_same_lpn: Vec<u32>,
    /// Logical page -> first slot of its chain. A chain holds the page's active
    /// entries (one per transaction that wrote it) and at most one committed
    /// entry (a commit drops the committed entries of its pages first).
    head_by_lpn: Vec<u32>,
    /// Physical page -> the slot pointing to it.
    slot_by_ppn: Vec<u32>,
    /// Active transactions that have entries -> their slots, in write order.
    by_tx: BTreeMap<Tid, Vec<usize>>,
    committed: usize,
    /// Free slots, a stack (slot 0 on top in a new table).
    free: Vec<usize>,
    /// The entries as they go to flash, kept up to date slot by slot (a commit
    /// writes them as they are instead of encoding 500 entries).
    encoded: Vec<u8>,
    /// Entries per table page, and which table pages changed since written.
    entries_per_page: u32,
    dirty: Vec<bool>,
}

/// One entry as it is on flash (a free slot is all zeros).
fn encode_entry(slot: Option<&Entry>, rec: &mut [u8]) {
    rec.fill(0);
    if let Some(e) = slot {
        rec[0..4].copy_from_slice(&e.tid.to_le_bytes());
        rec[4..8].copy_from_slice(&e.lpn.to_le_bytes());
        rec[8..12].copy_from_slice(&e.ppn.to_le_bytes());
        // A trimmed entry is still a committed one on flash (see `Status::Trimmed`).
        rec[12] = if e.status.is_committed() {
            Status::Committed as u8
        } else {
            e.status as u8
        };
    }
}

fn at(index: &[u32], i: u32) -> u32 {
    index.get(i as usize).copied().unwrap_or(NONE)
}

fn set_at(index: &mut Vec<u32>, i: u32, slot: u32) {
    let i = i as usize;
    if i >= index.len() {
        index.resize(i + 1, NONE);
    }
    index[i] = slot;
}

impl XL2P {
    /// A table of `capacity` entries, cut into pages of `entries_per_page`.
    pub fn new(capacity: u32, entries_per_page: u32) -> XL2P {
        let entries_per_page = entries_per_page.max(1);
        XL2P {
            slots: vec![None; capacity as usize],
            next_same_lpn: vec![NONE; capacity as usize],
            head_by_lpn: Vec::new(),
            slot_by_ppn: Vec::new(),
            by_tx: BTreeMap::new(),
            committed: 0,
            free: (0..capacity as usize).rev().collect(),
            encoded: vec![0u8; Self::encoded_len(capacity)],
            entries_per_page,
            dirty: vec![false; capacity.div_ceil(entries_per_page) as usize],
        }
    }

    /// Re-encodes one slot into the table image; its page must be written again.
    fn sync_slot(&mut self, slot: usize) {
        let rec = &mut self.encoded[slot * ENTRY_BYTES..(slot + 1) * ENTRY_BYTES];
        encode_entry(self.slots[slot].as_ref(), rec);
        self.dirty[slot / self.entries_per_page as usize] = true;
    }

    /// Table pages.
    pub fn pages(&self) -> u32 {
        self.dirty.len() as u32
    }

    /// Table pages changed since they were last written, in order.
    pub fn dirty_pages(&self) -> Vec<u32> {
        (0..self.pages()).filter(|&k| self.dirty[k as usize]).collect()
    }

    /// Table page `k` was written (or needs no writing).
    pub fn clean(&mut self, k: u32) {
        self.dirty[k as usize] = false;
    }

    /// The on-flash bytes of table page `k`'s entries.
    pub fn page_entries(&self, k: u32) -> &[u8] {
        let e = self.entries_per_page as usize * ENTRY_BYTES;
        &self.encoded[k as usize * e..((k as usize + 1) * e).min(self.encoded.len())]
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
    /// Bytes of the entries of a table of `capacity` entries.
    pub fn encoded_len(capacity: u32) -> usize {
        ENTRY_BYTES * capacity as usize
    }

    pub fn entries(&self) -> impl Iterator<Item = (usize, &Entry)> {
        self.slots.iter().enumerate().filter_map(|(i, e)| e.as_ref().map(|e| (i, e)))
    }

    /// The slots holding `lpn`, newest first.
    fn chain(&self, lpn: Lpn) -> impl Iterator<Item = usize> + '_ {
        let mut s = at(&self.head_by_lpn, lpn);
        std::iter::from_fn(move || {
            (s != NONE).then(|| {
                let slot = s as usize;
                s = self.next_same_lpn[slot];
                slot
            })
        })
    }

    fn find(&self, lpn: Lpn, want: impl Fn(&Entry) -> bool) -> Option<usize> {
        self.chain(lpn).find(|&s| self.slots[s].as_ref().is_some_and(&want))
    }

    /// The slot of `tid`'s active entry for `lpn`.
    fn active_slot(&self, tid: Tid, lpn: Lpn) -> Option<usize> {
        self.find(lpn, |e| e.tid == tid && e.status == Status::Active)
    }

    pub fn get(&self, tid: Tid, lpn: Lpn) -> Option<Entry> {
        self.active_slot(tid, lpn).and_then(|s| self.slots[s])
    }

    pub fn by_ppn(&self, ppn: Ppn) -> Option<Entry> {
        match at(&self.slot_by_ppn, ppn) {
            NONE => None,
            s => self.slots[s as usize].filter(|e| e.ppn == ppn),
        }
    }

    /// Active entries pointing into physical pages `first..end`. GC asks this
    /// of every candidate block, so it walks whichever is shorter: the active
    /// entries, or the range.
    pub fn active_in(&self, first: Ppn, end: Ppn) -> u32 {
        let active = self.len() - self.committed;
        if active <= (end.saturating_sub(first) as usize) / 8 {
            let slots = self.by_tx.values().flatten();
            return slots
                .filter(|&&s| self.slots[s].is_some_and(|e| (first..end).contains(&e.ppn)))
                .count() as u32;
        }
        (first..end)
            .filter(|&ppn| self.by_ppn(ppn).is_some_and(|e| e.status == Status::Active))
            .count() as u32
    }

    /// Committed entries (trimmed ones included).
    pub fn committed_count(&self) -> usize {
        self.committed
    }

    pub fn has_committed(&self) -> bool {
        self.committed > 0
    }

    /// Would a write by `tid` to `lpn` need a new slot that is not there?
    pub fn needs_slot(&self, tid: Tid, lpn: Lpn) -> bool {
        self.free.is_empty() && self.get(tid, lpn).is_none()
    }

    /// Records that `tid` wrote `lpn` at `ppn`: a new active entry, or the
    /// existing entry updated (a page updated again by the same transaction).
    /// Returns the physical page the entry pointed to before, if any.
    pub fn upsert(&mut self, tid: Tid, lpn: Lpn, ppn: Ppn) -> Result<Option<Ppn>, Full> {
        if let Some(slot) = self.active_slot(tid, lpn) {
            let e = self.slots[slot].as_mut().expect("chained slot is used");
            let old = e.ppn;
            e.ppn = ppn;
            if at(&self.slot_by_ppn, old) == slot as u32 {
                self.slot_by_ppn[old as usize] = NONE;
            }
            set_at(&mut self.slot_by_ppn, ppn, slot as u32);
            self.sync_slot(slot);
            return Ok(Some(old));
        }
        let slot = self.free.pop().ok_or(Full)?;
        self.slots[slot] = Some(Entry {
            tid,
            lpn,
            ppn,
            status: Status::Active,
        });
        self.next_same_lpn[slot] = at(&self.head_by_lpn, lpn);
        set_at(&mut self.head_by_lpn, lpn, slot as u32);
        set_at(&mut self.slot_by_ppn, ppn, slot as u32);
        self.by_tx.entry(tid).or_default().push(slot);
        self.sync_slot(slot);
        Ok(None)
    }

    /// Has the active transaction `tid` written anything?
    pub fn has_entries(&self, tid: Tid) -> bool {
        self.by_tx.contains_key(&tid)
    }

    /// Commits `tid` in DRAM: drops the committed entries of its pages (this
    /// commit supersedes them) and marks its own committed. Returns them.
    pub fn commit_tx(&mut self, tid: Tid) -> Vec<Entry> {
        let slots = self.by_tx.remove(&tid).unwrap_or_default();
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            // While this entry is still active, the page's committed entries are the older ones.
            let lpn = self.slots[slot].expect("slot in use").lpn;
            self.drop_committed_for(lpn);
            let e = self.slots[slot].as_mut().expect("slot in use");
            assert!(
                e.tid == tid && e.status == Status::Active,
                "committing tx {tid}: slot {slot} holds {e:?}, not an active entry of it"
            );
            e.status = Status::Committed;
            let e = *e;
            self.sync_slot(slot);
            self.committed += 1;
            out.push(e);
        }
        out
    }

    /// Aborts `tid`: its entries go (status aborted, then the slot freed), its pages are dead.
    pub fn abort_tx(&mut self, tid: Tid) {
        for slot in self.by_tx.remove(&tid).unwrap_or_default() {
            let e = self.slots[slot].as_mut().expect("slot in use");
            assert!(
                e.tid == tid && e.status == Status::Active,
                "aborting tx {tid}: slot {slot} holds {e:?}, not an active entry of it"
            );
            e.status = Status::Aborted;
            self.remove(slot);
        }
    }

    /// Takes `tid`'s active entries out of the table, in write order, freeing
    /// their slots (the entries spill to flash: `spill.rs`).
    pub fn take_tx(&mut self, tid: Tid) -> Vec<Entry> {
        let slots = self.by_tx.remove(&tid).unwrap_or_default();
        let mut out = Vec::with_capacity(slots.len());
        for slot in slots {
            out.push(self.slots[slot].expect("slot in use"));
            self.remove(slot);
        }
        out
    }

    /// The active transaction with the most entries in the table.
    pub fn largest_tx(&self) -> Option<Tid> {
        self.by_tx.iter().max_by_key(|(_, slots)| slots.len()).map(|(&tid, _)| tid)
    }

    /// Frees a slot that no transaction's list holds any more (committed, or aborted).
    fn remove(&mut self, slot: usize) {
        let Some(e) = self.slots[slot].take() else { return };
        // Unlink from the page's chain.
        let next = self.next_same_lpn[slot];
        if at(&self.head_by_lpn, e.lpn) == slot as u32 {
            self.head_by_lpn[e.lpn as usize] = next;
        } else {
            let prev = self.chain(e.lpn).find(|&s| self.next_same_lpn[s] == slot as u32);
            self.next_same_lpn[prev.expect("a used slot is on its page's chain")] = next;
        }
        self.next_same_lpn[slot] = NONE;
        if at(&self.slot_by_ppn, e.ppn) == slot as u32 {
            self.slot_by_ppn[e.ppn as usize] = NONE;
        }
        if e.status.is_committed() {
            self.committed -= 1;
        }
        self.free.push(slot);
        self.sync_slot(slot);
    }

    /// Drops committed entries for `lpn` (trimmed ones too): a newer write, or a
    /// newer commit of the page, superseded them. The newer write is on flash
    /// with a larger sequence number than any table that still has them.
    pub fn drop_committed_for(&mut self, lpn: Lpn) {
        if self.committed == 0 {
            return;
        }
        while let Some(slot) = self.find(lpn, |e| e.status.is_committed()) {
            self.remove(slot);
        }
    }

    /// The host trimmed `lpn`: its committed entry stays in the table (the next
    /// table written still carries it) but no longer names what the L2P maps.
    pub fn trim_committed(&mut self, lpn: Lpn) {
        if self.committed == 0 {
            return;
        }
        if let Some(slot) = self.find(lpn, |e| e.status == Status::Committed) {
            self.slots[slot].as_mut().expect("found slot is used").status = Status::Trimmed;
        }
    }

    /// Drops every committed entry: a durable L2P checkpoint covers them.
    pub fn drop_committed(&mut self) {
        for slot in 0..self.slots.len() {
            if self.committed == 0 {
                break;
            }
            if self.slots[slot].is_some_and(|e| e.status.is_committed()) {
                self.remove(slot);
            }
        }
    }

    /// GC moved a page an entry points to.
    pub fn relocate(&mut self, old: Ppn, new: Ppn) {
        if self.by_ppn(old).is_none() {
            return;
        }
        let slot = self.slot_by_ppn[old as usize];
        self.slot_by_ppn[old as usize] = NONE;
        self.slots[slot as usize].as_mut().expect("indexed slot is used").ppn = new;
        set_at(&mut self.slot_by_ppn, new, slot);
        self.sync_slot(slot as usize);
    }

    /// The whole table as it goes to flash, free slots included (the paper
    /// writes the entire table at every commit).
    pub fn image(&self) -> &[u8] {
        &self.encoded
    }

    /// Encodes the table from its entries (the reference `image` is checked against).
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len(self.capacity()));
        for slot in &self.slots {
            let mut rec = [0u8; ENTRY_BYTES];
            encode_entry(slot.as_ref(), &mut rec);
            out.extend_from_slice(&rec);
        }
        out
    }

    /// Decodes entries' on-flash bytes (a table page's, or a whole image) into
    /// the used entries.
    pub fn decode(bytes: &[u8]) -> Result<Vec<Entry>, String> {
        let mut out = Vec::new();
        for rec in bytes.chunks_exact(ENTRY_BYTES) {
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
    fn pages_and_dirty_tracking() {
        let mut t = XL2P::new(10, 4);
        assert_eq!(t.pages(), 3);
        assert!(t.dirty_pages().is_empty());
        t.upsert(1, 5, 50).unwrap(); // slot 0: page 0
        assert_eq!(t.dirty_pages(), vec![0]);
        t.clean(0);
        for ppn in 51..56 {
            t.upsert(1, ppn, ppn).unwrap(); // slots 1..=5: pages 0 and 1
        }
        assert_eq!(t.dirty_pages(), vec![0, 1]);
        assert_eq!(t.page_entries(2).len(), 2 * ENTRY_BYTES, "the last page holds the remainder");
        assert_eq!(XL2P::decode(t.page_entries(1)).unwrap().len(), 2);
    }

    #[test]
    fn upsert_update_commit_round_trip() {
        let mut t = XL2P::new(3, 2);
        assert_eq!(t.upsert(7, 10, 100), Ok(None));
        assert_eq!(t.upsert(7, 10, 101), Ok(Some(100)), "same page again updates the entry");
        assert_eq!(t.len(), 1);
        t.upsert(8, 10, 102).unwrap();
        t.upsert(8, 11, 103).unwrap();
        assert_eq!(t.upsert(9, 12, 104), Err(Full));
        assert!(t.needs_slot(9, 12) && !t.needs_slot(8, 11));
        assert_eq!(t.commit_tx(7).len(), 1);
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
            t.by_ppn(101).is_none() && t.get(8, 10).is_some() && t.len() == 2,
            "only the committed entry is dropped"
        );
        t.drop_committed();
        assert_eq!(t.len(), 2);
        assert_eq!(t.image(), &t.encode()[..]);
    }

    /// The dense indexes and slot chains against a plain list of entries,
    /// over a seeded (ChaCha8) random sequence of every table operation.
    #[test]
    fn indexes_agree_with_a_plain_list() {
        use rand::{Rng, SeedableRng};
        const CAP: u32 = 12;
        for seed in 0..40u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let mut t = XL2P::new(CAP, 5);
            let mut model: Vec<Entry> = Vec::new();
            let mut next_ppn = 0u32;
            for step in 0..400 {
                let tid = rng.gen_range(1..5u32);
                let lpn = rng.gen_range(0..6u32);
                match rng.gen_range(0..10) {
                    0..=4 => {
                        next_ppn += 1;
                        let existing = model
                            .iter()
                            .position(|e| e.tid == tid && e.lpn == lpn && e.status == Status::Active);
                        let want = match existing {
                            Some(i) => Ok(Some(std::mem::replace(&mut model[i].ppn, next_ppn))),
                            None if model.len() < CAP as usize => {
                                model.push(Entry {
                                    tid,
                                    lpn,
                                    ppn: next_ppn,
                                    status: Status::Active,
                                });
                                Ok(None)
                            }
                            None => Err(Full),
                        };
                        assert_eq!(t.upsert(tid, lpn, next_ppn), want, "seed {seed} step {step}");
                    }
                    5 => {
                        let mine: Vec<Lpn> = model
                            .iter()
                            .filter(|e| e.tid == tid && e.status == Status::Active)
                            .map(|e| e.lpn)
                            .collect();
                        model.retain(|e| !(e.status.is_committed() && mine.contains(&e.lpn)));
                        for e in model.iter_mut().filter(|e| e.tid == tid && e.status == Status::Active) {
                            e.status = Status::Committed;
                        }
                        assert_eq!(t.commit_tx(tid).len(), mine.len());
                    }
                    6 => {
                        model.retain(|e| !(e.tid == tid && e.status == Status::Active));
                        t.abort_tx(tid);
                    }
                    7 if rng.gen_bool(0.5) => {
                        model.retain(|e| !(e.lpn == lpn && e.status.is_committed()));
                        t.drop_committed_for(lpn);
                    }
                    7 => {
                        if let Some(e) = model.iter_mut().find(|e| e.lpn == lpn && e.status == Status::Committed) {
                            e.status = Status::Trimmed;
                        }
                        t.trim_committed(lpn);
                    }
                    8 => {
                        if rng.gen_bool(0.3) {
                            model.retain(|e| !e.status.is_committed());
                            t.drop_committed();
                        }
                    }
                    _ => {
                        if let Some(i) = (!model.is_empty()).then(|| rng.gen_range(0..model.len())) {
                            next_ppn += 1;
                            t.relocate(model[i].ppn, next_ppn);
                            model[i].ppn = next_ppn;
                        }
                    }
                }
                assert_eq!(t.len(), model.len(), "seed {seed} step {step}");
                assert_eq!(t.has_committed(), model.iter().any(|e| e.status.is_committed()));
                for e in &model {
                    assert_eq!(t.by_ppn(e.ppn), Some(*e), "seed {seed} step {step}");
                    if e.status == Status::Active {
                        assert_eq!(t.get(e.tid, e.lpn), Some(*e));
                        assert!(t.has_entries(e.tid));
                    }
                }
                let active = model.iter().filter(|e| e.status == Status::Active).count() as u32;
                assert_eq!(t.active_in(0, next_ppn + 1), active);
                let a = rng.gen_range(0..=next_ppn);
                let window = model
                    .iter()
                    .filter(|e| e.status == Status::Active && (a..a + 8).contains(&e.ppn))
                    .count() as u32;
                assert_eq!(t.active_in(a, a + 8), window, "seed {seed} step {step}");
                let mut listed: Vec<Entry> = t.entries().map(|(_, e)| *e).collect();
                let mut want = model.clone();
                listed.sort_by_key(|e| e.ppn);
                want.sort_by_key(|e| e.ppn);
                assert_eq!(listed, want, "seed {seed} step {step}");
                assert_eq!(t.image(), &t.encode()[..]);
            }
        }
    }
}
