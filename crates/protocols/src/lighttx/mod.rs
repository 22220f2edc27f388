//! LightTx (Lu, Shu, Guo, Li, Mutlu; ICCD 2013): a page-independent commit
//! protocol and zone-based tracking of live transactions.
//!
//! - `write_tx(t, p)`: the page is cached in device DRAM until t's next
//!   command. Another write of t programs the cached page (anywhere: it takes
//!   the next unit of the stripe, so a transaction's pages spread over dies)
//!   with TxCnt = TxVer = 0 and caches the new one. Nothing touches the L2P:
//!   t's pages go into the active TxTable (`txtable.rs`).
//! - `commit(t)`: the cached page is programmed with TxCnt = the number of
//!   pages t programmed, this one included, and TxVer = the next commit
//!   version (the commit page); when every page of t is done on its die the
//!   commit is durable, and t's entries go into the L2P. A commit of a
//!   transaction that wrote nothing programs nothing.
//! - `abort(t)`: the cached page and t's entries are dropped. Nothing is
//!   programmed; t's programmed pages are dead.
//! - Non-transactional writes carry TxID 0, TxCnt 1 and the current version,
//!   and go to the L2P at once, as on `plain`.
//! - Zones (sec. III-C; `format.rs`): the Available Zone is the blocks used
//!   for allocation: those still open at the last slide and the free blocks
//!   it pre-allocated (the framework's allocation window, of `zone-blocks`
//!   blocks, `entry.rs`: no page goes anywhere else until the next slide).
//!   The Unavailable Zone is the full blocks holding a page of a live
//!   transaction, or of a dead one with a page in an Available block; both
//!   lists are in the checkpoint's zone metadata. The rest is the
//!   Checkpointed Zone. A checkpoint is the zone slide: it makes every
//!   earlier commit durable in the L2P, and comes when the pre-allocated
//!   blocks are used up (or at the FTL's checkpoint interval). GC takes
//!   victims from the Checkpointed Zone only: the pages of the other two are
//!   recovery's evidence, and open transactions' pages lie nowhere else (so
//!   GC never has to move them; a block retired after a failed program does,
//!   see `relocated_protocol_bytes`). When every block with dead pages is in
//!   a zone, the framework slides the zones and tries again.
//! - `interval-zones=1` keeps the model the paper's zones replaced: the
//!   zone size is the checkpoint interval in blocks' worth of programs, the
//!   Available Zone every block programmed since the checkpoint, and the
//!   Unavailable Zone the blocks of transactions open at it.
//! - Recovery (`recovery.rs`) reads the page metadata of the two zones, counts
//!   each transaction's pages against its TxCnt and redoes the committed ones in
//!   TxVer order; every other transactional page is dead.
//!
//! Several open transactions may write the same logical page: each version
//! is its own page, and commit order decides which the L2P keeps.

mod entry;
mod format;
mod recovery;
mod txtable;

pub use entry::ENTRY;

pub use format::{PageTx, ZoneMeta};
pub use recovery::{resolve, Resolved};

use txftl_ftl::{
    BlockId, Device, DeviceError, DeviceStats, Ftl, Hooks, LogSource, Lpn, Oob, Ppn, RecoveredUpdate, Result, ScannedPages, Tid,
    PROTOCOL_BYTES,
};
use txftl_ftl::{Capabilities, Dense, EventHooks, GcHooks, PersistHooks, ProtocolCounters, RecoveryHooks};
use std::collections::{BTreeMap, BTreeSet};
use txftl_nand::{Geometry, Nand};
use txtable::TxTable;

/// The zones a slide makes, each list ascending.
struct Slide {
    /// The Unavailable Zone: full blocks of live transactions, and of dead
    /// ones with a page in an open Available block.
    unavailable: Vec<BlockId>,
    /// The Available blocks that stay across the slide because they are open.
    stay: Vec<BlockId>,
    /// The blocks holding a page of a live transaction.
    live: Vec<BlockId>,
}

