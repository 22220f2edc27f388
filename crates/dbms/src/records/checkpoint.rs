//! The record-level engine's fuzzy checkpoints (sec. 4.3): a checkpointer,
//! an event source of its own beside the clients, woken every
//! `checkpoint_log_pages` log pages.

use super::pages::PageState;
use super::RecordDbms;
use crate::error::Result;
use crate::wal::format::{lsn_seq, Lsn, Master, Op};
use txftl_ftl::Tid;

/// Where the fuzzy checkpoint stands ([`RecordDbms::checkpoint_step`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Checkpointer {
    Idle,
    Due,
    Forced {
        begin: Lsn,
        previous: Lsn,
        oldest_open: Option<Lsn>,
        noted: Vec<u32>,
        /// ARIES: the noted pages still dirty, as they were when first
        /// looked at: the log is forced up to their LSNs and these images
        /// are written, so a hot page updated while the force runs cannot
        /// hold the checkpoint back for ever. A page evicted since (written
        /// newer) leaves the list.
        snapshots: Option<Vec<(u32, PageState)>>,
    },
    Written {
        keep: u64,
    },
}

impl Checkpointer {
    /// Page `page` was written by its eviction: a checkpoint's older image
    /// of it must not follow.
    pub(super) fn evicted(&mut self, page: u32) {
        if let Checkpointer::Forced { snapshots: Some(s), .. } = self {
            s.retain(|(p, _)| *p != page);
        }
    }
}

impl RecordDbms<'_> {
    /// After records were appended: full log pages are written (the log
    /// buffer is full), and the checkpointer is woken when its turn came.
    pub(super) fn after_append(&mut self, t: u64) -> Result<()> {
        if !self.log.has_full() {
            return Ok(());
        }
        self.log.write_full(&mut self.io, t)?;
        self.pages_since_checkpoint += 1;
        if self.pages_since_checkpoint >= self.cfg.checkpoint_log_pages as u64 && self.checkpointer == Checkpointer::Idle {
            self.pages_since_checkpoint = 0;
            self.checkpointer = Checkpointer::Due;
            self.sim.schedule(self.clients.len(), t);
        }
        Ok(())
    }

    /// The checkpointer's next step at `t`: a fuzzy checkpoint (sec. 4.3)
    /// runs beside the clients, each step submitted at its event.
    ///
    /// 1. Due: the open transactions are logged with their first and last
    ///    records, then the checkpoint's end; the log is forced.
    /// 2. Forced: once the pages noted at the checkpoint before are on
    ///    flash and the pages noted now have their records on flash, the
    ///    master record is written and the noted pages still dirty are.
    /// 3. Written: once the master record is on flash, log pages before the
    ///    older of the two newest checkpoints (and before the oldest open
    ///    transaction's first record) may be overwritten.
    pub(super) fn checkpoint_step(&mut self, t: u64) -> Result<()> {
        let me = self.clients.len();
        match std::mem::replace(&mut self.checkpointer, Checkpointer::Idle) {
            Checkpointer::Idle => unreachable!("the checkpointer scheduled while idle"),
            Checkpointer::Due => {
                self.log.counts.checkpoints += 1;
                let open: Vec<(Tid, Lsn, Lsn)> = self
                    .clients
                    .iter()
                    .filter_map(|c| c.tx.as_ref())
                    .filter(|tx| tx.last_lsn != 0)
                    .map(|tx| (tx.tid, tx.first_lsn, tx.last_lsn))
                    .collect();
                let begin = self.log.next_lsn();
                for &(tid, first, last) in &open {
                    self.log.append(tid, 0, 0, Op::CheckpointTx, 0, 0, last, first)?;
                }
                let previous = self.log.master.checkpoint;
                self.log.append(0, 0, 0, Op::CheckpointEnd, 0, 0, previous, 0)?;
                let done = self.log.force(&mut self.io, t, false)?;
                let oldest_open = open.iter().map(|&(_, first, _)| first).min();
                self.checkpointer = Checkpointer::Forced {
                    begin,
                    previous,
                    oldest_open,
                    noted: self.pages.dirty_pages(),
                    snapshots: None,
                };
                self.sim.schedule(me, done);
            }
            Checkpointer::Forced {
                begin,
                previous,
                oldest_open,
                noted,
                snapshots,
            } => {
                let flag_ex = self.cfg.recovery.flag_ex();
                // Flag Commit's extended manager writes the pages as they are
                // (their pending records name the transactions open now), ARIES
                // the images it took.
                let snaps = match snapshots {
                    Some(s) => s,
                    None => noted
                        .iter()
                        .copied()
                        .filter(|&p| self.pages.pages.get(&p).is_some_and(|s| s.dirty))
                        .map(|p| (p, if flag_ex { PageState::default() } else { self.pages.get(p).clone() }))
                        .collect(),
                };
                let newest = snaps.iter().map(|(_, s)| s.lsn()).max().unwrap_or(0);
                // Flag Commit's extended manager has no WAL rule: a page
                // carries its pending records itself (its pageLSN is a USN).
                let wait = match self.log.durable_at(newest) {
                    _ if flag_ex => Some(self.noted_done).filter(|&w| w > t),
                    None => Some(self.log.force(&mut self.io, t, false)?),
                    Some(d) => Some(d.max(self.noted_done)).filter(|&w| w > t),
                };
                if let Some(w) = wait {
                    self.checkpointer = Checkpointer::Forced {
                        begin,
                        previous,
                        oldest_open,
                        noted,
                        snapshots: Some(snaps),
                    };
                    self.sim.schedule(me, w);
                    return Ok(());
                }
                let master = Master {
                    epoch: self.log.epoch,
                    checkpoint: begin,
                    previous,
                };
                let done = self.log.write_master(&mut self.io, t, master, false)?;
                let mut noted_done = t;
                for (page, snap) in snaps {
                    let Some(state) = self.pages.pages.get_mut(&page).filter(|s| s.dirty) else {
                        continue;
                    };
                    let image = if flag_ex { state.clone() } else { snap };
                    // Clean once the image written is the page as it is now.
                    if flag_ex || state.parts == image.parts {
                        state.dirty = false;
                    }
                    noted_done = noted_done.max(self.write_db_page(t, page, &image)?);
                }
                self.noted_done = noted_done;
                // Before a second checkpoint, restart reads the log from its start.
                let keep = if previous == 0 { 1 } else { lsn_seq(previous) };
                let keep = oldest_open.map_or(keep, |o| lsn_seq(o).min(keep));
                self.checkpointer = Checkpointer::Written { keep };
                self.sim.schedule(me, done);
            }
            Checkpointer::Written { keep } => self.log.truncate_before(keep),
        }
        Ok(())
    }
}
