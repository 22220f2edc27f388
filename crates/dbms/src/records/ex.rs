//! Flag Commit's extended recovery manager in the record-level engine
//! (sec. 4, Algorithms 1 and 2), beside ARIES: what differs is here.
//!
//! - An update (Algorithm 1) takes one of the page's `max_c` update slots
//!   (a counting lock held to the end, `locks::Mode::Slots`: an update
//!   beyond them blocks, line 16), marks the record pending with the
//!   committed version beneath it, and puts a redo record into the log
//!   buffer, hashed on the transaction; a full buffer is forced.
//! - A dirty page written (evicted, or by a checkpoint) is a version per
//!   flash page naming the transactions with a pending record in it
//!   (`ex_pages`), and its records leave the log buffer: the page holds them.
//! - A commit (Algorithm 2) appends a commit record (naming the device's
//!   XID) and forces the log only while some update of the transaction
//!   has not reached flash in a page; then the device's commit flags its
//!   pending records on flash. Its records in the buffer pool stop being
//!   pending.
//! - An abort restores its records in the buffer pool to the versions
//!   beneath (kept there, no I/O), drops its log records, and the device's
//!   abort programs nothing. The paper discards the page or rereads the
//!   record instead (a read each).
//!
//! Redo records carry an update sequence number (USN, in the UndoNxtLN
//! field: redo-only records undo nothing) and a page image the highest USN
//! applied to it (its pageLSN field): restart redoes a committed update
//! only onto a page that lacks it, whether its record reached the log or
//! left the buffer with its page.

use super::ex_pages;
use super::pages::PageState;
use super::{RecordDbms, Undo};
use crate::client::State;
use crate::config::Recovery;
use crate::error::Result;
use crate::locks::{page_slots_key, Grant, Mode};
use crate::report::CommitRecord;
use crate::tpcc::RecordAccess;
use crate::wal::format::{Op, Pending};
use std::collections::BTreeMap;
use txftl_ftl::Tid;

/// A redo record waiting in the log buffer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Redo {
    page: u32,
    slot: u32,
    after: u32,
    usn: u64,
}

/// The log buffer, hashed on the transaction (sec. 4.1).
#[derive(Clone, Debug, Default)]
pub(super) struct LogBuffer {
    by_tid: BTreeMap<Tid, Vec<Redo>>,
    len: usize,
}

impl LogBuffer {
    fn push(&mut self, tid: Tid, r: Redo) {
        self.by_tid.entry(tid).or_default().push(r);
        self.len += 1;
    }

    /// An evicted page's records leave: the page holds them.
    fn drop_page(&mut self, page: u32) {
        for recs in self.by_tid.values_mut() {
            let before = recs.len();
            recs.retain(|r| r.page != page);
            self.len -= before - recs.len();
        }
        self.by_tid.retain(|_, r| !r.is_empty());
    }

    fn drop_tid(&mut self, tid: Tid) {
        self.len -= self.by_tid.remove(&tid).map_or(0, |r| r.len());
    }

    /// Every record, in the order they were made.
    fn drain(&mut self) -> Vec<(Tid, Redo)> {
        let mut all: Vec<(Tid, Redo)> = std::mem::take(&mut self.by_tid)
            .into_iter()
            .flat_map(|(t, recs)| recs.into_iter().map(move |r| (t, r)))
            .collect();
        all.sort_by_key(|(_, r)| r.usn);
        self.len = 0;
        all
    }
}

