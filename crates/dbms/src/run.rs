//! The DBMS on the device clock: a discrete-event simulation of `clients`
//! closed-loop clients (no think time; CPU time is ignored, as in the
//! paper), each event one step of one client with at most one device call,
//! run in time order (ties: first scheduled first), so the device sees its
//! submissions in time order and operations of different clients overlap
//! wherever its dies are free (`txftl_ftl::Device::set_clock`).
//!
//! Recovery is the device's shadow paging: a transaction's pages are
//! written with `write_tx` under its id (a page evicted while it is open,
//! steal; its remaining dirty pages before its commit, force), then
//! `commit`; a rollback is `abort`, which writes nothing itself.

use crate::buffer::BufferPool;
use crate::client::{self, Client, State, Tx};
use crate::config::DbmsConfig;
use crate::error::{DbmsError, Result};
use crate::io::Io;
use crate::locks::{Grant, LockTable, Mode};
use crate::report::{CommitLog, CommitRecord, DbmsReport, Tally};
use crate::sim::{run_phase, Engine, Sim};
use crate::tpcc::{Access, Generator, Layout};
use txftl_ftl::AnyDevice;

/// The isolation level (the concurrent host's name) a protocol must offer
/// for the DBMS: several transactions open at once, never two writing one page.
pub const ISOLATION_NEEDED: &str = "no-page-conflict";

pub struct Dbms<'d> {
    io: Io<'d>,
    protocol: &'static str,
    cfg: DbmsConfig,
    gen: Generator,
    buffer: BufferPool,
    locks: LockTable,
    clients: Vec<Client<Tx>>,
    sim: Sim,
    /// Each DB page's committed version (the id of the transaction that
    /// committed it last; 0: the load).
    committed: Vec<u64>,
    log: CommitLog,
    loaded: bool,
}

/// Checks that `dev` can carry the DBMS: transactions, several open at once.
fn check_protocol(dev: &dyn AnyDevice) -> Result<&'static str> {
    let entry = dev.entry();
    if !entry.transactional {
        return Err(DbmsError::NotTransactional { protocol: entry.name });
    }
    if !entry.isolation.contains(&ISOLATION_NEEDED) {
        return Err(DbmsError::NoConcurrentTransactions {
            protocol: entry.name,
            levels: entry.isolation.join(", "),
        });
    }
    Ok(entry.name)
}

