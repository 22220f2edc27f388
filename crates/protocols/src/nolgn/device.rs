//! The NoLgn device: the host's calls on the framework (the module doc in
//! `mod.rs` says what each does).

use super::entry::ENTRY;
use super::format::{PageTag, NO_PAGE, TX_ID_MAX};
use super::NHooks;
use txftl_ftl::extensions::TxEnd;
use txftl_ftl::{Device, DeviceError, DeviceInfo, DeviceStats, Ftl, Lpn, ProtocolCounters, Result, Tid};

#[derive(Clone)]
pub struct NoLgn {
    ftl: Ftl<NHooks>,
}

impl NoLgn {
    pub fn new(ftl: Ftl<NHooks>) -> NoLgn {
        NoLgn { ftl }
    }
    pub fn ftl(&self) -> &Ftl<NHooks> {
        &self.ftl
    }

    fn open_tx(&self, tid: Tid) -> Result<&super::p2p::OpenTx> {
        self.ftl.hooks().p2p.get(tid).ok_or(DeviceError::UnknownTransaction(tid))
    }

    /// Refuses a write of `lpn` another open transaction wrote (`tid`: the
    /// writer's; None for a write outside transactions, which any open
    /// transaction's page refuses).
    fn check_conflict(&self, tid: Option<Tid>, lpn: Lpn) -> Result<()> {
        match self.ftl.hooks().p2p.owner(lpn) {
            Some(owner) if Some(owner) != tid => Err(DeviceError::IsolationUnsupported {
                protocol: ENTRY.name,
                level: "serializable (a page written by two open transactions)",
            }),
            _ => Ok(()),
        }
    }

    /// `tid` is open, has not ended, and may write `lpn` (a full P2P table
    /// refuses a write that needs a new entry).
    fn check_tx_write(&self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<()> {
        let t = self.open_tx(tid)?;
        if t.ended {
            return Err(DeviceError::CallOrder(format!(
                "transaction {tid} wrote its end-flagged page: only its commit may follow"
            )));
        }
        self.ftl.check_page(lpn, data)?;
        self.check_conflict(Some(tid), lpn)?;
        let p2p = &self.ftl.hooks().p2p;
        if p2p.needs_entry(tid, lpn) && p2p.entries() >= p2p.capacity {
            return Err(DeviceError::TableFull { capacity: p2p.capacity });
        }
        Ok(())
    }

    /// Takes `tid`'s P2P entry for `lpn` (pinning the L2P's page as its old
    /// version) if it has none yet.
    fn take_entry(&mut self, tid: Tid, lpn: Lpn) {
        let old = self.ftl.mapping(lpn).unwrap_or(NO_PAGE);
        self.ftl.hooks_mut().p2p.written(tid, lpn, old);
    }

    /// Programs `lpn` for `tid` with its tag; with `end`, once every earlier
    /// page of `tid` is done on its die.
    fn program(&mut self, tid: Tid, lpn: Lpn, data: &[u8], end: bool) -> Result<()> {
        let t = self.open_tx(tid)?;
        let tag = PageTag {
            tx_id: t.tx_id,
            end,
            old_copy: false,
            old_ppn: t.entries.get(&lpn).map_or(NO_PAGE, |e| e.old),
        };
        if !end {
            self.ftl.write_page_with(lpn, data, &tag.encode())?;
            return Ok(());
        }
        let done = t.done_ns;
        self.ftl.wait_until(done);
        // No checkpoint may come between the end-flagged page and the
        // transaction's end in the table: it would record the transaction
        // open, and recovery, finding the flag older than the checkpoint,
        // would roll it back. The caller ends it, then calls `housekeeping`.
        let (ppn, _) = self.ftl.program_unmapped_deferred(lpn, data, &tag.encode())?;
        self.ftl.map_page(lpn, ppn)
    }

    /// The housekeeping deferred past an end-flagged page (a checkpoint, wear
    /// leveling). The transaction is committed on flash by then: a failure
    /// other than a power loss is left to the next operation, which meets it
    /// again, rather than reported as the transaction's (the host would take
    /// it for not committed, and abort a committed transaction).
    fn housekeeping_after_end(&mut self) -> Result<()> {
        match self.ftl.housekeeping() {
            Err(e @ (DeviceError::PowerLoss | DeviceError::Failed)) => Err(e),
            _ => Ok(()),
        }
    }

    /// Rewrites a programmed page of `tid` with the end flag: a commit with
    /// no page held back (a write that failed took it after programming the
    /// one before) must still leave its flag on flash. Returns whether one was.
    fn rewrite_with_end(&mut self, tid: Tid) -> Result<bool> {
        let Some(lpn) = self.open_tx(tid)?.entries.iter().rev().find(|(_, e)| e.new != NO_PAGE).map(|(&l, _)| l) else {
            return Ok(false);
        };
        // The whole page, in either data mode: a metadata-only array keeps
        // the data of a page written with it (the host's), and reads zeros
        // for one written without.
        let mut data = vec![0u8; self.ftl.page_size() as usize];
        self.ftl.read_page(lpn, &mut data)?;
        self.program(tid, lpn, &data, true)?;
        Ok(true)
    }

    /// Programs the page `tid` holds back, if any (with `end`, the caller
    /// ends `tid` and calls `housekeeping`, see `program`).
    fn program_held(&mut self, tid: Tid, end: bool) -> Result<bool> {
        // Taken only once programmed: a write that fails (no space) leaves
        // it held, so a later commit does not go without it.
        let Some((lpn, data)) = self.ftl.hooks_mut().p2p.get_mut(tid).and_then(|t| t.held.take()) else {
            return Ok(false);
        };
        if let Err(e) = self.program(tid, lpn, &data, end) {
            if let Some(t) = self.ftl.hooks_mut().p2p.get_mut(tid) {
                t.held = Some((lpn, data));
            }
            return Err(e);
        }
        Ok(true)
    }

    /// Waits until `tid`'s pages are done, then closes it.
    fn finish_commit(&mut self, tid: Tid) -> Result<()> {
        let done = self.open_tx(tid)?.done_ns;
        self.ftl.wait_until(done);
        let t = self.ftl.hooks_mut().p2p.close(tid);
        // The state machine: the end-flagged page was the last program;
        // nothing is held back, every page it wrote is on flash.
        let t = t.expect("checked open above");
        assert!(t.held.is_none(), "commit of transaction {tid}: a page is still held back");
        debug_assert!(
            t.entries.values().all(|e| e.new != NO_PAGE),
            "commit of transaction {tid}: a page it wrote was never programmed"
        );
        self.ftl.tx_commit(tid);
        self.housekeeping_after_end()?;
        // With an image synced at flushes, a commit that returns is on the host's disk.
        self.ftl.nand().flush_image()?;
        Ok(())
    }
}

impl Device for NoLgn {
    fn info(&self) -> DeviceInfo {
        self.ftl.info()
    }
    fn now_ns(&self) -> u64 {
        self.ftl.now()
    }
    fn set_clock(&mut self, at_ns: u64) {
        self.ftl.set_clock(at_ns)
    }

