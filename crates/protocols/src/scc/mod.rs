//! SCC, TxFlash's simple cyclic commit (Prabhakaran, Rodeheffer, Zhou; OSDI
//! 2008), as LightTx (§II-C, §IV) and Flag Commit describe it: one of the
//! baselines LightTx measures against.
//!
//! - Every page of a transaction names the next one in its OOB (`format.rs`);
//!   the last names the first, closing a cycle. A transaction is committed
//!   iff its cycle is complete on flash: there is no commit record.
//! - `write_tx(t, p)`: the page waits in device DRAM until t's next write,
//!   which tells whom it links to (TxFlash keeps one page per transaction
//!   buffered for that reason); it is then programmed, linking to the new
//!   page, and the new page is cached. Nothing touches the L2P before commit.
//!   A page that rewrites a logical page t has programmed already waits
//!   until every earlier page of t is done (`crate::cycle`): a newer version
//!   on flash explains a gap in a cycle, and t's own must not explain one a
//!   power cut left. Pages of distinct logical pages are issued at once, in
//!   any order on the dies, as TxFlash's cycle allows.
//! - `commit(t)`: the cached page is programmed linking back to t's first page;
//!   when every page of t is done on its die, t's pages go into the L2P.
//! - `abort(t)`: the cached page is dropped; t's programmed pages stay on flash
//!   as an incomplete cycle.
//! - The SCC rule: before a newer version of a logical page is written, an
//!   uncommitted transaction with a page of that logical page on flash (or
//!   whose last programmed page links to it) is erased: every block holding
//!   a page of it, live pages moved out first. SCC decides which blocks when
//!   the newer version is handed out and queues them; the framework erases
//!   them before its next host program (`GcHooks::erase_request`), so before
//!   the newer version reaches the flash. Counted in SCC's counters
//!   `forced_erases` and `forced_erase_moves`. This keeps the invariant
//!   recovery relies on (`recovery.rs`): while an uncommitted transaction has
//!   a page on flash, no newer version of a page it wrote or linked to exists,
//!   so the gap in its cycle is never mistaken for one a newer committed
//!   version explains. The whole transaction goes, not only the page: its
//!   other pages would otherwise look committed.
//! - No persistent mapping table: the framework's checkpoints write no L2P
//!   page for SCC (`Mapping::PERSISTED` is false), only the block table
//!   (which blocks are in use) and the record; recovery starts from an empty
//!   L2P, scans every block in use (`zone_blocks` names them all, the
//!   roll-forward reads the rest) and maps each logical page to its newest
//!   committed version, applying nothing from the roll-forward itself.
//!   With `summary-pages=1` (`crate::cycle::summary`, recorded in the root at
//!   format) the framework reads a block full at the checkpoint by its
//!   summary page alone (TxFlash's summary pages): the same pages reach
//!   `recover_scanned`.
//! - Isolation: strict and no-page-conflict. A write to a page another open
//!   transaction (or, for a write outside transactions, any open one) has
//!   written is refused (`IsolationUnsupported`): SCC's versions of one page
//!   must be written in the order they commit. Trim is refused (SCC has no
//!   record to make a trim durable without a mapping table).
//!
//! A write outside transactions is a committed transaction of one page (it
//! links to itself) and goes into the L2P at once.
//! The canary `scc-canary` skips the forced erase (it forgets the uncommitted
//! transaction instead): an aborted page then looks committed once a newer
//! version of the page it linked to is written.

mod entry;
mod format;
mod recovery;

pub use entry::ENTRY;
pub use format::PageLink;
pub use recovery::{resolve, resolve_scanned, DeadTx, Found, Resolved};

use crate::cycle::{self, cycle_device_common, CycleHooks, OpenTxs};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use txftl_ftl::{
    BlockId, Device, DeviceStats, Ftl, Hooks, Lpn, Oob, Ppn, ProtocolCounters, RecoveredUpdate, Result, ScannedPages, Tid, PROTOCOL_BYTES,
};
use txftl_ftl::{Capabilities, EventHooks, GcHooks, PersistHooks, RecoveryHooks, Unpersisted};
use txftl_nand::{Geometry, Nand};

