//! Several TPC-C clients on one database, each its own SQLite connection,
//! interleaved statement by statement in simulated time, with SQLite's own
//! locking (kept across connections by the VFS) deciding who waits.
//!
//! How: each client is a coroutine with a stack of its own, all on the
//! caller's thread. The scheduler resumes the client whose clock is
//! earliest (ties: the one resumed longest ago); that client runs one step
//! (its next SQL statement, up to where it is about to prepare the one
//! after) with the device clock set to its own clock, and suspends. Its
//! clock becomes the device clock after the step. So the same seed gives the
//! same interleaving, the same locks refused, the same figures. A switch
//! between coroutines is a few instructions, where handing the turn between
//! OS threads costs each step two wake-ups of a sleeping thread (more than
//! the statements themselves on this workload).
//!
//! A statement SQLite refuses with `SQLITE_BUSY` or `SQLITE_LOCKED` (another
//! connection's lock precludes it) is a busy event. A busy `COMMIT` keeps the
//! transaction open (SQLite's rule: the writer holds PENDING, new readers are
//! kept out, the readers it waits for finish) and is retried; a busy
//! statement anywhere else rolls the transaction back (SQLite's advice: two
//! writers each holding SHARED and waiting for the other would never
//! finish) and the client starts it over. Either way the client first backs
//! off on its clock: exponential from [`ClientsSpec::backoff_ns_min`] to
//! [`ClientsSpec::backoff_ns_max`], the wait drawn in [b/2, b] from the
//! client's own seeded stream. SQLite's own busy handler is off
//! (`busy_timeout` 0): it would sleep and retry inside the statement,
//! unseen. Writers open with `BEGIN` (deferred: SHARED at the first read,
//! RESERVED at the first write) unless [`ClientsSpec::begin`] asks for
//! `BEGIN IMMEDIATE`. A transaction's latency runs from when its client was ready for
//! it to its `COMMIT`'s (or `ROLLBACK`'s) completion, waits and retries included.
//!
//! What this models and what it does not: SQLite's CPU time is not
//! simulated (a statement served from the page cache takes no time); a
//! step's device operations are submitted at the client's clock, and a step
//! may run past another client's clock before that client's next step starts
//! (the device queues it behind whatever keeps its units busy then).

use super::rand::{Random, STREAM_CLIENT_BACKOFF};
use super::txn::{begin_and_body, Db, Done};
use super::{NextTx, Outcome, Runner, TpccError, TpccReport, TpccSpec, TxKind, STATEMENT_CACHE};
use crate::Stack;
use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use rusqlite::Connection;
use serde::Serialize;
use std::cell::{Cell, RefCell};

/// How a client opens a transaction that writes (New-Order, Payment, Delivery).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Begin {
    /// `BEGIN`: SHARED at the first read, RESERVED at the first write (a busy
    /// write then restarts the transaction, its reads done again).
    #[default]
    Deferred,
    /// `BEGIN IMMEDIATE`: RESERVED (in WAL, the write lock) at once, so a
    /// writer waits before it reads, never after; readers still use `BEGIN`.
    Immediate,
}

impl Begin {
    pub fn parse(s: &str) -> Option<Begin> {
        match s {
            "deferred" => Some(Begin::Deferred),
            "immediate" => Some(Begin::Immediate),
            _ => None,
        }
    }

    /// The statement that opens a transaction of `kind`.
    fn statement(self, kind: TxKind) -> &'static str {
        match self {
            Begin::Immediate if kind.writes() => "BEGIN IMMEDIATE",
            _ => "BEGIN",
        }
    }
}

/// How clients run and back off.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientsSpec {
    pub begin: Begin,
    /// First backoff after a busy event, ns of simulated time.
    pub backoff_ns_min: u64,
    /// Longest backoff, ns (the backoff doubles up to this).
    pub backoff_ns_max: u64,
    /// Busy events one transaction may meet before the run fails (a bound,
    /// so a livelock is an error, not a hang).
    pub busy_max_per_transaction: u32,
}

impl Default for ClientsSpec {
    fn default() -> ClientsSpec {
        ClientsSpec {
            begin: Begin::Deferred,
            // About one flash page program: a lock is seldom held for less.
            backoff_ns_min: 100_000,
            backoff_ns_max: 10_000_000,
            busy_max_per_transaction: 10_000,
        }
    }
}

/// One transaction as a client ran it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ClientTx {
    pub client: u32,
    /// Its place in the run's sequence of transactions (its inputs and date).
    pub index: u64,
    pub kind: TxKind,
    pub outcome: Outcome,
    /// Simulated ns: when its client was ready for it, and when it ended.
    pub ready_ns: u64,
    pub end_ns: u64,
    /// Host page writes (file system) and flash programs of its steps.
    pub host_page_writes: u64,
    pub flash_programs: u64,
    /// Busy events it met; restarts from `BEGIN`; `COMMIT`s retried.
    pub busy: u32,
    pub restarts: u32,
    pub commit_retries: u32,
}

