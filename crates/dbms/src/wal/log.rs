//! The log manager: a log buffer of one page being filled and the full
//! pages not yet written, a circular region of logical pages on the device
//! (plain writes: an overwritten log page is garbage the device's GC
//! collects), the force (the buffered pages written, then a flush), the
//! master record, and truncation (a page may be overwritten once no
//! restart can need it).
//!
//! Layout of the region: logical page `start` holds the master record; log
//! page `seq` (from 1) lives at `start + 1 + (seq - 1) mod pages`.

use super::format::{self, lsn, lsn_seq, LogRecord, Lsn, Master, Op};
use crate::error::{DbmsError, Result};
use crate::io::Io;
use serde::Serialize;
use txftl_ftl::Lpn;

/// What the log cost.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LogCounts {
    pub records: u64,
    /// Log page writes (a page forced half full and written again later counts twice).
    pub page_writes: u64,
    /// Forces: the buffer written and the device flushed, for a commit,
    /// the WAL rule or a checkpoint.
    pub forces: u64,
    /// Log pages read back (rollbacks whose undo records left the buffer).
    pub page_reads: u64,
    pub checkpoints: u64,
    /// Commit records written (ARIES: one a committing transaction that
    /// wrote; Flag Commit's extended manager: only while an update of it
    /// is still in the buffer pool).
    pub commit_records: u64,
}

pub struct LogManager {
    start: Lpn,
    pages: u64,
    per_page: usize,
    pub epoch: u32,
    /// The page being filled and its records.
    tail_seq: u64,
    tail: Vec<LogRecord>,
    /// Records of the tail already on flash (a force wrote it that full).
    tail_written: usize,
    /// Full pages not yet written, oldest first.
    full: Vec<(u64, Vec<LogRecord>)>,
    /// Forces and page writes: (every record up to this LSN is written,
    /// the instant the last of those writes completes), both rising.
    written: Vec<(Lsn, u64)>,
    /// The last record appended (0: none).
    last: Lsn,
    /// The oldest page a restart may read: pages before it may be overwritten.
    keep_from: u64,
    pub master: Master,
    /// Records kept free for rollbacks and a restart: an update is refused
    /// unless this many more would still fit (ARIES reserves log space so a
    /// rollback can always write its compensation records).
    pub reserve_records: u64,
    pub counts: LogCounts,
}

impl LogManager {
    /// The region's logical pages for a log of `pages` log pages.
    pub fn region_pages(pages: u32) -> u32 {
        pages + 1
    }

    /// An empty log in the region from `start` (nothing written yet).
    pub fn new(start: Lpn, pages: u32, page_size: u32) -> LogManager {
        assert!(pages >= 2, "a log of {pages} pages");
        LogManager {
            start,
            pages: pages as u64,
            per_page: format::records_per_page(page_size as usize),
            epoch: 0,
            tail_seq: 1,
            tail: Vec::new(),
            tail_written: 0,
            full: Vec::new(),
            written: Vec::new(),
            last: 0,
            keep_from: 1,
            master: Master::default(),
            reserve_records: 0,
            counts: LogCounts::default(),
        }
    }

    /// A log resumed at restart: `tail` is the last page found whole (its
    /// records are on flash), the next record goes after them.
    pub fn resume(&mut self, master: Master, tail_seq: u64, tail: Vec<LogRecord>, keep_from: u64) {
        self.master = master;
        self.epoch = master.epoch;
        self.tail_seq = tail_seq;
        self.tail_written = tail.len();
        self.last = tail.last().map_or(0, |r| r.lsn);
        self.written = vec![(self.last, 0)];
        self.tail = tail;
        self.full.clear();
        self.keep_from = keep_from;
    }

    pub fn per_page(&self) -> usize {
        self.per_page
    }

    pub fn master_lpn(&self) -> Lpn {
        self.start
    }

    pub fn lpn_of(&self, seq: u64) -> Lpn {
        debug_assert!(seq >= 1);
        self.start + 1 + ((seq - 1) % self.pages) as Lpn
    }

    /// The LSN the next record gets.
    pub fn next_lsn(&self) -> Lsn {
        lsn(self.tail_seq, self.tail.len())
    }

