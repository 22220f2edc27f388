//! The Flag Commit device: the block and transactional commands over the
//! framework's FTL, the same for CFC and AFC but for their rule.

use super::format::{self, PageMeta, COMMIT_BIT};
use super::{FlagHooks, FlagRule};
use txftl_ftl::extensions::TxEnd;
use txftl_ftl::{Device, DeviceError, DeviceStats, Ftl, Lpn, Result, Tid, Writer};

/// A Flag Commit device (`crate::cfc::Cfc`, `crate::afc::Afc`).
#[derive(Clone)]
pub struct FlagDevice<R: FlagRule> {
    pub(crate) ftl: Ftl<FlagHooks<R>>,
    /// Transactions `write_end` committed on flash, waiting for their
    /// `commit` call (the only call they take).
    ended: std::collections::BTreeSet<Tid>,
}

impl<R: FlagRule> FlagDevice<R> {
    pub fn new(ftl: Ftl<FlagHooks<R>>) -> FlagDevice<R> {
        FlagDevice {
            ftl,
            ended: Default::default(),
        }
    }

    pub fn ftl(&self) -> &Ftl<FlagHooks<R>> {
        &self.ftl
    }

    /// The FTL, for a test that drives it directly (a chosen GC victim).
    pub fn ftl_mut(&mut self) -> &mut Ftl<FlagHooks<R>> {
        &mut self.ftl
    }

    /// Programs a page of open transaction `tid`, linking to its newest page;
    /// `end`: its last page (`write_end`).
    fn program_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8], end: bool) -> Result<u64> {
        self.ftl.check_page(lpn, data)?;
        self.ftl.hooks().txs.check_conflict(Some(tid), lpn)?;
        let start = self.ftl.now();
        let t = self.ftl.hooks().txs.open(tid)?;
        let (xid, first, link) = (t.xid, t.last.is_none(), t.last);
        // AFC: no later page before the FALSE first page is on flash. A
        // TRUE last page: not before every earlier page is (a flag never
        // reaches the flash before its transaction's pages).
        let wait = match (R::FIRST_PAGE_FIRST && !first, end) {
            (_, true) => Some(t.done_ns),
            (true, false) => t.first_done_ns,
            (false, false) => None,
        };
        if let Some(w) = wait {
            self.ftl.wait_until(w);
        }
        let version = self.ftl.hooks_mut().next_version()?;
        let meta = PageMeta {
            xid,
            version,
            link,
            flag: R::written_flag(first, end),
        };
        self.ftl.program_unmapped_flagged_by(Writer::Host, lpn, data, &meta.bytes())?;
        // `on_program` put the page in the transaction's table.
        debug_assert!(self.ftl.hooks().txs.open(tid).is_ok_and(|t| t.latest.contains_key(&lpn)));
        self.ftl.housekeeping()?;
        Ok(self.ftl.now() - start)
    }

    /// The commit's work on flash: once every page is done, the rule's
    /// flags (a spent page copied with its flag instead).
    fn flags_on_commit(&mut self, tid: Tid) -> Result<()> {
        let done_ns = self.ftl.hooks().txs.open(tid)?.done_ns;
        self.ftl.wait_until(done_ns);
        let h = self.ftl.hooks();
        let flags = R::commit_flags(h.txs.open(tid)?, h.mode, &|p| h.is_releasing(p));
        let mut done = self.ftl.now();
        for ppn in flags {
            let at = self.ftl.now();
            let out = self.ftl.program_flags_or_copy(ppn, format::clear(COMMIT_BIT), at)?;
            done = done.max(out.done_ns());
            self.ftl.hooks_mut().counters.commit_flag_programs += 1;
        }
        self.ftl.wait_until(done);
        Ok(())
    }

    /// `tid`, committed on flash, leaves the table: its pages into the L2P.
    fn map_committed(&mut self, tid: Tid) -> Result<()> {
        let hooks = self.ftl.hooks_mut();
        let t = hooks.txs.commit(tid).ok_or(DeviceError::UnknownTransaction(tid))?;
        hooks.counters.commits += 1;
        for (lpn, ppn) in t.latest {
            self.ftl.map_page(lpn, ppn)?;
        }
        self.ftl.housekeeping()?;
        // With an image synced at flushes, a commit that returns is on the
        // host's disk, as on the other transactional protocols.
        self.ftl.nand().flush_image()?;
        Ok(())
    }
}

impl<R: FlagRule> Device for FlagDevice<R> {
    device_basics_over_ftl!();

