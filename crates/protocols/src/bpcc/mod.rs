//! BPCC, TxFlash's back-pointer-assisted cyclic commit (Prabhakaran,
//! Rodeheffer, Zhou; OSDI 2008), as LightTx (§II-C, §IV-C) and Flag Commit
//! describe it: one of the baselines LightTx measures against.
//!
//! - The cycle is SCC's (`format.rs`): every page of a transaction names the
//!   next one in its OOB, the last names the first; there is no commit
//!   record. A page waits in device DRAM until its transaction's next write
//!   tells whom it links to; `commit` programs it linking back to the first,
//!   and the transaction's pages go into the L2P once all are done on their
//!   dies; `abort` drops it (an abort programs nothing).
//! - Every page also carries a *back pointer*: the version of its logical
//!   page's last committed version when it was written. Versions of other
//!   transactions between the two are *straddled*: aborted. This replaces
//!   SCC's forced erase: an aborted version may stay on flash while newer
//!   versions of its page are written, because they say it was aborted.
//! - The price (LightTx §IV-C: "a page whose SRS is not null, even if it is
//!   invalid, cannot be erased and has to be moved"): a page whose back
//!   pointer straddles a version of an aborted transaction (its straddle
//!   responsibility set, SRS) is *pinned* while that version is *guarded*.
//!   GC moves pinned pages like valid ones (the generic `GcHooks::extra_live`),
//!   counted in `pinned_copies` (the entry's counter `gc_pinned_copies`).
//! - A version is guarded while a copy of its page, or of the page of the
//!   same transaction that links to it, is on flash. TxFlash releases a
//!   straddler once the versions it straddles are erased; here the page
//!   linking to a version guards it too, because an aborted transaction's
//!   cycle breaks where a version is missing (the page it never programmed,
//!   or one GC erased), and the page before the gap must not look like a
//!   committed transaction whose version a newer one replaced (the newer
//!   version must still be seen to straddle it, `recovery.rs`). Walking an
//!   aborted cycle forward from any page left on flash reaches such a gap,
//!   so each guarded gap proves the abort. (The first version of this
//!   module pinned a straddler while *any* page of the transaction was on
//!   flash; at 50% aborts on TPC-C's hot pages the pins chained from one
//!   aborted transaction to the next and filled the device.)
//! - An aborted transaction's pages are garbage at once (GC erases them like
//!   any invalid page). Its pages are gone when their block is erased (the
//!   generic `EventHooks::on_erase`, called once the NAND erase succeeded: a GC
//!   victim erased for reuse, a metadata ring taking a block from the pool);
//!   a version no longer guarded releases its straddlers.
//! - No persistent mapping table: the framework's checkpoints write no L2P
//!   page for BPCC (`Mapping::PERSISTED` is false), only the block table
//!   and the record; recovery starts from an empty L2P, scans every block in
//!   use (`zone_blocks` names them all; by their summary pages alone with
//!   `summary-pages=1`, `crate::cycle::summary`) and rebuilds the mappings, the dead
//!   transactions and the pins from the back pointers found (nothing is
//!   applied from the roll-forward itself: `roll_forward` is false).
//! - Isolation: strict and no-page-conflict, as SCC. A write to a page another
//!   open transaction wrote is refused (`IsolationUnsupported`): back pointers
//!   name *the* last committed version, which two open writers of one page
//!   could not agree on. Trim is refused (no record to make it durable).
//!
//! A write outside transactions is a committed transaction of one page (it
//! links to itself) and goes into the L2P at once.
//!
//! The canary `bpcc-canary` does not keep pinned pages (GC erases a block
//! holding a straddler like any block of invalid pages): once the straddler
//! is gone and a newer version that does not straddle exists, an aborted
//! transaction's gap looks explained and recovery brings its pages back.

mod entry;
mod format;
mod recovery;

pub use entry::ENTRY;

pub use format::PageRecord;
pub use recovery::{resolve, resolve_scanned, DeadTx, Found, Resolved};

use crate::cycle::{self, cycle_device_common, CycleHooks, OpenTx, OpenTxs, PageLink, Version};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{BlockId, Device, DeviceStats, Ftl, Hooks, Lpn, Oob, Ppn, RecoveredUpdate, Result, ScannedPages, Tid, PROTOCOL_BYTES};
use txftl_ftl::{Capabilities, EventHooks, GcHooks, PersistHooks, RecoveryHooks, Unpersisted};
use txftl_nand::{Geometry, Nand};

