//! Replaying a txftl transactional block trace ([`crate::trace`]) on any
//! protocol, with N concurrent clients and an isolation level.
//!
//! The trace is cut into *units*: a transaction (its `begin` to its `commit`
//! or `abort`, with every operation naming its id in between) or a single
//! non-transactional operation. Units are dealt, in trace order, to the
//! clients as they become free (a closed loop each: the next operation is
//! submitted when the previous one completed, plus the think time); a client
//! runs its unit's operations in order. Each unit gets a fresh transaction id
//! on the device, so a trace may reuse ids.
//!
//! Isolation levels (the LightTx paper's evaluation, sec. IV-B, built from
//! barriers: every earlier operation completes before a later one starts):
//! - `strict`: transactions one at a time, a barrier after each commit or abort;
//! - `no-page-conflict`: the trace is cut into segments in which no two
//!   transactions write the same page; a barrier between segments;
//! - `serializable`: no barriers; the result must equal the trace's serial
//!   order, so a transaction's commit waits until every earlier transaction
//!   (in trace order) that wrote one of its pages has ended. Its writes may
//!   overlap theirs: several uncommitted versions of a page exist at once.
//!
//! A `barrier` in the trace itself is kept at every level. Non-transactional
//! operations never conflict (they are not isolated by any level).
//!
//! Abort injection: each transaction ends in `abort` instead of `commit` with
//! probability `abort_pct`%, drawn in trace order from the seed (ChaCha8).
//! On a device without transactions, transactions run through the host
//! journal (as `txwrite` does).

use crate::blocktrace::TraceError;
use crate::exec::{Executor, HostCounts};
use crate::latency::LatencyReport;
use crate::trace::{Trace, TraceKind, TraceOp, TraceRecord};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use txftl_ftl::AnyDevice;
use txftl_ftl::{DeviceError, DeviceStats};
use txftl_ftl::{Op, OpKind};
use txftl_workload::journal::HostJournal;
use txftl_workload::run::{Driver, Outcome};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Isolation {
    Strict,
    NoPageConflict,
    Serializable,
}