/// LightTx's state inside the framework: the active TxTable and the zones.
#[derive(Clone, Debug)]
pub struct LHooks {
    txs: TxTable,
    /// `lighttx-canary`: the zone metadata forgets the Unavailable Zone (it
    /// records none), so recovery misses the pages a transaction open at a
    /// checkpoint wrote before it. A deliberate bug the crash harness must catch.
    canary: bool,
    /// The paper's zones (sec. III-C); false: `interval-zones=1`.
    paper_zones: bool,
    /// Data blocks end with a summary page (sec. IV-D, `summary-pages=1`;
    /// recorded in the root at format, `crate::cycle::summary`).
    summary_pages: bool,
    geo: Geometry,
    next_tx_id: u32,
    next_tx_ver: u32,
    /// Blocks programmed since the last checkpoint (the Available Zone).
    written: Vec<bool>,
    written_list: Vec<BlockId>,
    /// Blocks of the Unavailable Zone.
    unavailable: Vec<bool>,
    unavailable_list: Vec<BlockId>,
    /// Available blocks programmed but not full: they stay Available across
    /// a slide (paper's zones).
    open_blocks: BTreeSet<BlockId>,
    /// Transactions ended since they last had no page in an Available block:
    /// TxID -> the blocks holding their pages (case 2 of the Unavailable Zone).
    dead: BTreeMap<u32, BTreeSet<BlockId>>,
    /// The Available Zone's open blocks the checkpoint recovery used lists:
    /// recovery reads them from their first page.
    recovered_open: Vec<BlockId>,
    /// Checkpoints (zone slides) whose zone metadata recorded pages of open
    /// transactions (a non-empty Unavailable Zone), since the last `reset_stats`:
    /// reported as `protocol_records_with_open_tx`.
    slides_with_open_tx: u64,
    /// The entry's counters (what the zones did), since the last `reset_stats`.
    counters: ProtocolCounters,
    /// What the last recovery found: transactions redone and dropped.
    pub recovered_commits: u32,
    pub recovered_uncommitted: u32,
    /// Of those, commit pages found with pages of their transaction missing.
    pub recovered_incomplete: u32,
}

impl LHooks {
    pub fn new(geo: &Geometry, canary: bool, paper_zones: bool) -> LHooks {
        let blocks = geo.block_count() as usize;
        LHooks {
            txs: TxTable::default(),
            canary,
            paper_zones,
            summary_pages: false,
            geo: *geo,
            next_tx_id: 1,
            next_tx_ver: 1,
            written: vec![false; blocks],
            written_list: Vec::new(),
            unavailable: vec![false; blocks],
            unavailable_list: Vec::new(),
            open_blocks: BTreeSet::new(),
            dead: BTreeMap::new(),
            recovered_open: Vec::new(),
            slides_with_open_tx: 0,
            counters: ProtocolCounters::new(ENTRY.counters),
            recovered_commits: 0,
            recovered_uncommitted: 0,
            recovered_incomplete: 0,
        }
    }

    /// `self` writing summary pages (`summary-pages=1`) or not.
    pub fn with_summary_pages(mut self, on: bool) -> LHooks {
        self.summary_pages = on;
        self
    }

    /// Data pages a block holds (its last page is the summary's, with them).
    fn data_pages(&self) -> u32 {
        self.geo.pages_per_block - self.summary_pages as u32
    }

    fn set_unavailable(&mut self, blocks: Vec<BlockId>) {
        for &b in &self.unavailable_list {
            self.unavailable[b as usize] = false;
        }
        for &b in &blocks {
            if let Some(u) = self.unavailable.get_mut(b as usize) {
                *u = true;
            }
        }
        self.unavailable_list = blocks;
    }

    /// The zones a slide now makes. The checkpoint's section records them
    /// and `checkpoint_durable` installs them: the same state (a checkpoint
    /// programs no data page between the two), so the same zones.
    fn slide(&self) -> Slide {
        let live = self.txs.blocks();
        if !self.paper_zones {
            return Slide {
                unavailable: live.clone(),
                stay: Vec::new(),
                live,
            };
        }
        let open = &self.open_blocks;
        let mut unavailable: BTreeSet<BlockId> = live.iter().copied().collect();
        for blocks in self.dead.values() {
            if blocks.iter().any(|b| open.contains(b)) {
                unavailable.extend(blocks.iter().copied());
            }
        }
        unavailable.retain(|b| !open.contains(b));
        Slide {
            unavailable: unavailable.into_iter().collect(),
            stay: open.iter().copied().collect(),
            live,
        }
    }

    /// The zone metadata a checkpoint taken now records.
    fn zone_meta(&self) -> ZoneMeta {
        let slide = self.slide();
        ZoneMeta {
            next_tx_id: self.next_tx_id,
            next_tx_ver: self.next_tx_ver,
            unavailable: if self.canary { Vec::new() } else { slide.unavailable },
            available: slide.stay,
        }
    }

