//! NoLgn's tables in device DRAM (§3.2, §3.6): the P2P table of open
//! transactions' (transaction, new page, old page) entries, bounded by
//! `p2p-entries`, and the block locks. Nothing here reaches the flash but
//! through the checkpoint section (`format.rs`); a power cut loses it all.
//!
//! Locks are a count per block of the old pages pinned there, a block being
//! locked while its count is above zero (the digest's B8.3): the paper's one
//! lock bit is cleared by the first commit of a transaction with an old page
//! in the block, though another open transaction may still have one there.
//! `nolgn-canary` keeps that bit (see `Locks`).

use super::format::NO_PAGE;
use std::collections::BTreeMap;
use txftl_ftl::{BlockId, Lpn, Ppn, Tid};
use txftl_nand::Geometry;

/// One P2P entry: the page a transaction wrote of an LPN, and the one it replaced.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The transaction's newest page of the LPN (`NO_PAGE` while it is held
    /// back in DRAM, not yet programmed).
    pub new: Ppn,
    /// What the L2P named before the transaction's first write (`NO_PAGE`: unmapped).
    pub old: Ppn,
}

/// An open transaction.
#[derive(Clone, Debug, Default)]
pub struct OpenTx {
    /// The device's id, on its pages' OOB (never reused across mounts).
    pub tx_id: u32,
    pub entries: BTreeMap<Lpn, Entry>,
    /// Its last page written with `write_tx`, held in device DRAM until the
    /// next write (programmed without the flag) or the commit (with it).
    pub held: Option<(Lpn, Vec<u8>)>,
    /// Its end-flagged page is programmed: only `commit` may follow.
    pub ended: bool,
    /// When its last program issued so far is done on its die (device clock).
    pub done_ns: u64,
}

/// What a GC move was, for the P2P.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Moved {
    /// An open transaction's new page.
    NewPage,
    /// A pinned old version.
    OldPage,
    /// Anything else (committed data).
    Other,
}

/// The block locks.
#[derive(Clone, Debug)]
pub struct Locks {
    /// Old pages pinned per block.
    pinned: Vec<u32>,
    /// `nolgn-canary`: the paper's one bit per block, set by a pin and
    /// cleared when any transaction with an old page there ends.
    bits: Option<Vec<bool>>,
    locked: u32,
}

impl Locks {
    pub fn new(blocks: u32, canary: bool) -> Locks {
        Locks {
            pinned: vec![0; blocks as usize],
            bits: canary.then(|| vec![false; blocks as usize]),
            locked: 0,
        }
    }

    pub fn is_locked(&self, b: BlockId) -> bool {
        match &self.bits {
            Some(bits) => bits[b as usize],
            None => self.pinned[b as usize] > 0,
        }
    }

    /// Blocks locked now.
    pub fn locked(&self) -> u32 {
        self.locked
    }

    fn pin(&mut self, b: BlockId) {
        let was = self.is_locked(b);
        self.pinned[b as usize] += 1;
        if let Some(bits) = &mut self.bits {
            bits[b as usize] = true;
        }
        self.locked += (!was && self.is_locked(b)) as u32;
    }

    fn unpin(&mut self, b: BlockId) {
        let was = self.is_locked(b);
        self.pinned[b as usize] = self.pinned[b as usize].saturating_sub(1);
        if let Some(bits) = &mut self.bits {
            bits[b as usize] = false;
        }
        self.locked -= (was && !self.is_locked(b)) as u32;
    }
}

/// The P2P table: the open transactions, their entries, and indexes GC and
/// reads need (which transaction holds an LPN, which pages are pinned old
/// versions, which are transactions' new pages).
#[derive(Clone, Debug)]
pub struct P2p {
    geo: Geometry,
    pub capacity: u32,
    open: BTreeMap<Tid, OpenTx>,
    by_tx_id: BTreeMap<u32, Tid>,
    /// LPN -> the open transaction that wrote it (no two may: no-page-conflict).
    owner: BTreeMap<Lpn, Tid>,
    /// Old pages kept valid for a rollback: page -> its transaction's LPN.
    pinned: BTreeMap<Ppn, (Tid, Lpn)>,
    /// Open transactions' programmed new pages: page -> (transaction, LPN).
    new_pages: BTreeMap<Ppn, (Tid, Lpn)>,
    pub locks: Locks,
    entries: u32,
    /// Most entries live at once, and most blocks locked at once, since reset.
    pub entries_peak: u32,
    pub locked_peak: u32,
}

impl P2p {
    pub fn new(geo: &Geometry, capacity: u32, canary: bool) -> P2p {
        P2p {
            geo: *geo,
            capacity,
            open: BTreeMap::new(),
            by_tx_id: BTreeMap::new(),
            owner: BTreeMap::new(),
            pinned: BTreeMap::new(),
            new_pages: BTreeMap::new(),
            locks: Locks::new(geo.block_count(), canary),
            entries: 0,
            entries_peak: 0,
            locked_peak: 0,
        }
    }

    pub fn begin(&mut self, tid: Tid, tx_id: u32) {
        self.open.insert(
            tid,
            OpenTx {
                tx_id,
                ..OpenTx::default()
            },
        );
        self.by_tx_id.insert(tx_id, tid);
    }

