//! X-FTL (Kang et al., SIGMOD 2013): transactional atomicity in the FTL through
//! an X-L2P table beside the L2P.
//!
//! - `write(t, p)` programs p's new content to a free page *without* touching the
//!   L2P, and adds (t, p, new page, active) to the X-L2P table (or updates t's
//!   entry for p). The page's OOB carries t, so recovery can tell it apart.
//! - `read(t, p)` returns t's own copy if t wrote p, else the last committed copy (L2P).
//! - `commit(t)`: wait for t's pages; drop committed entries of other
//!   transactions for the same pages (superseded); mark t's entries committed;
//!   write the table pages that changed to X-FTL's log ring as one group (see
//!   `page.rs`: the paper writes the X-L2P table page at commit; a table of
//!   several pages writes only those that changed, and the group is the atomic
//!   unit: recovery uses it only whole); then fold t's entries into the L2P.
//!   No superblock is written per commit, so the superblock blocks do not wear
//!   at the commit rate. Committed entries stay in the table until a durable
//!   checkpoint covers them (or a newer write of the same page supersedes them
//!   in DRAM); after that checkpoint no table page on flash is needed. Pages
//!   still needed are moved ahead before the ring erases the block they are in.
//! - `abort(t)`: mark t's entries aborted and drop them; their pages are dead.
//! - GC keeps a page live if the L2P or an active entry points to it; moving a
//!   page repoints its entry. A GC copy of committed data loses its tid: it is
//!   plain data from then on.
//! - Recovery: the framework loads the last checkpoint and rolls non-transactional
//!   pages forward; X-FTL reads its log ring newest first, takes the newest whole
//!   version of each table page, and applies its committed entries at the
//!   sequence number of the commit that wrote them unless the checkpoint covers
//!   them (idempotent); active and aborted entries, and every other
//!   transactional page, are dropped.
//!
//! A non-transactional write of a page drops its committed entries in DRAM: if
//! the table on flash still has them, the newer write's larger sequence number
//! orders it after the table at recovery. A trim is different: it leaves nothing
//! on flash until the next flush checkpoints it, so the page's committed entry
//! stays in the tables written meanwhile (marked trimmed in DRAM), and a cut
//! before that flush brings back the committed value, never an older one.

mod entry;
mod page;
mod table;

pub use entry::ENTRY;

pub use table::{Entry, Status, XL2P};

use std::collections::BTreeSet;
use txftl_ftl::{
    BlockId, Device, DeviceError, DeviceStats, Ftl, Hooks, LogSource, Lpn, Oob, Ppn, RecoveredUpdate, Result, Tid, PROTOCOL_BYTES,
};
use txftl_ftl::{Capabilities, Dense, EventHooks, GcHooks, PersistHooks, RecoveryHooks};
use txftl_nand::{Geometry, Nand};

/// Entries the paper uses (500 entries = one 8 KiB page): what `compare`
/// measures. A commit of more pages than the table holds fails with `TableFull`.
pub const DEFAULT_ENTRIES: u32 = 500;

/// The largest table this build supports (a 8 KiB-page table of 129 pages).
pub const MAX_ENTRIES: u32 = 65_536;

/// DRAM per X-L2P entry (the entry, its slot chain, its encoded image and its
/// transaction index), for memory estimates.
pub const BYTES_PER_ENTRY: u64 = 64;

/// DRAM of the X-L2P table's dense indexes (by logical and by physical page,
/// grown up to the largest page an entry names), at most: 4 bytes per page
/// of the array for each.
pub fn index_bytes_max(geo: &Geometry) -> u64 {
    8 * geo.page_count() as u64
}

/// The table size when none is given: one entry for every 8 pages of the array,
/// between 32 and [`MAX_ENTRIES`], so that large transactions (SQLite's
/// `CREATE INDEX` on a big table) fit while the table stays a small share of
/// the device (its log ring holds about three times its pages).
pub fn auto_entries(geo: &Geometry) -> u32 {
    (geo.page_count() / 8).clamp(32, MAX_ENTRIES)
}

fn tid_of(oob: &Oob) -> Tid {
    u32::from_le_bytes(oob.protocol[0..4].try_into().expect("4 bytes"))
}