impl recovery::GuardedVersion for DeadVersion {
    fn copies(&self) -> &BTreeSet<Ppn> {
        &self.copies
    }
    fn pred(&self) -> Option<Version> {
        self.pred
    }
}

/// A version an aborted (or, after a recovery, uncommitted) transaction
/// wrote or linked to, kept while it is guarded (`guarded`).
#[derive(Clone, Debug, Default)]
struct DeadVersion {
    tx_id: u32,
    /// The copies of its page on flash (none: never programmed, or erased).
    copies: BTreeSet<Ppn>,
    /// The version of the same transaction whose page links to this one.
    pred: Option<Version>,
    /// The version this one's page links to.
    next: Option<Version>,
    /// The pages pinned for it (their back pointers straddle it).
    straddlers: BTreeSet<Ppn>,
}

#[derive(Clone, Debug)]
pub struct BpccHooks {
    canary: bool,
    /// Data blocks end with a summary page (`crate::cycle::summary`): the
    /// option at format, the root's byte at a mount.
    summary_pages: bool,
    geo: Geometry,
    /// The open transactions; each cached page carries its back pointer.
    txs: OpenTxs<u64>,
    /// Logical page -> the version of its last committed version (0: none):
    /// the back pointer of its next write. Grown on demand.
    committed: Vec<u64>,
    /// Dead transaction -> how many of its versions are guarded.
    dead: BTreeMap<u32, usize>,
    /// The guarded versions of dead transactions.
    dead_versions: BTreeMap<Version, DeadVersion>,
    /// A dead transaction's page on flash -> its version.
    dead_page: BTreeMap<Ppn, Version>,
    /// Logical page -> its guarded dead versions newer than its last
    /// committed one: every write of it straddles them.
    since_commit: BTreeMap<Lpn, BTreeSet<u64>>,
    /// Pinned page -> the dead versions it straddles.
    pinned: BTreeMap<Ppn, BTreeSet<Version>>,
    /// Pinned page -> its logical page and version: whether it is the
    /// committed version, which the L2P maps (GC counts it live already).
    pinned_at: BTreeMap<Ppn, (Lpn, u64)>,
    /// Pinned pages GC moved although no longer valid, since `reset_stats`.
    pinned_copies: u64,
    /// What the last recovery found.
    pub recovered_commits: u32,
    pub recovered_uncommitted: u32,
}

impl BpccHooks {
    pub fn new(geo: &Geometry, canary: bool) -> BpccHooks {
        BpccHooks {
            canary,
            summary_pages: false,
            geo: *geo,
            txs: OpenTxs::new("bpcc"),
            committed: Vec::new(),
            dead: BTreeMap::new(),
            dead_versions: BTreeMap::new(),
            dead_page: BTreeMap::new(),
            since_commit: BTreeMap::new(),
            pinned: BTreeMap::new(),
            pinned_at: BTreeMap::new(),
            pinned_copies: 0,
            recovered_commits: 0,
            recovered_uncommitted: 0,
        }
    }

    /// `self` writing summary pages (`summary-pages=1`) or not.
    pub fn with_summary_pages(mut self, on: bool) -> BpccHooks {
        self.summary_pages = on;
        self
    }

    /// Aborted transactions whose pages may still be on flash.
    pub fn dead_transactions(&self) -> usize {
        self.dead.len()
    }

    /// The pinned pages and their (logical page, version), as this mount knows them.
    pub fn pinned_at(&self) -> Vec<(Ppn, (Lpn, u64))> {
        self.pinned_at.iter().map(|(&p, &at)| (p, at)).collect()
    }

    /// Pages pinned now (their back pointers straddle such a transaction).
    pub fn pinned_pages(&self) -> usize {
        self.pinned.len()
    }

    /// The pages of aborted transactions still on flash, as this mount knows them.
    pub fn dead_pages(&self) -> Vec<Ppn> {
        self.dead_page.keys().copied().collect()
    }

    /// The logical page of a dead transaction's page on flash.
    pub fn dead_page_lpn(&self, ppn: Ppn) -> Option<Lpn> {
        self.dead_page.get(&ppn).map(|v| v.0)
    }

