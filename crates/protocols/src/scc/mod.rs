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
//! - `commit(t)`: the cached page is programmed linking back to t's first page;
//!   when every page of t is done on its die, t's pages go into the L2P.
//! - `abort(t)`: the cached page is dropped; t's programmed pages stay on flash
//!   as an incomplete cycle.
//! - The SCC rule: before a newer version of a logical page is written, an
//!   uncommitted transaction with a page of that logical page on flash (or
//!   whose last programmed page links to it) is erased: every block holding
//!   a page of it, live pages moved out first (`Ftl::force_erase`; counted in
//!   `forced_erases` and `forced_erase_moves`). This keeps the invariant
//!   recovery relies on (`recovery.rs`): while an uncommitted transaction has
//!   a page on flash, no newer version of a page it wrote or linked to exists,
//!   so the gap in its cycle is never mistaken for one a newer committed
//!   version explains. The whole transaction goes, not only the page: its
//!   other pages would otherwise look committed.
//! - No persistent mapping table: the framework's checkpoints write no L2P
//!   page for SCC (`Hooks::persists_l2p` is false), only the block table
//!   (which blocks are in use) and the record; recovery starts from an empty
//!   L2P, scans every block in use (`zone_blocks` names them all, the
//!   roll-forward reads the rest) and maps each logical page to its newest
//!   committed version, applying nothing from the roll-forward itself.
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

mod format;
mod recovery;

pub use format::PageLink;
pub use recovery::{resolve, resolve_scanned, DeadTx, Found, Resolved};

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{BlockId, Device, DeviceError, DeviceStats, Ftl, Hooks, Lpn, Oob, Ppn, RecoveredUpdate, Result, ScannedPages, Tid};
use txftl_nand::{Geometry, Nand};

/// An open transaction.
#[derive(Clone, Debug, Default)]
struct OpenTx {
    tx_id: u32,
    /// Its first page (logical page, version): the last page links back to it.
    first: Option<(Lpn, u64)>,
    /// The page waiting for the next command to know its link.
    cached: Option<(Lpn, u64, Vec<u8>)>,
    /// Logical page -> its newest programmed page.
    entries: BTreeMap<Lpn, Ppn>,
    /// Every logical page it wrote, the cached one included.
    lpns: BTreeSet<Lpn>,
    /// Every page it programmed (with the erase count of the block then), GC copies included.
    programmed: BTreeMap<Ppn, u32>,
    done_ns: u64,
}

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
    geo: Geometry,
    open: BTreeMap<Tid, OpenTx>,
    by_tx_id: BTreeMap<u32, Tid>,
    /// Open transactions' newest pages: GC moves them like valid pages.
    live: BTreeSet<Ppn>,
    dead: BTreeMap<u32, Dead>,
    dead_page: BTreeMap<Ppn, u32>,
    /// Logical page -> the dead transactions that wrote or linked to it.
    claims: BTreeMap<Lpn, BTreeSet<u32>>,
    next_tx_id: u32,
    next_version: u64,
    /// Checkpoints made durable while a transaction was open (its pages on
    /// flash, uncommitted, across the checkpoint), since the last
    /// `reset_stats`: reported as `protocol_records_with_open_tx`.
    checkpoints_with_open_tx: u64,
    /// What the last recovery found.
    pub recovered_commits: u32,
    pub recovered_uncommitted: u32,
}

impl SccHooks {
    pub fn new(geo: &Geometry, canary: bool) -> SccHooks {
        SccHooks {
            canary,
            geo: *geo,
            open: BTreeMap::new(),
            by_tx_id: BTreeMap::new(),
            live: BTreeSet::new(),
            dead: BTreeMap::new(),
            dead_page: BTreeMap::new(),
            claims: BTreeMap::new(),
            next_tx_id: 1,
            next_version: 1,
            checkpoints_with_open_tx: 0,
            recovered_commits: 0,
            recovered_uncommitted: 0,
        }
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

    fn new_version(&mut self) -> u64 {
        let v = self.next_version;
        self.next_version += 1;
        v
    }
}

impl Hooks for SccHooks {
    fn name(&self) -> &'static str {
        if self.canary {
            "scc-canary"
        } else {
            "scc"
        }
    }

    fn has_extra_live() -> bool {
        true
    }

    /// TxID, version and next-link (`format.rs`): on every SCC page.
    fn packed_protocol_bytes(&self) -> usize {
        24
    }

    fn extra_live(&self, ppn: Ppn) -> bool {
        self.live.contains(&ppn)
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.live.range(first..end).count() as u32
    }