fn protocol_bytes(tid: Tid) -> [u8; PROTOCOL_BYTES] {
    let mut p = [0u8; PROTOCOL_BYTES];
    p[0..4].copy_from_slice(&tid.to_le_bytes());
    p
}

/// X-FTL's state inside the framework: the X-L2P table, the active
/// transactions, and where in its log ring the table pages recovery still
/// needs are.
#[derive(Clone, Debug)]
pub struct XHooks {
    pub table: XL2P,
    active: BTreeSet<Tid>,
    /// `xftl-canary`: commit returns before the table is durable (deferred to the
    /// next commit or flush). A deliberate bug the crash harness must catch.
    canary: bool,
    table_dirty: bool,
    page_size: u32,
    /// Per table page: the log ring block holding the version recovery needs
    /// (written since the last checkpoint), or None if it needs none.
    live: Vec<Option<BlockId>>,
    /// Per table page: its entries as last written, and the sequence number of
    /// the commit that wrote them (to move the page ahead in the ring unchanged).
    written: Vec<Vec<u8>>,
    written_seq: Vec<u64>,
    next_group: u64,
    page_buf: Vec<u8>,
}

impl XHooks {
    /// A table of `entries` entries on a device of `page_size`-byte pages.
    pub fn new(entries: u32, page_size: u32, canary: bool) -> XHooks {
        let table = XL2P::new(entries, page::entries_per_page(page_size));
        let pages = table.pages() as usize;
        XHooks {
            table,
            active: BTreeSet::new(),
            canary,
            table_dirty: false,
            page_size,
            live: vec![None; pages],
            written: vec![Vec::new(); pages],
            written_seq: vec![0; pages],
            next_group: 1,
            page_buf: vec![0; page_size as usize],
        }
    }

    /// g: blocks one group of table pages can enter at most (every page of the
    /// table at once). The log keeps the 2g blocks ahead of its head free of
    /// pages recovery needs: a group enters at most g of them, and the g still
    /// clean after it hold every needed page that has to move ahead of the
    /// blocks now in the window, so moving never enters a block it moves from.
    /// Needed pages then lie in the head block and the g blocks behind it: the
    /// ring has 3g + 1 blocks (4 for the paper's one-page table).
    fn group_blocks(&self, pages_per_block: u32) -> u32 {
        self.table.pages().div_ceil(pages_per_block).max(1)
    }
    fn window_blocks(&self, pages_per_block: u32) -> u32 {
        2 * self.group_blocks(pages_per_block)
    }
}

impl Hooks for XHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        skips_victims: false,
        scans_pages: false,
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "xftl-canary"
        } else {
            "xftl"
        }
    }

    fn check(&self, l2p: &[u32], nand: &Nand) -> std::result::Result<(), String> {
        for (slot, e) in self.table.entries() {
            match e.status {
                Status::Active => {
                    if l2p.get(e.lpn as usize) == Some(&e.ppn) {
                        return Err(format!("active X-L2P entry {slot} is already in the L2P"));
                    }
                    match Oob::decode(&nand.inspect_oob(e.ppn)) {
                        txftl_ftl::oob::OobState::Valid(o) if o.lpn == e.lpn && tid_of(&o) == e.tid => {}
                        other => return Err(format!("active X-L2P entry {slot} ({e:?}) points to a page whose OOB is {other:?}")),
                    }
                }
                Status::Committed => {
                    if l2p.get(e.lpn as usize) != Some(&e.ppn) {
                        return Err(format!("committed X-L2P entry {slot} ({e:?}) is not what the L2P maps"));
                    }
                }
                Status::Trimmed => {
                    if l2p.get(e.lpn as usize) != Some(&u32::MAX) {
                        return Err(format!("trimmed X-L2P entry {slot} ({e:?}) but the L2P maps its page"));
                    }
                }
                Status::Aborted => return Err(format!("aborted X-L2P entry {slot} was kept")),
            }
        }
        Ok(())
    }
}

impl GcHooks for XHooks {
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.table.by_ppn(ppn).is_some_and(|e| e.status == Status::Active)
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.table.active_in(first, end)
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        self.table.relocate(old, new);
    }

    fn relocated_protocol_bytes(&self, mapped: bool, oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        if mapped {
            [0; PROTOCOL_BYTES]
        } else {
            oob.protocol
        }
    }
}

