//! The Möbius device: static transactions (`swrite`), and the transactional
//! calls as buffered static transactions or as dynamic ones (`dynamic-pct`;
//! see the module doc).

use super::format::{Inode, InodeKind, TxPage, VOID};
use super::{InFlight, MobiusHooks, ENTRY};
use std::collections::BTreeMap;
use txftl_ftl::extensions::{DynamicTx, StaticTx, SwriteAck};
use txftl_ftl::{Device, DeviceError, DeviceStats, Ftl, Lpn, Mapping, Ppn, ProtocolCounters, Result, Tid};

/// A failed program voids its transaction, which is written again under a
/// new id; this many times at most before the failure is the caller's.
pub(super) const REWRITES_MAX: u32 = 8;

/// The Möbius device.
#[derive(Clone)]
pub struct Mobius {
    pub(super) ftl: Ftl<MobiusHooks>,
    /// Transactions begun as static ones: their pages, buffered in device
    /// DRAM until commit.
    pub(super) open: BTreeMap<Tid, BTreeMap<Lpn, Vec<u8>>>,
    /// The transaction begun as a dynamic one, if any.
    pub(super) dynamic: Option<HostDynamic>,
    /// The open dynamic transaction's pages, kept in device DRAM until its
    /// REAR (written again if a program fails).
    pub(super) chain_data: Vec<(Lpn, Vec<u8>)>,
    /// Logical pages written outside transactions since their last inode
    /// (logged at the next flush, or when an inode's items fill).
    unlogged: std::collections::BTreeSet<Lpn>,
}

/// A host transaction run as the dynamic one: its last page is held back in
/// device DRAM, to be sent as the REAR at commit (the others go as HEAD and
/// BODY pages as the next arrives; Atomic-Write holds its last page back
/// the same way).
#[derive(Clone)]
pub(super) struct HostDynamic {
    pub tid: Tid,
    pub held: Option<(Lpn, Vec<u8>)>,
    /// A call failed and dropped its chain: only an abort is taken.
    pub failed: bool,
}

impl Mobius {
    pub fn new(ftl: Ftl<MobiusHooks>) -> Mobius {
        Mobius {
            ftl,
            open: BTreeMap::new(),
            dynamic: None,
            chain_data: Vec::new(),
            unlogged: std::collections::BTreeSet::new(),
        }
    }

    pub fn ftl(&self) -> &Ftl<MobiusHooks> {
        &self.ftl
    }

    /// Before a write other than a static transaction's: waits until every
    /// static transaction's pages are on flash (an A-SWRITE returns once its
    /// inode is; a power cut before its pages are done may still abort it:
    /// the paper's "false positive", §IV-E), so a write outside
    /// transactions, a trim or a dynamic transaction is never logged before
    /// a static one's data it may overwrite is done. Then `write_walked`.
    pub(super) fn settle(&mut self) -> Result<()> {
        let t = self.ftl.hooks().in_flight_done_ns();
        self.ftl.wait_until(t);
        self.write_walked()
    }

    /// The inode of a dynamic transaction the last recovery found committed
    /// by its chain alone, if no checkpoint persisted it yet: before
    /// anything logged after.
    pub(super) fn write_walked(&mut self) -> Result<()> {
        let walked = std::mem::take(&mut self.ftl.hooks_mut().walked);
        if !walked.is_empty() {
            // They carry the pending flags like any inode (the verified
            // transactions' after a mount, which must not wait for the
            // next one).
            self.append_parts(walked)?;
        }
        // More marks than one inode carries, queued by the mount: all are
        // written before anything new. A second cut before the rest would
        // find an aborted transaction unmarked, and drop the commits made
        // after the mount with it. Nothing is unlogged or in flight before
        // the first write after a mount: `log_pending` writes flags-only
        // inodes until none wait.
        if self.ftl.hooks().mount_marks {
            self.log_pending()?;
            self.ftl.hooks_mut().mount_marks = false;
        }
        Ok(())
    }

    pub(super) fn items_max(&self) -> u32 {
        self.ftl.hooks().set.items_max as u32
    }

