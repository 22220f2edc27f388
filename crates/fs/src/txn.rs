//! Metadata changes that are not durable yet, per context, and how a context
//! makes them durable (commit) or drops them (abort).
//!
//! A context is an open device transaction (`Some(tid)`, one per writer: the
//! SQLite VFS opens one per database file handle) or the non-transactional
//! writes (`None`: journals, WAL, temporary files, everything on a journaled
//! file system). The committed metadata (`Fs::inodes`, `Fs::bitmap`) is what
//! the device holds durably; each context keeps its changes apart in a
//! [`Pending`]: its own copies of the inodes it changes, the data pages it
//! allocated or freed, and the metadata pages those changes touch: inode
//! pages, bitmap pages, and the extent overflow pages of its files whose
//! contents change (the page holding a changed extent, and the one before it,
//! whose next-page link may change).
//!
//! Why several transactions cannot lose each other's metadata. X-FTL lets two
//! active transactions write the same logical page, each seeing its own copy,
//! and the last commit wins for that page. The inode table and the bitmap
//! pack many files into one page, so if two transactions each wrote their own
//! image of a shared metadata page while open, the second commit would undo
//! the first one's change. So:
//!
//! 1. A transaction never writes a metadata page while it is open. Its
//!    metadata pages are written only inside [`Fs::commit`], immediately before
//!    the device commit, and `commit` runs under `&mut Fs` (the VFS holds the
//!    file system's mutex), so no other context runs in between. The image of
//!    each page is built at that moment from the committed state (which holds
//!    every earlier commit) plus this transaction's own changes, and nothing of
//!    any other open context. The last commit of a shared page therefore
//!    carries every committed change to it; nothing is lost.
//! 2. If a commit fails after writing some metadata pages (the X-L2P table is
//!    full), the transaction stays open with stale images in its device
//!    entries; a retried commit rewrites every page it ever touched (the set
//!    only grows) from the then-current committed state, and an abort drops
//!    them. Metadata pages are never read through a transaction (only at
//!    mount), so a stale image is never seen.
//! 3. One file's inode is changed by at most one context at a time: the first
//!    write claims it. A transaction that needs an inode another open
//!    transaction holds gets [`FsError::Busy`] (SQLite's locks keep two
//!    writers off one database, so this is a safety net, not a code path); one
//!    that needs an inode with pending non-transactional changes makes those
//!    durable first (an early fsync), so a transaction's copy always starts
//!    from the committed inode.
//! 4. Data pages a context allocates are reserved for it (no other context can
//!    take them) until it commits (they become allocated) or aborts (free
//!    again); pages it frees stay allocated until it commits, so nobody reuses
//!    a page an abort would give back to its file. A page a transaction
//!    allocates and frees again (a file that grows, then shrinks) stays
//!    reserved until the transaction ends: the transaction's device entry for
//!    that page (data, or an overflow image of a failed commit attempt)
//!    commits with it, and must not land on a page another file took in
//!    between. (Non-transactional writes go to the device at once, so the
//!    non-transactional context gives such a page back at once.)
//! 5. Extent overflow pages belong to one file, so they are never shared:
//!    only the context that claimed the file (rule 3) touches them, and their
//!    image is built from that context's copy of the inode. They are data
//!    pages for the allocator (rule 4). A touched overflow page that is no
//!    longer in the file's chain when the metadata is written (the file shrank
//!    or was deleted) is not written: it is free in the new bitmap, or
//!    reserved to this context, or (non-transactional) may already hold
//!    another file's data. Rule 2 holds for the pages still in the chain.
//!
//! The on-flash format is the same in both modes: a metadata page is the
//! same bytes ([`crate::layout`]), only which transaction writes it is
//! decided here.

use crate::inode::Inode;
use crate::layout::{EXTENTS_INLINE, INODE_BYTES};
use crate::{Fs, FsError, FsMode, Ino, Result};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Call, DeviceError, Extension, Lpn, Tid};

/// Whose change: an open device transaction, or none (non-transactional).
pub(crate) type Ctx = Option<Tid>;

/// One context's metadata changes that are not durable yet.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    /// The context's copies of the inodes it claimed (changed or about to be).
    pub inodes: BTreeMap<Ino, Inode>,
    /// Data pages (bitmap index) it allocated: reserved for it.
    pub alloc: BTreeSet<u32>,
    /// Data pages it freed: still allocated in the committed bitmap.
    pub freed: BTreeSet<u32>,
    /// Data pages a transaction allocated and freed again: reserved for it
    /// until it ends, free in its bitmap (rule 4).
    pub dropped: BTreeSet<u32>,
    /// Metadata pages its changes touch (only grows, see the module comment).
    pub pages: BTreeSet<Lpn>,
}

