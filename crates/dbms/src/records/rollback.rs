//! The record-level engine's rollback (ARIES): the updates undone newest
//! first on their pages, each logged as a compensation record.

use super::RecordDbms;
use crate::client::State;
use crate::error::Result;
use crate::wal::format::{lsn_seq, Op};

impl RecordDbms<'_> {
    /// One step of `c`'s rollback: the newest update not yet undone is
    /// undone on its page (a miss first if the page left the buffer; a read
    /// of its log page if its record left the log buffer) and logged as a
    /// compensation record; none left, an end record and the rollback ends.
    pub(super) fn rollback_step(&mut self, c: usize, t: u64) -> Result<()> {
        let restart = match self.clients[c].state {
            State::Aborting { restart } => restart,
            s => unreachable!("rollback step in state {s:?}"),
        };
        if self.cfg.recovery.flag_ex() {
            return self.ex_abort(c, t, restart);
        }
        let Some(&u) = self.clients[c].tx().undo.last() else {
            let tx = self.clients[c].tx();
            if tx.last_lsn != 0 {
                let (tid, prev) = (tx.tid, tx.last_lsn);
                self.log.append(tid, 0, 0, Op::End, 0, 0, prev, 0)?;
                let tx = self.clients[c].tx_mut();
                (tx.first_lsn, tx.last_lsn) = (0, 0);
                self.after_append(t)?;
            }
            self.clients[c].state = State::Ending {
                commit: false,
                restart,
                since_ns: t,
            };
            return self.end(c, t, false, restart, t);
        };
        let seq = lsn_seq(u.lsn);
        if !self.log.in_memory(u.lsn) && self.clients[c].tx_mut().log_pages_read.insert(seq) {
            let mut buf = vec![0u8; self.io.page_size() as usize];
            let lpn = self.log.lpn_of(seq);
            let done = self.io.read_raw(t, lpn, &mut buf)?;
            self.log.counts.page_reads += 1;
            if self.io.full_data() {
                let found = crate::wal::format::decode_log_page(&buf)
                    .and_then(|(s, _, recs)| (s == seq).then_some(recs))
                    .and_then(|recs| recs.into_iter().find(|r| r.lsn == u.lsn));
                assert!(
                    found.is_some_and(|r| r.before == u.before && r.page == u.page && r.slot == u.slot),
                    "the undo record {} read back is not the one logged",
                    u.lsn
                );
            }
            self.sim.schedule(c, done);
            return Ok(());
        }
        if !self.page_ready(c, t, u.page, Some(restart))? {
            return Ok(());
        }
        let tx = self.clients[c].tx_mut();
        tx.undo.pop();
        let (tid, prev) = (tx.tid, tx.last_lsn);
        let undo_next = tx.undo.last().map_or(0, |n| n.lsn);
        let lsn = self
            .log
            .append(tid, u.page, u.slot, Op::Compensation, 0, u.before, prev, undo_next)?;
        self.clients[c].tx_mut().last_lsn = lsn;
        self.pages.get_mut(u.page).set(u.slot, u.before, lsn);
        self.uncommitted.remove(&(u.page, u.slot));
        self.after_append(t)?;
        self.sim.schedule(c, t);
        Ok(())
    }
}
