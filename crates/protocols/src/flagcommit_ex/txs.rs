//! The extended protocols' transaction table: the transactions in progress,
//! the aborted ones and the ones a mount left in doubt, while an entry of
//! theirs is on flash; a transaction not in it is committed. For each, its
//! entries that count for recovery (on flash, in a block not yet released):
//! what a commit reads the heads from (CFC_ex) or flips (AFC_ex), and what
//! GC moves a FALSE onto (AFC_ex's aborted transactions). A page holds at
//! most one entry of a transaction, so an entry is named by its page.
//!
//! An entry stops counting when the checkpoint that releases its block is
//! durable or when its block is erased, not when GC copies it.

use super::format::{Entry, XID_MAX};
use crate::flagcommit::xids::Xids;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{DeviceError, Lpn, Result, Tid};
use txftl_nand::Ppn;

/// An entry of a transaction in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EntryInfo {
    /// Its index among the page's entries (the flag byte it owns).
    pub index: u8,
    pub lpn: Lpn,
    pub version: u32,
    pub link: Option<Ppn>,
    pub seq: u64,
    /// The commit flag as programmed (and cleared since).
    pub flag: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxState {
    Open(Tid),
    Aborted,
    /// Found not committed by the last mount, not yet settled.
    InDoubt,
}

#[derive(Clone, Debug)]
pub struct Tx {
    pub xid: u32,
    pub state: TxState,
    /// Its entries that count for recovery, GC copies and originals alike.
    pub entries: BTreeMap<Ppn, EntryInfo>,
    /// Open: the page of its newest entry (the next one links there).
    pub last: Option<Ppn>,
    /// Open: the logical pages it wrote by page-level calls (`write_tx`).
    pub pages: BTreeSet<Lpn>,
    /// Open: when every entry programmed so far is done on its die.
    pub done_ns: u64,
    /// Open: when its first entry is done (AFC_ex programs no later one before).
    pub first_done_ns: Option<u64>,
}

impl Tx {
    fn new(xid: u32, state: TxState) -> Tx {
        Tx {
            xid,
            state,
            entries: BTreeMap::new(),
            last: None,
            pages: BTreeSet::new(),
            done_ns: 0,
            first_done_ns: None,
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self.state, TxState::Open(_))
    }

    /// Open or in doubt: its entries may yet commit, so the versions
    /// holding them stay live.
    pub fn undecided(&self) -> bool {
        self.state != TxState::Aborted
    }

    /// Its entries as `Entry` values, by page.
    pub fn entry_values(&self) -> impl Iterator<Item = (Ppn, Entry)> + '_ {
        self.entries.iter().map(|(&p, e)| {
            (
                p,
                Entry {
                    xid: self.xid,
                    link: e.link,
                    flag: e.flag,
                },
            )
        })
    }
}

#[derive(Clone, Debug)]
pub struct TxTable {
    protocol: &'static str,
    txs: BTreeMap<u32, Tx>,
    ids: Xids,
    /// Every page holding an entry in the table -> the transactions.
    page_xids: BTreeMap<Ppn, Vec<u32>>,
}

impl TxTable {
    pub fn new(protocol: &'static str) -> TxTable {
        TxTable {
            protocol,
            txs: BTreeMap::new(),
            ids: Xids::new(protocol, XID_MAX),
            page_xids: BTreeMap::new(),
        }
    }

    /// A fresh XID: never one found on flash or handed out before.
    pub fn new_xid(&mut self) -> Result<u32> {
        self.ids.fresh()
    }

    /// After a recovery: XIDs resume above `max_found`.
    pub fn resume_after(&mut self, max_found: u32) {
        self.ids.resume_after(max_found);
    }

    pub fn begin(&mut self, tid: Tid) -> Result<u32> {
        let xid = self.ids.begin(tid)?;
        let fresh = self.txs.insert(xid, Tx::new(xid, TxState::Open(tid)));
        assert!(fresh.is_none(), "XID {xid} handed out twice");
        Ok(xid)
    }