    /// Appends a record (its LSN filled in); a full tail moves to the
    /// pages awaiting their write. Refused when the page it needs would
    /// overwrite one a restart may still read.
    #[allow(clippy::too_many_arguments)]
    pub fn append(&mut self, xid: u32, page: u32, slot: u32, op: Op, before: u32, after: u32, prev: Lsn, undo_next: Lsn) -> Result<Lsn> {
        // Records that fit before the page a restart may still read.
        let room = (self.keep_from + self.pages - self.tail_seq) * self.per_page as u64 - self.tail.len() as u64;
        let reserve = if op == Op::Update { self.reserve_records } else { 0 };
        if self.tail_seq >= self.keep_from + self.pages || room <= reserve {
            return Err(DbmsError::LogFull {
                pages: self.pages,
                keep_from: self.keep_from,
            });
        }
        let at = self.next_lsn();
        self.tail.push(LogRecord {
            lsn: at,
            xid,
            page,
            slot,
            op,
            before,
            after,
            prev,
            undo_next,
        });
        self.counts.records += 1;
        self.last = at;
        if self.tail.len() == self.per_page {
            let seq = self.tail_seq;
            let written = std::mem::replace(&mut self.tail_written, 0);
            let records = std::mem::take(&mut self.tail);
            if written < records.len() {
                self.full.push((seq, records));
            }
            self.tail_seq += 1;
        }
        Ok(at)
    }

    /// Full pages are waiting for their write (the log buffer is full).
    pub fn has_full(&self) -> bool {
        !self.full.is_empty()
    }

    /// Writes the full pages, submitted at `at_ns`; their completion.
    pub fn write_full(&mut self, io: &mut Io, at_ns: u64) -> Result<u64> {
        let mut done = at_ns;
        let mut upto = None;
        for (seq, records) in std::mem::take(&mut self.full) {
            done = done.max(self.write_page(io, at_ns, seq, &records)?);
            upto = records.last().map(|r| r.lsn);
        }
        if let Some(upto) = upto {
            self.wrote(upto, done);
        }
        Ok(done)
    }

    /// Records up to `upto` are on flash once `done` has passed (and once
    /// every earlier write is: a restart reads the log in order).
    fn wrote(&mut self, upto: Lsn, done: u64) {
        let (last_upto, last_done) = self.written.last().copied().unwrap_or((0, 0));
        debug_assert!(upto >= last_upto, "log written backwards");
        self.written.push((upto, done.max(last_done)));
        if self.written.len() > 256 {
            self.written.drain(..128);
        }
    }

    /// When the record at `at` is on flash: None while it is not written.
    pub fn durable_at(&self, at: Lsn) -> Option<u64> {
        if at == 0 {
            return Some(0);
        }
        let i = self.written.partition_point(|&(upto, _)| upto < at);
        self.written.get(i).map(|&(_, done)| done)
    }

    fn write_page(&mut self, io: &mut Io, at_ns: u64, seq: u64, records: &[LogRecord]) -> Result<u64> {
        self.counts.page_writes += 1;
        let (lpn, epoch) = (self.lpn_of(seq), self.epoch);
        io.with_scratch(|io, buf| {
            format::encode_log_page(buf, seq, epoch, records);
            io.write_raw(at_ns, lpn, buf)
        })
    }

    /// Forces every record appended so far: the full pages and the tail
    /// written at `at_ns`, then, with `flush`, a flush. When they are all on
    /// flash (a write is durable once its program completes; restart, which
    /// runs alone, flushes).
    pub fn force(&mut self, io: &mut Io, at_ns: u64, flush: bool) -> Result<u64> {
        if self.full.is_empty() && self.tail_written == self.tail.len() {
            return Ok(self.durable_at(self.last).expect("every record is written").max(at_ns));
        }
        self.counts.forces += 1;
        let mut done = self.write_full(io, at_ns)?;
        if self.tail_written < self.tail.len() {
            let tail = std::mem::take(&mut self.tail);
            done = done.max(self.write_page(io, at_ns, self.tail_seq, &tail)?);
            self.tail_written = tail.len();
            let upto = tail.last().expect("an unwritten tail has records").lsn;
            self.tail = tail;
            self.wrote(upto, done);
        }
        let durable = self.durable_at(self.last).expect("just written").max(done);
        if flush {
            return io.flush(durable);
        }
        Ok(durable)
    }