    /// Pages a transaction, static or dynamic, holds at most: as many as the
    /// inodes one active ALA's room holds list (§IV-E's large transaction,
    /// its items in several inodes bound by the last: they must all fit
    /// between two checkpoints, which the ring's two kept active ALAs
    /// guarantee).
    pub(super) fn tx_pages_max(&self) -> u32 {
        let h = self.ftl.hooks();
        let room = super::active_ala_room(h.set.ala_blocks, h.geo.pages_per_block);
        room.min(u16::MAX as u32).saturating_mul(self.items_max())
    }

    /// Checkpoints (merges) until the ALA's next `pages` appends erase no
    /// inode recovery may read: at most twice (each makes the older of the
    /// two kept sets unneeded).
    pub(super) fn ala_room(&mut self, pages: u32) -> Result<()> {
        for _ in 0..2 {
            let entered = self.ftl.log_blocks_entered(0, pages);
            if !entered.iter().any(|&b| self.ftl.hooks().needed(b)) {
                return Ok(());
            }
            self.ftl.checkpoint()?;
            self.ftl.hooks_mut().counts.ring_merges += 1;
        }
        Ok(())
    }

    /// Appends inode `inode` to the ALA; keeps its block until the
    /// checkpoint after the next.
    pub(super) fn append_inode(&mut self, inode: &Inode) -> Result<()> {
        self.ala_room(1)?;
        let mut page = vec![0u8; self.ftl.page_size() as usize];
        inode.encode(&mut page);
        let (ppn, _) = self.ftl.append_log(0, &page)?;
        if !self.open.is_empty() {
            // Other transactions buffered, uncommitted: recovery must leave
            // them out (nothing of them is on flash).
            self.ftl.counters_mut().protocol_records_with_open_tx += 1;
        }
        let block = self.ftl.block_of(ppn);
        let h = self.ftl.hooks_mut();
        h.needed_cur.insert(block);
        h.active_inodes += 1;
        h.counts.inodes += 1;
        h.counts.flags += inode.flags.len() as u64;
        Ok(())
    }

    /// The commit flags the next inode carries: up to 8 of the transactions
    /// whose pages are all on flash, the oldest first (and void marks). A
    /// transaction in flight is flagged only once its pages and every
    /// earlier one's are done (a flag commits it without a verify, and
    /// commits are recovered in order: `recovery::decide`); if this inode is
    /// the last of its S_max window (recovery verifies unflagged
    /// transactions only among the newest S_max inodes), the inode waits for
    /// its pages: the S_max stall.
    pub(super) fn take_flags(&mut self) -> Vec<u32> {
        let index = self.ftl.hooks().active_inodes;
        let s_max = self.ftl.hooks().set.s_max as u32;
        let due = self
            .ftl
            .hooks()
            .in_flight
            .iter()
            .filter(|f| f.index + s_max <= index)
            .map(|f| f.done_ns)
            .max();
        if let Some(t) = due.filter(|&t| t > self.ftl.now()) {
            self.ftl.wait_until(t);
            self.ftl.hooks_mut().counts.smax_stalls += 1;
        }
        let now = self.ftl.now();
        let h = self.ftl.hooks_mut();
        while let Some(f) = h.in_flight.front().copied().filter(|f| f.done_ns <= now) {
            h.in_flight.pop_front();
            // One flag per transaction, at its inode's place.
            let earlier = h.pending_flags.insert(f.index, f.tx);
            assert!(earlier.is_none(), "two flags pending for inode {}: {earlier:?}, {}", f.index, f.tx);
        }
        let mut flags = Vec::new();
        while flags.len() < super::format::FLAGS_MAX {
            match h.pending_flags.pop_first() {
                Some((_, tx)) => flags.push(tx),
                None => break,
            }
        }
        flags
    }