/// An uncommitted transaction whose pages may still be on flash.
#[derive(Clone, Debug, Default)]
struct Dead {
    lpns: BTreeSet<Lpn>,
    /// Page -> the erase count of its block when it was programmed: a block
    /// erased since no longer holds it.
    ppns: BTreeMap<Ppn, u32>,
}

#[derive(Clone, Debug)]
pub struct SccHooks {
    canary: bool,
    /// Data blocks end with a summary page (`crate::cycle::summary`): the
    /// option at format, the root's byte at a mount.
    summary_pages: bool,
    geo: Geometry,
    /// The open transactions; an SCC page carries nothing beside its link.
    txs: OpenTxs<()>,
    dead: BTreeMap<u32, Dead>,
    dead_page: BTreeMap<Ppn, u32>,
    /// Logical page -> the dead transactions that wrote or linked to it.
    claims: BTreeMap<Lpn, BTreeSet<u32>>,
    /// Blocks the SCC rule has asked the framework to erase before its next
    /// host program (`GcHooks::erase_request`), in the order decided.
    erase_queue: VecDeque<BlockId>,
    /// `forced_erases` and `forced_erase_moves` (the entry's counters).
    counters: ProtocolCounters,
    /// What the last recovery found.
    pub recovered_commits: u32,
    pub recovered_uncommitted: u32,
}

impl SccHooks {
    pub fn new(geo: &Geometry, canary: bool) -> SccHooks {
        SccHooks {
            canary,
            summary_pages: false,
            geo: *geo,
            txs: OpenTxs::new("scc"),
            dead: BTreeMap::new(),
            dead_page: BTreeMap::new(),
            claims: BTreeMap::new(),
            erase_queue: VecDeque::new(),
            counters: ProtocolCounters::new(ENTRY.counters),
            recovered_commits: 0,
            recovered_uncommitted: 0,
        }
    }

    /// `self` writing summary pages (`summary-pages=1`) or not.
    pub fn with_summary_pages(mut self, on: bool) -> SccHooks {
        self.summary_pages = on;
        self
    }

    /// Uncommitted transactions whose pages may still be on flash.
    pub fn dead_transactions(&self) -> usize {
        self.dead.len()
    }

    fn add_dead(&mut self, tx_id: u32, d: Dead) {
        if d.ppns.is_empty() {
            return;
        }
        for &lpn in &d.lpns {
            self.claims.entry(lpn).or_default().insert(tx_id);
        }
        for &ppn in d.ppns.keys() {
            self.dead_page.insert(ppn, tx_id);
        }
        self.dead.insert(tx_id, d);
    }

    fn remove_dead(&mut self, tx_id: u32) -> Option<Dead> {
        let d = self.dead.remove(&tx_id)?;
        for lpn in &d.lpns {
            if let Some(s) = self.claims.get_mut(lpn) {
                s.remove(&tx_id);
                if s.is_empty() {
                    self.claims.remove(lpn);
                }
            }
        }
        for ppn in d.ppns.keys() {
            if self.dead_page.get(ppn) == Some(&tx_id) {
                self.dead_page.remove(ppn);
            }
        }
        Some(d)
    }

    /// A page of a dead transaction is gone (its block erased).
    fn dead_page_gone(&mut self, ppn: Ppn) {
        let Some(tx) = self.dead_page.remove(&ppn) else { return };
        let empty = self.dead.get_mut(&tx).is_some_and(|d| {
            d.ppns.remove(&ppn);
            d.ppns.is_empty()
        });
        if empty {
            self.remove_dead(tx);
        }
    }
}

impl CycleHooks for SccHooks {
    type Extra = ();

    fn txs(&self) -> &OpenTxs<()> {
        &self.txs
    }

    fn txs_mut(&mut self) -> &mut OpenTxs<()> {
        &mut self.txs
    }

    /// The link and zeros (`format.rs`).
    fn encode(link: PageLink, _: &()) -> [u8; PROTOCOL_BYTES] {
        link.encode()
    }

    fn extra_for(&self, _lpn: Lpn) {}