impl ClientTx {
    pub fn latency_ns(&self) -> u64 {
        self.end_ns - self.ready_ns
    }
}

/// Busy events and retries, per transaction type and in all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BusyCounts {
    pub busy: u64,
    pub restarts: u64,
    pub commit_retries: u64,
}

impl BusyCounts {
    fn add(&mut self, tx: &ClientTx) {
        self.busy += tx.busy as u64;
        self.restarts += tx.restarts as u64;
        self.commit_retries += tx.commit_retries as u64;
    }
}

/// What a run of several clients did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClientsReport {
    pub clients: u32,
    pub report: TpccReport,
    pub busy: BusyCounts,
    /// In the order of [`TxKind::ALL`].
    pub busy_by_kind: [BusyCounts; 5],
    /// Steps (statements) run, and how many times the turn went to another client.
    pub steps: u64,
    pub switches: u64,
    /// Simulated ns: the clients' start, and the last one's end.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What the scheduler tells a client it resumes.
enum Cmd {
    /// Start this transaction.
    Run(NextTx),
    /// Go on.
    Resume,
    /// The run is over (or failed): stop, and hand the connection back.
    Stop,
}

/// What a client tells the scheduler as it suspends.
enum Event {
    /// Between two statements.
    Paused,
    /// Busy: move my clock on by this many ns before my next step.
    Backoff(u64),
    Done(NextTx, Result<Ran, TpccError>),
}

struct Ran {
    done: Done,
    busy: u32,
    restarts: u32,
    commit_retries: u32,
}

/// The counters a step is charged with.
#[derive(Clone, Copy)]
struct Snap {
    host_page_writes: u64,
    flash_programs: u64,
    now_ns: u64,
}

fn snap(stack: &Stack) -> Result<Snap, TpccError> {
    stack
        .with_fs_mut(|fs| Snap {
            host_page_writes: fs.stats().host_page_writes(),
            flash_programs: fs.device().stats().flash_programs,
            now_ns: fs.device().now_ns(),
        })
        .map_err(|e| TpccError::Stopped(e.to_string()))
}

fn set_clock(stack: &Stack, at_ns: u64) -> Result<(), TpccError> {
    stack
        .with_fs_mut(|fs| fs.device_mut().set_clock(at_ns))
        .map_err(|e| TpccError::Stopped(e.to_string()))
}

/// A transaction in flight on a client.
struct Current {
    index: u64,
    kind: TxKind,
    ready_ns: u64,
    host_page_writes: u64,
    flash_programs: u64,
}

/// A client's coroutine: resumed with commands, suspends with events,
/// returns its connection (none after a failure).
type ClientCoroutine = Coroutine<Cmd, Event, Option<Connection>>;

/// Each client's stack. SQLite recurses while it parses and plans (the
/// stack of a thread it is built for is 8 MiB on Linux, the size given
/// here); the pages are touched only as deep as a client goes.
const CLIENT_STACK: usize = 8 << 20;

/// The scheduler's view of one client.
struct Slot {
    clock_ns: u64,
    /// When it was last resumed (the scheduler's step count): ties go to the longest waiting.
    resumed_at: u64,
    /// Dealt, not started yet.
    dealt: Option<NextTx>,
    current: Option<Current>,
}

impl Slot {
    fn has_work(&self) -> bool {
        self.dealt.is_some() || self.current.is_some()
    }
}

