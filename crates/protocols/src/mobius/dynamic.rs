//! Möbius's dynamic transaction (§III-D): `dwrite(lpn, HEAD|BODY|REAR)`,
//! one at a time, its pages sent one by one.
//!
//! - HEAD: the writes outside transactions not logged yet get their inode
//!   first (their mappings are older than the chain's), a new transaction
//!   id is taken, the HEAD's page reserved (`Ftl::reserve_host_pages`), and
//!   a head record {id, HEAD's page} appended to the head list (ring 1).
//! - Each page is programmed where reserved, with the id and the page where
//!   the next one will be programmed (reserved now) in its spare area; the
//!   REAR's points back to the HEAD: the chain closes into a cycle, the
//!   commit (the paper's rule, like SCC's). Then, once every page of it is
//!   on flash, an inode of kind 2 lists where the transaction's pages lie,
//!   and the mappings go into DRAM; `dwrite(REAR)` returns after the inode.
//! - Until then the pages are unmapped (a checkpoint in between persists
//!   none of them; it records the open transaction's id, see recovery) and
//!   GC keeps them (`extra_live`), moving them if it must: the inode names
//!   the copy, the chain still the source, intact until the next
//!   checkpoint. Plain reads return committed data; the transaction's own
//!   pages are read through `read_tx`.
//! - No other write comes while it is open (the paper: the SSD "cannot
//!   accept other write request like SWRITE or normal WRITE"): a write, a
//!   trim or a static transaction is refused with a typed error.
//! - `dabort`: the reserved page is given back, and an inode of kind 5 tells
//!   recovery not to walk the chain.
//! - A program that fails writes the whole chain again from a new HEAD
//!   under a new id (its pages are kept in device DRAM while it is open).

use super::device::REWRITES_MAX;
use super::format::{ChainPage, HeadRecord, Inode, InodeKind};
use super::Mobius;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::extensions::{DynamicPos, DynamicTx};
use txftl_ftl::{DeviceError, Lpn, Ppn, Result};

/// The open dynamic transaction, as the hooks keep it (GC asks them).
#[derive(Clone, Debug)]
pub struct OpenChain {
    pub tx: u32,
    pub head: Ppn,
    /// Where its next page will be programmed (reserved).
    pub next: Ppn,
    /// Its pages in program order: logical page, where it lies now.
    pub pages: Vec<(Lpn, Ppn)>,
    /// The same pages by place, for GC.
    live: BTreeSet<Ppn>,
    /// GC moved one of its pages: its link into the source is walkable only
    /// until the next checkpoint releases the source's block.
    moved: bool,
}

impl OpenChain {
    fn new(tx: u32, head: Ppn) -> OpenChain {
        OpenChain {
            tx,
            head,
            next: head,
            pages: Vec::new(),
            live: BTreeSet::new(),
            moved: false,
        }
    }

    pub fn holds(&self, ppn: Ppn) -> bool {
        self.live.contains(&ppn)
    }

    pub fn count_in(&self, first: Ppn, end: Ppn) -> u32 {
        self.live.range(first..end).count() as u32
    }

    /// Whether GC moved one of its pages since it began.
    pub fn moved_any(&self) -> bool {
        self.moved
    }

    /// GC moved one of its pages.
    pub fn moved(&mut self, old: Ppn, new: Ppn) {
        if self.live.remove(&old) {
            self.moved = true;
            self.live.insert(new);
            for p in self.pages.iter_mut().filter(|p| p.1 == old) {
                p.1 = new;
            }
        }
    }

    fn push(&mut self, lpn: Lpn, ppn: Ppn) {
        self.pages.push((lpn, ppn));
        self.live.insert(ppn);
    }

    /// Where `lpn`'s newest page in the transaction lies.
    pub fn lookup(&self, lpn: Lpn) -> Option<Ppn> {
        self.pages.iter().rev().find(|p| p.0 == lpn).map(|p| p.1)
    }
}

impl Mobius {
    pub(super) fn chain_open(&self) -> bool {
        self.ftl.hooks().chain.is_some()
    }

    /// Refuses `what` while a dynamic transaction is open.
    pub(super) fn refuse_in_chain(&self, what: &str) -> Result<()> {
        match &self.ftl.hooks().chain {
            Some(c) => Err(DeviceError::CallOrder(format!(
                "{what} while dynamic transaction {} is open: Möbius takes no other write until its REAR or abort \
                 (crashtest/run: --concurrency 1 --tx-exclusive)",
                c.tx
            ))),
            None => Ok(()),
        }
    }