    /// The SCC rule (`Scc::erase_uncommitted`).
    fn before_new_version(ftl: &mut Ftl<SccHooks>, lpn: Lpn) -> Result<()> {
        erase_uncommitted(ftl, lpn)
    }
}

impl Hooks for SccHooks {
    type Mapping = Unpersisted;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        scans_pages: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "scc-canary"
        } else {
            "scc"
        }
    }

    fn check(&self, l2p: &[u32], _nand: &Nand) -> std::result::Result<(), String> {
        self.txs.check_l2p(l2p)
    }
}

impl GcHooks for SccHooks {
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.txs.is_live(ppn)
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.txs.live_count(first, end) as u32
    }

    fn erase_request(&mut self) -> Option<BlockId> {
        self.erase_queue.pop_front()
    }

    fn erased_on_request(&mut self, block: BlockId, erased: bool, moved_pages: u64) {
        if erased {
            self.counters.add("forced_erases", 1);
        }
        self.counters.add("forced_erase_moves", moved_pages);
        // Pages of dead transactions in it are gone (a block left alone was
        // free: recovery reads nothing older than the checkpoint that freed it).
        let first = self.geo.ppn(block, 0);
        let gone: Vec<Ppn> = self
            .dead_page
            .range(first..first + self.geo.pages_per_block)
            .map(|(&p, _)| p)
            .collect();
        for p in gone {
            self.dead_page_gone(p);
        }
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, oob: &Oob, new_erase_count: u32) {
        let link = PageLink::of(oob);
        self.txs.relocated(old, new, oob.lpn, link.tx_id, link.version, new_erase_count);
    }
}

impl PersistHooks for SccHooks {
    /// The layout byte (`crate::cycle::summary`).
    fn root_len_max(&self) -> usize {
        1
    }

    fn root(&self) -> Vec<u8> {
        cycle::summary::encode_root(self.summary_pages)
    }

    fn summary_pages(&self) -> bool {
        self.summary_pages
    }

    /// Open transactions' pages are off the L2P until commit: GC keeps them,
    /// and the checkpoint that covers them releases what it may.
    fn checkpoint_durable(&mut self) {
        self.txs.checkpoint_durable();
    }

    /// TxID, version and next-link (`format.rs`): on every SCC page.
    fn packed_protocol_bytes(&self) -> usize {
        24
    }
}

impl RecoveryHooks for SccHooks {
    /// The layout the device was formatted with (its root), before the scan
    /// reads any summary page and before the mount programs anything.
    fn recover(
        &mut self,
        _ckpt_seq: u64,
        root: &[u8],
        _section: &[u8],
        _fell_back: bool,
        _logs: &mut dyn txftl_ftl::LogSource,
    ) -> Result<Vec<RecoveredUpdate>> {
        self.summary_pages = cycle::summary::decode_root(self.name(), root)?;
        Ok(Vec::new())
    }

    /// Nothing is applied as it is: every mapping comes from `recover_scanned`.
    fn roll_forward(&self, _oob: &txftl_ftl::Oob) -> bool {
        false
    }

    /// Every block: SCC has no mapping table, recovery scans the whole device.
    fn zone_blocks(&self) -> Vec<BlockId> {
        cycle::all_blocks(&self.geo)
    }

    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let r = resolve_scanned(pages)?;
        *self = SccHooks::new(&self.geo, self.canary).with_summary_pages(self.summary_pages);
        self.txs.resume_after(r.max_tx_id, r.max_version);
        self.recovered_commits = r.committed;
        self.recovered_uncommitted = r.dead.len() as u32;
        for (tx, d) in r.dead {
            self.add_dead(
                tx,
                Dead {
                    lpns: d.lpns,
                    ppns: d.ppns,
                },
            );
        }
        // A committed version's page is never an uncommitted one's.
        debug_assert!(
            r.mappings.iter().all(|(_, (ppn, _))| !self.dead_page.contains_key(ppn)),
            "recovery maps a page of an uncommitted transaction"
        );
        Ok(r.mappings
            .into_iter()
            .map(|(lpn, (ppn, seq))| RecoveredUpdate { seq, lpn, ppn })
            .collect())
    }
}