/// Runs `spec.transactions` transactions of the mix on the clients `conns`
/// (one connection each, to the loaded database `stack` serves), calling
/// `on_tx` as each transaction ends. Returns the report and the connections.
pub fn run_clients(
    stack: &Stack,
    conns: Vec<Connection>,
    spec: &TpccSpec,
    how: &ClientsSpec,
    mut on_tx: impl FnMut(&ClientTx),
) -> Result<(ClientsReport, Vec<Connection>), TpccError> {
    if conns.is_empty() {
        return Err(TpccError::Spec("at least one client".into()));
    }
    if how.backoff_ns_min == 0 || how.backoff_ns_min > how.backoff_ns_max || how.backoff_ns_max > u32::MAX as u64 {
        return Err(TpccError::Spec(format!(
            "backoff must be 0 < min <= max <= {} ns, got {}..{}",
            u32::MAX,
            how.backoff_ns_min,
            how.backoff_ns_max
        )));
    }
    let mut runner = Runner::new(&conns[0], spec)?;
    for c in &conns {
        c.busy_timeout(std::time::Duration::ZERO)?;
        c.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    }
    let n = conns.len();
    let start_ns = snap(stack)?.now_ns;
    let mut report = ClientsReport {
        clients: n as u32,
        report: TpccReport::default(),
        busy: BusyCounts::default(),
        busy_by_kind: [BusyCounts::default(); 5],
        steps: 0,
        switches: 0,
        start_ns,
        end_ns: start_ns,
    };
    let mut clients = Vec::with_capacity(n);
    let mut slots = Vec::with_capacity(n);
    for (id, conn) in conns.into_iter().enumerate() {
        let client = Client {
            id,
            ctx: runner.ctx.clone(),
            backoff: RefCell::new(Backoff::new(how, spec.seed, id)),
            begin: how.begin,
            busy_max: how.busy_max_per_transaction,
        };
        let stack = DefaultStack::new(CLIENT_STACK).map_err(|e| TpccError::Stopped(format!("client {id}'s stack: {e}")))?;
        let co: ClientCoroutine = Coroutine::with_stack(stack, move |yielder, first| client.serve(yielder, first, conn));
        clients.push(co);
        slots.push(Slot {
            clock_ns: start_ns,
            resumed_at: 0,
            dealt: None,
            current: None,
        });
    }
    // Every client takes a transaction, in client order.
    for slot in &mut slots {
        slot.dealt = runner.next_transaction();
    }
    let result = schedule(stack, &mut runner, &mut slots, &mut clients, &mut report, &mut on_tx);
    let conns: Vec<Connection> = clients.iter_mut().filter_map(stop).collect();
    result?;
    if conns.len() != n {
        return Err(TpccError::Stopped("a client ended without its connection".into()));
    }
    report.report = runner.report.clone();
    Ok((report, conns))
}

/// Stops a client (at once, or after the transaction it is in fails on the
/// stop) and takes its connection back.
fn stop(co: &mut ClientCoroutine) -> Option<Connection> {
    while !co.done() {
        if let CoroutineResult::Return(conn) = co.resume(Cmd::Stop) {
            return conn;
        }
    }
    None
}

/// The scheduler's round: the earliest client runs one step, until no client has work.
fn schedule(
    stack: &Stack,
    runner: &mut Runner,
    slots: &mut [Slot],
    clients: &mut [ClientCoroutine],
    report: &mut ClientsReport,
    on_tx: &mut impl FnMut(&ClientTx),
) -> Result<(), TpccError> {
    let mut last = usize::MAX;
    while let Some(c) = (0..slots.len())
        .filter(|&i| slots[i].has_work())
        .min_by_key(|&i| (slots[i].clock_ns, slots[i].resumed_at, i))
    {
        report.steps += 1;
        report.switches += (c != last) as u64;
        last = c;
        let slot = &mut slots[c];
        slot.resumed_at = report.steps;
        set_clock(stack, slot.clock_ns)?;
        let before = snap(stack)?;
        let cmd = match slot.dealt.take() {
            Some(tx) => {
                slot.current = Some(Current {
                    index: tx.index,
                    kind: tx.kind,
                    ready_ns: slot.clock_ns,
                    host_page_writes: 0,
                    flash_programs: 0,
                });
                Cmd::Run(tx)
            }
            None => Cmd::Resume,
        };
        let event = match clients[c].resume(cmd) {
            CoroutineResult::Yield(event) => event,
            CoroutineResult::Return(_) => return Err(TpccError::Stopped(format!("client {c} is gone"))),
        };
        let after = snap(stack)?;
        slot.clock_ns = slot.clock_ns.max(after.now_ns);
        let cur = slot.current.as_mut().expect("a client resumed has a transaction");
        cur.host_page_writes += after.host_page_writes - before.host_page_writes;
        cur.flash_programs += after.flash_programs - before.flash_programs;
        match event {
            Event::Paused => {}
            Event::Backoff(ns) => slot.clock_ns += ns,
            Event::Done(tx, ran) => {
                let ran = ran?;
                let cur = slot.current.take().expect("checked above");
                let done = ClientTx {
                    client: c as u32,
                    index: cur.index,
                    kind: cur.kind,
                    outcome: ran.done.outcome,
                    ready_ns: cur.ready_ns,
                    end_ns: slot.clock_ns,
                    host_page_writes: cur.host_page_writes,
                    flash_programs: cur.flash_programs,
                    busy: ran.busy,
                    restarts: ran.restarts,
                    commit_retries: ran.commit_retries,
                };
                runner.record(&tx, ran.done);
                report.busy.add(&done);
                report.busy_by_kind[done.kind.index()].add(&done);
                on_tx(&done);
                slot.dealt = runner.next_transaction();
            }
        }
    }
    report.end_ns = slots.iter().map(|s| s.clock_ns).max().unwrap_or(report.start_ns);
    // The device's clock at the last client's end: the run's simulated time.
    set_clock(stack, report.end_ns)
}