    /// Starts a chain: a new id, its HEAD's page reserved, its head record
    /// on flash.
    fn start_chain(&mut self) -> Result<()> {
        let head = self.ftl.reserve_host_pages(1)?[0];
        let tx = self.ftl.hooks().next_tx;
        self.ftl.hooks_mut().next_tx += 1;
        let mut page = vec![0u8; self.ftl.page_size() as usize];
        HeadRecord { tx, head }.encode(&mut page);
        if let Err(e) = self.ftl.append_log(1, &page) {
            self.ftl.void_reserved();
            return Err(e);
        }
        let h = self.ftl.hooks_mut();
        h.counts.head_records += 1;
        assert!(h.chain.is_none(), "a chain started with another open");
        h.chain = Some(OpenChain::new(tx, head));
        Ok(())
    }

    /// Programs the chain's pages `from..` (the first where the chain's
    /// next page is reserved), each with the page after it; the last points
    /// to the HEAD if `close`. False: a program failed.
    fn program_links(&mut self, from: usize, close: bool) -> Result<bool> {
        let n = self.chain_data.len();
        for i in from..n {
            let chain = self.ftl.hooks().chain.as_ref().expect("a chain is open");
            let (tx, at, head) = (chain.tx, chain.next, chain.head);
            let next = if i + 1 == n && close {
                head
            } else {
                self.ftl.reserve_host_pages(1)?[0]
            };
            let (lpn, data) = &self.chain_data[i];
            let tag = ChainPage { tx, lpn: *lpn, next }.encode();
            let lpn = *lpn;
            if self.ftl.program_reserved(at, lpn, data, &tag)?.is_none() {
                return Ok(false);
            }
            let chain = self.ftl.hooks_mut().chain.as_mut().expect("a chain is open");
            chain.push(lpn, at);
            chain.next = next;
        }
        Ok(true)
    }

    /// Appends `lpn`'s page to the chain (starting it if none is open),
    /// closing it if `close`; a failed program writes the chain again.
    fn chain_page(&mut self, lpn: Lpn, data: &[u8], close: bool) -> Result<()> {
        if !self.chain_open() {
            self.start_chain()?;
        }
        self.chain_data.push((lpn, data.to_vec()));
        let mut from = self.chain_data.len() - 1;
        for _ in 0..=REWRITES_MAX {
            if self.program_links(from, close)? {
                return Ok(());
            }
            self.ftl.void_reserved();
            self.ftl.housekeeping()?;
            self.ftl.hooks_mut().counts.retries += 1;
            self.start_chain()?;
            from = 0;
        }
        self.drop_chain();
        Err(DeviceError::WornOut(format!(
            "a dynamic transaction's programs failed {REWRITES_MAX} times over"
        )))
    }

    fn drop_chain(&mut self) {
        self.ftl.void_reserved();
        self.ftl.hooks_mut().chain = None;
        self.chain_data.clear();
    }

    /// After the REAR: once every page is on flash, the inode, then the
    /// mappings into DRAM.
    fn close_chain(&mut self) -> Result<()> {
        // The inode makes the transaction committed whatever the chain: it
        // must not be on flash before a page it names.
        self.ftl.wait_idle();
        let chain = self.ftl.hooks().chain.clone().expect("a chain is open");
        let last: BTreeMap<Lpn, Ppn> = chain.pages.iter().copied().collect();
        let items = last.iter().map(|(&l, &p)| (l, p)).collect();
        let inodes = Inode::split(InodeKind::Dynamic, chain.tx, 0, items, self.items_max(), self.ftl.hooks().set.s_max);
        self.append_parts(inodes)?;
        self.ftl.hooks_mut().chain = None;
        self.chain_data.clear();
        for (lpn, ppn) in last {
            self.ftl.map_page(lpn, ppn)?;
            self.ftl.hooks_mut().undurable.remove(&lpn);
        }
        self.ftl.tx_commit_whole();
        Ok(())
    }