    pub fn get(&self, tid: Tid) -> Option<&OpenTx> {
        self.open.get(&tid)
    }
    pub fn get_mut(&mut self, tid: Tid) -> Option<&mut OpenTx> {
        self.open.get_mut(&tid)
    }
    pub fn iter(&self) -> impl Iterator<Item = (&Tid, &OpenTx)> {
        self.open.iter()
    }
    pub fn is_open_tx_id(&self, tx_id: u32) -> bool {
        self.by_tx_id.contains_key(&tx_id)
    }
    pub fn entries(&self) -> u32 {
        self.entries
    }

    /// The open transaction that wrote `lpn`, if one did.
    pub fn owner(&self, lpn: Lpn) -> Option<Tid> {
        self.owner.get(&lpn).copied()
    }

    /// The old page of `lpn`, if an open transaction wrote it.
    pub fn old_of(&self, lpn: Lpn) -> Option<Ppn> {
        let tid = self.owner(lpn)?;
        self.open.get(&tid)?.entries.get(&lpn).map(|e| e.old)
    }

    /// Would `tid`'s write of `lpn` take a new entry?
    pub fn needs_entry(&self, tid: Tid, lpn: Lpn) -> bool {
        self.open.get(&tid).is_some_and(|t| !t.entries.contains_key(&lpn))
    }

    /// `tid` writes `lpn`, which the L2P maps to `old` now: its first write of
    /// it takes an entry and pins `old` (its block locks). Pinned from the
    /// write, not from the new page's program: while the page is held back
    /// the L2P still maps `old` and GC could otherwise move it, leaving the
    /// entry (and the tag the new page will carry) naming the page it left.
    pub fn written(&mut self, tid: Tid, lpn: Lpn, old: Ppn) {
        let Some(t) = self.open.get_mut(&tid) else { return };
        if t.entries.contains_key(&lpn) {
            return;
        }
        t.entries.insert(lpn, Entry { new: NO_PAGE, old });
        self.owner.insert(lpn, tid);
        self.entries += 1;
        self.entries_peak = self.entries_peak.max(self.entries);
        if old != NO_PAGE {
            self.pinned.insert(old, (tid, lpn));
            self.locks.pin(self.geo.block_of(old));
            self.locked_peak = self.locked_peak.max(self.locks.locked());
        }
    }

    /// Transaction `tx_id`'s page of `lpn` was programmed at `ppn`, done at `done_ns`.
    pub fn programmed(&mut self, tx_id: u32, lpn: Lpn, ppn: Ppn, done_ns: u64) {
        let Some(&tid) = self.by_tx_id.get(&tx_id) else { return };
        let Some(t) = self.open.get_mut(&tid) else { return };
        t.done_ns = t.done_ns.max(done_ns);
        let Some(e) = t.entries.get_mut(&lpn) else { return };
        if e.new != NO_PAGE {
            self.new_pages.remove(&e.new);
        }
        e.new = ppn;
        self.new_pages.insert(ppn, (tid, lpn));
    }

    /// The tag an open transaction's programmed page of `lpn` carries (for a
    /// GC copy whose source's spare area was lost), if one owns it.
    pub fn tag_of_new(&self, lpn: Lpn) -> Option<(u32, Ppn)> {
        let tid = self.owner(lpn)?;
        let t = self.open.get(&tid)?;
        let e = t.entries.get(&lpn)?;
        (e.new != NO_PAGE).then_some((t.tx_id, e.old))
    }

    /// Closes `tid` (committed or aborted): its entries leave the table and
    /// its old pages are unpinned. Returns it.
    pub fn close(&mut self, tid: Tid) -> Option<OpenTx> {
        let t = self.open.remove(&tid)?;
        self.by_tx_id.remove(&t.tx_id);
        for (lpn, e) in &t.entries {
            self.owner.remove(lpn);
            self.new_pages.remove(&e.new);
            if e.old != NO_PAGE && self.pinned.remove(&e.old).is_some() {
                self.locks.unpin(self.geo.block_of(e.old));
            }
        }
        self.entries -= t.entries.len() as u32;
        Some(t)
    }

    pub fn is_pinned(&self, ppn: Ppn) -> bool {
        self.pinned.contains_key(&ppn)
    }

    pub fn pinned_in(&self, first: Ppn, end: Ppn) -> u32 {
        self.pinned.range(first..end).count() as u32
    }

    pub fn has_pinned(&self) -> bool {
        !self.pinned.is_empty()
    }

    /// GC moved `old` to `new`: a transaction's new page (its entry follows),
    /// or a pinned old version (a retired block's: its entry and pin follow,
    /// unless `repoint_old` is false, the canary's).
    pub fn relocated(&mut self, old: Ppn, new: Ppn, repoint_old: bool) -> Moved {
        if let Some((tid, lpn)) = self.new_pages.remove(&old) {
            if let Some(e) = self.open.get_mut(&tid).and_then(|t| t.entries.get_mut(&lpn)) {
                e.new = new;
            }
            self.new_pages.insert(new, (tid, lpn));
            return Moved::NewPage;
        }
        if !repoint_old {
            return Moved::Other;
        }
        let Some((tid, lpn)) = self.pinned.remove(&old) else { return Moved::Other };
        if let Some(e) = self.open.get_mut(&tid).and_then(|t| t.entries.get_mut(&lpn)) {
            e.old = new;
        }
        self.pinned.insert(new, (tid, lpn));
        self.locks.unpin(self.geo.block_of(old));
        self.locks.pin(self.geo.block_of(new));
        self.locked_peak = self.locked_peak.max(self.locks.locked());
        Moved::OldPage
    }
}