/// What a metadata page holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum MetaPage {
    Inodes,
    Bitmap,
    /// Page `k` of inode `ino`'s overflow chain.
    Overflow(Ino, usize),
}

impl Fs {
    /// The inode as `ctx` sees it: its own pending copy; for a transaction,
    /// else the non-transactional pending copy (those writes are on the device
    /// already, only their metadata is not durable yet); else the committed one.
    pub(crate) fn view(&self, ctx: Ctx, ino: Ino) -> Option<&Inode> {
        let committed = self.inodes.get(ino as usize)?;
        let mine = self.pending.get(&ctx).and_then(|p| p.inodes.get(&ino));
        let plain = || match ctx {
            Some(_) => self.pending.get(&None).and_then(|p| p.inodes.get(&ino)),
            None => None,
        };
        Some(mine.or_else(plain).unwrap_or(committed))
    }

    /// The context holding pending changes of `ino`, if any.
    pub(crate) fn owner(&self, ino: Ino) -> Option<Ctx> {
        self.pending.iter().find(|(_, p)| p.inodes.contains_key(&ino)).map(|(c, _)| *c)
    }

    /// Makes `ctx` the only context that may change `ino` until it commits or aborts.
    pub(crate) fn claim(&mut self, ctx: Ctx, ino: Ino) -> Result<()> {
        match self.owner(ino) {
            Some(c) if c == ctx => return Ok(()),
            Some(Some(tid)) => {
                let name = self.inodes.get(ino as usize).map(|i| i.name.clone()).unwrap_or_default();
                return Err(FsError::Busy { name, tid });
            }
            // A transaction takes over an inode with non-transactional pending
            // changes: those become durable first, so its copy starts committed.
            Some(None) => self.make_plain_durable()?,
            None => {}
        }
        // Its non-transactional dirty pages were written first: they reach
        // the device before the transaction's (which would otherwise be
        // overwritten by a later write-back).
        if ctx.is_some() {
            self.write_back_file(None, ino)?;
        }
        let inode = self.inodes.get(ino as usize).cloned().ok_or(FsError::BadHandle(ino))?;
        self.pending.entry(ctx).or_default().inodes.insert(ino, inode);
        Ok(())
    }

    /// `ctx`'s copy of `ino`, to change (its inode page will be written).
    pub(crate) fn inode_mut(&mut self, ctx: Ctx, ino: Ino) -> Result<&mut Inode> {
        self.claim(ctx, ino)?;
        let page = self.layout.inode_start + ino / self.layout.inodes_per_page();
        let p = self.pending.get_mut(&ctx).expect("claimed above");
        p.pages.insert(page);
        Ok(p.inodes.get_mut(&ino).expect("claimed above"))
    }

    /// `ctx` changed extent `e` of `ino` (grew, added or cut it): the overflow
    /// page holding it and the one holding the extent before it (whose
    /// next-page link may change) are touched; inline extents live in the
    /// inode page, touched by [`Fs::inode_mut`].
    pub(crate) fn touch_extent(&mut self, ctx: Ctx, ino: Ino, e: usize) {
        let per_page = self.layout.extents_per_overflow_page();
        let Some(p) = self.pending.get_mut(&ctx) else { return };
        let Some(inode) = p.inodes.get(&ino) else { return };
        for i in [e.saturating_sub(1), e] {
            if i >= EXTENTS_INLINE {
                if let Some(&lpn) = inode.overflow.get((i - EXTENTS_INLINE) / per_page) {
                    p.pages.insert(lpn);
                }
            }
        }
    }

    fn bitmap_page(&self, i: u32) -> Lpn {
        self.layout.bitmap_start + i / (8 * self.page_size() as u32)
    }

    fn committed_bit(&self, i: u32) -> bool {
        self.bitmap[i as usize / 8] & (1 << (i % 8)) != 0
    }

    fn set_committed_bit(&mut self, i: u32, on: bool) {
        let byte = &mut self.bitmap[i as usize / 8];
        if on {
            *byte |= 1 << (i % 8);
        } else {
            *byte &= !(1 << (i % 8));
        }
    }

