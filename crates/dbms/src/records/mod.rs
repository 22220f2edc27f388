//! The record-level engine: strict two-phase locking on records, a buffer
//! pool that steals and never forces, and a logging recovery manager.
//! Today's manager is ARIES (the baseline of Flag Commit's sec. 5.3) on a
//! device without transactions:
//!
//! - a transaction's first update appends a begin record; an update
//!   appends an update record (undo and redo data) to the log buffer, then
//!   changes the record in its page; a full log page is written at once;
//! - a dirty page leaves the buffer only after the log is forced up to
//!   its pageLSN (the WAL rule);
//! - a commit appends a commit record and forces the log; its end record
//!   follows unforced;
//! - a rollback undoes the transaction's updates newest first, each on its
//!   page (read back into the buffer if it left) with its undo record
//!   (read back from the log if it left the buffer), each undo logged as a
//!   compensation record, then an end record;
//! - a fuzzy checkpoint every `checkpoint_log_pages` log pages (sec. 4.3):
//!   the open transactions and their last records logged, the log forced,
//!   the master record written, then the pages dirty at that moment written
//!   (so everything logged before the checkpoint before it is on flash);
//! - restart ([`restart`]): analysis and redo from the second-to-last
//!   checkpoint, undo of the losers with compensation records.
//!
//! The clients, their plans and the device clock are as in the page-level
//! engine ([`crate::run`]); each event is one step of one client.

mod checkpoint;
mod ex;
mod ex_pages;
mod pages;
pub mod restart;
mod rollback;

use crate::buffer::BufferPool;
use crate::client::{self, Client, State};
use crate::config::{DbmsConfig, Recovery};
use crate::error::{DbmsError, Result};
use crate::io::Io;
use crate::locks::{record_key, Grant, LockTable, Mode};
use crate::report::{CommitLog, CommitRecord, DbmsReport, Tally};
use crate::sim::{run_phase, Engine, Sim};
use crate::tpcc::{Generator, Layout, RecordAccess, TxPlan};
use crate::wal::format::{Lsn, Master, Op};
use crate::wal::LogManager;
use checkpoint::Checkpointer;
use pages::{read_page, write_page, PageState, PageTable};
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{AnyDevice, Tid};

/// One update of an open transaction, for its rollback.
#[derive(Clone, Copy, Debug)]
struct Undo {
    page: u32,
    slot: u32,
    before: u32,
    lsn: Lsn,
}

/// One attempt of a plan.
struct Tx {
    plan: TxPlan,
    tid: Tid,
    step: usize,
    undo: Vec<Undo>,
    first_lsn: Lsn,
    last_lsn: Lsn,
    first_start_ns: u64,
    order: u64,
    /// Log pages this rollback read back.
    log_pages_read: BTreeSet<u64>,
    /// Its current access missed: served after the load, not a hit.
    missed: bool,
    /// Flag Commit's extended manager: begun on the device (its first update).
    device_begun: bool,
    /// Flag Commit's extended manager: pages it updated since they were
    /// last written (its commit then needs a commit record).
    unwritten: BTreeSet<u32>,
}

pub struct RecordDbms<'d> {
    io: Io<'d>,
    protocol: &'static str,
    cfg: DbmsConfig,
    gen: Generator,
    buffer: BufferPool,
    pages: PageTable,
    locks: LockTable,
    log: LogManager,
    clients: Vec<Client<Tx>>,
    sim: Sim,
    /// Each record's committed version (absent: the load's 0).
    committed: BTreeMap<(u32, u32), u32>,
    /// Records an open transaction wrote, and its id.
    uncommitted: BTreeMap<(u32, u32), Tid>,
    /// Log pages filled since the last checkpoint.
    pages_since_checkpoint: u64,
    checkpointer: Checkpointer,
    /// When the pages the last checkpoint noted are all on flash.
    noted_done: u64,
    commits: CommitLog,
    loaded: bool,
    /// Flag Commit's extended manager: the log buffer hashed on transactions.
    logbuf: ex::LogBuffer,
    /// Flag Commit's extended manager: the last update sequence number.
    usn: u64,
    /// Flag Commit's extended manager without full data: the images.
    shadow: ex_pages::Shadow,
}

/// Where the log region starts: after the database's logical pages.
pub fn log_start(cfg: &DbmsConfig, layout: &Layout) -> u32 {
    layout.pages * cfg.flash_pages_per_db_page
}

