//! The extended Flag Commit device: the block, transactional and
//! record-level (`RecordTx`) commands over the framework's FTL, the same
//! for CFC_ex and AFC_ex but for their rule.

use super::format::{clear_at, Entry, VersionMeta};
use super::versions::Decided;
use super::{ExHooks, ExRule};
use crate::flagcommit::format::COMMIT_BIT;
use std::collections::BTreeSet;
use txftl_ftl::extensions::RecordTx;
use txftl_ftl::{Device, DeviceError, DeviceStats, EntryStatus, Ftl, Lpn, RecordVersion, Result, Tid};

/// A CFC_ex or AFC_ex device (`crate::cfc_ex::CfcEx`, `crate::afc_ex::AfcEx`).
#[derive(Clone)]
pub struct ExDevice<R: ExRule> {
    pub(crate) ftl: Ftl<ExHooks<R>>,
}

impl<R: ExRule> ExDevice<R> {
    pub fn new(ftl: Ftl<ExHooks<R>>) -> ExDevice<R> {
        ExDevice { ftl }
    }

    pub fn ftl(&self) -> &Ftl<ExHooks<R>> {
        &self.ftl
    }

    /// The FTL, for a test that drives it directly (a chosen GC victim).
    pub fn ftl_mut(&mut self) -> &mut Ftl<ExHooks<R>> {
        &mut self.ftl
    }

    /// Writes a version of `lpn` with an entry for each of `pending` (open
    /// transactions, distinct), each linking to its transaction's newest.
    /// `contained`: a self-contained version (`RecordTx::write_contained`);
    /// `whole`: a whole-page one (`write_tx`).
    fn write_version(&mut self, lpn: Lpn, data: &[u8], pending: &[Tid], (contained, whole): (bool, bool)) -> Result<u64> {
        self.ftl.check_page(lpn, data)?;
        let start = self.ftl.now();
        let h = self.ftl.hooks();
        if pending.len() > h.max_c as usize {
            return Err(DeviceError::CallOrder(format!(
                "write_records of lpn {lpn} with {} pending records: the device takes at most max_c = {}",
                pending.len(),
                h.max_c
            )));
        }
        let distinct: BTreeSet<Tid> = pending.iter().copied().collect();
        if distinct.len() != pending.len() {
            return Err(DeviceError::CallOrder(format!(
                "write_records of lpn {lpn}: a transaction named twice in {pending:?}"
            )));
        }
        let mut entries = Vec::with_capacity(pending.len());
        let mut wait = 0;
        for &tid in pending {
            let t = h.txs.open(tid)?;
            let first = t.last.is_none();
            if R::FIRST_ENTRY_FIRST && !first {
                wait = wait.max(t.first_done_ns.unwrap_or(0));
            }
            entries.push(Entry {
                xid: t.xid,
                link: t.last,
                flag: R::written_flag(first),
            });
        }
        self.ftl.wait_until(wait);
        let version = self.ftl.hooks_mut().next_version()?;
        let meta = VersionMeta {
            version,
            entries,
            contained,
            whole,
        };
        self.ftl.write_page_flagged(lpn, data, &meta.bytes())?;
        let h = self.ftl.hooks_mut();
        if !pending.is_empty() {
            h.counters.record_writes += 1;
        }
        if pending.len() > 1 {
            h.counters.shared_writes += 1;
        }
        debug_assert_eq!(h.versions.newest(lpn).map(|v| v.version), Some(version));
        h.prune([lpn]);
        Ok(self.ftl.now() - start)
    }

    /// Programs the commit flags of `xid` (open or in doubt, `t`'s entries)
    /// once every entry is done; a spent page is copied with its flag.
    fn program_commit_flags(&mut self, tx: &super::txs::Tx) -> Result<()> {
        self.ftl.wait_until(tx.done_ns);
        let h = self.ftl.hooks();
        let pages = R::commit_flags(tx, &|p| h.is_releasing(p));
        let mut done = self.ftl.now();
        for ppn in pages {
            // The entry's index where the flag goes: its own, in its page
            // (a GC copy made since keeps entry order).
            let index = self
                .ftl
                .hooks()
                .txs
                .by_xid(tx.xid)
                .and_then(|t| t.entries.get(&ppn))
                .map(|e| e.index);
            let index = index.expect("a commit flags its own entries") as usize;
            let at = self.ftl.now();
            let out = self.ftl.program_flags_or_copy(ppn, clear_at(index, COMMIT_BIT), at)?;
            done = done.max(out.done_ns());
            self.ftl.hooks_mut().counters.commit_flag_programs += 1;
        }
        self.ftl.wait_until(done);
        Ok(())
    }