    fn committed_version(&self, lpn: Lpn) -> u64 {
        self.committed.get(lpn as usize).copied().unwrap_or(0)
    }

    /// `lpn`'s version `version` committed: later writes point back to it,
    /// and no longer straddle the dead transactions before it.
    fn set_committed(&mut self, lpn: Lpn, version: u64) {
        let i = lpn as usize;
        if self.committed.len() <= i {
            self.committed.resize(i + 1, 0);
        }
        // Back pointers name the last committed version: it only grows.
        assert!(
            version >= self.committed[i],
            "lpn {lpn}: committed version goes back from {} to {version}",
            self.committed[i]
        );
        self.committed[i] = version;
        self.since_commit.remove(&lpn);
    }

    /// Dead transaction `tx_id`'s versions (`DeadVersion::tx_id` set):
    /// the guarded ones are kept, and later writes of their pages straddle them.
    fn add_dead(&mut self, tx_id: u32, mut versions: BTreeMap<Version, DeadVersion>) {
        // An unguarded version has no copy, so dropping it guards nothing less.
        let unguarded: Vec<Version> = versions.keys().copied().filter(|&v| !recovery::guarded(&versions, v)).collect();
        for v in unguarded {
            versions.remove(&v);
        }
        if versions.is_empty() {
            return;
        }
        self.dead.insert(tx_id, versions.len());
        for ((lpn, v), d) in versions {
            if v > self.committed_version(lpn) {
                self.since_commit.entry(lpn).or_default().insert(v);
            }
            for &ppn in &d.copies {
                self.dead_page.insert(ppn, (lpn, v));
            }
            self.dead_versions.insert((lpn, v), d);
        }
    }

    /// Whether dead version `v` is still guarded: a copy of its page, or of
    /// the page linking to it, is on flash.
    fn guarded(&self, v: Version) -> bool {
        recovery::guarded(&self.dead_versions, v)
    }

    /// Dead version `v` is no longer guarded: the pins it held are released.
    fn release_version(&mut self, v: Version) {
        let Some(d) = self.dead_versions.remove(&v) else { return };
        if let Some(s) = self.since_commit.get_mut(&v.0) {
            s.remove(&v.1);
            if s.is_empty() {
                self.since_commit.remove(&v.0);
            }
        }
        for p in &d.straddlers {
            if let Some(s) = self.pinned.get_mut(p) {
                s.remove(&v);
                if s.is_empty() {
                    self.pinned.remove(p);
                    self.pinned_at.remove(p);
                }
            }
        }
        if let Some(n) = self.dead.get_mut(&d.tx_id) {
            assert!(*n > 0, "transaction {}: more guarded versions released than it had", d.tx_id);
            *n -= 1;
            if *n == 0 {
                self.dead.remove(&d.tx_id);
            }
        }
    }

    /// A page of a dead transaction is gone (its block erased): its version,
    /// and the version it links to, may no longer be guarded.
    fn dead_page_gone(&mut self, ppn: Ppn) {
        let Some(v) = self.dead_page.remove(&ppn) else { return };
        let Some(d) = self.dead_versions.get_mut(&v) else { return };
        d.copies.remove(&ppn);
        let next = d.next;
        for w in std::iter::once(v).chain(next) {
            if !self.guarded(w) {
                self.release_version(w);
            }
        }
    }

    /// `block` was erased (`EventHooks::on_erase`): whatever it held is gone.
    ///
    /// Crash safety: recovery rebuilds the pins from the pages it finds on
    /// flash (`recovery.rs`), so a pin may go only once the pages guarding
    /// the straddled version can no longer be found there. The framework
    /// calls `on_erase` only after the NAND erase succeeded: the pages read
    /// erased from then on, through any later power cut (a cut during the
    /// erase tears it and calls nothing; the pins then stay until recovery,
    /// which rebuilds them from what the torn block still shows).
    fn block_erased(&mut self, block: BlockId) {
        let first = self.geo.ppn(block, 0);
        let end = first + self.geo.pages_per_block;
        let gone: Vec<Ppn> = self.dead_page.range(first..end).map(|(&p, _)| p).collect();
        for p in gone {
            self.dead_page_gone(p);
        }
        // Pinned pages there were moved first, except by the canary, whose
        // GC lets them go: the pins go with them.
        let lost: Vec<Ppn> = self.pinned.range(first..end).map(|(&p, _)| p).collect();
        for p in lost {
            self.unpin(p);
        }
    }