impl RecordDbms<'_> {
    /// Algorithm 1, line 2: `c` may update `page` only while at most
    /// `max_c` transactions do; else it blocks. Whether it may go on.
    pub(super) fn ex_update_slot(&mut self, c: usize, t: u64, page: u32) -> Result<bool> {
        let mode = Mode::Slots(self.cfg.max_c);
        if self.locks.request(c, page_slots_key(page), mode) == Grant::Blocked {
            self.clients[c].state = State::Blocked;
            self.on_block(c, t)?;
            return Ok(false);
        }
        Ok(true)
    }

    /// Algorithm 1, lines 11-14: the redo record buffered, the record made
    /// pending on its resident page.
    pub(super) fn ex_apply(&mut self, c: usize, t: u64, a: RecordAccess) -> Result<()> {
        let tid = self.clients[c].tx().tid;
        if !self.clients[c].tx().device_begun {
            self.io.begin(t, tid)?;
            self.clients[c].tx_mut().device_begun = true;
        }
        self.usn += 1;
        let usn = self.usn;
        let state = self.pages.get_mut(a.page);
        let before = state.version(a.slot);
        let n = state.parts.len() as u32;
        let p = *state.parts[(a.slot % n) as usize]
            .pending
            .entry(a.slot)
            .or_insert(Pending { owner: tid, under: before });
        assert_eq!(p.owner, tid, "record ({}, {}) pending for two transactions", a.page, a.slot);
        state.set(a.slot, tid, usn);
        self.uncommitted.insert((a.page, a.slot), tid);
        let tx = self.clients[c].tx_mut();
        tx.undo.push(Undo {
            page: a.page,
            slot: a.slot,
            before,
            lsn: usn,
        });
        tx.unwritten.insert(a.page);
        self.logbuf.push(
            tid,
            Redo {
                page: a.page,
                slot: a.slot,
                after: tid,
                usn,
            },
        );
        if self.logbuf.len >= self.log.per_page() {
            self.ex_force(t)?;
        }
        Ok(())
    }

    /// The log buffer's records appended to the log, in the order made.
    fn append_buffered(&mut self) -> Result<()> {
        for (tid, r) in self.logbuf.drain() {
            self.log.append(tid, r.page, r.slot, Op::Update, 0, r.after, 0, r.usn)?;
        }
        Ok(())
    }

    /// The log buffer's records appended to the log and forced; when on flash.
    fn ex_force(&mut self, t: u64) -> Result<u64> {
        self.append_buffered()?;
        self.after_append(t)?;
        self.log.force(&mut self.io, t, false)
    }

    /// Writes dirty page `page`: its flash pages as versions with their
    /// pending records; its records leave the log buffer. The completion.
    pub(super) fn ex_write_page(&mut self, t: u64, page: u32, state: &PageState) -> Result<u64> {
        let shadow = (!self.io.full_data()).then_some(&mut self.shadow);
        let done = ex_pages::write_page(&mut self.io, t, page, state, shadow)?;
        self.logbuf.drop_page(page);
        for tx in self.clients.iter_mut().filter_map(|c| c.tx.as_mut()) {
            tx.unwritten.remove(&page);
        }
        Ok(done)
    }

    /// Algorithm 2's commit: a commit record forced while an update is only
    /// in the buffer pool, and once it is on flash ([`State::Committing`]),
    /// the device's commit flags the pending records on flash.
    pub(super) fn ex_commit(&mut self, c: usize, t: u64) -> Result<()> {
        let tx = self.clients[c].tx();
        let (tid, begun) = (tx.tid, tx.device_begun);
        if !begun {
            self.clients[c].state = State::Ending {
                commit: true,
                restart: false,
                since_ns: t,
            };
            self.sim.schedule(c, t);
            return Ok(());
        }
        let rec = CommitRecord {
            tid,
            pages: Vec::new(),
            records: tx.undo.iter().map(|u| (u.page, u.slot)).collect(),
        };
        if self.cfg.record_commits {
            self.commits.in_flight.push(rec);
        }
        let buffered = !tx.unwritten.is_empty() && self.cfg.recovery != Recovery::FlagExCanary;
        if !buffered {
            return self.ex_commit_flags(c, t, t);
        }
        self.log.counts.commit_records += 1;
        let xid = self.io.xid_of(tid)?;
        self.append_buffered()?;
        self.log.append(tid, 0, 0, Op::Commit, 0, xid, 0, 0)?;
        self.after_append(t)?;
        let done = self.log.force(&mut self.io, t, false)?;
        self.clients[c].state = State::Committing { since_ns: t };
        self.sim.schedule(c, done);
        Ok(())
    }

    /// The device's commit of `c`'s transaction at `t` (its commit record,
    /// if it needed one, is on flash); its records in the buffer pool are
    /// committed content from now on.
    pub(super) fn ex_commit_flags(&mut self, c: usize, t: u64, since_ns: u64) -> Result<()> {
        let tid = self.clients[c].tx().tid;
        let done = self.io.commit(t, tid)?;
        self.commits.acknowledge(tid);
        for u in &self.clients[c].tx().undo {
            if let Some(state) = self.pages.pages.get_mut(&u.page) {
                let n = state.parts.len() as u32;
                let part = &mut state.parts[(u.slot % n) as usize];
                if part.pending.get(&u.slot).is_some_and(|p| p.owner == tid) {
                    part.pending.remove(&u.slot);
                }
            }
        }
        self.clients[c].tx_mut().unwritten.clear();
        self.clients[c].state = State::Ending {
            commit: true,
            restart: false,
            since_ns,
        };
        self.sim.schedule(c, done);
        Ok(())
    }

    /// Algorithm 2's abort: the records restored in the buffer pool (the
    /// versions beneath), the log records dropped, the device's abort.
    pub(super) fn ex_abort(&mut self, c: usize, t: u64, restart: bool) -> Result<()> {
        let tx = self.clients[c].tx_mut();
        let (tid, begun) = (tx.tid, tx.device_begun);
        let undo = std::mem::take(&mut tx.undo);
        tx.unwritten.clear();
        tx.device_begun = false;
        for u in undo.iter().rev() {
            self.uncommitted.remove(&(u.page, u.slot));
            let Some(state) = self.pages.pages.get_mut(&u.page) else { continue };
            let n = state.parts.len() as u32;
            let part = &mut state.parts[(u.slot % n) as usize];
            if let Some(p) = part.pending.get(&u.slot).copied().filter(|p| p.owner == tid) {
                part.pending.remove(&u.slot);
                if p.under == 0 {
                    part.records.remove(&u.slot);
                } else {
                    part.records.insert(u.slot, p.under);
                }
                state.dirty = true;
            }
        }
        self.logbuf.drop_tid(tid);
        if begun {
            self.io.abort(t, tid)?;
        }
        self.clients[c].state = State::Ending {
            commit: false,
            restart,
            since_ns: t,
        };
        self.end(c, t, false, restart, t)
    }
}