    fn on_program(&mut self, ppn: Ppn, oob: &Oob, done_ns: u64) {
        // The block was erased and is being written again.
        self.dead_page_gone(ppn);
        if oob.relocated {
            return;
        }
        let link = PageLink::of(oob);
        let Some(tid) = self.by_tx_id.get(&link.tx_id).copied() else {
            return;
        };
        let Some(t) = self.open.get_mut(&tid) else { return };
        if let Some(older) = t.entries.insert(oob.lpn, ppn) {
            self.live.remove(&older);
        }
        self.live.insert(ppn);
        t.programmed.insert(ppn, oob.erase_count);
        t.done_ns = t.done_ns.max(done_ns);
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, oob: &Oob) {
        if !self.live.remove(&old) {
            return;
        }
        self.live.insert(new);
        let link = PageLink::of(oob);
        if let Some(t) = self.by_tx_id.get(&link.tx_id).and_then(|tid| self.open.get_mut(tid)) {
            for p in t.entries.values_mut().filter(|p| **p == old) {
                *p = new;
            }
            // The copy's block count is not known here: the largest count
            // makes a later forced erase take the block whatever happened to it.
            t.programmed.insert(new, u32::MAX);
        }
    }

    fn checkpoint_durable(&mut self) {
        if self.open.values().any(|t| !t.programmed.is_empty()) {
            self.checkpoints_with_open_tx += 1;
        }
    }

    /// Every block: SCC has no mapping table, recovery scans the whole device.
    fn zone_blocks(&self) -> Vec<BlockId> {
        (0..self.geo.block_count()).collect()
    }

    fn wants_scanned_pages() -> bool {
        true
    }

    /// No mapping table on flash: checkpoints hold the block table only, and
    /// `recover_scanned` maps every logical page from the whole-device scan.
    fn persists_l2p() -> bool {
        false
    }

    fn recover_scanned(&mut self, _ckpt_seq: u64, pages: ScannedPages<'_>) -> Result<Vec<RecoveredUpdate>> {
        let r = resolve_scanned(pages)?;
        *self = SccHooks::new(&self.geo, self.canary);
        self.next_tx_id = r.max_tx_id.saturating_add(1).max(1);
        self.next_version = r.max_version + 1;
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
        Ok(r.mappings
            .into_iter()
            .map(|(lpn, (ppn, seq))| RecoveredUpdate { seq, lpn, ppn })
            .collect())
    }

    /// Nothing is applied as it is: every mapping comes from `recover_scanned`.
    fn roll_forward(&self, _oob: &Oob) -> bool {
        false
    }

    fn check(&self, l2p: &[u32], _nand: &Nand) -> std::result::Result<(), String> {
        for t in self.open.values() {
            for (&lpn, &ppn) in &t.entries {
                if l2p.get(lpn as usize) == Some(&ppn) {
                    return Err(format!("open transaction {}: its page of lpn {lpn} is already in the L2P", t.tx_id));
                }
            }
        }
        Ok(())
    }
}

/// The SCC device.
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

    fn open_tx(&self, tid: Tid) -> Result<&OpenTx> {
        self.ftl.hooks().open.get(&tid).ok_or(DeviceError::UnknownTransaction(tid))
    }

    fn check_page(&self, lpn: Lpn, data: &[u8]) -> Result<()> {
        if lpn >= self.ftl.logical_pages() {
            return Err(DeviceError::OutOfRange {
                lpn: lpn as u64,
                logical_pages: self.ftl.logical_pages(),
            });
        }
        let want = self.ftl.page_size() as usize;
        if !(data.len() == want || (data.is_empty() && self.ftl.nand().config().data_mode == txftl_nand::DataMode::MetaOnly)) {
            return Err(DeviceError::BufferSize { got: data.len(), want });
        }
        Ok(())
    }

    /// Refuses a write of `lpn` that another open transaction has written.
    fn check_conflict(&self, tid: Option<Tid>, lpn: Lpn) -> Result<()> {
        let conflict = self.ftl.hooks().open.iter().any(|(&t, o)| Some(t) != tid && o.lpns.contains(&lpn));
        if conflict {
            return Err(DeviceError::IsolationUnsupported {
                protocol: "scc",
                level: "serializable (a page written by two open transactions)",
            });
        }
        Ok(())
    }

    /// The SCC rule: erases every uncommitted transaction that wrote or linked
    /// to `lpn` before a newer version of it is written.
    fn erase_uncommitted(&mut self, lpn: Lpn) -> Result<()> {
        let txs: Vec<u32> = self
            .ftl
            .hooks()
            .claims
            .get(&lpn)
            .map(|s| s.iter().copied().collect())
            .unwrap_or_default();
        for tx in txs {
            let Some(d) = self.ftl.hooks_mut().remove_dead(tx) else { continue };
            if self.ftl.hooks().canary {
                continue; // the canary's bug: the uncommitted pages stay
            }
            let ppb = self.geo().pages_per_block;
            let mut blocks: BTreeSet<BlockId> = BTreeSet::new();
            for (&ppn, &ec) in &d.ppns {
                let b = self.geo().block_of(ppn);
                // Erased since the page was programmed: it is gone already.
                if self.ftl.erase_counts()[b as usize] <= ec {
                    blocks.insert(b);
                }
            }
            for b in blocks {
                self.ftl.force_erase(b)?;
                // Pages of other dead transactions in it are gone too.
                let first = self.geo().ppn(b, 0);
                let gone: Vec<Ppn> = self.ftl.hooks().dead_page.range(first..first + ppb).map(|(&p, _)| p).collect();
                for p in gone {
                    self.ftl.hooks_mut().dead_page_gone(p);
                }
            }
        }
        Ok(())
    }

    fn geo(&self) -> &Geometry {
        &self.ftl.hooks().geo
    }

    /// Programs the page `tid` has cached, linking to `next`; `last`: the
    /// commit page (its housekeeping waits until t's pages are mapped).
    fn program_cached(&mut self, tid: Tid, next: (Lpn, u64), last: bool) -> Result<()> {
        let Some(t) = self.ftl.hooks_mut().open.get_mut(&tid) else {
            return Ok(());
        };
        let tx_id = t.tx_id;
        let Some((lpn, version, data)) = t.cached.take() else {
            return Ok(());
        };
        let bytes = PageLink {
            tx_id,
            version,
            next_lpn: next.0,
            next_version: next.1,
        }
        .encode();
        if last {
            self.ftl.program_unmapped_deferred(lpn, &data, &bytes)?;
        } else {
            self.ftl.program_unmapped(lpn, &data, &bytes)?;
        }
        Ok(())
    }
}