impl<'d> RecordDbms<'d> {
    /// A record-level DBMS on `dev` (formatted, empty), its configuration checked.
    pub fn new(dev: &'d mut dyn AnyDevice, cfg: DbmsConfig) -> Result<RecordDbms<'d>> {
        cfg.validate()?;
        if !cfg.recovery.logs() {
            return Err(DbmsError::Config(format!(
                "the record-level engine runs a logging recovery manager, not {}",
                cfg.recovery.name()
            )));
        }
        if cfg.recovery.flag_ex() && !dev.offers(txftl_ftl::Extension::RecordTx) {
            return Err(DbmsError::Config(format!(
                "the {} manager writes pending records: protocol {} does not offer them (cfc-ex and afc-ex do)",
                cfg.recovery.name(),
                dev.entry().name
            )));
        }
        let layout = Layout::new(cfg.warehouses, cfg.db_pages)?;
        let have = dev.info().logical_pages;
        let need = log_start(&cfg, &layout) as u64 + cfg.log_region_pages() as u64 + cfg.cold_pages(have);
        if need > have as u64 {
            return Err(DbmsError::DeviceTooSmall {
                need,
                db_pages: layout.pages,
                per_db_page: cfg.flash_pages_per_db_page,
                have,
            });
        }
        let page_size = dev.info().page_size;
        let protocol = dev.entry().name;
        let clients = cfg.clients as usize;
        let log = LogManager::new(log_start(&cfg, &layout), cfg.log_pages, page_size);
        Ok(RecordDbms {
            io: Io::new(dev, cfg.flash_pages_per_db_page)?,
            protocol,
            gen: Generator::new(layout, cfg.seed, cfg.abort_pct, cfg.max_pages_per_tx).with_pages_written(cfg.pages_written),
            buffer: BufferPool::new(cfg.buffer_pages, clients),
            pages: PageTable::default(),
            locks: LockTable::new(clients),
            log,
            clients: (0..clients)
                .map(|_| Client {
                    state: State::Idle,
                    tx: None,
                })
                .collect(),
            sim: Sim::new(cfg.seed, cfg.backoff_ns_max),
            committed: BTreeMap::new(),
            uncommitted: BTreeMap::new(),
            pages_since_checkpoint: 0,
            checkpointer: Checkpointer::Idle,
            noted_done: 0,
            commits: CommitLog::default(),
            loaded: false,
            logbuf: Default::default(),
            usn: 0,
            shadow: Default::default(),
            cfg,
        })
    }

    pub fn layout(&self) -> &Layout {
        self.gen.layout()
    }

    pub fn device(&mut self) -> &mut dyn AnyDevice {
        self.io.device()
    }

    pub fn commit_log(&self) -> &CommitLog {
        &self.commits
    }

    /// Clients in the middle of a rollback (a crash test's cut lands in one).
    pub fn rolling_back(&self) -> usize {
        self.clients
            .iter()
            .filter(|c| matches!(c.state, State::Aborting { .. } | State::Loading { rollback: Some(_), .. }))
            .count()
    }

    fn first_lpn(&self, page: u32) -> u32 {
        page * self.cfg.flash_pages_per_db_page
    }

    /// Writes the cold data, every DB page with its load image (every
    /// record at version 0: no entries), and the master record (no
    /// checkpoint yet), then flushes.
    pub fn load(&mut self) -> Result<()> {
        let at = self.io.now_ns();
        let first_cold = log_start(&self.cfg, self.layout()) + self.cfg.log_region_pages();
        let cold = self.cfg.cold_pages(self.io.device().info().logical_pages) as u32;
        for lpn in first_cold..first_cold + cold {
            self.io.write_cold(at, lpn)?;
        }
        let empty = self.empty_page();
        for page in 0..self.layout().pages {
            write_page(&mut self.io, at, page, &empty)?;
        }
        let done = self.io.flush(at)?;
        self.log.write_master(&mut self.io, done, Master::default(), true)?;
        self.loaded = true;
        Ok(())
    }

    fn empty_page(&self) -> PageState {
        PageState {
            parts: vec![Default::default(); self.cfg.flash_pages_per_db_page as usize],
            dirty: false,
        }
    }

    /// Runs the warm-up, then the measured transactions (loading first if
    /// `load` was not called), as [`crate::Dbms::run`] does.
    pub fn run(&mut self) -> Result<DbmsReport> {
        if !self.loaded {
            self.load()?;
        }
        if self.cfg.warmup_transactions > 0 {
            self.phase(self.cfg.warmup_transactions)?;
            self.sim.tally = Tally::default();
            self.buffer.counts = Default::default();
            self.log.counts = Default::default();
        }
        self.io.device().reset_stats();
        self.phase(self.cfg.transactions)?;
        let device = self.io.device().stats();
        let mut report = self
            .sim
            .tally
            .report(self.protocol, &self.cfg, self.layout().pages, self.buffer.counts, device);
        report.log = Some(self.log.counts);
        Ok(report)
    }

    /// Runs `transactions` more plans to their end ([`run_phase`]); every
    /// client is idle and the checkpointer too at its end.
    fn phase(&mut self, transactions: u64) -> Result<()> {
        let (clients, start_ns) = (self.clients.len(), self.io.now_ns());
        run_phase(self, transactions, clients, start_ns)?;
        client::assert_quiet(&self.clients, &self.locks);
        assert_eq!(self.checkpointer, Checkpointer::Idle, "the phase ended mid-checkpoint");
        assert!(self.uncommitted.is_empty(), "the phase ended with uncommitted records");
        Ok(())
    }

    fn event(&mut self, c: usize, t: u64) -> Result<()> {
        if c == self.clients.len() {
            return self.checkpoint_step(t);
        }
        match self.clients[c].state {
            State::Idle => self.start_next(c, t),
            State::Run => self.advance(c, t),
            State::Blocked => unreachable!("client {c} scheduled while blocked"),
            State::Committing { since_ns } if self.cfg.recovery.flag_ex() => self.ex_commit_flags(c, t, since_ns),
            State::Committing { .. } => unreachable!("client {c}: ARIES's commit writes no pages"),
            State::Backoff => {
                let tid = self.sim.new_tid()?;
                let tx = self.clients[c].tx_mut();
                tx.tid = tid;
                tx.step = 0;
                self.sim.tally.restarts += 1;
                self.clients[c].state = State::Run;
                self.advance(c, t)
            }
            State::Loading {
                frame,
                read_issued: false,
                rollback,
            } => {
                let done = self.read_into(t, frame)?;
                self.clients[c].state = State::Loading {
                    frame,
                    read_issued: true,
                    rollback,
                };
                self.sim.schedule(c, done);
                Ok(())
            }
            State::Loading {
                frame,
                read_issued: true,
                rollback,
            } => {
                self.buffer.touch(frame);
                if let Some(restart) = rollback {
                    self.clients[c].state = State::Aborting { restart };
                    self.rollback_step(c, t)
                } else {
                    self.clients[c].state = State::Run;
                    self.advance(c, t)
                }
            }
            State::Aborting { .. } => self.rollback_step(c, t),
            State::Ending { commit, restart, since_ns } => self.end(c, t, commit, restart, since_ns),
        }
    }

    fn start_next(&mut self, c: usize, t: u64) -> Result<()> {
        let Some(order) = self.sim.take_plan() else {
            self.clients[c].state = State::Idle;
            return Ok(());
        };
        let plan = self.gen.next_plan();
        let tid = self.sim.new_tid()?;
        self.clients[c].tx = Some(Tx {
            plan,
            tid,
            step: 0,
            undo: Vec::new(),
            first_lsn: 0,
            last_lsn: 0,
            first_start_ns: t,
            order,
            log_pages_read: BTreeSet::new(),
            missed: false,
            device_begun: false,
            unwritten: BTreeSet::new(),
        });
        self.clients[c].state = State::Run;
        self.advance(c, t)
    }

    /// Runs `c`'s record accesses until one needs the device or a lock it
    /// cannot have, or the plan ends (then its commit or rollback).
    fn advance(&mut self, c: usize, t: u64) -> Result<()> {
        loop {
            let tx = self.clients[c].tx();
            let Some(&a) = tx.plan.records.get(tx.step) else {
                return if tx.plan.abort {
                    self.clients[c].state = State::Aborting { restart: false };
                    self.rollback_step(c, t)
                } else {
                    self.commit(c, t)
                };
            };
            if a.write && self.cfg.recovery.flag_ex() && !self.ex_update_slot(c, t, a.page)? {
                return Ok(());
            }
            let mode = if a.write { Mode::Exclusive } else { Mode::Shared };
            if self.locks.request(c, record_key(a.page, a.slot), mode) == Grant::Blocked {
                self.clients[c].state = State::Blocked;
                return self.on_block(c, t);
            }
            if !self.page_ready(c, t, a.page, None)? {
                return Ok(());
            }
            if !std::mem::take(&mut self.clients[c].tx_mut().missed) {
                self.buffer.counts.hits += 1;
            }
            self.apply(c, t, a)?;
        }
    }

    /// Is `page` resident and loaded? If not, `c` waits: for another
    /// client's load of it, or for its own miss (its state says which).
    fn page_ready(&mut self, c: usize, t: u64, page: u32, rollback: Option<bool>) -> Result<bool> {
        let Some(i) = self.buffer.resident(page) else {
            self.miss(c, t, page, rollback)?;
            return Ok(false);
        };
        let f = *self.buffer.frame(i);
        if !f.ready_at(t) {
            let at = f.ready_ns.unwrap_or(f.read_at_ns).max(t);
            self.sim.schedule(c, at);
            return Ok(false);
        }
        self.buffer.touch(i);
        Ok(true)
    }

    /// A miss: a frame is claimed; a dirty victim is written first, then
    /// the page is read. The WAL rule: while the victim's pageLSN is not on
    /// flash, the log is forced and `c` asks again once it is.
    fn miss(&mut self, c: usize, t: u64, page: u32, rollback: Option<bool>) -> Result<()> {
        if let Some(v) = self.buffer.victim(t) {
            let state = self.pages.get(self.buffer.frame(v).page);
            let durable = self.log.durable_at(state.lsn());
            let wal = self.cfg.recovery == Recovery::Aries;
            if wal && state.dirty && durable.is_none_or(|d| d > t) {
                let done = match durable {
                    Some(d) => d,
                    None => self.log.force(&mut self.io, t, false)?,
                };
                self.clients[c].state = match rollback {
                    Some(restart) => State::Aborting { restart },
                    None => State::Run,
                };
                self.sim.schedule(c, done);
                return Ok(());
            }
        }
        let (frame, evicted) = self
            .buffer
            .claim(page, 0, t)
            .expect("the configuration leaves a frame that is not loading");
        self.clients[c].tx_mut().missed = rollback.is_none();
        let mut read_at = t;
        if let Some(old) = evicted {
            let state = self.pages.pages.remove(&old.page).expect("an evicted page had contents");
            if state.dirty {
                self.buffer.counts.steal_writes += 1;
                self.checkpointer.evicted(old.page);
                read_at = self.write_db_page(t, old.page, &state)?;
                self.buffer.read_after(frame, read_at);
            }
        }
        self.clients[c].state = State::Loading {
            frame,
            read_issued: false,
            rollback,
        };
        self.sim.schedule(c, read_at);
        Ok(())
    }

    /// Issues the read of `frame`'s page; when it completes. The records it
    /// holds must be committed versions or those of their open writers.
    fn read_into(&mut self, t: u64, frame: usize) -> Result<u64> {
        let page = self.buffer.frame(frame).page;
        let per_db = self.cfg.flash_pages_per_db_page;
        let (state, done) = if self.cfg.recovery.flag_ex() {
            ex_pages::read_page(&mut self.io, t, page, per_db, Some(&self.shadow))?
        } else {
            read_page(&mut self.io, t, page, per_db)?
        };
        if self.io.full_data() {
            self.check_image(page, &state)?;
        }
        self.pages.pages.insert(page, state);
        self.buffer.loaded(frame, 0, done);
        Ok(done)
    }

    fn check_image(&self, page: u32, state: &PageState) -> Result<()> {
        let slots: BTreeSet<u32> = state
            .parts
            .iter()
            .flat_map(|p| p.records.keys().copied())
            .chain(self.committed.range((page, 0)..=(page, u32::MAX)).map(|(&(_, s), _)| s))
            .collect();
        for slot in slots {
            let found = state.version(slot);
            let committed = self.committed.get(&(page, slot)).copied().unwrap_or(0);
            let open = self.uncommitted.get(&(page, slot)).copied();
            if found != committed && Some(found) != open {
                return Err(DbmsError::WrongRead {
                    page,
                    lpn: self.first_lpn(page) + slot % self.cfg.flash_pages_per_db_page,
                    tid: 0,
                    expected: committed as u64,
                    found: format!("record {slot} at version {found}"),
                });
            }
        }
        Ok(())
    }

    /// Writes dirty DB page `page` as the recovery manager does; the completion.
    fn write_db_page(&mut self, t: u64, page: u32, state: &PageState) -> Result<u64> {
        if self.cfg.recovery.flag_ex() {
            self.ex_write_page(t, page, state)
        } else {
            write_page(&mut self.io, t, page, state)
        }
    }

    /// Access `a` of `c` on its resident page: a write is logged, then made.
    fn apply(&mut self, c: usize, t: u64, a: RecordAccess) -> Result<()> {
        if a.write && self.cfg.recovery.flag_ex() {
            self.ex_apply(c, t, a)?;
        } else if a.write {
            let (tid, mut prev) = (self.clients[c].tx().tid, self.clients[c].tx().last_lsn);
            let before = self.pages.get(a.page).version(a.slot);
            self.log.reserve_records = self.rollback_reserve();
            if prev == 0 {
                prev = self.log.append(tid, 0, 0, Op::Begin, 0, 0, 0, 0)?;
                self.clients[c].tx_mut().first_lsn = prev;
            }
            let lsn = self.log.append(tid, a.page, a.slot, Op::Update, before, tid, prev, 0)?;
            self.pages.get_mut(a.page).set(a.slot, tid, lsn);
            self.uncommitted.insert((a.page, a.slot), tid);
            let tx = self.clients[c].tx_mut();
            tx.undo.push(Undo {
                page: a.page,
                slot: a.slot,
                before,
                lsn,
            });
            tx.last_lsn = lsn;
            self.after_append(t)?;
        }
        self.clients[c].tx_mut().step += 1;
        Ok(())
    }

    /// Log records a rollback of every open transaction (and then a
    /// restart's checkpoint) would write, this update's own undo included.
    fn rollback_reserve(&self) -> u64 {
        let undo: usize = self.clients.iter().filter_map(|c| c.tx.as_ref()).map(|tx| tx.undo.len() + 1).sum();
        (undo + self.clients.len() + 2) as u64
    }

    /// `c`'s plan ended: a commit record, the log forced; a transaction
    /// that wrote nothing commits at once.
    fn commit(&mut self, c: usize, t: u64) -> Result<()> {
        if self.cfg.recovery.flag_ex() {
            return self.ex_commit(c, t);
        }
        let tx = self.clients[c].tx();
        let (tid, prev) = (tx.tid, tx.last_lsn);
        let done = if prev == 0 {
            t
        } else {
            let rec = CommitRecord {
                tid,
                pages: Vec::new(),
                records: tx.undo.iter().map(|u| (u.page, u.slot)).collect(),
            };
            if self.cfg.record_commits {
                self.commits.in_flight.push(rec.clone());
            }
            self.log.counts.commit_records += 1;
            let lsn = self.log.append(tid, 0, 0, Op::Commit, 0, 0, prev, 0)?;
            self.clients[c].tx_mut().last_lsn = lsn;
            let done = self.log.force(&mut self.io, t, false)?;
            self.commits.acknowledge(tid);
            self.log.append(tid, 0, 0, Op::End, 0, 0, lsn, 0)?;
            // Over in the log: a checkpoint from now on does not list it.
            let tx = self.clients[c].tx_mut();
            (tx.first_lsn, tx.last_lsn) = (0, 0);
            self.after_append(t)?;
            done
        };
        self.clients[c].state = State::Ending {
            commit: true,
            restart: false,
            since_ns: t,
        };
        self.sim.schedule(c, done);
        Ok(())
    }

    /// `c` just blocked: a deadlock's victim rolls back ([`client::on_block`]).
    fn on_block(&mut self, c: usize, t: u64) -> Result<()> {
        client::on_block(&mut self.clients, &mut self.locks, &mut self.sim, c, t, |tx| tx.order);
        Ok(())
    }

    /// `c`'s commit or rollback is complete at `t`: counts, locks released,
    /// then its next plan or, for a victim, its back-off.
    fn end(&mut self, c: usize, t: u64, commit: bool, restart: bool, since_ns: u64) -> Result<()> {
        let tx = self.clients[c].tx.as_mut().expect("an ending client has a transaction");
        if commit {
            for u in tx.undo.drain(..) {
                self.committed.insert((u.page, u.slot), tx.tid);
                self.uncommitted.remove(&(u.page, u.slot));
            }
            self.sim.tally.committed(tx.plan.profile, t - tx.first_start_ns, t - since_ns);
        } else {
            debug_assert!(tx.undo.is_empty(), "a rollback ended with updates left");
            if !restart {
                self.sim.tally.aborted += 1;
            }
        }
        tx.first_lsn = 0;
        tx.last_lsn = 0;
        tx.log_pages_read.clear();
        if client::release(&mut self.clients, &mut self.locks, &mut self.sim, c, t, restart) {
            return Ok(());
        }
        self.start_next(c, t)
    }
}

impl Engine for RecordDbms<'_> {
    fn sim(&mut self) -> &mut Sim {
        &mut self.sim
    }

    fn event(&mut self, c: usize, t: u64) -> Result<()> {
        RecordDbms::event(self, c, t)
    }
}