    /// A transaction of one page, committed as it is programmed.
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.check_page(lpn, data)?;
        self.ftl.hooks().txs.check_conflict(None, lpn)?;
        let hooks = self.ftl.hooks_mut();
        let meta = PageMeta {
            xid: hooks.txs.new_xid()?,
            version: hooks.next_version()?,
            link: None,
            flag: R::COMMITTED_FLAG,
        };
        self.ftl.write_page_flagged(lpn, data, &meta.bytes())
    }

    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }

    /// Refused: there is no mapping table to make a trim durable in.
    fn trim(&mut self, _lpn: Lpn) -> Result<u64> {
        Err(DeviceError::Unsupported {
            protocol: R::NAME,
            what: "trim (no mapping table to record it in)",
        })
    }

    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let h = self.ftl.hooks();
        let c = h.counters;
        s.protocol_records_with_open_tx += c.checkpoints_with_open_tx;
        s.protocol = txftl_ftl::ProtocolCounters::new(super::COUNTERS);
        s.protocol.add("fc_commit_flag_programs", c.commit_flag_programs);
        s.protocol.add("fc_end_writes", c.end_writes);
        s.protocol.add("fc_gc_flag_moves", c.gc_flag_moves);
        s.protocol.add("fc_gc_flags_folded", c.gc_flags_folded);
        s.protocol.add("fc_gc_open_copies", c.gc_open_copies);
        s.protocol.add("fc_recovered_commits", h.recovered_commits as u64);
        s.protocol.add("fc_recovered_uncommitted", h.recovered_uncommitted as u64);
        s
    }

    fn reset_stats(&mut self) {
        self.ftl.hooks_mut().counters = Default::default();
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if self.ended.contains(&tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        self.ftl.hooks_mut().txs.begin(tid)?;
        self.ftl.tx_begin(tid);
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.program_tx(tid, lpn, data, false)
    }

    /// A transaction sees its own writes, others the last committed copy.
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let t = self.ftl.hooks().txs.open(tid)?;
        match t.latest.get(&lpn).copied() {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    /// Once every page is done: the rule's flags (a spent page copied with
    /// its flag instead), then the pages into the L2P. A transaction
    /// `write_end` ended is committed already.
    fn commit(&mut self, tid: Tid) -> Result<u64> {
        let start = self.ftl.now();
        if !self.ended.remove(&tid) {
            self.flags_on_commit(tid)?;
        }
        self.map_committed(tid)?;
        let latency = self.ftl.now() - start;
        self.ftl.tx_commit(tid);
        Ok(latency)
    }

    /// Nothing is programmed: the transaction's pages are garbage, its
    /// flags FALSE (CFC) or its first page FALSE (AFC).
    fn abort(&mut self, tid: Tid) -> Result<u64> {
        if self.ended.contains(&tid) {
            return Err(DeviceError::CallOrder(format!(
                "abort of transaction {tid}: write_end committed it, it takes only commit"
            )));
        }
        self.ftl.hooks().txs.open(tid)?;
        self.ftl.hooks_mut().txs.abort(tid);
        self.ftl.tx_abort(tid);
        Ok(0)
    }

    fn tx_end_calls(&mut self) -> Option<&mut dyn TxEnd> {
        Some(self)
    }
}

impl<R: FlagRule> TxEnd for FlagDevice<R> {
    /// The transaction's last page, programmed with the flag commit would
    /// give it (CFC: TRUE, so a commit whose heads are all in it programs
    /// nothing more, §3.3's buffered last page) once every earlier page is done.
    /// Then the commit's work on flash follows at once (AFC's flip, CFC's
    /// heads GC made): the transaction is committed on flash when this
    /// returns (a recovery maps its pages), and its `commit` programs
    /// nothing, only maps them (other readers see them from then on).
    fn write_end(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        let start = self.ftl.now();
        self.program_tx(tid, lpn, data, true)?;
        self.ftl.hooks_mut().counters.end_writes += 1;
        self.flags_on_commit(tid)?;
        self.ftl.hooks_mut().txs.open_mut(tid)?.ended = true;
        self.ended.insert(tid);
        Ok(self.ftl.now() - start)
    }
}

/// A transaction `write_end` ended is committed on flash before its
/// `commit` maps it: a recovery maps its pages.
impl<R: FlagRule> crate::DurableParts for FlagDevice<R> {
    fn committed_page(&self, lpn: Lpn, mapped: Option<txftl_ftl::Ppn>) -> Option<txftl_ftl::Ppn> {
        self.ftl.hooks().txs.ended_page(lpn).or(mapped)
    }
}
