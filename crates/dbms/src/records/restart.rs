//! ARIES restart after a power cut, from the NAND alone (the device is
//! mounted first; the DBMS's memory is gone):
//!
//! 1. the master record names the last two checkpoints; a new epoch is
//!    written into it, so every log page this restart writes outranks a
//!    stale page of the cut run;
//! 2. the log is read from the older checkpoint (sec. 4.3: everything
//!    logged before it is on flash) page by page, while each page is whole,
//!    has the sequence number expected, an epoch no older than the page
//!    before it, and the page before it was full (a page a force wrote half
//!    full ends the log);
//! 3. analysis: the transactions the checkpoint lists and those the log
//!    shows, committed (a commit record) or losers (neither commit nor end);
//! 4. redo: every update and compensation record is applied to its page
//!    unless the page's LSN shows it there already (history repeated);
//! 5. undo: the losers' updates, newest first across all of them, each
//!    undone and logged as a compensation record (a compensation record
//!    found skips to its UndoNxtLN), each loser ended;
//! 6. the log forced, the pages written and flushed, and a checkpoint.
//!
//! A cut during any of it leaves a log a second restart finishes from.
//!
//! Flag Commit's extended manager restarts by Algorithm 3 instead
//! ([`restart_flag_ex`]): the committed transactions are those the log's
//! commit records name and those the device's flags commit; the device
//! (mounted) has left the ones its flags do not commit in doubt, and those
//! with a commit record in the log are committed on it now; each page
//! reads as its newest version with every entry's status; the committed
//! updates logged after the second-to-last checkpoint are redone where a
//! page lacks them (by USN); no undo (an uncommitted update is a pending
//! record the device reads as aborted).

use super::ex_pages;
use super::log_start;
use super::pages::{read_page, write_page, PageState};
use crate::config::DbmsConfig;
use crate::error::{DbmsError, Result};
use crate::io::Io;
use crate::tpcc::Layout;
use crate::wal::format::{self, lsn, lsn_seq, LogRecord, Lsn, Master, Op};
use crate::wal::LogManager;
use serde::Serialize;
use std::collections::{BTreeMap, BinaryHeap};
use txftl_ftl::AnyDevice;

/// What a restart did and cost (device time).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct RestartReport {
    pub log_pages_read: u64,
    pub records_scanned: u64,
    pub redone: u64,
    pub undone: u64,
    pub losers: u64,
    pub pages_read: u64,
    pub pages_written: u64,
    /// Flag Commit's extended manager: transactions the device left in
    /// doubt that the log's commit records committed.
    pub in_doubt_committed: u64,
    pub sim_ns: u64,
}

struct Restart<'a, 'd> {
    io: &'a mut Io<'d>,
    /// Flag Commit's extended manager (pages with pending records, no WAL rule).
    flag_ex: bool,
    log: LogManager,
    per_db: u32,
    db_pages: u32,
    pages: BTreeMap<u32, PageState>,
    /// Log records by LSN: those scanned, and older ones read for undo.
    records: BTreeMap<Lsn, LogRecord>,
    report: RestartReport,
    now: u64,
}

/// Restarts the database `cfg` describes on the mounted `dev`.
pub fn restart(dev: &mut dyn AnyDevice, cfg: &DbmsConfig) -> Result<RestartReport> {
    let layout = Layout::new(cfg.warehouses, cfg.db_pages)?;
    let mut io = Io::new(dev, cfg.flash_pages_per_db_page)?;
    if !io.full_data() {
        return Err(DbmsError::Config(
            "restart reads log records and page images: it needs a device that keeps data (full-data mode)".into(),
        ));
    }
    let start_ns = io.now_ns();
    let log = LogManager::new(log_start(cfg, &layout), cfg.log_pages, io.page_size());
    let mut r = Restart {
        io: &mut io,
        flag_ex: cfg.recovery.flag_ex(),
        log,
        per_db: cfg.flash_pages_per_db_page,
        db_pages: layout.pages,
        pages: BTreeMap::new(),
        records: BTreeMap::new(),
        report: RestartReport::default(),
        now: start_ns,
    };
    let master = r.read_master()?;
    let from = if master.previous != 0 { master.previous } else { lsn(1, 0) };
    if r.flag_ex {
        // Nothing is written before the transactions in doubt are decided:
        // the device's first write aborts those left.
        let scanned = r.scan(from, &master)?;
        r.resolve_in_doubt(&scanned)?;
        r.write_epoch(master)?;
        r.redo_flag_ex(&scanned, from)?;
    } else {
        r.write_epoch(master)?;
        let scanned = r.scan(from, &master)?;
        let (losers, winners) = analysis(&scanned, from);
        r.redo(&scanned, from)?;
        r.undo(losers, winners)?;
    }
    r.finish(master)?;
    r.report.sim_ns = r.now - start_ns;
    Ok(r.report)
}