impl PersistHooks for XHooks {
    /// The transaction id of a page written in a transaction.
    fn packed_protocol_bytes(&self) -> usize {
        4
    }

    fn protocol_rings(&self, geo: &Geometry) -> Vec<u32> {
        // The head block, the clean window, and the blocks behind the head
        // that may hold pages still needed (see `group_blocks`).
        let ppb = geo.pages_per_block;
        vec![1 + self.window_blocks(ppb) + self.group_blocks(ppb)]
    }

    fn root_len_max(&self) -> usize {
        4
    }

    /// The table's capacity: fixed at format, so a mount sizes the table as
    /// the device was formatted, whatever it is asked for.
    fn root(&self) -> Vec<u8> {
        self.table.capacity().to_le_bytes().to_vec()
    }

    fn checkpoint_durable(&mut self) {
        // The checkpoint covers every commit so far: no table page on flash is
        // needed any more, and the entries it covers go.
        self.table.drop_committed();
        self.live.iter_mut().for_each(|l| *l = None);
        for k in 0..self.table.pages() {
            self.table.clean(k);
        }
    }
}

impl RecoveryHooks for XHooks {
    /// Reads the log ring newest first. A group is read last page first and is
    /// used only whole. The newest whole version of each table page is the
    /// current one; its committed entries are applied at the sequence number of
    /// the commit that wrote them, unless the checkpoint covers them. Reading
    /// stops once every page has its current version, or at pages older than the
    /// checkpoint. After a fallback to an older checkpoint, every whole version
    /// since that checkpoint is applied (each at its own commit), because the
    /// lost checkpoint alone covered commits whose entries later versions dropped.
    fn recover(
        &mut self,
        ckpt_seq: u64,
        root: &[u8],
        _section: &[u8],
        fell_back: bool,
        logs: &mut dyn LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        let capacity = match root.try_into() {
            Ok(b) => u32::from_le_bytes(b),
            Err(_) => {
                return Err(DeviceError::Corrupted(
                    "the superblock does not record the X-L2P table's size".into(),
                ))
            }
        };
        let asked = self.table.capacity();
        if asked != 0 && asked != capacity {
            return Err(DeviceError::Config(format!(
                "the device was formatted with an X-L2P table of {capacity} entries, not {asked}: the table size is fixed at format"
            )));
        }
        *self = XHooks::new(capacity, self.page_size, self.canary);
        let pages = self.table.pages();
        let entries_len = |k: u32| self.table.page_entries(k).len();
        let mut decided = vec![false; pages as usize];
        let mut undecided = pages;
        let mut updates = Vec::new();
        let mut group: Vec<(page::PageHeader, txftl_ftl::LogPage)> = Vec::new();
        while let Some(p) = logs.prev_page(0)? {
            if p.seq < ckpt_seq {
                break;
            }
            let Some(h) = page::decode_header(&p.bytes).filter(|h| h.capacity == capacity && h.pages == pages) else {
                group.clear();
                continue;
            };
            let continues = group
                .last()
                .is_some_and(|(g, _)| g.group == h.group && g.position == h.position + 1);
            if !continues {
                group.clear();
                if h.position + 1 != h.group_len {
                    continue; // its later pages are missing: a torn commit
                }
            }
            group.push((h, p));
            if h.position > 0 {
                continue;
            }
            let commit_seq = group[0].1.seq;
            for (gh, gp) in group.drain(..) {
                let k = gh.index;
                if !fell_back {
                    if decided[k as usize] {
                        continue;
                    }
                    decided[k as usize] = true;
                    undecided -= 1;
                }
                let at = if gh.content_seq != 0 { gh.content_seq } else { commit_seq };
                if at < ckpt_seq {
                    continue;
                }
                let bytes = &gp.bytes[page::HEADER_BYTES..page::HEADER_BYTES + entries_len(k)];
                // An intact page that does not decode is a format bug: refuse to guess.
                let entries = XL2P::decode(bytes).map_err(|e| DeviceError::Corrupted(format!("X-L2P table page {k}: {e}")))?;
                updates.extend(
                    entries
                        .into_iter()
                        .filter(|e| e.status == Status::Committed)
                        .map(|e| RecoveredUpdate {
                            seq: at,
                            lpn: e.lpn,
                            ppn: e.ppn,
                        }),
                );
            }
            if !fell_back && undecided == 0 {
                break;
            }
        }
        Ok(updates)
    }

