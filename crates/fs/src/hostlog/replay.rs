//! The file system's side of the host log: appending each change as it
//! returns, restarting the log when nothing is pending, the writeback, and
//! the replay at attach (the module above says why and how).

use super::{HostLog, HostLogStats, Record};
use crate::{Fs, FsError, Result};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use txftl_ftl::Tid;

impl Fs {
    /// Attaches the host log at `path` (see [`crate::host_log_path`]): first
    /// replays what it holds (a process using this file system died with
    /// changes the device may not have), makes the result durable, then
    /// starts the log empty and logs every change from now on. A log that
    /// does not belong to this file system (a change to a file it does not
    /// have, and no later delete explains it) is refused, and left as it is.
    pub fn attach_host_log(&mut self, path: &Path) -> Result<HostLogStats> {
        self.attach_host_log_with(path, super::WRITEBACK_BYTES)
    }

    /// [`Fs::attach_host_log`], writing everything back each time the log
    /// grows by `writeback_bytes`.
    pub fn attach_host_log_with(&mut self, path: &Path, writeback_bytes: u64) -> Result<HostLogStats> {
        let records = HostLog::read(path)?;
        let replayed = self.replay(&records)?;
        self.sync()?;
        let mut log = HostLog::create(path, writeback_bytes)?;
        log.stats = HostLogStats {
            found: records.len() as u64,
            ..replayed
        };
        let stats = log.stats;
        self.hostlog = Some(log);
        Ok(stats)
    }

    /// The host log's counters, if one is attached.
    pub fn host_log_stats(&self) -> Option<HostLogStats> {
        self.hostlog.as_ref().map(|h| h.stats)
    }