    /// Settles the last mount's transactions in doubt (aborted), and makes
    /// the verdicts that say so durable at once: from here on GC may reclaim
    /// their entries (a torn CFC_ex commit's FALSE heads), after which only
    /// the recorded verdict keeps them aborted.
    fn settle(&mut self) -> Result<()> {
        if self.ftl.hooks().unsettled() {
            self.ftl.hooks_mut().settle();
            self.ftl.checkpoint()?;
        }
        Ok(())
    }

    fn status(h: &ExHooks<R>, xid: u32) -> EntryStatus {
        match h.txs.by_xid(xid).map(|t| t.state) {
            None => EntryStatus::Committed,
            Some(super::txs::TxState::Open(tid)) => EntryStatus::Open(tid),
            Some(super::txs::TxState::Aborted) => EntryStatus::Aborted,
            Some(super::txs::TxState::InDoubt) => EntryStatus::InDoubt(xid),
        }
    }
}

impl<R: ExRule> Device for ExDevice<R> {
    fn info(&self) -> txftl_ftl::DeviceInfo {
        self.ftl.info()
    }

    fn now_ns(&self) -> u64 {
        self.ftl.now()
    }

    fn set_clock(&mut self, at_ns: u64) {
        self.ftl.set_clock(at_ns)
    }

    /// The newest version whose pending records are all committed: the last
    /// committed page, for a host writing whole pages.
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.ftl.check_lpn(lpn)?;
        let h = self.ftl.hooks();
        let ppn = h.versions.committed(lpn, &|x| h.decided(x)).map(|v| v.ppn);
        match ppn {
            Some(ppn) => self.ftl.read_physical(lpn, ppn, buf),
            None => {
                self.ftl.check_page(lpn, buf)?;
                buf.fill(0);
                Ok(0)
            }
        }
    }

    /// A version with no pending record: committed as it is programmed.
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.settle()?;
        self.ftl.hooks().txs.check_conflict(None, lpn)?;
        self.write_version(lpn, data, &[], (false, false))
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
        s.protocol.add("fcx_commit_flag_programs", c.commit_flag_programs);
        s.protocol.add("fcx_record_writes", c.record_writes);
        s.protocol.add("fcx_shared_writes", c.shared_writes);
        s.protocol.add("fcx_versions_read", c.versions_read);
        s.protocol.add("fcx_gc_flag_moves", c.gc_flag_moves);
        s.protocol.add("fcx_gc_versions_kept", c.gc_versions_kept);
        s.protocol.add("fcx_recovered_commits", h.recovered_commits as u64);
        s.protocol.add("fcx_recovered_in_doubt", h.recovered_in_doubt as u64);
        s.protocol.add("fcx_in_doubt_committed", c.in_doubt_committed);
        s
    }

    fn reset_stats(&mut self) {
        self.ftl.hooks_mut().counters = Default::default();
        self.ftl.reset_device_stats()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        self.settle()?;
        self.ftl.hooks_mut().txs.begin(tid)?;
        self.ftl.tx_begin(tid);
        Ok(0)
    }

    /// A version with one pending record, `tid`'s: the whole page.
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.ftl.hooks().txs.check_conflict(Some(tid), lpn)?;
        let latency = self.write_version(lpn, data, &[tid], (false, true))?;
        self.ftl.hooks_mut().txs.open_mut(tid)?.pages.insert(lpn);
        Ok(latency)
    }

    /// A transaction sees its own writes, others the last committed page.
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let h = self.ftl.hooks();
        let t = h.txs.open(tid)?;
        if t.pages.contains(&lpn) {
            let own = h.versions.newest(lpn).map(|v| v.ppn).expect("a page the transaction wrote");
            return self.ftl.read_physical(lpn, own, buf);
        }
        self.read(lpn, buf)
    }

    /// Once every entry is done: the rule's flags, then the transaction
    /// leaves the table (committed) and the versions it made garbage go.
    fn commit(&mut self, tid: Tid) -> Result<u64> {
        let start = self.ftl.now();
        let tx = self.ftl.hooks().txs.open(tid)?.clone();
        self.program_commit_flags(&tx)?;
        let h = self.ftl.hooks_mut();
        let t = h.txs.commit(tid).ok_or(DeviceError::UnknownTransaction(tid))?;
        h.counters.commits += 1;
        h.prune(t.entries.values().map(|e| e.lpn).collect::<BTreeSet<_>>());
        self.ftl.housekeeping()?;
        self.ftl.nand().flush_image()?;
        let latency = self.ftl.now() - start;
        self.ftl.tx_commit(tid);
        Ok(latency)
    }

    /// Nothing is programmed: the transaction's entries are FALSE (CFC_ex)
    /// or its first entry is (AFC_ex), and its XID is never used again.
    fn abort(&mut self, tid: Tid) -> Result<u64> {
        let lpns: BTreeSet<Lpn> = self.ftl.hooks().txs.open(tid)?.entries.values().map(|e| e.lpn).collect();
        let h = self.ftl.hooks_mut();
        h.txs.abort(tid);
        h.prune(lpns);
        self.ftl.tx_abort(tid);
        Ok(0)
    }

    fn record_tx_calls(&mut self) -> Option<&mut dyn RecordTx> {
        Some(self)
    }
}