    /// Writes the master record (and flushes, with `flush`); when it is on flash.
    pub fn write_master(&mut self, io: &mut Io, at_ns: u64, master: Master, flush: bool) -> Result<u64> {
        let mut buf = vec![0u8; io.page_size() as usize];
        master.encode(&mut buf);
        let done = io.write_raw(at_ns, self.start, &buf)?;
        self.master = master;
        if flush {
            return io.flush(done);
        }
        Ok(done)
    }

    /// Is the record at `at` still in memory (the buffer), or must a
    /// rollback read its page back?
    pub fn in_memory(&self, at: Lsn) -> bool {
        let seq = lsn_seq(at);
        seq == self.tail_seq || self.full.iter().any(|(s, _)| *s == seq)
    }

    /// Pages before `seq` may be overwritten (no restart reads them).
    pub fn truncate_before(&mut self, seq: u64) {
        debug_assert!(seq <= self.tail_seq, "truncating past the tail");
        self.keep_from = self.keep_from.max(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::format::decode_log_page;
    use txftl_nand::{DataMode, Nand, ViolationPolicy};

    fn device() -> Box<dyn txftl_ftl::AnyDevice> {
        let preset = txftl_nand::preset("tiny").unwrap();
        let nand = Nand::new(preset.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        txftl_protocols::format("plain", nand, Default::default(), &Default::default()).unwrap()
    }

    fn update(log: &mut LogManager, xid: u32) -> Result<Lsn> {
        log.append(xid, 1, 2, Op::Update, 0, xid, 0, 0)
    }

    /// A page filled is written at once; the tail only by a force, and
    /// again, fuller, by the next; a record is durable when the write that
    /// holds it (and every earlier one) completes.
    #[test]
    fn full_pages_are_written_and_a_force_writes_the_tail() {
        let mut dev = device();
        let mut io = Io::new(&mut *dev, 1).unwrap();
        let mut log = LogManager::new(10, 4, io.page_size());
        let per = log.per_page();
        let first = update(&mut log, 1).unwrap();
        assert_eq!(log.durable_at(first), None, "not written yet");
        let done = log.force(&mut io, 0, false).unwrap();
        assert_eq!(log.durable_at(first), Some(done));
        assert!(done > 0 && log.counts.page_writes == 1);
        for x in 2..=per as u32 {
            update(&mut log, x).unwrap();
        }
        assert!(log.has_full(), "the first page is full");
        log.write_full(&mut io, done).unwrap();
        let mut buf = vec![0u8; io.page_size() as usize];
        io.read_raw(done, log.lpn_of(1), &mut buf).unwrap();
        let (seq, epoch, recs) = decode_log_page(&buf).unwrap();
        assert_eq!((seq, epoch, recs.len()), (1, 0, per), "page 1 rewritten whole");
        assert_eq!(log.counts.page_writes, 2);
        // Nothing more to force: the force costs nothing.
        let again = log.force(&mut io, done, false).unwrap();
        assert_eq!(log.counts.forces, 1);
        assert!(again >= done);
    }

    /// The region wraps onto pages truncation released, and never onto one
    /// a restart may read; updates leave the reserve free for rollbacks.
    #[test]
    fn the_log_refuses_to_overwrite_what_a_restart_may_read() {
        let mut dev = device();
        let io = Io::new(&mut *dev, 1).unwrap();
        let mut log = LogManager::new(10, 3, io.page_size());
        let per = log.per_page();
        for x in 0..3 * per {
            update(&mut log, x as u32 + 1).unwrap();
        }
        assert!(matches!(update(&mut log, 99), Err(DbmsError::LogFull { pages: 3, keep_from: 1 })));
        log.truncate_before(2);
        update(&mut log, 99).unwrap();
        assert_eq!(log.lpn_of(4), log.lpn_of(1), "page 4 reuses page 1's place");
        // The reserve: updates stop short, compensation records may use it.
        log.reserve_records = per as u64;
        assert!(matches!(update(&mut log, 100), Err(DbmsError::LogFull { .. })));
        log.append(100, 1, 2, Op::Compensation, 0, 0, 0, 0).unwrap();
    }
}