    /// Logs what is not logged yet: the writes outside transactions since
    /// their last inode (their current places, GC's moves included), with
    /// the pending commit flags; or a flags-only inode if only flags wait.
    pub(super) fn log_pending(&mut self) -> Result<()> {
        let max = self.items_max() as usize;
        // Every static transaction's flag can be written now.
        let t = self.ftl.hooks().in_flight_done_ns();
        self.ftl.wait_until(t);
        if !self.unlogged.is_empty() {
            // The inode must not be on flash before the pages it names: they
            // may still be in flight on other dies.
            self.ftl.wait_idle();
        }
        loop {
            let lpns: Vec<Lpn> = self.unlogged.iter().copied().take(max).collect();
            let h = self.ftl.hooks();
            if lpns.is_empty() && h.pending_flags.is_empty() && h.in_flight.is_empty() {
                return Ok(());
            }
            let items: Vec<(Lpn, Ppn)> = lpns.iter().filter_map(|&l| self.ftl.mapping(l).map(|p| (l, p))).collect();
            let kind = if lpns.is_empty() { InodeKind::FlagsOnly } else { InodeKind::Normal };
            let inode = Inode {
                kind,
                tx: 0,
                host_tid: 0,
                parts: 0,
                s_max: self.ftl.hooks().set.s_max,
                flags: self.take_flags(),
                items,
            };
            self.append_inode(&inode)?;
            for l in &lpns {
                self.unlogged.remove(l);
                // Durable: a recovery maps it where this inode says.
                self.ftl.hooks_mut().undurable.remove(l);
            }
            let c = &mut self.ftl.hooks_mut().counts;
            match kind {
                InodeKind::FlagsOnly => c.flag_only_inodes += 1,
                _ => c.normal_inodes += 1,
            }
        }
    }

    /// The merge (§III-F): a checkpoint once the active ALA holds
    /// `active-ala` inodes.
    pub(super) fn merge_if_full(&mut self) -> Result<()> {
        if self.ftl.hooks().active_inodes >= self.ftl.hooks().set.active_max {
            self.ftl.checkpoint()?;
            self.ftl.hooks_mut().counts.merges += 1;
        }
        Ok(())
    }

    /// One static transaction: reserve its pages, write its inode, then its
    /// data where reserved, then its mappings into DRAM (a read of them is
    /// queued behind their programs on their dies: it sees the whole
    /// transaction). Returns its latency as `ack` says. An A-SWRITE's pages
    /// may still be in flight when the next static transaction begins: its
    /// inode and pages queue behind them (static transactions run
    /// concurrently; writes of other kinds wait, `settle`).
    /// `pages`: distinct logical pages.
    pub(super) fn static_tx(&mut self, host_tid: Tid, pages: &[(Lpn, &[u8])], ack: SwriteAck) -> Result<u64> {
        if pages.len() as u64 > self.tx_pages_max() as u64 {
            return Err(DeviceError::TableFull {
                capacity: self.tx_pages_max(),
            });
        }
        for &(lpn, data) in pages {
            self.ftl.check_lpn(lpn)?;
            self.ftl.check_data_len(data.len())?;
        }
        self.refuse_in_chain("a static transaction")?;
        let start = self.ftl.now();
        self.write_walked()?;
        self.merge_if_full()?;
        let mut rewrites = 0;
        let (ppns, inode_done, flight) = loop {
            match self.write_once(host_tid, pages)? {
                Some(done) => break done,
                None if rewrites < REWRITES_MAX => {
                    rewrites += 1;
                    self.ftl.hooks_mut().counts.retries += 1;
                }
                None => {
                    return Err(DeviceError::WornOut(format!(
                        "a static transaction's programs failed {REWRITES_MAX} times over"
                    )))
                }
            }
        };
        for (&(lpn, _), &ppn) in pages.iter().zip(&ppns) {
            self.ftl.map_page(lpn, ppn)?;
            // The transaction is newer than an unlogged write of the page
            // (or a trim), and its inode logs it.
            self.unlogged.remove(&lpn);
            self.ftl.hooks_mut().undurable.remove(&lpn);
        }
        let h = self.ftl.hooks_mut();
        // In flight in inode order: `take_flags` flags a prefix of them.
        debug_assert!(
            h.in_flight.back().is_none_or(|b| b.index < flight.index && b.tx < flight.tx),
            "{flight:?} after {:?}",
            h.in_flight.back()
        );
        h.in_flight.push_back(flight);
        let all_done = h.in_flight_done_ns();
        h.counts.in_flight_peak = h.counts.in_flight_peak.max(h.in_flight.len() as u64);
        self.ftl.tx_commit_whole();
        self.ftl.housekeeping()?;
        // S-SWRITE: durable when it returns, so once every transaction
        // before it is too (recovery keeps commits in order).
        let end = match ack {
            SwriteAck::AllPages => {
                self.ftl.wait_until(all_done);
                self.ftl.now()
            }
            SwriteAck::Record => inode_done,
        };
        Ok(end.saturating_sub(start))
    }