    fn unpin(&mut self, ppn: Ppn) -> Option<BTreeSet<Version>> {
        let srs = self.pinned.remove(&ppn)?;
        self.pinned_at.remove(&ppn);
        for v in &srs {
            if let Some(d) = self.dead_versions.get_mut(v) {
                d.straddlers.remove(&ppn);
            }
        }
        Some(srs)
    }

    /// Whether pinned page `ppn` is its logical page's committed version,
    /// which the L2P maps: the framework counts it live already.
    fn pinned_is_mapped(&self, ppn: Ppn) -> bool {
        self.pinned_at
            .get(&ppn)
            .is_some_and(|&(lpn, version)| self.committed_version(lpn) == version)
    }

    fn pin(&mut self, ppn: Ppn, at: Version, srs: BTreeSet<Version>) {
        assert!(!srs.is_empty(), "page {ppn} pinned for no dead version");
        debug_assert!(
            srs.iter().all(|&(lpn, v)| lpn == at.0 && v < at.1),
            "page {ppn} ({at:?}) pinned for {srs:?}: a page straddles older versions of its own lpn only"
        );
        debug_assert!(!self.pinned.contains_key(&ppn), "page {ppn} pinned twice");
        self.pinned_at.insert(ppn, at);
        for v in &srs {
            if let Some(d) = self.dead_versions.get_mut(v) {
                d.straddlers.insert(ppn);
            }
        }
        self.pinned.insert(ppn, srs);
    }

    fn keeps_pinned(&self) -> bool {
        !self.canary // the canary's bug: GC may erase a pinned page
    }
}

impl CycleHooks for BpccHooks {
    /// The back pointer of a cached page.
    type Extra = u64;

    fn txs(&self) -> &OpenTxs<u64> {
        &self.txs
    }

    fn txs_mut(&mut self) -> &mut OpenTxs<u64> {
        &mut self.txs
    }

    /// The link and the back pointer (`format.rs`).
    fn encode(link: PageLink, &back: &u64) -> [u8; PROTOCOL_BYTES] {
        PageRecord {
            tx_id: link.tx_id,
            version: link.version,
            next_lpn: link.next_lpn,
            next_version: link.next_version,
            back,
        }
        .encode()
    }

    /// The back pointer: `lpn`'s last committed version.
    fn extra_for(&self, lpn: Lpn) -> u64 {
        self.committed_version(lpn)
    }

    /// Later writes of its pages point back to its versions.
    fn committing(&mut self, t: &OpenTx<u64>) {
        for (&lpn, &(_, version)) in &t.entries {
            self.set_committed(lpn, version);
        }
    }
}

impl Hooks for BpccHooks {
    type Mapping = Unpersisted;
    const CAPABILITIES: Capabilities = Capabilities {
        extra_live: true,
        scans_pages: true,
        ..Capabilities::NONE
    };

    fn name(&self) -> &'static str {
        if self.canary {
            "bpcc-canary"
        } else {
            "bpcc"
        }
    }

    fn check(&self, l2p: &[u32], _nand: &Nand) -> std::result::Result<(), String> {
        self.txs.check_l2p(l2p)?;
        for (ppn, srs) in &self.pinned {
            for v in srs {
                if !self.dead_versions.get(v).is_some_and(|d| d.straddlers.contains(ppn)) {
                    return Err(format!("page {ppn} is pinned for dead version {v:?}, which does not list it"));
                }
            }
        }
        for (&v, d) in &self.dead_versions {
            if !self.guarded(v) {
                return Err(format!("dead version {v:?} of transaction {} is kept but not guarded", d.tx_id));
            }
        }
        Ok(())
    }
}