    /// Transaction `id` ended with its pages in `blocks`: while one of them is
    /// an open Available block, the others are Unavailable at a slide.
    fn ended(&mut self, id: u32, blocks: BTreeSet<BlockId>) {
        if self.paper_zones && !blocks.is_empty() {
            self.dead.insert(id, blocks);
        }
    }

    /// Blocks in the Available and Unavailable Zones now.
    pub fn zone_sizes(&self) -> (usize, usize) {
        (self.written_list.len(), self.unavailable_list.len())
    }
}

impl Hooks for LHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        skips_victims: true,
        scans_pages: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "lighttx-canary"
        } else {
            "lighttx"
        }
    }

    fn check(&self, l2p: &[u32], nand: &Nand) -> std::result::Result<(), String> {
        for (tid, tx) in self.txs.iter() {
            for (&lpn, &ppn) in &tx.entries {
                if l2p.get(lpn as usize) == Some(&ppn) {
                    return Err(format!(
                        "transaction {tid}: its uncommitted page of lpn {lpn} is already in the L2P"
                    ));
                }
                match Oob::decode(&nand.inspect_oob(ppn)) {
                    txftl_ftl::oob::OobState::Valid(o) if o.lpn == lpn && PageTx::of(&o).tx_id == tx.id => {}
                    other => {
                        return Err(format!(
                            "transaction {tid}: its entry for lpn {lpn} points to page {ppn}, whose OOB is {other:?}"
                        ))
                    }
                }
                let b = self.geo.block_of(ppn);
                if !self.written[b as usize] && !self.unavailable[b as usize] {
                    return Err(format!("transaction {tid}: its page {ppn} lies in block {b}, outside the zones"));
                }
            }
        }
        Ok(())
    }
}

impl GcHooks for LHooks {
    /// Pages of open transactions: GC never picks their blocks (they are in
    /// a zone), but a block retired after a failed program is emptied whatever
    /// it holds.
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.txs.owns(ppn)
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.txs.owned_in(first, end)
    }

    fn skip_victim(&self, block: BlockId) -> bool {
        self.written[block as usize] || self.unavailable[block as usize]
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob, _new_erase_count: u32) {
        if self.txs.has_pages() {
            self.counters.add("gc_moves_with_open_tx", 1);
        }
        let b = self.geo.block_of(new);
        self.txs.relocated(old, new, b);
    }

    fn relocated_protocol_bytes(&self, mapped: bool, oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        let tx = PageTx::of(oob);
        if mapped || tx.tx_id == 0 {
            return PageTx {
                tx_id: 0,
                tx_cnt: 1,
                tx_ver: tx.tx_ver,
                origin: 0,
            }
            .encode();
        }
        let origin = if tx.origin != 0 { tx.origin } else { oob.seq };
        PageTx { origin, ..tx }.encode()
    }
}

impl PersistHooks for LHooks {
    /// The layout byte (`crate::cycle::summary`).
    fn root_len_max(&self) -> usize {
        1
    }

    fn root(&self) -> Vec<u8> {
        crate::cycle::summary::encode_root(self.summary_pages)
    }

    fn summary_pages(&self) -> bool {
        self.summary_pages
    }

    /// A GC copy of committed data is plain data from then on (TxID 0). A copy
    /// of an open transaction's page (only a retired block's) keeps its
    /// transaction and records the sequence number it was programmed at, so
    /// recovery counts it once whether it finds the copy, the source, or both.
    /// TxID, TxCnt and TxVer (`format.rs`); a GC copy's origin is rare.
    fn packed_protocol_bytes(&self) -> usize {
        12
    }

    fn checkpoint_section_max(&self) -> usize {
        ZoneMeta::len_max(self.geo.block_count())
    }

    fn checkpoint_section(&self) -> Vec<u8> {
        self.zone_meta().encode()
    }