    /// Is the committed bitmap byte holding data page `i` full (8 allocated pages)?
    pub(crate) fn committed_byte_full(&self, i: u32) -> bool {
        self.bitmap[i as usize / 8] == 0xFF
    }

    /// Can any context allocate data page `i`?
    pub(crate) fn is_free(&self, i: u32) -> bool {
        !self.committed_bit(i) && !self.reserved.contains(&i)
    }

    /// Data page `i` (free) becomes `ctx`'s.
    pub(crate) fn take_page(&mut self, ctx: Ctx, i: u32) {
        debug_assert!(self.is_free(i), "data page {i} taken twice");
        let page = self.bitmap_page(i);
        self.reserved.insert(i);
        let p = self.pending.entry(ctx).or_default();
        p.alloc.insert(i);
        p.pages.insert(page);
    }

    /// `ctx` frees data page `i` (a page of a file it claimed).
    pub(crate) fn release_page(&mut self, ctx: Ctx, i: u32) {
        let page = self.bitmap_page(i);
        let p = self.pending.entry(ctx).or_default();
        p.pages.insert(page);
        if p.alloc.remove(&i) {
            if ctx.is_some() {
                p.dropped.insert(i); // reserved until the transaction ends (rule 4)
            } else {
                self.reserved.remove(&i);
                self.note_free(i);
            }
        } else {
            p.freed.insert(i);
        }
    }

    /// What metadata page `lpn` is for `ctx`: `None` for an overflow page
    /// that is in none of its files' chains any more (rule 5).
    fn meta_kind(&self, ctx: Ctx, lpn: Lpn, chains: &BTreeMap<Lpn, (Ino, usize)>) -> Option<MetaPage> {
        let l = &self.layout;
        if (l.inode_start..l.inode_start + l.inode_pages).contains(&lpn) {
            Some(MetaPage::Inodes)
        } else if (l.bitmap_start..l.bitmap_start + l.bitmap_pages).contains(&lpn) {
            Some(MetaPage::Bitmap)
        } else {
            debug_assert!(l.in_data(lpn) && self.pending.contains_key(&ctx));
            chains.get(&lpn).map(|&(ino, k)| MetaPage::Overflow(ino, k))
        }
    }

    /// The overflow pages of the files `ctx` claimed: page -> (inode, index in its chain).
    fn chains(&self, ctx: Ctx) -> BTreeMap<Lpn, (Ino, usize)> {
        let mut chains = BTreeMap::new();
        if let Some(p) = self.pending.get(&ctx) {
            for (&ino, inode) in &p.inodes {
                for (k, &lpn) in inode.overflow.iter().enumerate() {
                    chains.insert(lpn, (ino, k));
                }
            }
        }
        chains
    }

    /// The bytes of metadata page `lpn` with `ctx`'s changes over the committed state.
    fn meta_image(&self, ctx: Ctx, lpn: Lpn, kind: MetaPage, out: &mut [u8]) {
        let l = &self.layout;
        let ps = self.page_size();
        let pending = self.pending.get(&ctx);
        match kind {
            MetaPage::Inodes => {
                out.fill(0);
                let per_page = l.inodes_per_page() as usize;
                let first = (lpn - l.inode_start) as usize * per_page;
                for i in 0..per_page {
                    let ino = (first + i) as Ino;
                    let mine = pending.and_then(|p| p.inodes.get(&ino));
                    if let Some(inode) = mine.or_else(|| self.inodes.get(ino as usize)) {
                        inode.encode(&mut out[i * INODE_BYTES..(i + 1) * INODE_BYTES]);
                    }
                }
            }
            MetaPage::Bitmap => {
                let first = (lpn - l.bitmap_start) as usize * ps;
                out.copy_from_slice(&self.bitmap[first..first + ps]);
                let bits = first as u32 * 8..(first + ps) as u32 * 8;
                if let Some(p) = pending {
                    for &i in p.alloc.range(bits.clone()) {
                        out[i as usize / 8 - first] |= 1 << (i % 8);
                    }
                    for &i in p.freed.range(bits) {
                        out[i as usize / 8 - first] &= !(1 << (i % 8));
                    }
                }
            }
            MetaPage::Overflow(ino, k) => {
                let inode = pending.and_then(|p| p.inodes.get(&ino)).expect("a claimed file's chain");
                inode.encode_overflow(ino, k, l.extents_per_overflow_page(), out);
            }
        }
    }

