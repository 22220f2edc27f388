//! The active TxTable (paper §III-A): for each open transaction, the newest
//! page of every logical page it wrote (folded into the L2P at commit), how
//! many pages it programmed (its commit page's TxCnt), the blocks they lie in
//! (the Unavailable Zone at a checkpoint), and its last page, cached in DRAM
//! until its next command.

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Tid};
use txftl_nand::{BlockId, Ppn};

#[derive(Clone, Debug, Default)]
pub struct Tx {
    /// The device's id of the transaction (the TxID in its pages' OOB).
    pub id: u32,
    /// Logical page -> the newest physical page the transaction wrote for it.
    pub entries: BTreeMap<Lpn, Ppn>,
    /// Pages programmed for it so far (an earlier version of a logical page
    /// it wrote again counts too: it is on flash with the TxID).
    pub programmed: u32,
    /// Where they are.
    pub pages: Vec<Ppn>,
    /// Blocks holding them.
    pub blocks: BTreeSet<BlockId>,
    /// When the last of them is done on its die (device clock).
    pub done_ns: u64,
    /// The last page written, not programmed yet.
    pub cached: Option<(Lpn, Vec<u8>)>,
}

#[derive(Clone, Debug, Default)]
pub struct TxTable {
    by_tid: BTreeMap<Tid, Tx>,
    tid_of: BTreeMap<u32, Tid>,
    /// Every programmed page of an open transaction -> the transaction's id.
    pages: BTreeMap<Ppn, u32>,
}

impl TxTable {
    pub fn contains(&self, tid: Tid) -> bool {
        self.by_tid.contains_key(&tid)
    }

    pub fn begin(&mut self, tid: Tid, id: u32) {
        self.tid_of.insert(id, tid);
        self.by_tid.insert(tid, Tx { id, ..Tx::default() });
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Tid, &Tx)> {
        self.by_tid.iter()
    }

    /// Caches `data` as `tid`'s last page (the previous one was programmed).
    pub fn cache(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) {
        if let Some(tx) = self.by_tid.get_mut(&tid) {
            tx.cached = Some((lpn, data.to_vec()));
        }
    }

    /// Takes `tid`'s cached page: (its id, the page, its data).
    pub fn take_cached(&mut self, tid: Tid) -> Option<(u32, Lpn, Vec<u8>)> {
        let tx = self.by_tid.get_mut(&tid)?;
        let (lpn, data) = tx.cached.take()?;
        Some((tx.id, lpn, data))
    }

    pub fn cached_copy(&self, tid: Tid, lpn: Lpn) -> Option<&[u8]> {
        match &self.by_tid.get(&tid)?.cached {
            Some((l, data)) if *l == lpn => Some(data),
            _ => None,
        }
    }

    pub fn entry(&self, tid: Tid, lpn: Lpn) -> Option<Ppn> {
        self.by_tid.get(&tid)?.entries.get(&lpn).copied()
    }

    pub fn programmed_count(&self, tid: Tid) -> u32 {
        self.by_tid.get(&tid).map_or(0, |tx| tx.programmed)
    }

    /// A page of transaction `id` was programmed at `ppn` (in `block`).
    pub fn programmed(&mut self, id: u32, lpn: Lpn, ppn: Ppn, block: BlockId, done_ns: u64) {
        let Some(tx) = self.tid_of.get(&id).and_then(|tid| self.by_tid.get_mut(tid)) else {
            return;
        };
        tx.entries.insert(lpn, ppn);
        tx.programmed += 1;
        tx.pages.push(ppn);
        tx.blocks.insert(block);
        tx.done_ns = tx.done_ns.max(done_ns);
        self.pages.insert(ppn, id);
    }

    /// GC moved a page of an open transaction.
    pub fn relocated(&mut self, old: Ppn, new: Ppn, block: BlockId) {
        let Some(id) = self.pages.remove(&old) else { return };
        self.pages.insert(new, id);
        let Some(tx) = self.tid_of.get(&id).and_then(|tid| self.by_tid.get_mut(tid)) else {
            return;
        };
        for p in tx.entries.values_mut().chain(tx.pages.iter_mut()).filter(|p| **p == old) {
            *p = new;
        }
        tx.blocks.insert(block);
    }

    /// Ends `tid` (commit or abort): returns its entries and when its last page is done.
    pub fn end(&mut self, tid: Tid) -> (BTreeMap<Lpn, Ppn>, u64) {
        let Some(tx) = self.by_tid.remove(&tid) else {
            return (BTreeMap::new(), 0);
        };
        self.tid_of.remove(&tx.id);
        // Its pages are no longer kept live: committed ones are mapped now,
        // the others are dead.
        for p in &tx.pages {
            self.pages.remove(p);
        }
        (tx.entries, tx.done_ns)
    }

    /// Some open transaction has a page on flash.
    pub fn has_pages(&self) -> bool {
        !self.pages.is_empty()
    }

    pub fn owns(&self, ppn: Ppn) -> bool {
        self.pages.contains_key(&ppn)
    }

    pub fn owned_in(&self, first: Ppn, end: Ppn) -> u32 {
        self.pages.range(first..end).count() as u32
    }

    /// `tid`'s device id and the blocks holding its pages.
    pub fn blocks_of(&self, tid: Tid) -> (u32, BTreeSet<BlockId>) {
        self.by_tid.get(&tid).map_or((0, BTreeSet::new()), |tx| (tx.id, tx.blocks.clone()))
    }

    /// Blocks holding a page of an open transaction, ascending.
    pub fn blocks(&self) -> Vec<BlockId> {
        let all: BTreeSet<BlockId> = self.by_tid.values().flat_map(|tx| tx.blocks.iter().copied()).collect();
        all.into_iter().collect()
    }
}