    /// The zones slide: every full block leaves the Available Zone (open ones
    /// stay, with the paper's zones), and the Unavailable Zone becomes what
    /// the zone metadata recorded.
    fn checkpoint_durable(&mut self) {
        let Slide { unavailable, stay, live } = self.slide();
        for &b in &self.written_list {
            self.written[b as usize] = false;
        }
        self.written_list.clear();
        for &b in &stay {
            self.written[b as usize] = true;
            self.written_list.push(b);
        }
        let open = &self.open_blocks;
        self.dead.retain(|_, blocks| blocks.iter().any(|b| open.contains(b)));
        let for_dead = unavailable.iter().filter(|b| live.binary_search(b).is_err()).count();
        self.counters.add("unavailable_for_dead", for_dead as u64);
        self.counters.add("open_blocks_kept", stay.len() as u64);
        self.slides_with_open_tx += !live.is_empty() as u64;
        self.set_unavailable(unavailable);
    }
}

impl RecoveryHooks for LHooks {
    fn recover(
        &mut self,
        _ckpt_seq: u64,
        root: &[u8],
        section: &[u8],
        _fell_back: bool,
        _logs: &mut dyn LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        let zone = ZoneMeta::decode(section)?;
        // The layout the device was formatted with, before the zone scan
        // reads any summary page.
        let summary_pages = crate::cycle::summary::decode_root(ENTRY.name, root)?;
        *self = LHooks::new(&self.geo, self.canary, self.paper_zones).with_summary_pages(summary_pages);
        self.next_tx_id = zone.next_tx_id;
        self.next_tx_ver = zone.next_tx_ver;
        self.set_unavailable(zone.unavailable);
        self.recovered_open = zone.available;
        Ok(Vec::new())
    }

    /// The Unavailable Zone, and the Available blocks open at the checkpoint
    /// (read up to where they were then; the roll-forward reads the rest).
    fn zone_blocks(&self) -> Vec<BlockId> {
        let mut blocks = self.unavailable_list.clone();
        blocks.extend_from_slice(&self.recovered_open);
        blocks
    }

    fn recover_scanned(&mut self, ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        // The zone's pages and those written since the checkpoint: few.
        let pages = pages.collect()?;
        let r = resolve(ckpt_seq, &pages)?;
        self.next_tx_id = self.next_tx_id.max(r.max_tx_id.saturating_add(1));
        self.next_tx_ver = self.next_tx_ver.max(r.max_tx_ver.saturating_add(1));
        self.recovered_commits = r.committed;
        self.recovered_uncommitted = r.uncommitted;
        self.recovered_incomplete = r.incomplete;
        // Pages found in the Available Zone keep their blocks out of GC until
        // the next checkpoint (the seal recovery writes when it found any).
        for p in &pages {
            if p.oob.seq > ckpt_seq {
                let b = self.geo.block_of(p.ppn);
                if !self.written[b as usize] {
                    self.written[b as usize] = true;
                    self.written_list.push(b);
                }
            }
        }
        Ok(r.updates)
    }

    fn commits_rejected(&self) -> u64 {
        self.recovered_incomplete as u64
    }

    fn roll_forward(&self, oob: &Oob) -> bool {
        PageTx::of(oob).tx_id == 0
    }
}

impl EventHooks for LHooks {
    fn on_erase(&mut self, block: BlockId) {
        self.open_blocks.remove(&block);
    }

    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        let b = self.geo.block_of(ppn);
        if !self.written[b as usize] {
            self.written[b as usize] = true;
            self.written_list.push(b);
        }
        if self.paper_zones {
            // Blocks fill in page order: open at the first page, full at the last.
            let page = ppn - self.geo.ppn(b, 0);
            if page == 0 {
                self.open_blocks.insert(b);
            }
            if page + 1 == self.data_pages() {
                self.open_blocks.remove(&b);
            }
        }
        let tx = PageTx::of(oob);
        if tx.tx_id != 0 && !oob.relocated {
            self.txs.programmed(tx.tx_id, oob.lpn, ppn, b, done_ns);
        }
    }
}

/// The LightTx device.
#[derive(Clone)]
pub struct LightTx {
    ftl: Ftl<LHooks>,
}

impl LightTx {
    pub fn new(ftl: Ftl<LHooks>) -> LightTx {
        LightTx { ftl }
    }
    pub fn ftl(&self) -> &Ftl<LHooks> {
        &self.ftl
    }

    /// Programs the page `tid` has cached, as a non-last page of it.
    fn program_cached(&mut self, tid: Tid) -> Result<()> {
        let Some((id, lpn, data)) = self.ftl.hooks_mut().txs.take_cached(tid) else {
            return Ok(());
        };
        let bytes = PageTx {
            tx_id: id,
            ..PageTx::default()
        }
        .encode();
        self.ftl.program_unmapped(lpn, &data, &bytes)?;
        Ok(())
    }
}