    fn roll_forward(&self, oob: &Oob) -> bool {
        tid_of(oob) == 0
    }
}

impl EventHooks for XHooks {}

/// The X-FTL device.
#[derive(Clone)]
pub struct XFtl {
    ftl: Ftl<XHooks>,
}

impl XFtl {
    pub fn new(ftl: Ftl<XHooks>) -> XFtl {
        XFtl { ftl }
    }
    pub fn ftl(&self) -> &Ftl<XHooks> {
        &self.ftl
    }
    pub fn table(&self) -> &XL2P {
        &self.ftl.hooks().table
    }

    fn check_active(&self, tid: Tid) -> Result<()> {
        if self.ftl.hooks().active.contains(&tid) {
            Ok(())
        } else {
            Err(DeviceError::UnknownTransaction(tid))
        }
    }

    fn pages_per_block(&self) -> u32 {
        self.ftl.nand().geometry().pages_per_block
    }

    /// Writes table pages `pages` to the log ring as one group: as they are in
    /// DRAM (a commit), or as they were last written (`moving`: pages recovery
    /// still needs, moved ahead of blocks the ring is about to erase).
    fn write_group(&mut self, pages: &[u32], moving: bool) -> Result<()> {
        let hooks = self.ftl.hooks_mut();
        let group = hooks.next_group;
        hooks.next_group += 1;
        let mut buf = std::mem::take(&mut hooks.page_buf);
        let mut last_seq = 0;
        for (position, &k) in pages.iter().enumerate() {
            let hooks = self.ftl.hooks();
            let h = page::PageHeader {
                capacity: hooks.table.capacity(),
                index: k,
                pages: hooks.table.pages(),
                position: position as u16,
                group_len: pages.len() as u16,
                group,
                content_seq: if moving { hooks.written_seq[k as usize] } else { 0 },
            };
            let entries = if moving {
                &hooks.written[k as usize][..]
            } else {
                hooks.table.page_entries(k)
            };
            page::encode(&h, entries, &mut buf);
            let r = self.ftl.append_log(0, &buf);
            let (ppn, seq) = match r {
                Ok(x) => x,
                Err(e) => {
                    self.ftl.hooks_mut().page_buf = buf;
                    return Err(e);
                }
            };
            let block = self.ftl.block_of(ppn);
            self.ftl.hooks_mut().live[k as usize] = Some(block);
            last_seq = seq;
        }
        let hooks = self.ftl.hooks_mut();
        hooks.page_buf = buf;
        if !moving {
            for &k in pages {
                hooks.written[k as usize] = hooks.table.page_entries(k).to_vec();
                hooks.written_seq[k as usize] = last_seq;
                hooks.table.clean(k);
            }
        }
        Ok(())
    }

    /// Table pages recovery still needs that lie in `blocks`.
    fn needed_in(&self, blocks: &[BlockId]) -> Vec<u32> {
        let live = &self.ftl.hooks().live;
        (0..live.len() as u32)
            .filter(|&k| live[k as usize].is_some_and(|b| blocks.contains(&b)))
            .collect()
    }

    /// Refuses an append that would erase a table page recovery still needs
    /// (the ring is sized so this never happens; a typed error, not lost data).
    fn check_room(&self, pages: u32) -> Result<()> {
        let entered = self.ftl.log_blocks_entered(0, pages);
        if self.needed_in(&entered).is_empty() {
            Ok(())
        } else {
            Err(DeviceError::WornOut("the X-L2P log ring is too small for the table".into()))
        }
    }

