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
//! - A table full of active entries spills one transaction's entries to
//!   spill pages in the data pool (`spill.rs`); a commit of a transaction
//!   that spilled rewrites its spill pages that changed, names them all (with
//!   their CRCs) in spill index pages at the head of its commit group, folds
//!   every entry into the L2P and checkpoints before it returns. A
//!   transaction is bounded by the free space only: past it a write fails
//!   with `NoSpace`, and the host can abort.
//! - GC keeps a page live if the L2P or an active entry points to it; moving a
//!   page repoints its entry. A GC copy of committed data loses its tid: it is
//!   plain data from then on.
//! - Recovery: the framework loads the last checkpoint and rolls non-transactional
//!   pages forward; X-FTL reads its log ring newest first, takes the newest whole
//!   version of each table page, and applies its committed entries at the
//!   sequence number of the commit that wrote them unless the checkpoint covers
//!   them (idempotent); a whole group's spill index pages name the spill
//!   pages whose entries it also applies at that commit; active and aborted
//!   entries, and every other transactional page, are dropped.
//!
//! A non-transactional write of a page drops its committed entries in DRAM: if
//! the table on flash still has them, the newer write's larger sequence number
//! orders it after the table at recovery. A trim is different: it leaves nothing
//! on flash until the next flush checkpoints it, so the page's committed entry
//! stays in the tables written meanwhile (marked trimmed in DRAM), and a cut
//! before that flush brings back the committed value, never an older one.

mod entry;
mod page;
mod spill;
mod table;

pub use entry::ENTRY;

pub use table::{Entry, Status, XL2P};

use spill::{Pin, Spill};
use std::collections::BTreeSet;
use txftl_ftl::{
    BlockId, Device, DeviceError, DeviceStats, Ftl, Hooks, LogSource, Lpn, Oob, Ppn, RecoveredUpdate, Result, Tid, Writer, PROTOCOL_BYTES,
};
use txftl_ftl::{Capabilities, Dense, EventHooks, GcHooks, PersistHooks, RecoveryHooks};
use txftl_nand::{Geometry, Nand};

/// Entries the paper uses (500 entries = one 8 KiB page): what `compare`
/// measures. A transaction writing more pages than the table holds spills
/// entries to flash (`spill.rs`).
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

/// A spill page's protocol bytes: its transaction, and byte 4 = 1 (see `spill.rs`).
fn spill_protocol_bytes(tid: Tid) -> [u8; PROTOCOL_BYTES] {
    let mut p = protocol_bytes(tid);
    p[4] = 1;
    p
}

/// Rounds of spill page writes a commit makes at most: GC run by a round's
/// programs does not move pages the entries name (`spill_frozen`), so one
/// round leaves every page clean; the bound keeps a bug from looping.
const SPILL_ROUNDS_MAX: u32 = 16;

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
    /// The entries spilled out of the DRAM table, by transaction; whether a
    /// full table spills (`xl2p-spill`) or answers `TableFull`.
    spill: Spill,
    spill_enabled: bool,
    /// The spill policy a mount was asked for (`None`: take the recorded one).
    spill_asked: Option<bool>,
    /// While a commit writes its spill pages for the last time: the
    /// transaction, and pages per block. GC skips blocks holding pages its
    /// spilled entries name, so that moving them cannot make a spill page
    /// stale again (and the writes converge in one round).
    spill_frozen: Option<(Tid, u32)>,
    /// Counters: spill pages written (rewrites included), entries spilled.
    spill_pages_written: u64,
    spilled_entries: u64,
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
            spill: Spill::default(),
            spill_enabled: true,
            spill_asked: None,
            spill_frozen: None,
            spill_pages_written: 0,
            spilled_entries: 0,
        }
    }

    /// Whether a full table spills. Recorded in the superblock at format,
    /// like the table's size: a mount takes the recorded policy, and refuses
    /// another one asked for (recovery reads spill index pages whatever it is).
    pub fn with_spill(mut self, on: bool) -> XHooks {
        self.spill_enabled = on;
        self.spill_asked = Some(on);
        self
    }

    /// Spill index pages one commit may write at most: its spill pages each
    /// hold at least one logical page and at most min(table, page) entries.
    fn index_pages_max(&self, geo: &Geometry) -> u32 {
        let per_page = self.table.capacity().clamp(1, spill::entries_per_spill_page(geo.page_size));
        let spill_pages = geo.page_count().div_ceil(per_page);
        spill_pages.div_ceil(page::refs_per_index_page(geo.page_size))
    }

    /// g: blocks one group of table pages can enter at most (every page of the
    /// table at once, after the most spill index pages a commit writes). The
    /// log keeps the 2g blocks ahead of its head free of
    /// pages recovery needs: a group enters at most g of them, and the g still
    /// clean after it hold every needed page that has to move ahead of the
    /// blocks now in the window, so moving never enters a block it moves from.
    /// Needed pages then lie in the head block and the g blocks behind it: the
    /// ring has 3g + 1 blocks (4 for the paper's one-page table).
    fn group_blocks(&self, geo: &Geometry) -> u32 {
        (self.table.pages() + self.index_pages_max(geo)).div_ceil(geo.pages_per_block).max(1)
    }
    fn window_blocks(&self, geo: &Geometry) -> u32 {
        2 * self.group_blocks(geo)
    }
}