    /// The images of every metadata page `ctx` touched and still has to write, in page order.
    pub(crate) fn pending_images(&self, ctx: Ctx) -> Vec<(Lpn, Vec<u8>)> {
        let Some(p) = self.pending.get(&ctx) else { return Vec::new() };
        let chains = self.chains(ctx);
        let mut out = Vec::with_capacity(p.pages.len());
        for &lpn in &p.pages {
            if let Some(kind) = self.meta_kind(ctx, lpn, &chains) {
                let mut page = vec![0u8; self.page_size()];
                self.meta_image(ctx, lpn, kind, &mut page);
                out.push((lpn, page));
            }
        }
        out
    }

    pub(crate) fn touched_count(&self, ctx: Ctx) -> usize {
        self.pending.get(&ctx).map_or(0, |p| p.pages.len())
    }

    /// `ctx`'s changes are durable: they become the committed state.
    pub(crate) fn fold(&mut self, ctx: Ctx) {
        let Some(p) = self.pending.remove(&ctx) else { return };
        for (ino, inode) in p.inodes {
            match (self.inodes[ino as usize].used(), inode.used()) {
                (false, true) => {
                    self.free_inodes.remove(&ino);
                }
                (true, false) => {
                    self.free_inodes.insert(ino);
                }
                _ => {}
            }
            self.inodes[ino as usize] = inode;
        }
        for i in p.alloc {
            self.reserved.remove(&i);
            self.set_committed_bit(i, true);
        }
        for i in p.freed {
            self.set_committed_bit(i, false);
            self.note_free(i);
        }
        for i in p.dropped {
            self.reserved.remove(&i);
            self.note_free(i);
        }
    }

    /// Writes `ctx`'s touched metadata pages inside device transaction
    /// `tid`; with `end`, the last one as the transaction's last page.
    pub(crate) fn write_pending(&mut self, ctx: Ctx, tid: Tid, end: bool) -> Result<()> {
        let images = self.pending_images(ctx);
        let n = images.len();
        for (i, (lpn, page)) in images.into_iter().enumerate() {
            if end && i + 1 == n {
                self.write_last_tx(tid, lpn, &page)?;
            } else {
                self.dev.write_tx(tid, lpn, &page)?;
            }
            self.read_cache.forget(lpn);
            self.stats.metadata_page_writes += 1;
        }
        Ok(())
    }

    /// The last page of device transaction `tid` before its commit: through
    /// the device's end-flagged write if it offers one (NoLgn's end flag:
    /// the commit then programs nothing), else as any other page.
    pub(crate) fn write_last_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<()> {
        if self.dev.offers(Extension::TxEnd) {
            self.dev.call(Call::WriteEnd { tid, lpn, data })?;
        } else {
            self.dev.write_tx(tid, lpn, data)?;
        }
        Ok(())
    }

    pub(crate) fn new_tid(&mut self) -> Tid {
        loop {
            let tid = self.next_tid;
            self.next_tid = self.next_tid.wrapping_add(1).max(1);
            if !self.open.contains(&tid) {
                return tid;
            }
        }
    }

    /// Makes the non-transactional metadata changes durable: through the
    /// journal, or on a transactional device in a transaction of their own.
    pub(crate) fn make_plain_durable(&mut self) -> Result<()> {
        if self.one_transaction() {
            return self.durable_in_one_transaction();
        }
        self.durable_ordered()
    }

    /// [`Fs::make_plain_durable`] in ordered mode: the data first, then the
    /// metadata (journal commit, or a device transaction of metadata pages).
    pub(crate) fn durable_ordered(&mut self) -> Result<()> {
        if self.touched_count(None) == 0 {
            self.fold(None); // claims without changes: nothing to write
            return Ok(());
        }
        // Ordered mode: the data the metadata names reaches the device first.
        self.write_back_ctx(None)?;
        match self.mode {
            FsMode::Journaled => self.journal_commit(),
            FsMode::Transactional => {
                let tid = self.new_tid();
                self.dev.begin(tid)?;
                let r = self.write_pending(None, tid, true).and_then(|()| Ok(self.dev.commit(tid)?));
                if let Err(e) = r {
                    // The changes stay pending for the next attempt.
                    let _ = self.dev.abort(tid);
                    return Err(e);
                }
                self.fold(None);
                self.stats.tx_commits += 1;
                Ok(())
            }
        }
    }