impl<R: ExRule> RecordTx for ExDevice<R> {
    fn write_records(&mut self, lpn: Lpn, data: &[u8], pending: &[Tid]) -> Result<u64> {
        self.settle()?;
        self.write_version(lpn, data, pending, (false, false))
    }

    fn write_contained(&mut self, lpn: Lpn, data: &[u8], pending: &[Tid]) -> Result<u64> {
        self.settle()?;
        self.write_version(lpn, data, pending, (true, false))
    }

    fn read_versions(&mut self, lpn: Lpn, out: &mut Vec<RecordVersion>) -> Result<u64> {
        self.ftl.check_lpn(lpn)?;
        out.clear();
        let start = self.ftl.now();
        let h = self.ftl.hooks();
        let decided = |x: u32| h.decided(x);
        let wanted: Vec<(txftl_nand::Ppn, u32, Vec<EntryStatus>)> = h
            .versions
            .for_reading(lpn, &decided)
            .map(|v| (v.ppn, v.version, v.xids.iter().map(|&x| Self::status(h, x)).collect()))
            .collect();
        let page_size = self.ftl.info().page_size as usize;
        for (ppn, version, entries) in wanted {
            let mut data = vec![0u8; page_size];
            self.ftl.read_physical(lpn, ppn, &mut data)?;
            self.ftl.hooks_mut().counters.versions_read += 1;
            out.push(RecordVersion { version, data, entries });
        }
        debug_assert!(out.last().is_none_or(|v| v.self_sufficient()) || out.iter().all(|v| !v.self_sufficient()));
        Ok(self.ftl.now() - start)
    }

    fn xid_of(&self, tid: Tid) -> Result<u32> {
        Ok(self.ftl.hooks().txs.open(tid)?.xid)
    }

    fn in_doubt(&self) -> Vec<u32> {
        let h = self.ftl.hooks();
        if h.unsettled() {
            h.txs.in_doubt()
        } else {
            Vec::new()
        }
    }

    fn commit_in_doubt(&mut self, xid: u32) -> Result<u64> {
        let start = self.ftl.now();
        let h = self.ftl.hooks();
        let tx = match h.txs.by_xid(xid) {
            Some(t) if h.unsettled() && t.state == super::txs::TxState::InDoubt => t.clone(),
            _ => {
                return Err(DeviceError::CallOrder(format!(
                    "commit_in_doubt of XID {xid}: not a transaction the last mount left in doubt (or settled since)"
                )))
            }
        };
        self.program_commit_flags(&tx)?;
        let h = self.ftl.hooks_mut();
        let t = h.txs.commit_in_doubt(xid).expect("in doubt above");
        h.counters.in_doubt_committed += 1;
        h.prune(t.entries.values().map(|e| e.lpn).collect::<BTreeSet<_>>());
        debug_assert_eq!(h.decided(xid), Decided::Committed);
        self.ftl.housekeeping()?;
        self.ftl.nand().flush_image()?;
        Ok(self.ftl.now() - start)
    }
}

impl<R: ExRule> crate::DurableParts for ExDevice<R> {}