/// Exponential backoff with jitter, from the client's own stream.
struct Backoff {
    rng: Random,
    min_ns: u64,
    max_ns: u64,
}

impl Backoff {
    fn new(how: &ClientsSpec, seed: u64, client: usize) -> Backoff {
        Backoff {
            rng: Random::new(seed, STREAM_CLIENT_BACKOFF + client as u64),
            min_ns: how.backoff_ns_min,
            max_ns: how.backoff_ns_max,
        }
    }

    /// The wait after the `n`th busy event of a transaction (n >= 1).
    fn wait_ns(&mut self, n: u32) -> u64 {
        let b = self.min_ns.saturating_mul(1u64 << (n - 1).min(32)).min(self.max_ns);
        // In [b/2, b]; b <= u32::MAX (checked in run_clients).
        self.rng.uniform((b / 2) as u32, b as u32) as u64
    }
}

/// One client, in its coroutine.
struct Client {
    id: usize,
    ctx: super::Ctx,
    backoff: RefCell<Backoff>,
    begin: Begin,
    busy_max: u32,
}

impl Client {
    /// Runs the transactions it is dealt (the first with `first`) until the
    /// scheduler stops it; hands back its connection (none after a failure).
    fn serve(self, y: &Yielder<Cmd, Event>, first: Cmd, conn: Connection) -> Option<Connection> {
        let mut failed = false;
        let mut cmd = first;
        while let Cmd::Run(tx) = cmd {
            // A panic is the transaction's failure, reported as any other.
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.run(y, &conn, &tx)))
                .unwrap_or_else(|_| Err(TpccError::Stopped(format!("client {} panicked", self.id))));
            failed |= ran.is_err();
            cmd = y.suspend(Event::Done(tx, ran));
        }
        (!failed).then_some(conn)
    }

    /// Suspends with `event` until the scheduler resumes this client.
    fn yield_with(&self, y: &Yielder<Cmd, Event>, event: Event) -> Result<(), TpccError> {
        match y.suspend(event) {
            Cmd::Resume => Ok(()),
            _ => Err(TpccError::Stopped(format!("client {}: the scheduler stopped", self.id))),
        }
    }

    /// One transaction, to its end, through busy events.
    fn run(&self, y: &Yielder<Cmd, Event>, conn: &Connection, tx: &NextTx) -> Result<Ran, TpccError> {
        // The turn comes with the transaction: its first statement runs at once.
        let fresh = Cell::new(true);
        let pause = || {
            if fresh.replace(false) {
                return Ok(());
            }
            self.yield_with(y, Event::Paused)
        };
        let db = Db::new(conn, &pause);
        let mut ran = Ran {
            done: Done {
                outcome: Outcome::Committed,
                skipped_districts: 0,
            },
            busy: 0,
            restarts: 0,
            commit_retries: 0,
        };
        loop {
            let body = begin_and_body(&db, &self.ctx, &tx.input, self.begin.statement(tx.kind));
            let done = match body {
                Ok(done) => done,
                Err(e) => {
                    db.rollback_if_open();
                    if !e.is_busy() {
                        return Err(e);
                    }
                    ran.restarts += 1;
                    self.busy(y, &mut ran)?;
                    fresh.set(true);
                    continue;
                }
            };
            ran.done = done;
            // COMMIT (or New-Order's ROLLBACK); a busy COMMIT is retried as is.
            loop {
                let end = db.prepare_cached(done.outcome.end_statement()).and_then(|mut s| Ok(s.execute([])?));
                match end {
                    Ok(_) => return Ok(ran),
                    Err(e) if e.is_busy() && !conn.is_autocommit() => {
                        ran.commit_retries += 1;
                        self.busy(y, &mut ran)?;
                        fresh.set(true);
                    }
                    Err(e) => {
                        db.rollback_if_open();
                        return Err(e);
                    }
                }
            }
        }
    }

    /// Counts a busy event and backs off (suspending until resumed).
    fn busy(&self, y: &Yielder<Cmd, Event>, ran: &mut Ran) -> Result<(), TpccError> {
        ran.busy += 1;
        if ran.busy > self.busy_max {
            return Err(TpccError::Stopped(format!(
                "client {} met SQLITE_BUSY {} times in one transaction (limit {})",
                self.id, ran.busy, self.busy_max
            )));
        }
        let wait = self.backoff.borrow_mut().wait_ns(ran.busy);
        self.yield_with(y, Event::Backoff(wait))
    }
}