/// Every record of the database `cfg` describes as the mounted `dev` holds
/// it: (page, slot) to version, the load's 0s left out. A DB page whose
/// flash pages hold no image holds the load.
pub fn records_on_flash(dev: &mut dyn AnyDevice, cfg: &DbmsConfig) -> Result<BTreeMap<(u32, u32), u32>> {
    let layout = Layout::new(cfg.warehouses, cfg.db_pages)?;
    let mut io = Io::new(dev, cfg.flash_pages_per_db_page)?;
    let mut out = BTreeMap::new();
    let at = io.now_ns();
    for page in 0..layout.pages {
        let (state, _) = if cfg.recovery.flag_ex() {
            ex_pages::read_page(&mut io, at, page, cfg.flash_pages_per_db_page, None)?
        } else {
            read_page(&mut io, at, page, cfg.flash_pages_per_db_page)?
        };
        for part in &state.parts {
            out.extend(part.records.iter().filter(|(_, &v)| v != 0).map(|(&s, &v)| ((page, s), v)));
        }
    }
    Ok(out)
}

/// Transactions and their last log records.
type TxLasts = Vec<(u32, Lsn)>;

/// The losers (transaction, last record) and the winners not yet ended.
fn analysis(scanned: &[LogRecord], from: Lsn) -> (TxLasts, TxLasts) {
    // Transaction: (last record, committed).
    let mut txs: BTreeMap<u32, (Lsn, bool)> = BTreeMap::new();
    for r in scanned.iter().filter(|r| r.lsn >= from) {
        match r.op {
            Op::CheckpointTx => {
                txs.entry(r.xid).or_insert((r.prev, false));
            }
            Op::Begin | Op::Update | Op::Compensation => txs.entry(r.xid).or_insert((0, false)).0 = r.lsn,
            Op::Commit => *txs.entry(r.xid).or_insert((0, false)) = (r.lsn, true),
            Op::End => {
                txs.remove(&r.xid);
            }
            Op::CheckpointEnd => {}
        }
    }
    let losers = txs.iter().filter(|(_, v)| !v.1).map(|(&x, v)| (x, v.0)).collect();
    let winners = txs.iter().filter(|(_, v)| v.1).map(|(&x, v)| (x, v.0)).collect();
    (losers, winners)
}

impl Restart<'_, '_> {
    fn buf(&self) -> Vec<u8> {
        vec![0u8; self.io.page_size() as usize]
    }

    /// Reads the master record; returns it with the next epoch, the log's
    /// from now on, which [`Restart::write_epoch`] makes durable.
    fn read_master(&mut self) -> Result<Master> {
        let mut buf = self.buf();
        self.now = self.io.read_raw(self.now, self.log.master_lpn(), &mut buf)?;
        let master = Master::decode(&buf).ok_or_else(|| DbmsError::Corrupt("no master record in the log region".into()))?;
        let next = Master {
            epoch: master.epoch + 1,
            ..master
        };
        self.log.epoch = next.epoch;
        Ok(next)
    }

    /// Writes `next`, the master record with its new epoch, back.
    fn write_epoch(&mut self, next: Master) -> Result<()> {
        self.now = self.log.write_master(self.io, self.now, next, true)?;
        Ok(())
    }