    /// Before a non-transactional step that may touch `pages` more metadata
    /// pages: if the pending ones and those would not fit one journal
    /// transaction, the pending ones become durable now (as ext4 commits a
    /// running transaction that fills its journal). The state between two
    /// steps is consistent: a file's extents may reach past its size, never
    /// the other way round. The same bound holds on a transactional device,
    /// where it keeps the transaction of the non-transactional metadata small.
    pub(crate) fn make_room(&mut self, ctx: Ctx, pages: u32) -> Result<()> {
        if ctx.is_none() && self.touched_count(None) + pages as usize > self.layout.journal_images() as usize {
            self.make_plain_durable()?;
        }
        Ok(())
    }

    // ---- transactions (transactional mode) -------------------------------------

    /// Opens a transaction. Several can be open at once; each sees its own
    /// writes, and its data and metadata commit or abort together.
    pub fn begin(&mut self) -> Result<Tid> {
        if self.mode != FsMode::Transactional {
            return Err(FsError::NotTransactional);
        }
        let tid = self.new_tid();
        self.dev.begin(tid)?;
        self.open.insert(tid);
        self.host_log(|_| Ok(crate::hostlog::Record::Begin { tid }))?;
        Ok(tid)
    }

    fn check_open(&self, tid: Tid) -> Result<()> {
        if self.open.contains(&tid) {
            Ok(())
        } else {
            Err(FsError::Device(DeviceError::UnknownTransaction(tid)))
        }
    }

    /// Commits: the metadata the transaction changed joins it (written now,
    /// see the module comment), then the device commits data and metadata
    /// atomically. On an error the transaction stays open (abort it or retry).
    pub fn commit(&mut self, tid: Tid) -> Result<()> {
        self.check_open(tid)?;
        // Logged before the device commits: a process that dies inside the
        // commit may leave it durable (`hostlog`).
        self.host_log_only(|_| Ok(crate::hostlog::Record::Commit { tid }))?;
        // Its dirty pages join the device transaction first (a failed
        // attempt keeps the rest dirty for the retry).
        // The last page sent is the last metadata page, or the last data
        // page if none (`write_last_tx`).
        let data_last = self.touched_count(Some(tid)) == 0;
        let r = self
            .write_back_ctx_ending(Some(tid), data_last)
            .and_then(|()| self.write_pending(Some(tid), tid, !data_last))
            .and_then(|()| Ok(self.dev.commit(tid)?));
        if let Err(e) = r {
            self.read_cache.dropped(tid);
            self.host_log_only(|_| Ok(crate::hostlog::Record::CommitFailed { tid }))?;
            return Err(e);
        }
        self.fold(Some(tid));
        self.read_cache.committed(tid);
        self.open.remove(&tid);
        self.stats.tx_commits += 1;
        self.settle_host_log()
    }

    /// A commit point of the host's inside transaction `tid`, which stays
    /// open (SQLite's commits grouped into one device transaction under
    /// `synchronous=NORMAL`): nothing on the device, but the host log
    /// records it, so a process that dies keeps what `tid` wrote up to here
    /// (a power cut loses the open transaction whole, as NORMAL allows).
    pub fn commit_point(&mut self, tid: Tid) -> Result<()> {
        self.check_open(tid)?;
        self.host_log_only(|_| Ok(crate::hostlog::Record::CommitPoint { tid }))
    }

    /// Aborts: the device drops the transaction's pages, the file system its
    /// pending metadata (pages it allocated are free again).
    pub fn abort(&mut self, tid: Tid) -> Result<()> {
        self.check_open(tid)?;
        // Forget the transaction even if the device fails (it is gone with a
        // power loss anyway): its changes must never be committed later.
        let r = self.dev.abort(tid);
        self.read_cache.dropped(tid);
        for key in self.cache.keys_of_ctx(Some(tid)) {
            self.cache.take(&key);
        }
        if let Some(p) = self.pending.remove(&Some(tid)) {
            for i in p.alloc.into_iter().chain(p.dropped) {
                self.reserved.remove(&i);
                self.note_free(i);
            }
        }
        self.open.remove(&tid);
        self.stats.tx_aborts += 1;
        self.host_log(|_| Ok(crate::hostlog::Record::Abort { tid }))?;
        r?;
        Ok(())
    }

    /// The transactions open now.
    pub fn open_transactions(&self) -> Vec<Tid> {
        self.open.iter().copied().collect()
    }
}
