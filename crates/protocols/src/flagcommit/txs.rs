//! Flag Commit's transaction table (§3.1, Fig. 4): the transactions in
//! progress and the aborted ones whose pages are still on flash; a
//! transaction not in it is committed. For each, the pages of it that count
//! for recovery (on flash, in a block not yet released), which the commit
//! reads the heads from (CFC) or flips (AFC), and GC reads the flags to move
//! from (AFC's aborted transactions).
//!
//! A page stops counting when the checkpoint that releases its block is
//! durable (`PersistHooks::blocks_released`) or when its block is erased,
//! not when GC copies it: until then recovery still reads it.

use super::format::PageMeta;
use super::xids::Xids;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{DeviceError, Lpn, Result, Tid};
use txftl_nand::Ppn;

/// A page of a transaction in the table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageInfo {
    pub lpn: Lpn,
    pub version: u32,
    pub link: Option<Ppn>,
    pub seq: u64,
    /// The commit flag as this mount programmed it (and cleared since).
    pub flag: u8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxState {
    Open(Tid),
    Aborted,
}

#[derive(Clone, Debug)]
pub struct Tx {
    pub xid: u32,
    pub state: TxState,
    /// Its pages that count for recovery, GC copies and originals alike.
    pub pages: BTreeMap<Ppn, PageInfo>,
    /// Open: each logical page's newest page of it (what commit maps).
    pub latest: BTreeMap<Lpn, Ppn>,
    /// Open: the newest page the host wrote.
    pub last: Option<Ppn>,
    /// Open: when every page programmed so far is done on its die.
    pub done_ns: u64,
    /// Open: when its first page is done (AFC programs no later page before).
    pub first_done_ns: Option<u64>,
    /// Open, and committed on flash by `write_end`: its pages wait only for
    /// its `commit` to enter the L2P (GC treats it as committed).
    pub ended: bool,
}

impl Tx {
    fn new(xid: u32, state: TxState) -> Tx {
        Tx {
            xid,
            state,
            pages: BTreeMap::new(),
            latest: BTreeMap::new(),
            last: None,
            done_ns: 0,
            first_done_ns: None,
            ended: false,
        }
    }

    pub fn is_open(&self) -> bool {
        matches!(self.state, TxState::Open(_))
    }
}

#[derive(Clone, Debug)]
pub struct TxTable {
    protocol: &'static str,
    txs: BTreeMap<u32, Tx>,
    ids: Xids,
    /// Every page in the table -> its transaction.
    page_xid: BTreeMap<Ppn, u32>,
    /// The pages of open transactions (few): what GC's count of kept pages
    /// of every candidate victim reads, instead of every page in the table.
    open_pages: BTreeSet<Ppn>,
}

impl TxTable {
    pub fn new(protocol: &'static str) -> TxTable {
        TxTable {
            protocol,
            txs: BTreeMap::new(),
            ids: Xids::new(protocol, u32::MAX - 2),
            page_xid: BTreeMap::new(),
            open_pages: BTreeSet::new(),
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

    pub fn by_xid(&self, xid: u32) -> Option<&Tx> {
        self.txs.get(&xid)
    }

    pub fn by_xid_mut(&mut self, xid: u32) -> Option<&mut Tx> {
        self.txs.get_mut(&xid)
    }

    /// The transaction page `ppn` belongs to, if it is in the table.
    pub fn of_page(&self, ppn: Ppn) -> Option<(&Tx, &PageInfo)> {
        let t = self.txs.get(self.page_xid.get(&ppn)?)?;
        Some((t, t.pages.get(&ppn)?))
    }

    /// The pages in the table in `first..end`, each with its transaction.
    pub fn pages_in(&self, first: Ppn, end: Ppn) -> impl Iterator<Item = (Ppn, &Tx)> + '_ {
        self.page_xid
            .range(first..end)
            .filter_map(|(&p, x)| self.txs.get(x).map(|t| (p, t)))
    }

    /// Page `ppn` belongs to an open transaction (a lookup in a small set).
    pub fn is_open_page(&self, ppn: Ppn) -> bool {
        self.open_pages.contains(&ppn)
    }

    /// The pages of open transactions in `first..end`, each with its transaction.
    pub fn open_pages_in(&self, first: Ppn, end: Ppn) -> impl Iterator<Item = (Ppn, &Tx)> + '_ {
        self.open_pages
            .range(first..end)
            .filter_map(|p| self.txs.get(&self.page_xid[p]).map(|t| (*p, t)))
    }

    pub fn open_count(&self) -> usize {
        self.ids.open_count()
    }

    /// Another open transaction than `tid` wrote `lpn`.
    pub fn check_conflict(&self, tid: Option<Tid>, lpn: Lpn) -> Result<()> {
        let conflict = self
            .ids
            .open()
            .any(|(t, x)| Some(t) != tid && self.txs[&x].latest.contains_key(&lpn));
        if conflict {
            return Err(DeviceError::IsolationUnsupported {
                protocol: self.protocol,
                level: "serializable (a page written by two open transactions)",
            });
        }
        Ok(())
    }

    /// Page `ppn` of transaction `xid` counts for recovery now.
    pub fn add_page(&mut self, xid: u32, ppn: Ppn, info: PageInfo) {
        let Some(t) = self.txs.get_mut(&xid) else { return };
        let before = self.page_xid.insert(ppn, xid);
        assert!(before.is_none_or(|x| x == xid), "page {ppn} of XID {xid} was XID {before:?}'s");
        if t.is_open() {
            self.open_pages.insert(ppn);
        }
        t.pages.insert(ppn, info);
    }