impl GcHooks for BpccHooks {
    fn extra_live(&self, ppn: Ppn) -> bool {
        self.txs.is_live(ppn) || (self.keeps_pinned() && self.pinned.contains_key(&ppn))
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        let live = self.txs.live_count(first, end);
        let pinned = if self.keeps_pinned() {
            // Not the committed versions the L2P maps: GC counts those
            // already (`live_pages` adds this count to the valid one).
            self.pinned
                .range(first..end)
                .filter(|(p, _)| !self.txs.is_live(**p) && !self.pinned_is_mapped(**p))
                .count()
        } else {
            0
        };
        (live + pinned) as u32
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, oob: &Oob, new_erase_count: u32) {
        let rec = PageRecord::of(oob);
        if let Some(srs) = self.unpin(old) {
            // Moved only because it is pinned, unless it is also the
            // committed version the L2P maps or an open transaction's page.
            if self.committed_version(oob.lpn) != rec.version && !self.txs.is_live(old) {
                self.pinned_copies += 1;
            }
            self.pin(new, (oob.lpn, rec.version), srs);
            if let Some(&v) = self.dead_page.get(&old) {
                // A pinned page of a dead transaction: the copy is a copy of its version too.
                self.dead_page.insert(new, v);
                if let Some(d) = self.dead_versions.get_mut(&v) {
                    d.copies.insert(new);
                }
            }
        }
        self.txs.relocated(old, new, oob.lpn, rec.tx_id, rec.version, new_erase_count);
    }
}

impl PersistHooks for BpccHooks {
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

    /// TxID, version, next-link and back pointer (`format.rs`): every BPCC page.
    fn packed_protocol_bytes(&self) -> usize {
        32
    }
}

impl RecoveryHooks for BpccHooks {
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

    /// Every block: BPCC has no mapping table, recovery scans the whole device.
    fn zone_blocks(&self) -> Vec<BlockId> {
        cycle::all_blocks(&self.geo)
    }

    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let r = resolve_scanned(pages)?;
        *self = BpccHooks::new(&self.geo, self.canary).with_summary_pages(self.summary_pages);
        self.txs.resume_after(r.max_tx_id, r.max_version);
        self.recovered_commits = r.committed;
        self.recovered_uncommitted = r.dead.len() as u32;
        for (&lpn, &(_, _, version)) in &r.mappings {
            self.set_committed(lpn, version);
        }
        for (tx, d) in r.dead {
            let versions = d
                .versions
                .into_iter()
                .map(|(v, f)| {
                    let d = DeadVersion {
                        tx_id: tx,
                        copies: f.copies,
                        pred: f.pred,
                        next: f.next,
                        straddlers: BTreeSet::new(),
                    };
                    (v, d)
                })
                .collect();
            self.add_dead(tx, versions);
        }
        assert_eq!(r.pinned.len(), r.pinned_at.len(), "recovery: a pinned page without its version");
        for (ppn, srs) in r.pinned {
            self.pin(ppn, r.pinned_at[&ppn], srs);
        }
        Ok(r.mappings
            .into_iter()
            .map(|(lpn, (ppn, seq, _))| RecoveredUpdate { seq, lpn, ppn })
            .collect())
    }
}

impl EventHooks for BpccHooks {
    fn on_erase(&mut self, block: BlockId) {
        self.block_erased(block);
    }

    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        if oob.relocated {
            return; // a GC copy: `on_relocate` follows
        }
        let rec = PageRecord::of(oob);
        // What write_tx cached (or write computed) is still the last
        // committed version: no other writer of the lpn in between.
        debug_assert_eq!(
            rec.back,
            self.committed_version(oob.lpn),
            "page {ppn} of lpn {}: its back pointer is not the last committed version",
            oob.lpn
        );
        // Its back pointer straddles every guarded dead version of this page
        // since its last commit: it must outlive their guards.
        if let Some(vs) = self.since_commit.get(&oob.lpn) {
            let srs: BTreeSet<Version> = vs
                .iter()
                .filter(|&&v| rec.straddles(v))
                .filter(|&&v| self.dead_versions.get(&(oob.lpn, v)).is_some_and(|d| d.tx_id != rec.tx_id))
                .map(|&v| (oob.lpn, v))
                .collect();
            if !srs.is_empty() {
                self.pin(ppn, (oob.lpn, rec.version), srs);
            }
        }
        self.txs.programmed(ppn, oob.lpn, rec.tx_id, rec.version, oob.erase_count, done_ns);
    }
}

/// The BPCC device.
#[derive(Clone)]
pub struct Bpcc {
    ftl: Ftl<BpccHooks>,
}

impl Bpcc {
    pub fn new(ftl: Ftl<BpccHooks>) -> Bpcc {
        Bpcc { ftl }
    }