impl Device for Scc {
    device_basics_over_ftl!();
    /// A transaction of one page: it links to itself.
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_page(lpn, data)?;
        self.check_conflict(None, lpn)?;
        let start = self.ftl.now();
        self.erase_uncommitted(lpn)?;
        let hooks = self.ftl.hooks_mut();
        let tx_id = hooks.next_tx_id;
        hooks.next_tx_id = tx_id
            .checked_add(1)
            .ok_or(DeviceError::WornOut("SCC transaction ids are used up".into()))?;
        let version = hooks.new_version();
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
    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }
    fn trim(&mut self, _lpn: Lpn) -> Result<u64> {
        Err(DeviceError::Unsupported {
            protocol: "scc",
            what: "trim (no mapping table to record it in)",
        })
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        s.protocol_records_with_open_tx += self.ftl.hooks().checkpoints_with_open_tx;
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.hooks_mut().checkpoints_with_open_tx = 0;
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        let hooks = self.ftl.hooks_mut();
        if hooks.open.contains_key(&tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        let tx_id = hooks.next_tx_id;
        hooks.next_tx_id = tx_id
            .checked_add(1)
            .ok_or(DeviceError::WornOut("SCC transaction ids are used up".into()))?;
        hooks.by_tx_id.insert(tx_id, tid);
        hooks.open.insert(
            tid,
            OpenTx {
                tx_id,
                ..OpenTx::default()
            },
        );
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.open_tx(tid)?;
        self.check_page(lpn, data)?;
        self.check_conflict(Some(tid), lpn)?;
        let start = self.ftl.now();
        self.erase_uncommitted(lpn)?;
        let version = self.ftl.hooks_mut().new_version();
        self.program_cached(tid, (lpn, version), false)?;
        let t = self.ftl.hooks_mut().open.get_mut(&tid).expect("checked above");
        t.cached = Some((lpn, version, data.to_vec()));
        t.lpns.insert(lpn);
        t.first.get_or_insert((lpn, version));
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let t = self.open_tx(tid)?;
        if let Some((l, _, data)) = &t.cached {
            if *l == lpn && buf.len() == data.len() {
                buf.copy_from_slice(data);
                self.ftl.counters_mut().host_reads += 1;
                return Ok(0);
            }
        }
        match t.entries.get(&lpn).copied() {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn commit(&mut self, tid: Tid) -> Result<u64> {
        let first = self.open_tx(tid)?.first;
        let start = self.ftl.now();
        if let Some(first) = first {
            self.program_cached(tid, first, true)?;
            let hooks = self.ftl.hooks_mut();
            let t = hooks.open.remove(&tid).expect("checked above");
            hooks.by_tx_id.remove(&t.tx_id);
            for p in t.entries.values() {
                hooks.live.remove(p);
            }
            self.ftl.wait_until(t.done_ns);
            for (lpn, ppn) in t.entries {
                self.ftl.map_page(lpn, ppn)?;
            }
            self.ftl.housekeeping()?;
        } else {
            let hooks = self.ftl.hooks_mut();
            if let Some(t) = hooks.open.remove(&tid) {
                hooks.by_tx_id.remove(&t.tx_id);
            }
        }
        self.ftl.counters_mut().commits += 1;
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.open_tx(tid)?;
        let hooks = self.ftl.hooks_mut();
        let t = hooks.open.remove(&tid).expect("checked above");
        hooks.by_tx_id.remove(&t.tx_id);
        for p in t.entries.values() {
            hooks.live.remove(p);
        }
        hooks.add_dead(
            t.tx_id,
            Dead {
                lpns: t.lpns,
                ppns: t.programmed,
            },
        );
        self.ftl.counters_mut().aborts += 1;
        Ok(0)
    }
}

any_device_over_ftl!(Scc);