    /// A host program of an open transaction's page: it is the newest of
    /// its logical page and of the transaction.
    pub fn programmed(&mut self, xid: u32, ppn: Ppn, info: PageInfo, done_ns: u64) {
        self.add_page(xid, ppn, info);
        let Some(t) = self.txs.get_mut(&xid).filter(|t| t.is_open()) else {
            return;
        };
        t.latest.insert(info.lpn, ppn);
        t.last = Some(ppn);
        t.done_ns = t.done_ns.max(done_ns);
        t.first_done_ns.get_or_insert(done_ns);
    }

    /// GC (or a flag program's spent page) copied `old` to `new`: the copy
    /// counts too, and stands for `old` where the transaction named it.
    pub fn relocated(&mut self, old: Ppn, new: Ppn, meta: &PageMeta, seq: u64) {
        let Some(&xid) = self.page_xid.get(&old) else { return };
        let Some(t) = self.txs.get(&xid) else { return };
        let lpn = t.pages[&old].lpn;
        let info = PageInfo {
            lpn,
            version: meta.version,
            link: meta.link,
            seq,
            flag: meta.flag,
        };
        self.add_page(xid, new, info);
        let t = self.txs.get_mut(&xid).expect("just looked up");
        if t.latest.get(&lpn) == Some(&old) {
            t.latest.insert(lpn, new);
        }
        if t.last == Some(old) {
            t.last = Some(new);
        }
    }

    /// A flag program cleared `bits` of page `ppn`'s flag.
    pub fn flag_cleared(&mut self, ppn: Ppn, bits: u8) {
        if let Some(p) = self
            .page_xid
            .get(&ppn)
            .and_then(|x| self.txs.get_mut(x))
            .and_then(|t| t.pages.get_mut(&ppn))
        {
            p.flag &= !bits;
        }
    }

    /// Pages in `first..end` stop counting (their block released or erased);
    /// an aborted transaction left with none leaves the table.
    pub fn forget_pages(&mut self, first: Ppn, end: Ppn) {
        let gone: Vec<(Ppn, u32)> = self.page_xid.range(first..end).map(|(&p, &x)| (p, x)).collect();
        let mut touched = BTreeSet::new();
        for (ppn, xid) in gone {
            self.page_xid.remove(&ppn);
            self.open_pages.remove(&ppn);
            if let Some(t) = self.txs.get_mut(&xid) {
                t.pages.remove(&ppn);
                touched.insert(xid);
            }
        }
        for xid in touched {
            if self
                .txs
                .get(&xid)
                .is_some_and(|t| t.state == TxState::Aborted && t.pages.is_empty())
            {
                self.txs.remove(&xid);
            }
        }
    }

    /// `tid` committed: it leaves the table (a transaction not in it is
    /// committed), and its pages with it.
    pub fn commit(&mut self, tid: Tid) -> Option<Tx> {
        let xid = self.ids.end(tid)?;
        let t = self.txs.remove(&xid)?;
        for p in t.pages.keys() {
            self.page_xid.remove(p);
            self.open_pages.remove(p);
        }
        Some(t)
    }

    /// `tid` aborted: it stays, aborted, while its pages are on flash.
    pub fn abort(&mut self, tid: Tid) -> Option<&Tx> {
        let xid = self.ids.end(tid)?;
        let t = self.txs.get_mut(&xid)?;
        t.state = TxState::Aborted;
        for p in t.pages.keys() {
            self.open_pages.remove(p);
        }
        t.latest.clear();
        t.last = None;
        if t.pages.is_empty() {
            self.txs.remove(&xid);
            return None;
        }
        self.txs.get(&xid)
    }

    /// A transaction recovery found uncommitted, with its pages on flash.
    pub fn add_aborted(&mut self, xid: u32, pages: impl IntoIterator<Item = (Ppn, PageInfo)>) {
        self.txs.insert(xid, Tx::new(xid, TxState::Aborted));
        for (ppn, info) in pages {
            self.add_page(xid, ppn, info);
        }
    }

    /// Aborted transactions in the table, and their pages.
    pub fn aborted_pages(&self) -> (usize, usize) {
        let aborted = self.txs.values().filter(|t| t.state == TxState::Aborted);
        aborted.fold((0, 0), |(n, p), t| (n + 1, p + t.pages.len()))
    }

    /// The page an ended transaction (`Tx::ended`) wrote last of `lpn`.
    pub fn ended_page(&self, lpn: Lpn) -> Option<Ppn> {
        self.ids
            .open()
            .filter_map(|(_, x)| self.txs.get(&x))
            .filter(|t| t.ended)
            .find_map(|t| t.latest.get(&lpn).copied())
    }

    /// Every transaction in the table, for checks.
    pub fn all(&self) -> impl Iterator<Item = &Tx> {
        self.txs.values()
    }

    /// The table's own consistency.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (ppn, xid) in &self.page_xid {
            if !self.txs.get(xid).is_some_and(|t| t.pages.contains_key(ppn)) {
                return Err(format!("page {ppn} indexed under XID {xid}, which does not hold it"));
            }
        }
        let open: BTreeSet<Ppn> = self
            .page_xid
            .iter()
            .filter(|(_, x)| self.txs[*x].is_open())
            .map(|(&p, _)| p)
            .collect();
        if open != self.open_pages {
            return Err(format!(
                "{} pages of open transactions, {} indexed as such",
                open.len(),
                self.open_pages.len()
            ));
        }
        let held: usize = self.txs.values().map(|t| t.pages.len()).sum();
        if held != self.page_xid.len() {
            return Err(format!("{held} pages held by transactions, {} indexed", self.page_xid.len()));
        }
        Ok(())
    }
}