impl Isolation {
    pub const NAMES: [&'static str; 3] = ["strict", "no-page-conflict", "serializable"];

    pub fn parse(s: &str) -> Option<Isolation> {
        match s {
            "strict" => Some(Isolation::Strict),
            "no-page-conflict" => Some(Isolation::NoPageConflict),
            "serializable" => Some(Isolation::Serializable),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Isolation::Strict => "strict",
            Isolation::NoPageConflict => "no-page-conflict",
            Isolation::Serializable => "serializable",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ReplayOptions {
    pub clients: u32,
    pub think_ns: u64,
    pub isolation: Isolation,
    /// Percent of transactions that end in abort instead of commit.
    pub abort_pct: u32,
    pub seed: u64,
}

/// What the trace held.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct TraceShape {
    pub ops: u64,
    pub transactions: u64,
    pub non_tx_ops: u64,
    /// Distinct pages a transaction writes: mean and maximum.
    pub tx_pages_mean: f64,
    pub tx_pages_max: u64,
    /// Transactions the trace itself aborts.
    pub trace_aborts: u64,
    /// Transactions still open at the end of the trace (replayed as aborts).
    pub unfinished: u64,
    pub barriers_in_trace: u64,
}

#[derive(Clone, Debug, Serialize)]
pub struct ReplayReport {
    pub protocol: String,
    pub options: ReplayOptions,
    pub trace: TraceShape,
    /// Segments the isolation level cut the trace into (barriers + 1).
    pub segments: u64,
    /// Transactions turned into aborts by the injection.
    pub injected_aborts: u64,
    /// Commits that waited for an earlier conflicting transaction (serializable).
    pub commit_waits: u64,
    pub counts: HostCounts,
    pub measured: DeviceStats,
    pub write_amplification: f64,
    /// Host operations, and transactions committed, per simulated second.
    pub throughput_per_sim_s: f64,
    pub transactions_per_sim_s: f64,
    pub latency: LatencyReport,
    pub host_journal_writes: u64,
    /// Wall-clock figures: how fast the emulator ran (not simulated time).
    pub wall_seconds: f64,
    pub flash_ops_per_wall_second: f64,
    pub requests_per_wall_second: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{0}")]
    Trace(#[from] TraceError),
    #[error("--clients must be at least 1")]
    NoClients,
    #[error("the device failed at trace line {line}: {source}")]
    Device { line: u64, source: DeviceError },
    /// The protocol cannot run the trace's transactions at this level.
    #[error("{0}: choose another --isolation")]
    Isolation(DeviceError),
}

/// One unit of work: a transaction or a single operation.
#[derive(Debug)]
struct Unit {
    /// Indices into the trace's operations.
    ops: Vec<usize>,
    tx: bool,
    /// What opened the transaction: a `begin` (aborts may be injected), a
    /// static transaction's first `stage`, a dynamic one's first `dwrite`.
    opened_by: OpKind,
    /// Distinct pages it writes (transactions).
    writes: BTreeSet<u32>,
    /// The trace ends it in abort, or it was left open.
    aborts: bool,
    /// Earlier transactions its commit must wait for (serializable).
    deps: Vec<usize>,
}

/// A piece of the schedule: a unit, or a barrier.
#[derive(Debug)]
enum Item {
    Unit(usize),
    Barrier,
}

impl Unit {
    /// The unit of trace operation `i`: a transaction `opened_by` a call of
    /// that kind, or a single operation.
    fn new(i: usize, opened_by: Option<OpKind>) -> Unit {
        Unit {
            ops: vec![i],
            tx: opened_by.is_some(),
            opened_by: opened_by.unwrap_or(OpKind::Begin),
            writes: BTreeSet::new(),
            aborts: false,
            deps: Vec::new(),
        }
    }
}

/// What transactional operation `op` of transaction `t` tells its unit:
/// the pages it writes, and whether it ends it.
fn tx_op(units: &mut [Unit], open: &mut BTreeMap<u32, usize>, t: u32, op: &TraceOp) {
    let u = open[&t];
    let TraceKind::Op(kind) = op.kind else { return };
    if matches!(kind, OpKind::Write | OpKind::WriteEnd | OpKind::Stage | OpKind::Dwrite) {
        units[u].writes.extend(op.lpn..op.lpn + op.pages);
    }
    if let Some(commits) = kind.ends_tx(op.arg) {
        units[u].aborts = !commits;
        open.remove(&t);
    }
}

fn line_err(trace: &Trace, i: usize, message: String) -> TraceError {
    TraceError {
        line: trace.lines.get(i).copied().unwrap_or(0),
        message,
    }
}

/// Cuts the trace into units, in trace order (a transaction at its begin).
fn units_of(trace: &Trace, logical_pages: u32) -> Result<(Vec<Item>, Vec<Unit>, TraceShape), TraceError> {
    let mut items = Vec::new();
    let mut units: Vec<Unit> = Vec::new();
    let mut open: BTreeMap<u32, usize> = BTreeMap::new();
    let mut shape = TraceShape {
        ops: trace.ops.len() as u64,
        ..TraceShape::default()
    };
    for (i, op) in trace.ops.iter().enumerate() {
        if op.kind.has_range() && op.lpn as u64 + op.pages as u64 > logical_pages as u64 {
            return Err(line_err(
                trace,
                i,
                format!(
                    "{} of pages {}..{} is past the {logical_pages} logical pages the device offers here",
                    op.kind.name(),
                    op.lpn,
                    op.lpn as u64 + op.pages as u64
                ),
            ));
        }
        match (op.kind, op.tid) {
            (TraceKind::Barrier, _) => {
                shape.barriers_in_trace += 1;
                items.push(Item::Barrier);
            }
            (TraceKind::Op(OpKind::Begin), Some(t)) if open.contains_key(&t) => {
                return Err(line_err(trace, i, format!("transaction {t} begins while it is open")));
            }
            (TraceKind::Op(kind), Some(t)) if kind.opens_tx() && !open.contains_key(&t) => {
                open.insert(t, units.len());
                items.push(Item::Unit(units.len()));
                units.push(Unit::new(i, Some(kind)));
                tx_op(&mut units, &mut open, t, op);
            }
            (_, Some(t)) => {
                let u = *open
                    .get(&t)
                    .ok_or_else(|| line_err(trace, i, format!("transaction {t} is not open (no begin before)")))?;
                units[u].ops.push(i);
                tx_op(&mut units, &mut open, t, op);
            }
            (_, None) => {
                items.push(Item::Unit(units.len()));
                units.push(Unit::new(i, None));
            }
        }
    }
    // Left open by the trace: replayed as aborts (counted).
    for &u in open.values() {
        units[u].aborts = true;
        shape.unfinished += 1;
    }
    let txs: Vec<&Unit> = units.iter().filter(|u| u.tx).collect();
    shape.transactions = txs.len() as u64;
    shape.non_tx_ops = (units.len() - txs.len()) as u64;
    shape.trace_aborts = txs.iter().filter(|u| u.aborts).count() as u64 - shape.unfinished;
    shape.tx_pages_max = txs.iter().map(|u| u.writes.len() as u64).max().unwrap_or(0);
    shape.tx_pages_mean = if txs.is_empty() {
        0.0
    } else {
        txs.iter().map(|u| u.writes.len() as f64).sum::<f64>() / txs.len() as f64
    };
    // Serial-order dependencies: the last earlier transaction writing each page.
    let mut last_writer: BTreeMap<u32, usize> = BTreeMap::new();
    for item in &items {
        let Item::Unit(u) = *item else { continue };
        if !units[u].tx {
            continue;
        }
        let mut deps: BTreeSet<usize> = BTreeSet::new();
        for &p in &units[u].writes {
            if let Some(w) = last_writer.insert(p, u) {
                deps.insert(w);
            }
        }
        units[u].deps = deps.into_iter().collect();
    }
    Ok((items, units, shape))
}

/// Inserts the isolation level's barriers.
fn schedule(items: Vec<Item>, units: &[Unit], isolation: Isolation) -> Vec<Item> {
    let mut out = Vec::with_capacity(items.len());
    let mut segment_writes: BTreeSet<u32> = BTreeSet::new();
    for item in items {
        match item {
            Item::Barrier => {
                segment_writes.clear();
                out.push(Item::Barrier);
            }
            Item::Unit(u) if units[u].tx => match isolation {
                Isolation::Strict => {
                    out.push(Item::Unit(u));
                    out.push(Item::Barrier);
                }
                Isolation::NoPageConflict => {
                    if units[u].writes.iter().any(|p| segment_writes.contains(p)) {
                        out.push(Item::Barrier);
                        segment_writes.clear();
                    }
                    segment_writes.extend(units[u].writes.iter().copied());
                    out.push(Item::Unit(u));
                }
                Isolation::Serializable => out.push(Item::Unit(u)),
            },
            Item::Unit(u) => out.push(Item::Unit(u)),
        }
    }
    // No barrier at the very end (nothing follows it).
    while matches!(out.last(), Some(Item::Barrier)) {
        out.pop();
    }
    out
}

/// Replays `trace` on `dev`. `record`: what was sent, as a trace.
pub fn replay(
    dev: &mut dyn AnyDevice,
    trace: &Trace,
    opts: ReplayOptions,
    record: Option<TraceRecord>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<ReplayReport, ReplayError> {
    if opts.clients == 0 {
        return Err(ReplayError::NoClients);
    }
    let info = dev.info();
    // A level the protocol cannot offer is refused before anything runs.
    check_isolation(&*dev, opts.isolation)?;
    let (driver, pages) = driver_for(&*dev, trace)?;
    let (items, mut units, shape) = units_of(trace, pages)?;
    let injected = inject_aborts(&mut units, opts);
    let plan = schedule(items, &units, opts.isolation);
    let segments = 1 + plan.iter().filter(|i| matches!(i, Item::Barrier)).count() as u64;

    dev.reset_stats();
    let start_ns = dev.now_ns();
    let mut ex = Executor::new(dev, driver, record);
    let mut dealer = Dealer {
        trace,
        units: &units,
        plan: &plan,
        clients: (0..opts.clients)
            .map(|_| Client {
                ready_ns: start_ns,
                unit: None,
            })
            .collect(),
        ended: vec![None; units.len()],
        next: 0,
        commit_waits: 0,
        done_ops: 0,
    };
    let total_ops = trace.ops.len() as u64;
    let started = Instant::now();
    dealer.run(&mut ex, opts.think_ns, start_ns, progress)?;
    let end = dealer.clients.iter().map(|c| c.ready_ns).max().unwrap_or(start_ns);
    ex.dev.set_clock(end);
    ex.dev.flush().map_err(|source| ReplayError::Device { line: 0, source })?;
    progress(dealer.done_ops, total_ops);
    let wall = started.elapsed().as_secs_f64();
    let measured = ex.dev.stats();
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let per_sim_s = |n: u64| crate::per_second(n, sim_s);
    let per_wall_s = |n: u64| crate::per_second(n, wall);
    Ok(ReplayReport {
        protocol: info.protocol.to_string(),
        options: opts,
        trace: shape,
        segments,
        injected_aborts: injected,
        commit_waits: dealer.commit_waits,
        counts: ex.counts,
        measured,
        write_amplification: measured.write_amplification(),
        throughput_per_sim_s: per_sim_s(ex.counts.ops),
        transactions_per_sim_s: per_sim_s(ex.counts.commits),
        latency: ex.lat.report(),
        host_journal_writes: ex.driver.journal.as_ref().map_or(0, |j| j.journal_writes),
        wall_seconds: wall,
        flash_ops_per_wall_second: per_wall_s(measured.flash_ops()),
        requests_per_wall_second: per_wall_s(ex.counts.ops),
    })
}

/// Refuses an isolation level the device's protocol does not offer (its
/// registry entry says which).
fn check_isolation(dev: &dyn AnyDevice, isolation: Isolation) -> Result<(), ReplayError> {
    let entry = dev.entry();
    if !entry.isolation.contains(&isolation.name()) {
        return Err(ReplayError::Isolation(DeviceError::IsolationUnsupported {
            protocol: entry.name,
            level: isolation.name(),
        }));
    }
    Ok(())
}

/// The host driver for `dev`, and the logical pages the trace may use: all
/// of them, except on a device without transactions replaying a trace with
/// some, where a host journal takes the last ones.
fn driver_for(dev: &dyn AnyDevice, trace: &Trace) -> Result<(Driver, u32), ReplayError> {
    let info = dev.info();
    let store_data = dev.nand().config().data_mode == txftl_nand::DataMode::Full;
    let mut driver = Driver::new(info.page_size, store_data);
    let mut pages = info.logical_pages;
    if !dev.transactional() {
        // Sized for the largest transaction of the trace.
        let (_, units, _) = units_of(trace, pages)?;
        let largest = units.iter().filter(|u| u.tx).map(|u| u.writes.len() as u32).max().unwrap_or(0);
        if units.iter().any(|u| u.tx) {
            let j = HostJournal::new(info.logical_pages, largest.max(1), info.page_size)
                .map_err(|source| ReplayError::Device { line: 0, source })?;
            pages = j.journal_start;
            driver.journal = Some(j);
        }
    }
    Ok((driver, pages))
}

/// Abort injection, in trace order: each transaction the trace does not
/// already abort ends in an abort with probability `opts.abort_pct`%.
/// Returns how many were turned.
fn inject_aborts(units: &mut [Unit], opts: ReplayOptions) -> u64 {
    let mut rng = ChaCha8Rng::seed_from_u64(opts.seed ^ 0xAB0A7);
    let mut injected = 0;
    // A transaction of Möbius's calls commits by its swrite or REAR: the
    // injection turns commits only.
    for u in units.iter_mut().filter(|u| u.tx && u.opened_by == OpKind::Begin) {
        if opts.abort_pct > 0 && rng.gen_range(0..100) < opts.abort_pct && !u.aborts {
            u.aborts = true;
            injected += 1;
        }
    }
    injected
}

struct Client {
    ready_ns: u64,
    /// The unit it runs and the next of its operations.
    unit: Option<(usize, usize)>,
}

/// The device operations of one trace operation (one per page): its
/// transaction under `tid`, the fresh id it has on the device, and its
/// commit an abort when one is injected (`abort`). A barrier is none.
fn device_ops(op: &TraceOp, tid: u32, abort: bool) -> Vec<Op> {
    let TraceKind::Op(kind) = op.kind else {
        return Vec::new();
    };
    let kind = if abort && kind == OpKind::Commit { OpKind::Abort } else { kind };
    let tid = op.tid.map(|_| tid);
    if !kind.has_page() {
        return Op::with_arg(kind, tid, 0, op.arg).into_iter().collect();
    }
    (op.lpn..op.lpn + op.pages)
        .filter_map(|l| Op::with_arg(kind, tid, l, op.arg))
        .collect()
}

/// The clients as they run the plan, and what they have done so far.
struct Dealer<'t> {
    trace: &'t Trace,
    units: &'t [Unit],
    plan: &'t [Item],
    clients: Vec<Client>,
    /// Completion of each unit's last operation, once it ended.
    ended: Vec<Option<u64>>,
    /// The next plan item.
    next: usize,
    commit_waits: u64,
    done_ops: u64,
}

impl Dealer<'_> {
    /// Runs the plan to its end: the client that can submit earliest runs
    /// its next operation, or, when none can, the clients meet at the next
    /// barrier. `progress` every 4096 operations.
    fn run(&mut self, ex: &mut Executor, think_ns: u64, start_ns: u64, progress: &mut dyn FnMut(u64, u64)) -> Result<(), ReplayError> {
        let total_ops = self.trace.ops.len() as u64;
        loop {
            let Some(c) = self.pick() else {
                if self.pass_barrier(ex, start_ns)? {
                    continue;
                }
                break;
            };
            self.step(ex, c, think_ns)?;
            if self.done_ops.is_multiple_of(4096) {
                progress(self.done_ops, total_ops);
            }
        }
        Ok(())
    }

    /// The client that submits next (earliest ready, ties: lowest index).
    fn pick(&self) -> Option<usize> {
        let (units, clients) = (self.units, &self.clients);
        // Candidates: busy clients, and idle ones while the segment has units.
        let segment_has_work = matches!(self.plan.get(self.next), Some(Item::Unit(_)));
        (0..clients.len())
            .filter(|&i| clients[i].unit.is_some() || segment_has_work)
            .filter(|&i| match clients[i].unit {
                // A commit waiting for an earlier conflicting transaction that has not ended.
                Some((u, pos)) => {
                    let op = &self.trace.ops[units[u].ops[pos]];
                    !(op.kind == TraceKind::Op(OpKind::Commit) && units[u].deps.iter().any(|&d| self.ended[d].is_none()))
                }
                None => true,
            })
            .min_by_key(|&i| (clients[i].ready_ns, i))
    }

    /// No client can submit: every client idle at a barrier, which they pass
    /// together when the last of them is ready (returns true), or at the
    /// plan's end (false).
    fn pass_barrier(&mut self, ex: &mut Executor, start_ns: u64) -> Result<bool, ReplayError> {
        if self.clients.iter().any(|c| c.unit.is_some()) {
            // Every busy client waits for a unit no client runs: cannot happen
            // (dependencies point to earlier units, dealt earlier), but never spin.
            return Err(ReplayError::Device {
                line: 0,
                source: DeviceError::Config("replay deadlock: every client waits for a commit".into()),
            });
        }
        match self.plan.get(self.next) {
            Some(Item::Barrier) => {
                let t = self.clients.iter().map(|c| c.ready_ns).max().unwrap_or(start_ns);
                ex.barrier(t).map_err(|source| ReplayError::Device { line: 0, source })?;
                self.clients.iter_mut().for_each(|c| c.ready_ns = t);
                self.next += 1;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Client `c` runs the next operation of its unit (an idle client first
    /// takes the plan's next unit), as one device operation per page.
    fn step(&mut self, ex: &mut Executor, c: usize, think_ns: u64) -> Result<(), ReplayError> {
        let (trace, units) = (self.trace, self.units);
        let (u, pos) = self.unit_of(c);
        let oi = units[u].ops[pos];
        let op = trace.ops[oi];
        let at = self.submission(c, u, &op);
        let tid = u as u32 + 1;
        let mut done = at;
        let mut unit_over = pos + 1 == units[u].ops.len();
        for dop in device_ops(&op, tid, units[u].aborts) {
            match ex.run(c as u32, at, dop) {
                Ok((d, outcome)) => {
                    done = done.max(d);
                    if let Outcome::TableFullAborted(_) = outcome {
                        unit_over = true; // the host aborted it: nothing more of it
                        break;
                    }
                }
                Err(source) => {
                    return Err(ReplayError::Device {
                        line: trace.lines[oi],
                        source,
                    })
                }
            }
        }
        // An unfinished transaction ends in an abort the trace does not
        // hold (a static one's pages, never sent, are dropped).
        let ended = matches!(op.kind, TraceKind::Op(k) if k.ends_tx(op.arg).is_some());
        let abort = match units[u].opened_by {
            OpKind::Begin => Some(Op::Abort(tid)),
            OpKind::Dwrite => Some(Op::Dabort(tid)),
            _ => None,
        };
        if let (true, true, false, true, Some(abort)) = (unit_over, units[u].tx, ended, ex.tx_open(tid), abort) {
            let (d, _) = ex.run(c as u32, done, abort).map_err(|source| ReplayError::Device {
                line: trace.lines[oi],
                source,
            })?;
            done = d;
        }
        self.clients[c].ready_ns = done + think_ns;
        self.clients[c].unit = if unit_over {
            self.ended[u] = Some(done);
            None
        } else {
            Some((u, pos + 1))
        };
        self.done_ops += 1;
        Ok(())
    }

    /// The unit client `c` runs and the position of its next operation; an
    /// idle client takes the plan's next unit (it was picked only if there
    /// is one).
    fn unit_of(&mut self, c: usize) -> (usize, usize) {
        match self.clients[c].unit {
            Some(x) => x,
            None => {
                let Some(Item::Unit(u)) = self.plan.get(self.next) else {
                    unreachable!("picked only with work")
                };
                self.next += 1;
                self.clients[c].unit = Some((*u, 0));
                (*u, 0)
            }
        }
    }

    /// When client `c` submits `op` of unit `u`: when it is ready, or, for a
    /// commit, once every earlier conflicting transaction has ended (counted
    /// as a commit wait when that is later).
    fn submission(&mut self, c: usize, u: usize, op: &TraceOp) -> u64 {
        let deps = &self.units[u].deps;
        let mut at = self.clients[c].ready_ns;
        let commits = matches!(op.kind, TraceKind::Op(k) if k.ends_tx(op.arg) == Some(true));
        if commits && !deps.is_empty() {
            let after = deps.iter().filter_map(|&d| self.ended[d]).max().unwrap_or(0);
            if after > at {
                self.commit_waits += 1;
                at = after;
            }
        }
        at
    }
}

/// The shape of a trace (transactions, pages per transaction), as a replay
/// reports it, without replaying it.
pub fn shape(trace: &Trace) -> Result<TraceShape, TraceError> {
    units_of(trace, u32::MAX).map(|(_, _, s)| s)
}