    /// A page an open transaction wrote reads as its old version.
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        match self.ftl.hooks().p2p.old_of(lpn) {
            Some(NO_PAGE) => {
                self.ftl.check_page(lpn, buf)?;
                self.ftl.counters_mut().host_reads += 1;
                buf.fill(0);
                Ok(0)
            }
            Some(old) => self.ftl.read_physical(lpn, old, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_conflict(None, lpn)?;
        self.ftl.write_page_with(lpn, data, &PageTag::PLAIN.encode())
    }
    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.check_conflict(None, lpn)?;
        self.ftl.trim_page(lpn)
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let h = self.ftl.hooks();
        let c = h.counts;
        s.protocol_records_with_open_tx += c.sections_with_open_tx;
        let mut p = ProtocolCounters::new(ENTRY.counters);
        p.add("nolgn_commit_programs", c.commit_programs);
        p.add("nolgn_end_writes", c.end_writes);
        p.add("nolgn_p2p_peak", h.p2p.entries_peak as u64);
        p.add("nolgn_locked_blocks_peak", h.p2p.locked_peak as u64);
        p.add("nolgn_rollback_pages", c.rollback_pages);
        p.add("nolgn_gc_open_copies", c.gc_open_copies);
        p.add("nolgn_old_pages_moved", c.old_pages_moved);
        p.add("nolgn_recovered_commits", c.recovered_commits);
        p.add("nolgn_recovered_rollbacks", c.recovered_rollbacks);
        p.add("nolgn_scan_unended", c.scan_unended);
        s.protocol = p;
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        let h = self.ftl.hooks_mut();
        h.counts = super::Counts::default();
        h.p2p.entries_peak = h.p2p.entries();
        h.p2p.locked_peak = h.p2p.locks.locked();
    }