impl<'d> Dbms<'d> {
    /// A DBMS on `dev` (formatted, empty), its configuration checked.
    pub fn new(dev: &'d mut dyn AnyDevice, cfg: DbmsConfig) -> Result<Dbms<'d>> {
        cfg.validate()?;
        if cfg.recovery.logs() {
            return Err(DbmsError::Config(format!(
                "the page-level engine's recovery is the device's shadow paging, not {} (the record-level engine runs it)",
                cfg.recovery.name()
            )));
        }
        let protocol = check_protocol(&*dev)?;
        let layout = Layout::new(cfg.warehouses, cfg.db_pages)?;
        let have = dev.info().logical_pages;
        let need = layout.pages as u64 * cfg.flash_pages_per_db_page as u64 + cfg.cold_pages(have);
        if need > have as u64 {
            return Err(DbmsError::DeviceTooSmall {
                need,
                db_pages: layout.pages,
                per_db_page: cfg.flash_pages_per_db_page,
                have,
            });
        }
        let clients = cfg.clients as usize;
        Ok(Dbms {
            io: Io::new(dev, cfg.flash_pages_per_db_page)?,
            protocol,
            committed: vec![0; layout.pages as usize],
            gen: Generator::new(layout, cfg.seed, cfg.abort_pct, cfg.max_pages_per_tx).with_pages_written(cfg.pages_written),
            buffer: BufferPool::new(cfg.buffer_pages, clients),
            locks: LockTable::new(clients),
            clients: (0..clients).map(|_| Client::idle()).collect(),
            sim: Sim::new(cfg.seed, cfg.backoff_ns_max),
            log: CommitLog::default(),
            loaded: false,
            cfg,
        })
    }

    pub fn layout(&self) -> &Layout {
        self.gen.layout()
    }

    /// The device (to arm a power cut, or read its counters).
    pub fn device(&mut self) -> &mut dyn AnyDevice {
        self.io.device()
    }

    /// The commits so far (kept with `record_commits`).
    pub fn commit_log(&self) -> &CommitLog {
        &self.log
    }

    /// Writes the cold data ([`DbmsConfig::cold_fill_pct`]), then every DB
    /// page once (version 0), outside transactions, all submitted at the
    /// current instant, then flushes: the loaded database.
    pub fn load(&mut self) -> Result<()> {
        let at = self.io.now_ns();
        let first = self.layout().pages * self.cfg.flash_pages_per_db_page;
        let cold = self.cfg.cold_pages(self.io.device().info().logical_pages) as u32;
        for lpn in first..first + cold {
            self.io.write_cold(at, lpn)?;
        }
        for page in 0..self.layout().pages {
            self.io.write(at, None, page, 0)?;
        }
        self.io.flush(at)?;
        self.loaded = true;
        Ok(())
    }

    /// Runs `warmup_transactions` transactions unmeasured, then
    /// `transactions` transactions (loading the database first if `load`
    /// was not called) and reports on the latter; device counters count
    /// from their start. The warm-up leaves the buffer and the device as it
    /// found them at its end: only the counts start again.
    pub fn run(&mut self) -> Result<DbmsReport> {
        if !self.loaded {
            self.load()?;
        }
        if self.cfg.warmup_transactions > 0 {
            self.phase(self.cfg.warmup_transactions)?;
            self.sim.tally = Tally::default();
            self.buffer.counts = Default::default();
        }
        self.io.device().reset_stats();
        self.phase(self.cfg.transactions)?;
        let device = self.io.device().stats();
        Ok(self
            .sim
            .tally
            .report(self.protocol, &self.cfg, self.layout().pages, self.buffer.counts, device))
    }

    /// Runs `transactions` more plans to their end ([`run_phase`]); every
    /// client is idle again at its end.
    fn phase(&mut self, transactions: u64) -> Result<()> {
        let (clients, start_ns) = (self.clients.len(), self.io.now_ns());
        run_phase(self, transactions, clients, start_ns)?;
        client::assert_quiet(&self.clients, &self.locks);
        assert!(self.buffer.is_quiet(), "the phase ended with dirty or pinned pages");
        Ok(())
    }

    /// Client `c`'s next step, at `t`.
    fn event(&mut self, c: usize, t: u64) -> Result<()> {
        match self.clients[c].state {
            State::Idle => self.start_next(c, t),
            State::Run => self.advance(c, t),
            State::Blocked => unreachable!("client {c} scheduled while blocked"),
            State::Backoff => {
                let tid = self.sim.new_tid()?;
                self.clients[c].tx_mut().restart(tid);
                self.sim.tally.restarts += 1;
                self.clients[c].state = State::Run;
                self.advance(c, t)
            }
            State::Loading {
                frame, read_issued: false, ..
            } => {
                let done = self.read_into(c, t, frame)?;
                self.clients[c].state = State::Loading {
                    frame,
                    read_issued: true,
                    rollback: None,
                };
                self.sim.schedule(c, done);
                Ok(())
            }
            State::Loading {
                frame, read_issued: true, ..
            } => {
                let a = self.clients[c].tx().plan.accesses[self.clients[c].tx().step];
                debug_assert_eq!(self.buffer.frame(frame).page, a.page);
                self.buffer.touch(frame);
                self.apply(c, frame, a);
                self.clients[c].state = State::Run;
                self.advance(c, t)
            }
            State::Committing { since_ns } => self.commit_step(c, t, since_ns),
            State::Aborting { restart } => self.abort_now(c, t, restart),
            State::Ending { commit, restart, since_ns } => self.end(c, t, commit, restart, since_ns),
        }
    }

    /// Takes the next plan, if any is left.
    fn start_next(&mut self, c: usize, t: u64) -> Result<()> {
        let Some(order) = self.sim.take_plan() else {
            self.clients[c].state = State::Idle;
            return Ok(());
        };
        let plan = self.gen.next_plan();
        let tid = self.sim.new_tid()?;
        self.clients[c].tx = Some(Tx::new(plan, tid, t, order));
        self.clients[c].state = State::Run;
        self.advance(c, t)
    }

    /// Runs `c`'s accesses from its current one until one needs the device
    /// or a lock it cannot have, or the plan ends (then its commit or
    /// rollback starts).
    fn advance(&mut self, c: usize, t: u64) -> Result<()> {
        loop {
            let tx = self.clients[c].tx();
            let Some(&a) = tx.plan.accesses.get(tx.step) else {
                return if tx.plan.abort {
                    self.abort_now(c, t, false)
                } else {
                    self.commit_step(c, t, t)
                };
            };
            let mode = if a.write { Mode::Exclusive } else { Mode::Shared };
            if self.locks.request(c, a.page as u64, mode) == Grant::Blocked {
                self.clients[c].state = State::Blocked;
                return self.on_block(c, t);
            }
            let Some(i) = self.buffer.resident(a.page) else {
                return self.miss(c, t, a);
            };
            let f = *self.buffer.frame(i);
            if !f.ready_at(t) {
                // Another reader's load of the page: ask again once it is in.
                let at = f.ready_ns.unwrap_or(f.read_at_ns).max(t);
                self.sim.schedule(c, at);
                return Ok(());
            }
            self.buffer.counts.hits += 1;
            self.buffer.touch(i);
            self.apply(c, i, a);
        }
    }

    /// The version `c` must find in `page`: its own write, or the committed one.
    fn expected(&self, c: usize, page: u32) -> u64 {
        let tx = self.clients[c].tx();
        if tx.written.contains(&page) {
            tx.tid as u64
        } else {
            self.committed[page as usize]
        }
    }

    /// A miss: a frame is claimed; a dirty victim is written first, under
    /// the transaction that dirtied it (steal), then the page is read.
    fn miss(&mut self, c: usize, t: u64, a: Access) -> Result<()> {
        let version = self.expected(c, a.page);
        let (frame, evicted) = self
            .buffer
            .claim(a.page, version, t)
            .expect("the configuration leaves a frame neither loading nor pinned");
        if let Some(old) = evicted.filter(|f| f.dirty_by.is_some()) {
            let owner = old.dirty_by.expect("filtered");
            let done = self.write_for(owner, t, old.page, old.version)?;
            self.buffer.read_after(frame, done);
            self.clients[c].state = State::Loading {
                frame,
                read_issued: false,
                rollback: None,
            };
            self.sim.schedule(c, done);
            return Ok(());
        }
        let done = self.read_into(c, t, frame)?;
        self.clients[c].state = State::Loading {
            frame,
            read_issued: true,
            rollback: None,
        };
        self.sim.schedule(c, done);
        Ok(())
    }

    /// Issues the read of `frame`'s page for `c`; when it completes.
    fn read_into(&mut self, c: usize, t: u64, frame: usize) -> Result<u64> {
        let page = self.buffer.frame(frame).page;
        let version = self.expected(c, page);
        let tx = self.clients[c].tx();
        let tid = tx.begun.then_some(tx.tid);
        let done = self.io.read(t, tid, page, version)?;
        self.buffer.loaded(frame, version, done);
        Ok(done)
    }

    /// Writes `page` at `version` under the open transaction of `owner`,
    /// beginning it on the device first if this is its first page.
    fn write_for(&mut self, owner: usize, t: u64, page: u32, version: u64) -> Result<u64> {
        let tx = self.clients[owner].tx();
        let tid = tx.tid;
        assert_eq!(
            version, tid as u64,
            "page {page} of client {owner} holds another transaction's version"
        );
        assert_eq!(
            self.locks.held(owner, page as u64),
            Some(Mode::Exclusive),
            "page {page} written without its lock"
        );
        if !tx.begun {
            self.io.begin(t, tid)?;
            self.clients[owner].tx_mut().begun = true;
        }
        self.io.write(t, Some(tid), page, version)
    }

    /// Access `a` of `c` on resident `frame`: a write dirties it and pins it.
    fn apply(&mut self, c: usize, frame: usize, a: Access) {
        let pins = self.cfg.pinned_frames_per_tx;
        if a.write {
            let tid = self.clients[c].tx().tid;
            self.buffer.write(frame, c, tid as u64);
            let tx = self.clients[c].tx_mut();
            tx.written.insert(a.page);
            let (pin, unpin) = tx.dirtied(a.page, pins);
            if pin {
                self.buffer.pin(a.page);
            }
            if let Some(p) = unpin {
                self.buffer.unpin(p);
            }
        } else {
            debug_assert_eq!(self.buffer.frame(frame).version, self.expected(c, a.page));
        }
        self.clients[c].tx_mut().step += 1;
    }

    /// `c` just blocked: a deadlock's victim rolls back ([`client::on_block`]).
    fn on_block(&mut self, c: usize, t: u64) -> Result<()> {
        client::on_block(&mut self.clients, &mut self.locks, &mut self.sim, c, t, |tx| tx.order);
        Ok(())
    }

    /// Force: the next dirty page of `c` is written; none left, the commit.
    fn commit_step(&mut self, c: usize, t: u64, since_ns: u64) -> Result<()> {
        self.clients[c].state = State::Committing { since_ns };
        if let Some((page, version)) = self.buffer.take_dirty(c) {
            let done = self.write_for(c, t, page, version)?;
            self.sim.schedule(c, done);
            return Ok(());
        }
        let tx = self.clients[c].tx();
        let (tid, begun) = (tx.tid, tx.begun);
        let done = if begun {
            // The device runs a call to its end before it returns: the
            // commit is acknowledged when the call returns, though the
            // client sees it complete at `done` on the device clock.
            let rec = CommitRecord {
                tid,
                pages: tx.written.iter().copied().collect(),
                records: Vec::new(),
            };
            if self.cfg.record_commits {
                self.log.in_flight.push(rec.clone());
            }
            let done = self.io.commit(t, tid)?;
            self.log.acknowledge(tid);
            done
        } else {
            t
        };
        self.clients[c].state = State::Ending {
            commit: true,
            restart: false,
            since_ns,
        };
        self.sim.schedule(c, done);
        Ok(())
    }

    /// Rolls `c`'s attempt back: its pages leave the buffer (the versions
    /// they hold are no one's), then the device aborts it.
    fn abort_now(&mut self, c: usize, t: u64, restart: bool) -> Result<()> {
        let tx = self.clients[c].tx_mut();
        let pinned: Vec<u32> = tx.pinned.drain(..).collect();
        let written: Vec<u32> = tx.written.iter().copied().collect();
        let (tid, begun) = (tx.tid, tx.begun);
        pinned.into_iter().for_each(|p| self.buffer.unpin(p));
        written.into_iter().for_each(|p| self.buffer.drop_page(p));
        let done = if begun { self.io.abort(t, tid)? } else { t };
        self.clients[c].state = State::Ending {
            commit: false,
            restart,
            since_ns: t,
        };
        self.sim.schedule(c, done);
        Ok(())
    }

    /// `c`'s commit or abort completed at `t`: the counts, its locks
    /// released (waiters ask again now), then its next transaction or,
    /// for a victim, its back-off.
    fn end(&mut self, c: usize, t: u64, commit: bool, restart: bool, since_ns: u64) -> Result<()> {
        let pinned: Vec<u32> = self.clients[c].tx_mut().pinned.drain(..).collect();
        pinned.into_iter().for_each(|p| self.buffer.unpin(p));
        // The field itself, not `self.tx`: the counts below borrow other fields.
        let tx = self.clients[c].tx.as_ref().expect("an ending client has a transaction");
        if commit {
            let tid = tx.tid;
            for &p in &tx.written {
                self.committed[p as usize] = tid as u64;
            }
            self.sim.tally.committed(tx.plan.profile, t - tx.first_start_ns, t - since_ns);
        } else if !restart {
            self.sim.tally.aborted += 1;
        }
        if client::release(&mut self.clients, &mut self.locks, &mut self.sim, c, t, restart) {
            return Ok(());
        }
        self.start_next(c, t)
    }
}

impl Engine for Dbms<'_> {
    fn sim(&mut self) -> &mut Sim {
        &mut self.sim
    }

    fn event(&mut self, c: usize, t: u64) -> Result<()> {
        Dbms::event(self, c, t)
    }
}

/// Formats nothing: builds a DBMS on `dev` (the page-level engine for
/// shadow paging, the record-level one for a logging recovery manager),
/// loads the database and runs.
pub fn run_dbms(dev: &mut dyn AnyDevice, cfg: DbmsConfig) -> Result<DbmsReport> {
    if cfg.recovery.logs() {
        let mut db = crate::RecordDbms::new(dev, cfg)?;
        db.load()?;
        return db.run();
    }
    let mut db = Dbms::new(dev, cfg)?;
    db.load()?;
    db.run()
}