    /// Applies `records` in order: the counts of what it replayed, dropped
    /// and skipped.
    fn replay(&mut self, records: &[Record]) -> Result<HostLogStats> {
        // A transaction commits if its last word is a commit; one open when
        // the process died commits up to its last commit point, if it has one.
        let mut last: BTreeMap<Tid, bool> = BTreeMap::new();
        let mut begun = BTreeSet::new();
        let mut points: BTreeMap<Tid, usize> = BTreeMap::new();
        let mut failed = BTreeSet::new();
        for (i, r) in records.iter().enumerate() {
            match r {
                Record::Begin { tid } => {
                    begun.insert(*tid);
                }
                Record::Commit { tid } => {
                    last.insert(*tid, true);
                    failed.remove(tid);
                }
                Record::Abort { tid } => {
                    last.insert(*tid, false);
                    failed.remove(tid);
                }
                Record::CommitFailed { tid } => {
                    last.insert(*tid, false);
                    failed.insert(*tid);
                }
                Record::CommitPoint { tid } => {
                    points.insert(*tid, i);
                }
                _ => {}
            }
        }
        // The record after which a transaction open at the death (or whose
        // last commit failed: it stayed open) replays nothing. An aborted one
        // replays nothing at all: its commit points went with it.
        let cut: BTreeMap<Tid, usize> = points
            .into_iter()
            .filter(|(t, _)| !last.contains_key(t) || failed.contains(t))
            .collect();
        let committed = |tid: &Tid| last.get(tid).copied().unwrap_or(false);
        let commits = |tid: &Tid| committed(tid) || cut.contains_key(tid);
        let mut stats = HostLogStats::default();
        let mut tids: BTreeMap<Tid, Tid> = BTreeMap::new();
        for (i, r) in records.iter().enumerate() {
            // The context a change replays in: none, a replayed transaction,
            // or `None` for a dropped one.
            let ctx = |c: &Option<Tid>, tids: &BTreeMap<Tid, Tid>| match c {
                None => Some(None),
                Some(t) if cut.get(t).is_some_and(|&k| i > k) => None,
                Some(t) => tids.get(t).map(|&n| Some(n)),
            };
            match r {
                Record::Create { path, class } => {
                    self.create(path, *class)?;
                }
                Record::Delete { path } => {
                    if self.lookup(path).is_some() {
                        self.delete(path)?;
                    }
                }
                Record::Mkdir { path } => {
                    if self.lookup(path).is_none() {
                        self.mkdir(path)?;
                    }
                }
                Record::Rmdir { path } => {
                    if self.lookup(path).is_some() {
                        self.rmdir(path)?;
                    }
                }
                Record::Write {
                    ctx: c,
                    path,
                    offset,
                    data,
                } => match (ctx(c, &tids), self.lookup(path)) {
                    (Some(tx), Some(ino)) => self.write(tx, ino, *offset, data)?,
                    (Some(_), None) => stats.skipped += 1,
                    (None, _) => {}
                },
                Record::Truncate { ctx: c, path, size } => match (ctx(c, &tids), self.lookup(path)) {
                    (Some(tx), Some(ino)) => self.truncate(tx, ino, *size)?,
                    (Some(_), None) => stats.skipped += 1,
                    (None, _) => {}
                },
                Record::Begin { tid } if commits(tid) => {
                    tids.insert(*tid, self.begin()?);
                }
                // Only the last commit of a transaction commits it (a commit
                // that failed was retried, or aborted).
                Record::Commit { tid }
                    if committed(tid) && !records[i + 1..].iter().any(|r| matches!(r, Record::Commit { tid: t } if t == tid)) =>
                {
                    match tids.get(tid) {
                        Some(&t) => self.commit(t)?,
                        None => {
                            return Err(FsError::HostLog(format!(
                                "record {}: commit of transaction {tid}, never begun",
                                i + 1
                            )))
                        }
                    }
                }
                // The last commit point of a transaction open at the death.
                Record::CommitPoint { tid } if cut.get(tid) == Some(&i) => match tids.get(tid) {
                    Some(&t) => self.commit(t)?,
                    None => {
                        return Err(FsError::HostLog(format!(
                            "record {}: commit point of transaction {tid}, never begun",
                            i + 1
                        )))
                    }
                },
                Record::Begin { .. }
                | Record::Commit { .. }
                | Record::Abort { .. }
                | Record::CommitFailed { .. }
                | Record::CommitPoint { .. } => {}
            }
        }
        stats.replayed_transactions = begun.iter().filter(|t| commits(t)).count() as u64;
        stats.dropped_transactions = begun.len() as u64 - stats.replayed_transactions;
        Ok(stats)
    }

    /// Logs a change that just succeeded (nothing without a host log), then
    /// settles the log.
    pub(crate) fn host_log(&mut self, r: impl FnOnce(&Fs) -> Result<Record>) -> Result<()> {
        self.host_log_only(r)?;
        self.settle_host_log()
    }

    /// Appends a record, nothing more (a commit's, before the device commits).
    pub(crate) fn host_log_only(&mut self, r: impl FnOnce(&Fs) -> Result<Record>) -> Result<()> {
        if self.hostlog.is_none() {
            return Ok(());
        }
        let rec = r(self)?;
        if let Some(log) = &mut self.hostlog {
            log.append(&rec)?;
        }
        Ok(())
    }

    /// After a change or a sync: writes everything back if the log has grown
    /// too large, and starts the log over if nothing is pending.
    pub(crate) fn settle_host_log(&mut self) -> Result<()> {
        let Some(log) = &mut self.hostlog else { return Ok(()) };
        if log.writeback_due() {
            self.write_back_all()?;
        }
        if self.quiescent() {
            if let Some(log) = &mut self.hostlog {
                log.restart()?;
            }
        }
        Ok(())
    }

    /// Nothing the device may not have: no open transaction, no pending
    /// metadata, no dirty page, no write since the last flush.
    fn quiescent(&self) -> bool {
        self.open.is_empty() && self.touched_count(None) == 0 && self.cache.len() == 0 && !self.unflushed
    }
}