    /// Reserves, writes the inode and programs the data once: the pages'
    /// places, when the inode is done, and the transaction in flight.
    /// `None`: a program failed (its inode then fails the verify: the
    /// transaction is aborted, and written again by the caller under a new
    /// id).
    fn write_once(&mut self, host_tid: Tid, pages: &[(Lpn, &[u8])]) -> Result<Option<(Vec<Ppn>, u64, InFlight)>> {
        let tx = self.ftl.hooks().next_tx;
        if tx >= VOID {
            return Err(DeviceError::WornOut(
                "transaction ids exhausted: an inode flag keeps ids below 2^31".into(),
            ));
        }
        let ppns = self.ftl.reserve_host_pages(pages.len() as u32)?;
        self.ftl.hooks_mut().next_tx += 1;
        let items = pages.iter().zip(&ppns).map(|(&(lpn, _), &ppn)| (lpn, ppn)).collect();
        let s_max = self.ftl.hooks().set.s_max;
        let inodes = Inode::split(InodeKind::Static, tx, host_tid, items, self.items_max(), s_max);
        if let Err(e) = self.append_parts(inodes) {
            self.ftl.void_reserved();
            return Err(e);
        }
        let inode_done = self.ftl.now();
        let index = self.ftl.hooks().active_inodes - 1;
        self.ftl.hooks_mut().tx_done_ns = 0;
        for (&(lpn, data), &ppn) in pages.iter().zip(&ppns) {
            let tag = TxPage { tx, lpn }.encode();
            // Its pages not all written, the transaction is void: the
            // reservations left are given back (a later write must not
            // find them), and the next inode marks it void, so recovery does
            // not take it for an earlier transaction lost.
            let void = |me: &mut Mobius| {
                me.ftl.void_reserved();
                me.ftl.hooks_mut().pending_flags.insert(index, tx | VOID);
            };
            match self.ftl.program_reserved(ppn, lpn, data, &tag) {
                Ok(Some(_)) => {}
                Ok(None) => {
                    void(self);
                    self.ftl.housekeeping()?;
                    return Ok(None);
                }
                Err(e) => {
                    void(self);
                    return Err(e);
                }
            }
        }
        // Committed: its flag goes into an inode once its pages are done.
        let done_ns = self.ftl.hooks().tx_done_ns;
        Ok(Some((ppns, inode_done, InFlight { tx, index, done_ns })))
    }

    pub(super) fn open_tx(&mut self, tid: Tid) -> Result<&mut BTreeMap<Lpn, Vec<u8>>> {
        self.open.get_mut(&tid).ok_or(DeviceError::UnknownTransaction(tid))
    }
}

impl StaticTx for Mobius {
    /// A logical page written twice in `pages` keeps its last data.
    fn swrite(&mut self, tid: Tid, pages: &[(Lpn, &[u8])], ack: SwriteAck) -> Result<u64> {
        let mut last: BTreeMap<Lpn, &[u8]> = BTreeMap::new();
        for &(lpn, data) in pages {
            last.insert(lpn, data);
        }
        if last.is_empty() {
            return Ok(0);
        }
        let pages: Vec<(Lpn, &[u8])> = last.into_iter().collect();
        self.static_tx(tid, &pages, ack)
    }

    /// Waits until every static transaction issued is on flash, then reads.
    fn sread(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let start = self.ftl.now();
        let t = self.ftl.hooks().in_flight_done_ns();
        self.ftl.wait_until(t);
        self.ftl.read_page(lpn, buf)?;
        Ok(self.ftl.now() - start)
    }
}