    /// The host's id must not name an open transaction; the device gives the
    /// transaction an id of its own that no page on flash carries yet.
    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        let h = self.ftl.hooks_mut();
        if h.p2p.get(tid).is_some() {
            return Err(DeviceError::TransactionExists(tid));
        }
        let id = h.next_tx_id;
        if id > TX_ID_MAX {
            return Err(DeviceError::WornOut("NoLgn transaction ids are used up".into()));
        }
        h.next_tx_id = id + 1;
        h.p2p.begin(tid, id);
        self.ftl.tx_begin(tid);
        Ok(0)
    }

    /// Programs the page `tid` held back (without the flag) and holds this one.
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_tx_write(tid, lpn, data)?;
        let start = self.ftl.now();
        self.program_held(tid, false)?;
        self.take_entry(tid, lpn);
        if let Some(t) = self.ftl.hooks_mut().p2p.get_mut(tid) {
            t.held = Some((lpn, data.to_vec()));
        }
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let t = self.open_tx(tid)?;
        if let Some((held, data)) = &t.held {
            if *held == lpn && buf.len() == data.len() {
                buf.copy_from_slice(data);
                self.ftl.counters_mut().host_reads += 1;
                return Ok(0);
            }
        }
        if self.ftl.hooks().p2p.owner(lpn) == Some(tid) {
            // Its own page: what the L2P names.
            return self.ftl.read_page(lpn, buf);
        }
        self.read(lpn, buf)
    }

    /// Programs nothing after `write_end`; otherwise the held-back page,
    /// with the end flag.
    fn commit(&mut self, tid: Tid) -> Result<u64> {
        let t = self.open_tx(tid)?;
        let ended = t.ended;
        let start = self.ftl.now();
        if !ended && (self.program_held(tid, true)? || self.rewrite_with_end(tid)?) {
            self.ftl.hooks_mut().counts.commit_programs += 1;
        }
        self.finish_commit(tid)?;
        Ok(self.ftl.now() - start)
    }

    /// Each page back to its old version; nothing programmed.
    fn abort(&mut self, tid: Tid) -> Result<u64> {
        if self.open_tx(tid)?.ended {
            return Err(DeviceError::CallOrder(format!(
                "transaction {tid} wrote its end-flagged page: it is committed on flash, and cannot abort"
            )));
        }
        let t = self.ftl.hooks_mut().p2p.close(tid).ok_or(DeviceError::UnknownTransaction(tid))?;
        let mut rolled = 0;
        for (&lpn, e) in &t.entries {
            if e.new == NO_PAGE {
                continue; // held back, never programmed: the L2P still names the old
            }
            rolled += 1;
            debug_assert_eq!(
                self.ftl.mapping(lpn),
                Some(e.new),
                "abort of transaction {tid}: lpn {lpn} maps its new page until the rollback"
            );
            if e.old == NO_PAGE {
                self.ftl.unmap_page(lpn)?;
            } else {
                self.ftl.map_page(lpn, e.old)?;
            }
        }
        self.ftl.hooks_mut().counts.rollback_pages += rolled;
        self.ftl.tx_abort(tid);
        Ok(0)
    }

    fn tx_end_calls(&mut self) -> Option<&mut dyn TxEnd> {
        Some(self)
    }
}

impl TxEnd for NoLgn {
    /// Programs the held-back page, then this one with the end flag.
    fn write_end(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_tx_write(tid, lpn, data)?;
        let start = self.ftl.now();
        self.program_held(tid, false)?;
        self.take_entry(tid, lpn);
        self.program(tid, lpn, data, true)?;
        let h = self.ftl.hooks_mut();
        let done = h.p2p.get(tid).map_or(0, |t| t.done_ns);
        if let Some(t) = h.p2p.get_mut(tid) {
            t.ended = true;
        }
        h.counts.end_writes += 1;
        // The flagged page is done before a checkpoint may record the
        // transaction ended.
        self.ftl.wait_until(done);
        self.housekeeping_after_end()?;
        Ok(self.ftl.now() - start)
    }
}

any_device_over_ftl!(NoLgn, ENTRY);

/// An open transaction's page is in the L2P from its write on: its old
/// version (none: unmapped) is what a recovery maps.
impl crate::DurableParts for NoLgn {
    fn committed_page(&self, lpn: Lpn, mapped: Option<txftl_ftl::Ppn>) -> Option<txftl_ftl::Ppn> {
        let p2p = &self.ftl.hooks().p2p;
        // A transaction whose end-flagged page is programmed is committed on
        // flash (recovery finds its end flag) before its `commit` returns.
        if p2p.owner(lpn).and_then(|t| p2p.get(t)).is_some_and(|t| t.ended) {
            return mapped;
        }
        match p2p.old_of(lpn) {
            Some(NO_PAGE) => None,
            Some(old) => Some(old),
            None => mapped,
        }
    }
}