    /// Writes the table pages that changed as one group (the commit point is
    /// its last page), then keeps the window of blocks ahead of the log's head
    /// free of pages recovery needs, moving them ahead nearest block first.
    fn write_table(&mut self) -> Result<()> {
        let dirty = self.ftl.hooks().table.dirty_pages();
        if !dirty.is_empty() {
            self.check_room(dirty.len() as u32)?;
            let table = &self.ftl.hooks().table;
            if table.len() > table.committed_count() {
                self.ftl.counters_mut().protocol_records_with_open_tx += 1;
            }
            self.write_group(&dirty, false)?;
        }
        self.ftl.hooks_mut().table_dirty = false;
        // Moving pages advances the head, which brings more blocks into the
        // window: clean the nearest block holding needed pages until none does.
        // Each round cleans one block; the ring has no more blocks than that.
        let window = self.ftl.hooks().window_blocks(self.pages_per_block());
        let ring_blocks = self.ftl.log_ring_blocks(0);
        for _ in 0..=ring_blocks {
            let ahead = self.ftl.log_next_blocks(0, window);
            let Some(needed) = ahead.iter().map(|&b| self.needed_in(&[b])).find(|n| !n.is_empty()) else {
                return Ok(());
            };
            self.check_room(needed.len() as u32)?;
            self.write_group(&needed, true)?;
            self.ftl.counters_mut().protocol_log_moves += needed.len() as u64;
        }
        Err(DeviceError::WornOut("the X-L2P log ring is too small for the table".into()))
    }
}

impl Device for XFtl {
    device_basics_over_ftl!();
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        let lat = self.ftl.write_page(lpn, data)?;
        self.ftl.hooks_mut().table.drop_committed_for(lpn);
        Ok(lat)
    }
    fn flush(&mut self) -> Result<u64> {
        let start = self.ftl.now();
        if self.ftl.hooks().table_dirty {
            self.write_table()?;
        }
        self.ftl.flush_all()?;
        Ok(self.ftl.now() - start)
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        let lat = self.ftl.trim_page(lpn)?;
        self.ftl.hooks_mut().table.trim_committed(lpn);
        Ok(lat)
    }
    fn stats(&self) -> DeviceStats {
        self.ftl.device_stats()
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if !self.ftl.hooks_mut().active.insert(tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_active(tid)?;
        if lpn >= self.ftl.logical_pages() {
            return Err(DeviceError::OutOfRange {
                lpn: lpn as u64,
                logical_pages: self.ftl.logical_pages(),
            });
        }
        let start = self.ftl.now();
        if self.ftl.hooks().table.needs_slot(tid, lpn) {
            // Committed entries wait for a checkpoint to cover them: take one now.
            if self.ftl.hooks().table.has_committed() {
                if self.ftl.hooks().table_dirty {
                    self.write_table()?;
                }
                self.ftl.checkpoint()?;
            }
            if self.ftl.hooks().table.needs_slot(tid, lpn) {
                return Err(DeviceError::TableFull {
                    capacity: self.ftl.hooks().table.capacity(),
                });
            }
        }
        let (ppn, _) = self.ftl.program_unmapped(lpn, data, &protocol_bytes(tid))?;
        self.ftl
            .hooks_mut()
            .table
            .upsert(tid, lpn, ppn)
            .map_err(|_| DeviceError::TableFull {
                capacity: self.table().capacity(),
            })?;
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.check_active(tid)?;
        match self.ftl.hooks().table.get(tid, lpn) {
            Some(e) => self.ftl.read_physical(lpn, e.ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn commit(&mut self, tid: Tid) -> Result<u64> {
        self.check_active(tid)?;
        let start = self.ftl.now();
        if self.ftl.hooks().table.has_entries(tid) {
            // Every page of t must be on flash before the table says it committed.
            self.ftl.wait_idle();
            let hooks = self.ftl.hooks_mut();
            let entries = hooks.table.commit_tx(tid);
            if hooks.canary {
                hooks.table_dirty = true;
            } else {
                self.write_table()?;
            }
            for e in &entries {
                self.ftl.map_page(e.lpn, e.ppn)?;
            }
            // With an image synced at flushes, a commit that returns is on the host's disk.
            self.ftl.nand().flush_image()?;
        }
        self.ftl.hooks_mut().active.remove(&tid);
        self.ftl.counters_mut().commits += 1;
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.check_active(tid)?;
        let hooks = self.ftl.hooks_mut();
        hooks.table.abort_tx(tid);
        hooks.active.remove(&tid);
        self.ftl.counters_mut().aborts += 1;
        Ok(0)
    }
}

// A table page a canary commit left dirty is written before the clean close.
any_device_over_ftl!(XFtl, ENTRY, |d: &mut XFtl| if d.ftl.hooks().table_dirty {
    d.write_table()
} else {
    Ok(())
});