impl Device for Mobius {
    device_basics_over_ftl!();
    /// An A-SWRITE returned at its inode: durable once its pages and every
    /// earlier transaction's are done (recovery keeps commits in order; a
    /// later inode flags it before S_max more push it out of the verified
    /// window).
    fn commit_durable_ns(&self) -> u64 {
        self.ftl.now().max(self.ftl.hooks().in_flight_done_ns())
    }
    /// As on `dftl`; its mapping is logged at the next flush, or once an
    /// inode's worth of them wait.
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.refuse_in_chain("a write")?;
        let start = self.ftl.now();
        self.settle()?;
        // Not durable until an inode logs it: its program enters the page
        // mapped before in `undurable` (`MobiusHooks::on_program`).
        self.ftl.hooks_mut().writing = Some((lpn, self.ftl.mapping(lpn)));
        let written = self.ftl.write_page(lpn, data);
        self.ftl.hooks_mut().writing = None;
        written?;
        self.unlogged.insert(lpn);
        if self.unlogged.len() as u32 >= self.items_max() {
            self.log_pending()?;
        }
        Ok(self.ftl.now() - start)
    }
    /// The writes outside transactions and the commit flags not logged yet
    /// go into an inode (recovery then verifies no page of a flagged
    /// transaction), then the FTL's flush.
    fn flush(&mut self) -> Result<u64> {
        let start = self.ftl.now();
        self.settle()?;
        self.log_pending()?;
        self.ftl.flush_all()?;
        Ok(self.ftl.now() - start)
    }
    /// Made durable by the checkpoint at the next flush (the framework's);
    /// an unlogged write of the page is superseded.
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.refuse_in_chain("a trim")?;
        let start = self.ftl.now();
        self.settle()?;
        let before = self.ftl.mapping(lpn);
        self.ftl.trim_page(lpn)?;
        self.unlogged.remove(&lpn);
        // Until the next checkpoint a recovery maps the page before (no
        // checkpoint falls inside `trim_page`: the Resident Area writes
        // nothing when it loads a table page).
        if before.is_some() {
            self.ftl.hooks_mut().undurable.entry(lpn).or_insert(before);
        }
        Ok(self.ftl.now() - start)
    }
    fn begin(&mut self, tid: Tid) -> Result<u64> {
        self.host_begin(tid)
    }
    /// A static transaction's page is buffered in device DRAM until its
    /// commit; a dynamic one's goes to flash as the next arrives.
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.host_write_tx(tid, lpn, data)
    }
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.host_read_tx(tid, lpn, buf)
    }
    /// One S-SWRITE of a static transaction's pages, or a dynamic one's
    /// REAR: durable when it returns.
    fn commit(&mut self, tid: Tid) -> Result<u64> {
        self.host_commit(tid)
    }
    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.host_abort(tid)
    }
    fn dynamic_tx_calls(&mut self) -> Option<&mut dyn DynamicTx> {
        Some(self)
    }
    fn static_tx_calls(&mut self) -> Option<&mut dyn StaticTx> {
        Some(self)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let c = self.ftl.hooks().counts;
        let mut p = ProtocolCounters::new(ENTRY.counters);
        p.add("mobius_inodes", c.inodes);
        p.add("mobius_flag_only_inodes", c.flag_only_inodes);
        p.add("mobius_normal_inodes", c.normal_inodes);
        p.add("mobius_flags", c.flags);
        p.add("mobius_merges", c.merges);
        p.add("mobius_ring_merges", c.ring_merges);
        p.add("mobius_rewrites", c.retries);
        p.add("mobius_verified_pages", c.verified_pages);
        p.add("mobius_aborted_found", c.aborted_found);
        p.add("mobius_dynamic_inodes", c.dynamic_inodes);
        p.add("mobius_part_inodes", c.part_inodes);
        p.add("mobius_head_records", c.head_records);
        p.add("mobius_chain_pages_read", c.chain_pages_read);
        p.add("mobius_chains_closed_found", c.chains_closed_found);
        p.add("mobius_smax_stalls", c.smax_stalls);
        p.add("mobius_in_flight_peak", c.in_flight_peak);
        let cache = self.ftl.mapping_table().cache_counts();
        p.add("cmt_misses", cache.misses);
        p.add("cmt_resident_evictions", cache.resident);
        s.protocol = p;
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        self.ftl.hooks_mut().counts = super::Counts::default();
        self.ftl.mapping_table_mut().reset_cache_counts();
    }
}

// A clean close checkpoints: nothing needs logging first.
any_device_over_ftl!(Mobius, ENTRY);

/// A write outside transactions is durable at the inode that logs it (the
/// next flush's, or once an inode's worth wait), a trim at the next
/// checkpoint (a transaction writing the page, or a checkpoint, makes
/// either durable): until then a recovery maps the page before, recorded in
/// `MobiusHooks::undurable`, not the L2P's.
impl crate::DurableParts for Mobius {
    fn committed_page(&self, lpn: Lpn, mapped: Option<Ppn>) -> Option<Ppn> {
        self.ftl.hooks().undurable.get(&lpn).copied().unwrap_or(mapped)
    }
}