    /// One log page, if it is whole and holds sequence number `seq`.
    fn read_log_page(&mut self, seq: u64) -> Result<Option<(u32, Vec<LogRecord>)>> {
        let mut buf = self.buf();
        self.now = self.io.read_raw(self.now, self.log.lpn_of(seq), &mut buf)?;
        self.report.log_pages_read += 1;
        Ok(format::decode_log_page(&buf).and_then(|(s, epoch, recs)| (s == seq).then_some((epoch, recs))))
    }

    /// The log from `from` to its end; the log manager resumes after it.
    fn scan(&mut self, from: Lsn, master: &Master) -> Result<Vec<LogRecord>> {
        let mut seq = lsn_seq(from);
        let mut out = Vec::new();
        let mut last_epoch = 0;
        let per_page = self.log.per_page();
        let (tail_seq, tail) = loop {
            let Some((epoch, recs)) = self.read_log_page(seq)? else {
                if seq == lsn_seq(from) && master.checkpoint != 0 {
                    return Err(DbmsError::Corrupt(format!("the checkpoint's log page {seq} is not whole")));
                }
                break (seq, Vec::new());
            };
            if epoch < last_epoch {
                break (seq, Vec::new());
            }
            last_epoch = epoch;
            out.extend(recs.iter().copied());
            if recs.len() < per_page {
                break (seq, recs);
            }
            seq += 1;
        };
        self.report.records_scanned = out.len() as u64;
        for r in &out {
            self.records.insert(r.lsn, *r);
        }
        // What the cut run kept: pages from the older checkpoint on, and
        // those of the transactions the newer one lists as open (their first
        // records), as the run truncated once that checkpoint was durable.
        let listed = out
            .iter()
            .skip_while(|r| r.lsn < master.checkpoint)
            .take_while(|r| r.op == Op::CheckpointTx);
        let keep = listed.map(|r| lsn_seq(r.undo_next)).fold(lsn_seq(from), u64::min);
        self.log.resume(*master, tail_seq, tail, keep.max(1));
        Ok(out)
    }

    fn page(&mut self, page: u32) -> Result<&mut PageState> {
        if page >= self.db_pages {
            return Err(DbmsError::Corrupt(format!(
                "a log record names DB page {page}; the database has {}",
                self.db_pages
            )));
        }
        if !self.pages.contains_key(&page) && self.flag_ex {
            let (state, done) = ex_pages::read_page(self.io, self.now, page, self.per_db, None)?;
            self.now = done;
            self.report.pages_read += 1;
            self.pages.insert(page, state);
        }
        if !self.pages.contains_key(&page) {
            let (state, done) = read_page(self.io, self.now, page, self.per_db)?;
            self.now = done;
            self.report.pages_read += 1;
            // The WAL rule puts every record a page carries on flash before
            // the page: a page ahead of the log's end was written before its log.
            let end = self.log.next_lsn();
            if state.lsn() >= end {
                return Err(DbmsError::Corrupt(format!(
                    "DB page {page} carries log record {} beyond the log's end {end}: it was written before its log records",
                    state.lsn()
                )));
            }
            self.pages.insert(page, state);
        }
        Ok(self.pages.get_mut(&page).expect("just read"))
    }

    fn redo(&mut self, scanned: &[LogRecord], from: Lsn) -> Result<()> {
        for r in scanned.iter().filter(|r| r.lsn >= from) {
            if !matches!(r.op, Op::Update | Op::Compensation) {
                continue;
            }
            let per_db = self.per_db;
            let state = self.page(r.page)?;
            if state.parts[(r.slot % per_db) as usize].lsn < r.lsn {
                state.set(r.slot, r.after, r.lsn);
                self.report.redone += 1;
            }
        }
        Ok(())
    }

    /// The record at `at`: scanned, or read from its log page.
    fn record(&mut self, at: Lsn) -> Result<LogRecord> {
        if let Some(r) = self.records.get(&at) {
            return Ok(*r);
        }
        let seq = lsn_seq(at);
        let recs = self
            .read_log_page(seq)?
            .ok_or_else(|| DbmsError::Corrupt(format!("log page {seq}, which a loser's record {at} is on, is not whole")))?
            .1;
        for r in recs {
            self.records.insert(r.lsn, r);
        }
        self.records
            .get(&at)
            .copied()
            .ok_or_else(|| DbmsError::Corrupt(format!("log record {at} of a loser is missing")))
    }