    /// Appends a transaction's inodes (`Inode::split`: its parts, then the
    /// inode that binds them), each with the flags due. Room for all of
    /// them is made first. A checkpoint may still fall between them (a
    /// program of the ring that failed and moved on took a slot more):
    /// recovery would then find the parts before it missing, so the whole
    /// set is appended again after it, contiguous (a static transaction's
    /// data is not written yet; a dynamic one's REAR is, and its chain alone
    /// would be walkable only while it is the newest).
    pub(super) fn append_parts(&mut self, inodes: Vec<Inode>) -> Result<()> {
        debug_assert!(inodes.last().is_some_and(|i| i.kind.part_kind().is_some()));
        debug_assert!(inodes
            .iter()
            .rev()
            .skip(1)
            .all(|i| Some(i.kind) == inodes[inodes.len() - 1].kind.part_kind()));
        for _ in 0..=REWRITES_MAX {
            self.ala_room(inodes.len() as u32)?;
            let before = self.ftl.hooks().checkpoints;
            for inode in &inodes {
                let mut inode = inode.clone();
                inode.flags = self.take_flags();
                self.append_inode(&inode)?;
                let c = &mut self.ftl.hooks_mut().counts;
                c.part_inodes += u64::from(matches!(inode.kind, InodeKind::StaticPart | InodeKind::DynamicPart));
                c.dynamic_inodes += u64::from(matches!(inode.kind, InodeKind::Dynamic | InodeKind::DynamicPart));
            }
            if self.ftl.hooks().checkpoints == before {
                return Ok(());
            }
            self.ftl.hooks_mut().counts.retries += 1;
        }
        Err(DeviceError::WornOut(format!(
            "a transaction's {} inodes met a checkpoint between them {REWRITES_MAX} times over",
            inodes.len()
        )))
    }

    /// One dynamic page.
    pub(super) fn dynamic_page(&mut self, lpn: Lpn, data: &[u8], pos: DynamicPos) -> Result<u64> {
        self.ftl.check_lpn(lpn)?;
        self.ftl.check_data_len(data.len())?;
        let start = self.ftl.now();
        match (pos, &self.ftl.hooks().chain) {
            (DynamicPos::Head, Some(c)) => {
                return Err(DeviceError::CallOrder(format!(
                    "dwrite(HEAD) while dynamic transaction {} is open: one at a time",
                    c.tx
                )))
            }
            (DynamicPos::Body, None) => return Err(DeviceError::CallOrder("dwrite(BODY) with no dynamic transaction open".into())),
            (_, Some(c)) if c.pages.len() as u32 >= self.tx_pages_max() => {
                return Err(DeviceError::TableFull {
                    capacity: self.tx_pages_max(),
                })
            }
            (_, None) => {
                // What the chain follows is logged before it, and merged if
                // the active ALA is full.
                self.settle()?;
                self.log_pending()?;
                self.merge_if_full()?;
            }
            _ => {}
        }
        let close = pos == DynamicPos::Rear;
        let r = self.chain_page(lpn, data, close).and_then(|()| match close {
            true => self.close_chain(),
            false => Ok(()),
        });
        if r.is_err() {
            // Nothing of it is committed: the host hears why.
            self.drop_chain();
        }
        r?;
        self.ftl.housekeeping()?;
        Ok(self.ftl.now() - start)
    }

    /// Aborts the open dynamic transaction: an inode of kind 5 names it.
    pub(super) fn dynamic_abort(&mut self) -> Result<u64> {
        let start = self.ftl.now();
        let Some(tx) = self.ftl.hooks().chain.as_ref().map(|c| c.tx) else {
            return Err(DeviceError::CallOrder("dabort with no dynamic transaction open".into()));
        };
        self.ftl.void_reserved();
        let inode = Inode {
            kind: InodeKind::DynamicAborted,
            tx,
            host_tid: 0,
            parts: 0,
            s_max: self.ftl.hooks().set.s_max,
            flags: self.take_flags(),
            items: Vec::new(),
        };
        self.append_inode(&inode)?;
        self.drop_chain();
        self.ftl.hooks_mut().counts.dynamic_inodes += 1;
        self.ftl.tx_abort_whole();
        self.ftl.housekeeping()?;
        Ok(self.ftl.now() - start)
    }

    /// The open dynamic transaction's newest page of `lpn`, read.
    pub(super) fn read_in_chain(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<Option<u64>> {
        match self.ftl.hooks().chain.as_ref().and_then(|c| c.lookup(lpn)) {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf).map(Some),
            None => Ok(None),
        }
    }
}

impl DynamicTx for Mobius {
    /// A REAR with no transaction open is a one-page transaction (its page
    /// is its HEAD, pointing to itself).
    fn dwrite(&mut self, lpn: Lpn, data: &[u8], pos: DynamicPos) -> Result<u64> {
        self.dynamic_page(lpn, data, pos)
    }

    fn dabort(&mut self) -> Result<u64> {
        self.dynamic_abort()
    }
}