impl Device for LightTx {
    device_basics_over_ftl!();
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        let bytes = PageTx {
            tx_id: 0,
            tx_cnt: 1,
            tx_ver: self.ftl.hooks().next_tx_ver - 1,
            origin: 0,
        }
        .encode();
        self.ftl.write_page_with(lpn, data, &bytes)
    }
    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.ftl.trim_page(lpn)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        s.protocol_records_with_open_tx += self.ftl.hooks().slides_with_open_tx;
        s.protocol = self.ftl.hooks().counters;
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        let h = self.ftl.hooks_mut();
        h.slides_with_open_tx = 0;
        h.counters = ProtocolCounters::new(ENTRY.counters);
    }

    /// The host's id must not name an open transaction; the device gives the
    /// transaction an id of its own that no page on flash carries yet.
    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        let hooks = self.ftl.hooks_mut();
        if hooks.txs.contains(tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        let id = hooks.next_tx_id;
        hooks.next_tx_id = id
            .checked_add(1)
            .ok_or(DeviceError::WornOut("LightTx transaction ids are used up".into()))?;
        hooks.txs.begin(tid, id);
        self.ftl.tx_begin(tid);
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        if !self.ftl.hooks().txs.contains(tid) {
            return Err(DeviceError::UnknownTransaction(tid));
        }
        self.ftl.check_page(lpn, data)?;
        let start = self.ftl.now();
        self.program_cached(tid)?;
        self.ftl.hooks_mut().txs.cache(tid, lpn, data);
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let txs = &self.ftl.hooks().txs;
        if !txs.contains(tid) {
            return Err(DeviceError::UnknownTransaction(tid));
        }
        if let Some(data) = txs.cached_copy(tid, lpn) {
            if buf.len() == data.len() {
                buf.copy_from_slice(data);
                self.ftl.counters_mut().host_reads += 1;
                return Ok(0);
            }
        }
        match txs.entry(tid, lpn) {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn commit(&mut self, tid: Tid) -> Result<u64> {
        if !self.ftl.hooks().txs.contains(tid) {
            return Err(DeviceError::UnknownTransaction(tid));
        }
        let start = self.ftl.now();
        if let Some((id, lpn, data)) = self.ftl.hooks_mut().txs.take_cached(tid) {
            let hooks = self.ftl.hooks_mut();
            let tx_ver = hooks.next_tx_ver;
            hooks.next_tx_ver += 1;
            let bytes = PageTx {
                tx_id: id,
                tx_cnt: hooks.txs.programmed_count(tid) + 1,
                tx_ver,
                origin: 0,
            }
            .encode();
            // No checkpoint may come between the commit page and the L2P
            // updates: it would record neither (see `program_unmapped_deferred`).
            self.ftl.program_unmapped_deferred(lpn, &data, &bytes)?;
            let hooks = self.ftl.hooks_mut();
            let (id, blocks) = hooks.txs.blocks_of(tid);
            let (entries, done_ns) = hooks.txs.end(tid);
            hooks.ended(id, blocks);
            // Durable when every page of the transaction is done on its die.
            self.ftl.wait_until(done_ns);
            for (lpn, ppn) in entries {
                self.ftl.map_page(lpn, ppn)?;
            }
            self.ftl.housekeeping()?;
            // With an image synced at flushes, a commit that returns is on the host's disk.
            self.ftl.nand().flush_image()?;
        } else {
            let hooks = self.ftl.hooks_mut();
            let (id, blocks) = hooks.txs.blocks_of(tid);
            hooks.txs.end(tid);
            hooks.ended(id, blocks);
        }
        assert!(!self.ftl.hooks().txs.contains(tid), "tx {tid} still open after its commit");
        self.ftl.tx_commit(tid);
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        if !self.ftl.hooks().txs.contains(tid) {
            return Err(DeviceError::UnknownTransaction(tid));
        }
        let hooks = self.ftl.hooks_mut();
        let (id, blocks) = hooks.txs.blocks_of(tid);
        hooks.txs.end(tid);
        hooks.ended(id, blocks);
        assert!(!self.ftl.hooks().txs.contains(tid), "tx {tid} still open after its abort");
        self.ftl.tx_abort(tid);
        Ok(0)
    }
}

any_device_over_ftl!(LightTx, ENTRY);

impl crate::DurableParts for LightTx {}