    fn undo(&mut self, losers: Vec<(u32, Lsn)>, winners: Vec<(u32, Lsn)>) -> Result<()> {
        self.report.losers = losers.len() as u64;
        let mut last: BTreeMap<u32, Lsn> = losers.iter().copied().collect();
        let mut todo: BinaryHeap<(Lsn, u32)> = losers.iter().map(|&(x, l)| (l, x)).collect();
        for (xid, l) in winners {
            self.log.append(xid, 0, 0, Op::End, 0, 0, l, 0)?;
        }
        while let Some((at, xid)) = todo.pop() {
            let next = if at == 0 {
                0
            } else {
                let rec = self.record(at)?;
                match rec.op {
                    Op::Update => {
                        let prev = last[&xid];
                        let clr = self
                            .log
                            .append(xid, rec.page, rec.slot, Op::Compensation, 0, rec.before, prev, rec.prev)?;
                        last.insert(xid, clr);
                        self.page(rec.page)?.set(rec.slot, rec.before, clr);
                        self.report.undone += 1;
                        rec.prev
                    }
                    Op::Compensation => rec.undo_next,
                    // The chain's first record: nothing before it to undo.
                    Op::Begin => 0,
                    op => {
                        return Err(DbmsError::Corrupt(format!(
                            "transaction {xid}'s undo chain meets a {op:?} record at {at}"
                        )))
                    }
                }
            };
            if next == 0 {
                self.log.append(xid, 0, 0, Op::End, 0, 0, last[&xid], 0)?;
            } else {
                todo.push((next, xid));
            }
        }
        Ok(())
    }

    /// Algorithm 3, line 1: the transactions the device left in doubt
    /// that a commit record names are committed on it.
    fn resolve_in_doubt(&mut self, scanned: &[LogRecord]) -> Result<()> {
        let logged: std::collections::BTreeSet<u32> = scanned.iter().filter(|r| r.op == Op::Commit).map(|r| r.after).collect();
        for xid in self.io.in_doubt()? {
            if logged.contains(&xid) {
                self.now = self.io.commit_in_doubt(self.now, xid)?;
                self.report.in_doubt_committed += 1;
            }
        }
        Ok(())
    }

    /// Algorithm 3, line 6: the committed transactions' updates logged from
    /// `from` on, redone onto every page that lacks them (by USN).
    fn redo_flag_ex(&mut self, scanned: &[LogRecord], from: Lsn) -> Result<()> {
        let committed: std::collections::BTreeSet<u32> = scanned.iter().filter(|r| r.op == Op::Commit).map(|r| r.xid).collect();
        for r in scanned.iter().filter(|r| r.lsn >= from && r.op == Op::Update) {
            if !committed.contains(&r.xid) {
                continue;
            }
            let per_db = self.per_db;
            let state = self.page(r.page)?;
            if state.parts[(r.slot % per_db) as usize].lsn < r.undo_next {
                state.set(r.slot, r.after, r.undo_next);
                self.report.redone += 1;
            }
        }
        Ok(())
    }

    /// The log forced, the pages written and flushed, then a checkpoint
    /// with no transaction open.
    fn finish(&mut self, master: Master) -> Result<()> {
        self.now = self.log.force(self.io, self.now, true)?;
        let mut done = self.now;
        for (&page, state) in self.pages.iter().filter(|(_, s)| s.dirty) {
            let written = if self.flag_ex {
                ex_pages::write_page(self.io, self.now, page, state, None)?
            } else {
                write_page(self.io, self.now, page, state)?
            };
            done = done.max(written);
            self.report.pages_written += 1;
        }
        self.now = self.io.flush(done)?;
        let begin = self.log.next_lsn();
        self.log.append(0, 0, 0, Op::CheckpointEnd, 0, 0, master.checkpoint, 0)?;
        self.now = self.log.force(self.io, self.now, true)?;
        let next = Master {
            epoch: master.epoch,
            checkpoint: begin,
            previous: master.checkpoint,
        };
        self.now = self.log.write_master(self.io, self.now, next, true)?;
        Ok(())
    }
}