impl EventHooks for SccHooks {
    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        // The block was erased and is being written again.
        self.dead_page_gone(ppn);
        if oob.relocated {
            return;
        }
        let link = PageLink::of(oob);
        self.txs
            .programmed(ppn, oob.lpn, link.tx_id, link.version, oob.erase_count, done_ns);
    }
}

/// The SCC rule: every uncommitted transaction that wrote or linked to
/// `lpn` is erased before a newer version of it reaches the flash. Its
/// blocks are queued here; the framework erases them before its next host
/// program (`GcHooks::erase_request`), and `erased_on_request` forgets the
/// pages they held.
fn erase_uncommitted(ftl: &mut Ftl<SccHooks>, lpn: Lpn) -> Result<()> {
    let txs: Vec<u32> = ftl
        .hooks()
        .claims
        .get(&lpn)
        .map(|s| s.iter().copied().collect())
        .unwrap_or_default();
    let geo = ftl.hooks().geo;
    for tx in txs {
        let Some(d) = ftl.hooks_mut().remove_dead(tx) else { continue };
        if ftl.hooks().canary {
            continue; // the canary's bug: the uncommitted pages stay
        }
        let mut blocks: BTreeSet<BlockId> = BTreeSet::new();
        for (&ppn, &ec) in &d.ppns {
            let b = geo.block_of(ppn);
            // Erased since the page was programmed: it is gone already.
            if ftl.erase_counts()[b as usize] <= ec {
                blocks.insert(b);
            }
        }
        let queue = &mut ftl.hooks_mut().erase_queue;
        for b in blocks {
            if !queue.contains(&b) {
                queue.push_back(b);
            }
        }
    }
    Ok(())
}

/// The SCC device.
#[derive(Clone)]
pub struct Scc {
    ftl: Ftl<SccHooks>,
}

impl Scc {
    pub fn new(ftl: Ftl<SccHooks>) -> Scc {
        Scc { ftl }
    }

    pub fn ftl(&self) -> &Ftl<SccHooks> {
        &self.ftl
    }
}

impl Device for Scc {
    device_basics_over_ftl!();
    /// A transaction of one page: it links to itself.
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.check_page(lpn, data)?;
        self.ftl.hooks().txs.check_conflict(None, lpn)?;
        let start = self.ftl.now();
        erase_uncommitted(&mut self.ftl, lpn)?;
        let txs = &mut self.ftl.hooks_mut().txs;
        let tx_id = txs.new_tx_id()?;
        let version = txs.new_version();
        let bytes = PageLink {
            tx_id,
            version,
            next_lpn: lpn,
            next_version: version,
        }
        .encode();
        self.ftl.write_page_with(lpn, data, &bytes)?;
        Ok(self.ftl.now() - start)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        s.protocol_records_with_open_tx += self.ftl.hooks().txs.checkpoints_with_open_tx;
        s.protocol = self.ftl.hooks().counters;
        s
    }
    fn reset_stats(&mut self) {
        let h = self.ftl.hooks_mut();
        h.txs.checkpoints_with_open_tx = 0;
        h.counters = ProtocolCounters::new(ENTRY.counters);
        self.ftl.reset_device_stats()
    }

    cycle_device_common!();

    /// The cached page is dropped; t's programmed pages stay on flash as an
    /// incomplete cycle, until a newer version of a page it wrote or linked
    /// to erases them (the SCC rule).
    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.ftl.hooks().txs.get(tid)?;
        let hooks = self.ftl.hooks_mut();
        let t = hooks.txs.close(tid).expect("checked above");
        assert!(!hooks.dead.contains_key(&t.tx_id), "transaction {} aborted twice", t.tx_id);
        debug_assert!(
            t.programmed.values().all(|&(_, v)| t.lpns.contains(&v.0)),
            "abort of transaction {}: a programmed page of an lpn it never wrote",
            t.tx_id
        );
        hooks.add_dead(
            t.tx_id,
            Dead {
                lpns: t.lpns,
                ppns: t.programmed.into_iter().map(|(p, (ec, _))| (p, ec)).collect(),
            },
        );
        self.ftl.tx_abort(tid);
        Ok(0)
    }
}

any_device_over_ftl!(Scc, ENTRY);

impl crate::DurableParts for Scc {}