impl Hooks for XHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        skips_victims: true,
        ..Capabilities::NONE
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
        for (ppn, pin) in self.spill.pins() {
            let o = match Oob::decode(&nand.inspect_oob(ppn)) {
                txftl_ftl::oob::OobState::Valid(o) => o,
                other => return Err(format!("spill pin {pin:?} on page {ppn} whose OOB is {other:?}")),
            };
            let ok = match pin {
                Pin::Data { tid, lpn } => o.lpn == lpn && tid_of(&o) == tid && o.protocol[4] == 0 && l2p.get(lpn as usize) != Some(&ppn),
                Pin::Page { tid, .. } => tid_of(&o) == tid && o.protocol[4] == 1,
            };
            if !ok {
                return Err(format!("spill pin {pin:?} on page {ppn} whose OOB is {o:?}"));
            }
        }
        Ok(())
    }
}

impl GcHooks for XHooks {
    /// An active entry's page, in the DRAM table or spilled, and a spill page.
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.table.by_ppn(ppn).is_some_and(|e| e.status == Status::Active) || self.spill.is_pinned(ppn)
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.table.active_in(first, end) + self.spill.pinned_in(first, end)
    }

    /// Only while a commit writes its spill pages (see `spill_frozen`).
    fn skip_victim(&self, block: BlockId) -> bool {
        self.spill_frozen.is_some_and(|(tid, ppb)| {
            let first = block * ppb;
            self.spill.names_data_of(tid, first, first + ppb)
        })
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        self.table.relocate(old, new);
        self.spill.relocate(old, new);
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
        vec![1 + self.window_blocks(geo) + self.group_blocks(geo)]
    }

    fn root_len_max(&self) -> usize {
        5
    }

    /// Bytes 0..4: the table's capacity (u32 LE), fixed at format, so a mount
    /// sizes the table as the device was formatted; byte 4: the spill policy
    /// (1: a full table spills, 0: it answers `TableFull`). A 4-byte root
    /// (an image formatted before the policy was recorded) spills.
    fn root(&self) -> Vec<u8> {
        let mut root = self.table.capacity().to_le_bytes().to_vec();
        root.push(self.spill_enabled as u8);
        root
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
        let (capacity, spill) = match *root {
            [a, b, c, d] => (u32::from_le_bytes([a, b, c, d]), true),
            [a, b, c, d, s @ (0 | 1)] => (u32::from_le_bytes([a, b, c, d]), s == 1),
            _ => {
                return Err(DeviceError::Corrupted(
                    "the superblock does not record the X-L2P table's size and spill policy".into(),
                ))
            }
        };
        if let Some(asked) = self.spill_asked.filter(|&a| a != spill) {
            return Err(DeviceError::Config(format!(
                "the device was formatted with xl2p-spill={}, not {}: the spill policy is fixed at format",
                spill as u8, asked as u8
            )));
        }
        let asked = self.table.capacity();
        if asked != 0 && asked != capacity {
            return Err(DeviceError::Config(format!(
                "the device was formatted with an X-L2P table of {capacity} entries, not {asked}: the table size is fixed at format"
            )));
        }
        *self = XHooks::new(capacity, self.page_size, self.canary).with_spill(spill);
        let pages = self.table.pages();
        let entries_len = |k: u32| self.table.page_entries(k).len();
        let mut decided = vec![false; pages as usize];
        let mut undecided = pages;
        let mut updates = Vec::new();
        let mut group: Vec<(page::PageHeader, txftl_ftl::LogPage)> = Vec::new();
        // Spill index pages count the commit's index pages, not the table's.
        let fits = |h: &page::PageHeader| h.capacity == capacity && (h.kind == page::Kind::SpillIndex || h.pages == pages);
        while let Some(p) = logs.prev_page(0)? {
            if p.seq < ckpt_seq {
                break;
            }
                let Some(h) = page::decode_header(&p.bytes).filter(fits) else {
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
                if gh.kind == page::Kind::SpillIndex {
                    if commit_seq >= ckpt_seq {
                        updates.extend(spilled_updates(&gp.bytes, commit_seq, logs)?);
                    }
                    continue;
                }
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

/// The entries of the spill pages a spill index page of a whole commit group
/// names, as updates at the commit (`at`). Each page must be there as the
/// index names it (same CRC): the group is written after its spill pages and
/// the commit's checkpoint before GC can move them, so anything else is a bug
/// recovery must not paper over.
fn spilled_updates(index: &[u8], at: u64, logs: &mut dyn LogSource) -> Result<Vec<RecoveredUpdate>> {
    let (tid, refs) = page::decode_index(index).map_err(|e| DeviceError::Corrupted(format!("X-L2P spill index: {e}")))?;
    let mut out = Vec::new();
    for (ppn, crc) in refs {
        let missing = || DeviceError::Corrupted(format!("spill page {ppn} of committed transaction {tid} is not on flash as its commit names it"));
        let p = logs.read_page(ppn)?.filter(|p| crc32fast::hash(&p.bytes) == crc).ok_or_else(missing)?;
        let entries = spill::decode_page(tid, &p.bytes).map_err(|e| DeviceError::Corrupted(format!("spill page {ppn}: {e}")))?;
        out.extend(entries.into_iter().map(|(lpn, ppn)| RecoveredUpdate { seq: at, lpn, ppn }));
    }
    Ok(out)
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

    /// The spill index pages of `tid`'s commit: its spill pages' references,
    /// cut into pages.
    fn spill_index(&self, tid: Option<Tid>) -> Vec<Vec<(Ppn, u32)>> {
        let Some(tid) = tid else { return Vec::new() };
        let per_page = page::refs_per_index_page(self.ftl.page_size()) as usize;
        self.ftl.hooks().spill.refs(tid).chunks(per_page).map(<[_]>::to_vec).collect()
    }

    /// Writes table pages `pages` to the log ring as one group: as they are in
    /// DRAM (a commit), or as they were last written (`moving`: pages recovery
    /// still needs, moved ahead of blocks the ring is about to erase). A
    /// commit of `spilled`, a transaction that spilled entries, puts its spill
    /// index pages first in the group: the group's last page is still the
    /// commit point.
    fn write_group(&mut self, pages: &[u32], moving: bool, spilled: Option<Tid>) -> Result<()> {
        let index = self.spill_index(spilled);
        let group_len = (index.len() + pages.len()) as u16;
        let hooks = self.ftl.hooks_mut();
        let group = hooks.next_group;
        hooks.next_group += 1;
        let mut buf = std::mem::take(&mut hooks.page_buf);
        for (i, refs) in index.iter().enumerate() {
            let h = page::PageHeader {
                kind: page::Kind::SpillIndex,
                capacity: self.ftl.hooks().table.capacity(),
                index: i as u32,
                pages: index.len() as u32,
                position: i as u16,
                group_len,
                group,
                content_seq: 0,
            };
            page::encode_index(&h, spilled.expect("index pages are a spilled commit's"), refs, &mut buf);
            if let Err(e) = self.ftl.append_log(0, &buf) {
                self.ftl.hooks_mut().page_buf = buf;
                return Err(e);
            }
        }
        let mut last_seq = 0;
        for (position, &k) in pages.iter().enumerate() {
            let hooks = self.ftl.hooks();
            let h = page::PageHeader {
                kind: page::Kind::Table,
                capacity: hooks.table.capacity(),
                index: k,
                pages: hooks.table.pages(),
                position: (index.len() + position) as u16,
                group_len,
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
    fn write_table(&mut self, spilled: Option<Tid>) -> Result<()> {
        let dirty = self.ftl.hooks().table.dirty_pages();
        if !dirty.is_empty() || spilled.is_some() {
            self.check_room((dirty.len() + self.spill_index(spilled).len()) as u32)?;
            let table = &self.ftl.hooks().table;
            if table.len() > table.committed_count() {
                self.ftl.counters_mut().protocol_records_with_open_tx += 1;
            }
            self.write_group(&dirty, false, spilled)?;
        }
        self.ftl.hooks_mut().table_dirty = false;
        // Moving pages advances the head, which brings more blocks into the
        // window: clean the nearest block holding needed pages until none does.
        // Each round cleans one block; the ring has no more blocks than that.
        let geo = *self.ftl.nand().geometry();
        let window = self.ftl.hooks().window_blocks(&geo);
        let ring_blocks = self.ftl.log_ring_blocks(0);
        for _ in 0..=ring_blocks {
            let ahead = self.ftl.log_next_blocks(0, window);
            let Some(needed) = ahead.iter().map(|&b| self.needed_in(&[b])).find(|n| !n.is_empty()) else {
                return Ok(());
            };
            self.check_room(needed.len() as u32)?;
            self.write_group(&needed, true, None)?;
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
            self.write_table(None)?;
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
        let mut s = self.ftl.device_stats();
        let h = self.ftl.hooks();
        s.protocol = txftl_ftl::ProtocolCounters::new(ENTRY.counters);
        s.protocol.add("xl2p_spill_pages", h.spill_pages_written);
        s.protocol.add("xl2p_spilled_entries", h.spilled_entries);
        s
    }
    fn reset_stats(&mut self) {
        let h = self.ftl.hooks_mut();
        h.spill_pages_written = 0;
        h.spilled_entries = 0;
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if !self.ftl.hooks_mut().active.insert(tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        self.ftl.tx_begin(tid);
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_active(tid)?;
        self.ftl.check_lpn(lpn)?;
        let start = self.ftl.now();
        let hooks = self.ftl.hooks();
        let spilled = hooks.table.get(tid, lpn).is_none() && hooks.spill.get(tid, lpn).is_some();
        if !spilled && hooks.table.needs_slot(tid, lpn) {
            self.make_slot(tid, lpn)?;
        }
        let (ppn, _) = self.ftl.program_unmapped(lpn, data, &protocol_bytes(tid))?;
        let hooks = self.ftl.hooks_mut();
        if spilled {
            hooks.spill.update(tid, lpn, ppn);
        } else if hooks.table.upsert(tid, lpn, ppn).is_err() {
            return Err(DeviceError::Corrupted("the X-L2P table has no free slot after a spill".into()));
        }
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.check_active(tid)?;
        let hooks = self.ftl.hooks();
        match hooks.table.get(tid, lpn).map(|e| e.ppn).or_else(|| hooks.spill.get(tid, lpn)) {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn commit(&mut self, tid: Tid) -> Result<u64> {
        self.check_active(tid)?;
        let start = self.ftl.now();
        let spilled = self.ftl.hooks().spill.has(tid);
        if self.ftl.hooks().table.has_entries(tid) || spilled {
            // Every page of t must be on flash before the table says it
            // committed, and so must its spill pages, current.
            self.ftl.wait_idle();
            if spilled {
                let ppb = self.ftl.nand().geometry().pages_per_block;
                self.ftl.hooks_mut().spill_frozen = Some((tid, ppb));
                let written = self.write_spill_pages(tid, true);
                self.ftl.hooks_mut().spill_frozen = None;
                written?;
                self.ftl.wait_idle();
                // This commit supersedes other transactions' committed entries
                // of the pages it spilled, as it does those of its DRAM entries.
                let hooks = self.ftl.hooks_mut();
                for (lpn, _) in hooks.spill.entries(tid) {
                    hooks.table.drop_committed_for(lpn);
                }
            }
            let hooks = self.ftl.hooks_mut();
            let entries = hooks.table.commit_tx(tid);
            if hooks.canary && !spilled {
                hooks.table_dirty = true;
            } else {
                self.write_table(spilled.then_some(tid))?;
            }
            for e in &entries {
                self.ftl.map_page(e.lpn, e.ppn)?;
            }
            if spilled {
                self.finish_spilled(tid)?;
            }
            // With an image synced at flushes, a commit that returns is on the host's disk.
            self.ftl.nand().flush_image()?;
        }
        let hooks = self.ftl.hooks_mut();
        // Committed: nothing of it is left active, in DRAM or spilled.
        assert!(
            !hooks.table.has_entries(tid) && !hooks.spill.has(tid),
            "tx {tid} committed with entries left active"
        );
        assert!(hooks.active.remove(&tid), "tx {tid} committed twice");
        self.ftl.tx_commit(tid);
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.check_active(tid)?;
        let hooks = self.ftl.hooks_mut();
        hooks.table.abort_tx(tid);
        // Its spill pages are dead: no commit group names them.
        hooks.spill.drop_tx(tid);
        assert!(!hooks.table.has_entries(tid) && !hooks.spill.has(tid), "tx {tid} aborted with entries left");
        assert!(hooks.active.remove(&tid), "tx {tid} aborted twice");
        self.ftl.tx_abort(tid);
        Ok(0)
    }
}

impl XFtl {
    /// Frees a DRAM slot for `tid`'s write of `lpn`: committed entries go
    /// through a checkpoint if there are any; if every slot is still taken by
    /// active entries, a transaction's entries spill to flash: `tid`'s own if
    /// it has some in DRAM, else those of the transaction with the most.
    fn make_slot(&mut self, tid: Tid, lpn: Lpn) -> Result<()> {
        if self.ftl.hooks().table.has_committed() {
            if self.ftl.hooks().table_dirty {
                self.write_table(None)?;
            }
            self.ftl.checkpoint()?;
        }
        let table = &self.ftl.hooks().table;
        if !table.needs_slot(tid, lpn) {
            return Ok(());
        }
        if !self.ftl.hooks().spill_enabled {
            // The paper's fixed table: the host must commit or abort a transaction.
            return Err(DeviceError::TableFull {
                capacity: table.capacity(),
            });
        }
        let victim = if table.has_entries(tid) { Some(tid) } else { table.largest_tx() };
        let Some(victim) = victim else {
            return Err(DeviceError::Corrupted("the X-L2P table is full with no active entry".into()));
        };
        let hooks = self.ftl.hooks_mut();
        let entries = hooks.table.take_tx(victim);
        hooks.spilled_entries += entries.len() as u64;
        let per_page = spill::entries_per_spill_page(hooks.page_size);
        hooks.spill.add(victim, &entries, per_page);
        // One round: a page GC makes dirty again meanwhile waits for the commit.
        self.write_spill_pages(victim, false)
    }

    /// Writes `tid`'s dirty spill pages to the data pool: one round, or
    /// (`until_clean`, a commit) until none is dirty, else `NoSpace` (GC kept
    /// moving the pages they name). A spill page is metadata, not a host
    /// write: it is counted as a table page written (`Writer::ProtocolMeta`).
    fn write_spill_pages(&mut self, tid: Tid, until_clean: bool) -> Result<()> {
        let mut buf = vec![0u8; self.ftl.page_size() as usize];
        let rounds = if until_clean { SPILL_ROUNDS_MAX } else { 1 };
        for _ in 0..rounds {
            let dirty = self.ftl.hooks().spill.dirty_pages(tid);
            if dirty.is_empty() {
                return Ok(());
            }
            for n in dirty {
                // Clean from here: if GC moves a page it names while this
                // one is programmed, the page is dirty again for the next round.
                let hooks = self.ftl.hooks_mut();
                let crc = hooks.spill.encode(tid, n, &mut buf);
                let lpn = hooks.spill.first_lpn(tid, n);
                let ppn = match self.ftl.program_unmapped_by(Writer::ProtocolMeta, lpn, &buf, &spill_protocol_bytes(tid)) {
                    Ok((ppn, _)) => ppn,
                    Err(e) => {
                        self.ftl.hooks_mut().spill.mark_dirty(tid, n);
                        return Err(e);
                    }
                };
                self.ftl.hooks_mut().spill.written(tid, n, ppn, crc);
                self.ftl.hooks_mut().spill_pages_written += 1;
            }
        }
        if !until_clean || self.ftl.hooks().spill.dirty_pages(tid).is_empty() {
            return Ok(());
        }
        Err(DeviceError::NoSpace)
    }

    /// After a spilled commit's group: folds its spilled entries into the L2P
    /// and checkpoints, so that recovery never needs its spill pages again
    /// and GC, which may move them from then on, cannot strand the group's
    /// references to them.
    fn finish_spilled(&mut self, tid: Tid) -> Result<()> {
        for (lpn, ppn) in self.ftl.hooks().spill.entries(tid) {
            self.ftl.map_page(lpn, ppn)?;
        }
        self.ftl.hooks_mut().spill.drop_tx(tid);
        self.ftl.checkpoint()
    }
}

// A table page a canary commit left dirty is written before the clean close.
any_device_over_ftl!(XFtl, ENTRY, |d: &mut XFtl| if d.ftl.hooks().table_dirty {
    d.write_table(None)
} else {
    Ok(())
});

impl crate::DurableParts for XFtl {}