    pub fn ftl(&self) -> &Ftl<BpccHooks> {
        &self.ftl
    }

    /// The FTL, for a test that drives it directly (a forced erase).
    pub fn ftl_mut(&mut self) -> &mut Ftl<BpccHooks> {
        &mut self.ftl
    }
}

impl Device for Bpcc {
    device_basics_over_ftl!();
    /// A transaction of one page: it links to itself.
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.check_page(lpn, data)?;
        self.ftl.hooks().txs.check_conflict(None, lpn)?;
        let start = self.ftl.now();
        let hooks = self.ftl.hooks_mut();
        let tx_id = hooks.txs.new_tx_id()?;
        let version = hooks.txs.new_version();
        let bytes = PageRecord {
            tx_id,
            version,
            next_lpn: lpn,
            next_version: version,
            back: hooks.committed_version(lpn),
        }
        .encode();
        self.ftl.write_page_with(lpn, data, &bytes)?;
        self.ftl.hooks_mut().set_committed(lpn, version);
        Ok(self.ftl.now() - start)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let h = self.ftl.hooks();
        s.protocol_records_with_open_tx += h.txs.checkpoints_with_open_tx;
        s.protocol = txftl_ftl::ProtocolCounters::new(ENTRY.counters);
        s.protocol.add("gc_pinned_copies", h.pinned_copies);
        s
    }
    fn reset_stats(&mut self) {
        let h = self.ftl.hooks_mut();
        h.txs.checkpoints_with_open_tx = 0;
        h.pinned_copies = 0;
        self.ftl.reset_device_stats()
    }

    cycle_device_common!();

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.ftl.hooks().txs.get(tid)?;
        let erase_counts = self.ftl.erase_counts().to_vec();
        let geo = *self.ftl.nand().geometry();
        let hooks = self.ftl.hooks_mut();
        let t = hooks.txs.close(tid).expect("checked above");
        if let Some(c) = &t.cached {
            assert_eq!(
                t.order.last(),
                Some(&(c.lpn, c.version)),
                "abort of transaction {}: its cached page is not its last version",
                t.tx_id
            );
        }
        // Its versions in order, each linking to the next; the last (the
        // cached page, dropped) never reached the flash, so nothing links
        // back to the first.
        let mut versions: BTreeMap<Version, DeadVersion> = t
            .order
            .iter()
            .enumerate()
            .map(|(i, &v)| {
                let d = DeadVersion {
                    tx_id: t.tx_id,
                    pred: i.checked_sub(1).map(|j| t.order[j]),
                    next: t.order.get(i + 1).copied(),
                    ..DeadVersion::default()
                };
                (v, d)
            })
            .collect();
        // Pages GC erased already (older versions it rewrote, no longer kept) are not on flash.
        for (&p, &(ec, v)) in &t.programmed {
            if erase_counts[geo.block_of(p) as usize] <= ec {
                if let Some(d) = versions.get_mut(&v) {
                    d.copies.insert(p);
                }
            }
        }
        hooks.add_dead(t.tx_id, versions);
        self.ftl.tx_abort(tid);
        Ok(0)
    }
}

any_device_over_ftl!(Bpcc, ENTRY);

/// Each logical page's last committed version (what the next write's back
/// pointer names), and the pins, by the version each pinned page holds (a
/// GC victim not yet erased may hold a second copy): recovery rebuilds both
/// from the pages on flash (`recovery.rs`). The live device may hold more
/// pins than a recovery rebuilds (it counts the pages of a block waiting
/// for its erase, which recovery does not read), never fewer. Not the dead
/// versions: a transaction open at the checkpoint is dead to a recovery.
impl crate::DurableParts for Bpcc {
    fn durable_parts(&self, state: &mut txftl_ftl::DurableState) {
        let h = self.ftl.hooks();
        let committed = h.committed.iter().enumerate().filter(|&(_, &v)| v != 0);
        state.part("committed versions", committed.map(|(lpn, v)| format!("lpn {lpn} version {v}")));
        // Each (pinned version, straddled version) pair: a recovery pins a
        // version for no dead version the live device does not.
        let pins = h.pinned.iter().flat_map(|(ppn, srs)| {
            let at = h.pinned_at[ppn];
            srs.iter().map(move |v| format!("{at:?} straddles {v:?}"))
        });
        state.part_at_least("pins", pins);
    }
}