    pub fn open(&self, tid: Tid) -> Result<&Tx> {
        let xid = self.ids.xid(tid)?;
        Ok(self.txs.get(&xid).expect("an open tid names a transaction"))
    }

    pub fn open_mut(&mut self, tid: Tid) -> Result<&mut Tx> {
        let xid = self.ids.xid(tid)?;
        Ok(self.txs.get_mut(&xid).expect("an open tid names a transaction"))
    }

    /// What transaction `xid` is: not in the table, committed.
    pub fn decided(&self, xid: u32) -> super::versions::Decided {
        use super::versions::Decided;
        match self.by_xid(xid) {
            None => Decided::Committed,
            Some(t) if t.undecided() => Decided::Undecided,
            Some(_) => Decided::Aborted,
        }
    }

    pub fn by_xid(&self, xid: u32) -> Option<&Tx> {
        self.txs.get(&xid)
    }

    /// The transactions in the table with an entry in page `ppn`.
    pub fn at_page(&self, ppn: Ppn) -> impl Iterator<Item = &Tx> + '_ {
        self.page_xids.get(&ppn).into_iter().flatten().filter_map(|x| self.txs.get(x))
    }

    /// The pages in `first..end` holding an entry in the table.
    pub fn pages_in(&self, first: Ppn, end: Ppn) -> impl Iterator<Item = Ppn> + '_ {
        self.page_xids.range(first..end).map(|(&p, _)| p)
    }

    pub fn open_count(&self) -> usize {
        self.ids.open_count()
    }

    /// Another open transaction than `tid` wrote `lpn` by a page-level call.
    pub fn check_conflict(&self, tid: Option<Tid>, lpn: Lpn) -> Result<()> {
        let conflict = self.ids.open().any(|(t, x)| Some(t) != tid && self.txs[&x].pages.contains(&lpn));
        if conflict {
            return Err(DeviceError::IsolationUnsupported {
                protocol: self.protocol,
                level: "serializable (a page written by two open transactions through write_tx; write_records takes them)",
            });
        }
        Ok(())
    }

    /// Entry `info` of transaction `xid` in page `ppn` counts for recovery now.
    pub fn add_entry(&mut self, xid: u32, ppn: Ppn, info: EntryInfo) {
        let Some(t) = self.txs.get_mut(&xid) else { return };
        t.entries.insert(ppn, info);
        let xids = self.page_xids.entry(ppn).or_default();
        if !xids.contains(&xid) {
            xids.push(xid);
        }
    }

    /// A host program of an open transaction's entry: its newest.
    pub fn programmed(&mut self, xid: u32, ppn: Ppn, info: EntryInfo, done_ns: u64) {
        self.add_entry(xid, ppn, info);
        let t = self.txs.get_mut(&xid).expect("an open transaction's entry");
        assert!(t.is_open(), "XID {xid} programmed while {:?}", t.state);
        t.last = Some(ppn);
        t.done_ns = t.done_ns.max(done_ns);
        t.first_done_ns.get_or_insert(done_ns);
    }

    /// GC (or a flag program's spent page) copied `old` to `new`, whose
    /// entries are `entries` (as the copy holds them): each counts too.
    pub fn relocated(&mut self, old: Ppn, new: Ppn, entries: &[Entry], lpn: Lpn, version: u32, seq: u64) {
        let Some(xids) = self.page_xids.get(&old).cloned() else { return };
        for xid in xids {
            let Some(index) = entries.iter().position(|e| e.xid == xid) else {
                continue;
            };
            let e = entries[index];
            let info = EntryInfo {
                index: index as u8,
                lpn,
                version,
                link: e.link,
                seq,
                flag: e.flag,
            };
            self.add_entry(xid, new, info);
            let t = self.txs.get_mut(&xid).expect("just added");
            if t.last == Some(old) {
                t.last = Some(new);
            }
        }
    }

    /// A flag program cleared `clear` of page `ppn`'s flags.
    pub fn flags_cleared(&mut self, ppn: Ppn, clear: [u8; 4]) {
        let Some(xids) = self.page_xids.get(&ppn) else { return };
        for x in xids {
            if let Some(e) = self.txs.get_mut(x).and_then(|t| t.entries.get_mut(&ppn)) {
                e.flag &= !clear[e.index as usize];
            }
        }
    }

    /// Entries in `first..end` stop counting (their block released or
    /// erased); an aborted transaction left with none leaves the table.
    pub fn forget_pages(&mut self, first: Ppn, end: Ppn) {
        let gone: Vec<Ppn> = self.page_xids.range(first..end).map(|(&p, _)| p).collect();
        let mut touched = BTreeSet::new();
        for ppn in gone {
            for xid in self.page_xids.remove(&ppn).unwrap_or_default() {
                if let Some(t) = self.txs.get_mut(&xid) {
                    t.entries.remove(&ppn);
                    touched.insert(xid);
                }
            }
        }
        for xid in touched {
            if self
                .txs
                .get(&xid)
                .is_some_and(|t| t.state == TxState::Aborted && t.entries.is_empty())
            {
                self.txs.remove(&xid);
            }
        }
    }

    fn unindex(&mut self, t: &Tx) {
        for p in t.entries.keys() {
            if let Some(xids) = self.page_xids.get_mut(p) {
                xids.retain(|&x| x != t.xid);
                if xids.is_empty() {
                    self.page_xids.remove(p);
                }
            }
        }
    }

    /// `tid` committed: it leaves the table (a transaction not in it is
    /// committed), and its entries with it.
    pub fn commit(&mut self, tid: Tid) -> Option<Tx> {
        let xid = self.ids.end(tid)?;
        let t = self.txs.remove(&xid)?;
        self.unindex(&t);
        Some(t)
    }

    /// In-doubt `xid` committed: it leaves the table.
    pub fn commit_in_doubt(&mut self, xid: u32) -> Option<Tx> {
        if self.txs.get(&xid)?.state != TxState::InDoubt {
            return None;
        }
        let t = self.txs.remove(&xid).expect("just looked up");
        self.unindex(&t);
        Some(t)
    }

    /// `tid` aborted: it stays, aborted, while its entries are on flash.
    pub fn abort(&mut self, tid: Tid) -> Option<u32> {
        let xid = self.ids.end(tid)?;
        let t = self.txs.get_mut(&xid)?;
        t.state = TxState::Aborted;
        t.last = None;
        t.pages.clear();
        if t.entries.is_empty() {
            self.txs.remove(&xid);
        }
        Some(xid)
    }

    /// A transaction a mount found not committed, with its entries on flash.
    pub fn add_uncommitted(&mut self, xid: u32, state: TxState, entries: impl IntoIterator<Item = (Ppn, EntryInfo)>) {
        assert!(!matches!(state, TxState::Open(_)), "a mount opens no transaction");
        self.txs.insert(xid, Tx::new(xid, state));
        for (ppn, info) in entries {
            self.add_entry(xid, ppn, info);
        }
    }

    /// The transactions in doubt.
    pub fn in_doubt(&self) -> Vec<u32> {
        self.txs.values().filter(|t| t.state == TxState::InDoubt).map(|t| t.xid).collect()
    }

    /// Every transaction in doubt is aborted; returns them.
    pub fn settle(&mut self) -> Vec<u32> {
        let mut out = Vec::new();
        for t in self.txs.values_mut().filter(|t| t.state == TxState::InDoubt) {
            t.state = TxState::Aborted;
            out.push(t.xid);
        }
        out
    }

    /// Every transaction in the table, for checks.
    pub fn all(&self) -> impl Iterator<Item = &Tx> {
        self.txs.values()
    }

    /// The table's own consistency.
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut indexed = 0;
        for (ppn, xids) in &self.page_xids {
            for xid in xids {
                indexed += 1;
                if !self.txs.get(xid).is_some_and(|t| t.entries.contains_key(ppn)) {
                    return Err(format!("page {ppn} indexed under XID {xid}, which holds no entry there"));
                }
            }
        }
        let held: usize = self.txs.values().map(|t| t.entries.len()).sum();
        if held != indexed {
            return Err(format!("{held} entries held by transactions, {indexed} indexed"));
        }
        Ok(())
    }
}
