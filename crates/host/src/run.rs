//! The measured run behind `txftl run`: a generated workload ([`OpStream`])
//! sent by `clients` concurrent clients on the device clock.
//!
//! Each client is a closed loop: it submits its next operation when its
//! previous one completed, plus `think_ns`. Operations are dealt from the
//! workload's stream as clients become free: a client that wants work takes
//! the next operation, unless it belongs to a transaction another client
//! began (a transaction stays with the client that began it, its operations in
//! order), in which case it goes to that client's queue. With one client this
//! is exactly the stream, in order, each operation submitted when the previous
//! one completed.
//!
//! The fill phase is followed by a barrier (every fill operation completes),
//! then the counters are reset and the measured phase starts.

use crate::exec::{Executor, HostCounts};
use crate::latency::LatencyReport;
use crate::trace::TraceRecord;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::time::Instant;
use txftl_ftl::AnyDevice;
use txftl_ftl::Op;
use txftl_ftl::{DeviceError, DeviceStats};
use txftl_nand::{PowerCut, Torn};
use txftl_workload::journal::HostJournal;
use txftl_workload::run::{Driver, Outcome};
use txftl_workload::{OpStream, WorkloadKind, WorkloadSpec};

/// How the host sends the workload.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct HostOptions {
    /// Concurrent clients (at least 1).
    pub clients: u32,
    /// Think time between an operation's completion and the client's next, ns.
    pub think_ns: u64,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions { clients: 1, think_ns: 0 }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    pub protocol: String,
    pub workload: WorkloadSpec,
    pub host: HostOptions,
    pub logical_pages: u32,
    pub working_set_pages: u32,
    /// Counters of the fill phase.
    pub fill: DeviceStats,
    /// Counters of the measured phase (after the fill).
    pub measured: DeviceStats,
    pub write_amplification: f64,
    /// Erase counts over data blocks at the end, as the FTL knows them.
    pub erase_count_min: u32,
    pub erase_count_max: u32,
    /// What the host saw in the measured phase.
    pub counts: HostCounts,
    /// Host operations, and transactions committed, per simulated second.
    pub throughput_per_sim_s: f64,
    pub transactions_per_sim_s: f64,
    /// Latencies of the measured phase on the device clock.
    pub latency: LatencyReport,
    /// Wall-clock figures: how fast the emulator ran (not simulated time).
    /// The fill's wall time (its flash operations and the barrier after it).
    pub fill_wall_seconds: f64,
    /// The measured phase's.
    pub wall_seconds: f64,
    pub flash_ops_per_wall_second: f64,
    pub requests_per_wall_second: f64,
    /// Pages the host journal wrote (transactions on a device without them).
    pub host_journal_writes: u64,
}

/// Why a run stopped early.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("operation {index} ({op:?}) failed: {source}")]
    Device { index: u64, op: Op, source: DeviceError },
    /// The power cut asked for happened after `host_ops` operations.
    #[error("power cut after {host_ops} host operations")]
    PowerCut { host_ops: u64, measured: Box<DeviceStats> },
    /// The cut asked for lies past the measured phase's last flash operation:
    /// the run tested nothing, so it is not reported as if it had.
    #[error("no power cut happened: --cut-at {at} is past the measured phase's last flash operation ({ops} operations)")]
    CutNotReached { at: u64, ops: u64 },
    #[error("--clients must be at least 1")]
    NoClients,
}

struct Client {
    ready_ns: u64,
    queue: VecDeque<Op>,
}

fn tid_of(op: Op) -> Option<u32> {
    op.tid()
}

/// The client with work whose next submission is earliest (ties: lowest index).
fn next_busy(clients: &[Client]) -> Option<usize> {
    (0..clients.len())
        .filter(|&i| !clients[i].queue.is_empty())
        .min_by_key(|&i| (clients[i].ready_ns, i))
}

/// The idle client that would submit earliest.
fn next_idle(clients: &[Client]) -> Option<usize> {
    (0..clients.len())
        .filter(|&i| clients[i].queue.is_empty())
        .min_by_key(|&i| (clients[i].ready_ns, i))
}

/// Runs the fill, a barrier, resets the counters, then runs the measured
/// operations. `progress` is called with the number of operations done so far.
/// `cut`: cut power at this NAND operation of the measured phase (counted from
/// its start), tearing it as given; the run then ends with [`RunError::PowerCut`].
/// `record`: every operation (fill included) and the barrier, as a trace.
pub fn run_workload(
    dev: &mut dyn AnyDevice,
    spec: WorkloadSpec,
    host: HostOptions,
    record: Option<TraceRecord>,
    cut: Option<(u64, Torn)>,
    progress: &mut dyn FnMut(u64),
) -> Result<RunReport, RunError> {
    if host.clients == 0 {
        return Err(RunError::NoClients);
    }
    let info = dev.info();
    let (driver, workload_pages) = driver_for(&*dev, &spec)?;
    let stream = OpStream::new(spec, workload_pages);
    let working_set = stream.working_set();
    dev.reset_stats();
    let start_ns = dev.now_ns();
    let mut ex = Executor::new(dev, driver, record);
    let mut dealer = Dealer {
        stream,
        clients: (0..host.clients)
            .map(|_| Client {
                ready_ns: start_ns,
                queue: VecDeque::new(),
            })
            .collect(),
        owner: BTreeMap::new(),
        fill: None,
        stream_done: false,
        index: 0,
        started: Instant::now(),
        fill_wall: std::time::Duration::ZERO,
        start_ns,
        think_ns: host.think_ns,
        cut,
        seed: spec.seed,
    };
    dealer.run(&mut ex, progress)?;
    let end = dealer.clients.iter().map(|c| c.ready_ns).max().unwrap_or(start_ns);
    ex.dev.set_clock(end);
    flush_at_end(&mut ex, cut, dealer.index)?;
    if let Some((at, _)) = cut {
        let ops = ex.dev.stats().flash_ops();
        return Err(RunError::CutNotReached { at, ops });
    }
    progress(dealer.index);
    let wall = dealer.started.elapsed().as_secs_f64();
    let measured = ex.dev.stats();
    let (lo, hi) = ex.dev.wear_spread();
    let sim_s = measured.sim_time_ns as f64 / 1e9;
    let per_sim_s = |n: u64| crate::per_second(n, sim_s);
    let per_wall_s = |n: u64| crate::per_second(n, wall);
    Ok(RunReport {
        protocol: info.protocol.to_string(),
        workload: spec,
        host,
        logical_pages: info.logical_pages,
        working_set_pages: working_set,
        fill: dealer.fill.unwrap_or_default(),
        measured,
        write_amplification: measured.write_amplification(),
        erase_count_min: lo,
        erase_count_max: hi,
        counts: ex.counts,
        throughput_per_sim_s: per_sim_s(ex.counts.ops),
        transactions_per_sim_s: per_sim_s(ex.counts.commits),
        latency: ex.lat.report(),
        fill_wall_seconds: dealer.fill_wall.as_secs_f64(),
        wall_seconds: wall,
        flash_ops_per_wall_second: per_wall_s(measured.flash_ops()),
        requests_per_wall_second: per_wall_s(ex.counts.ops),
        host_journal_writes: ex.driver.journal.as_ref().map_or(0, |j| j.journal_writes),
    })
}

/// The host driver for `dev`, and the logical pages the workload may use.
fn driver_for(dev: &dyn AnyDevice, spec: &WorkloadSpec) -> Result<(Driver, u32), RunError> {
    let info = dev.info();
    let store_data = dev.nand().config().data_mode == txftl_nand::DataMode::Full;
    let mut driver = Driver::new(info.page_size, store_data);
    // A device without transactions runs transactional workloads through a host
    // journal kept in its last logical pages, outside the workload's pages.
    let mut workload_pages = info.logical_pages;
    if spec.kind == WorkloadKind::TxWrite && !dev.transactional() {
        let j = HostJournal::new(info.logical_pages, spec.tx.pages_per_tx, info.page_size).map_err(|source| RunError::Device {
            index: 0,
            op: Op::Flush,
            source,
        })?;
        workload_pages = j.journal_start;
        driver.journal = Some(j);
    }
    Ok((driver, workload_pages))
}

/// The flush after the last operation (at the clock the last client
/// reached). A power loss there is the cut asked for, if one was.
fn flush_at_end(ex: &mut Executor, cut: Option<(u64, Torn)>, index: u64) -> Result<(), RunError> {
    match ex.dev.flush() {
        Ok(_) => Ok(()),
        Err(DeviceError::PowerLoss) if cut.is_some() => Err(RunError::PowerCut {
            host_ops: ex.counts.ops,
            measured: Box::new(ex.dev.stats()),
        }),
        Err(source) => Err(RunError::Device {
            index,
            op: Op::Flush,
            source,
        }),
    }
}

/// The clients as they take the workload's operations, and what the run
/// has done so far.
struct Dealer {
    stream: OpStream,
    clients: Vec<Client>,
    /// The client each open transaction belongs to (the one that began it).
    owner: BTreeMap<u32, usize>,
    /// The fill phase's counters, once the measured phase started.
    fill: Option<DeviceStats>,
    stream_done: bool,
    /// Operations run so far.
    index: u64,
    /// When the run started, then when the measured phase started, on the
    /// wall clock.
    started: Instant,
    /// The fill's wall time, once the measured phase started.
    fill_wall: std::time::Duration,
    /// The device clock when the run started.
    start_ns: u64,
    think_ns: u64,
    /// The power cut asked for in the measured phase, and its seed.
    cut: Option<(u64, Torn)>,
    seed: u64,
}

impl Dealer {
    /// Runs the fill, the barrier after it and the measured phase: the busy
    /// client that submits earliest runs its next operation. `progress`
    /// every 4096 operations.
    fn run(&mut self, ex: &mut Executor, progress: &mut dyn FnMut(u64)) -> Result<(), RunError> {
        loop {
            if self.fill.is_none() && self.stream.in_fill() {
                self.fill_writes(ex, progress)?;
            }
            let Some(p) = self.deal() else {
                if self.fill.is_none() && !self.stream_done {
                    self.start_measured_phase(ex)?;
                    continue;
                }
                break;
            };
            self.submit(ex, p)?;
            self.index += 1;
            if self.index.is_multiple_of(4096) {
                progress(self.index);
            }
        }
        Ok(())
    }

    /// Deals the stream's next operations to idle clients while one would
    /// submit before the busy client picked; returns the client to run
    /// (none: the phase's operations are all done).
    fn deal(&mut self) -> Option<usize> {
        let clients = &mut self.clients;
        let mut pick = next_busy(clients);
        // Idle clients that would submit before the busy one take work first.
        while let Some(i) = next_idle(clients) {
            if self.stream_done || (self.fill.is_none() && !self.stream.in_fill()) {
                break;
            }
            if pick.is_some_and(|p| (clients[p].ready_ns, p) < (clients[i].ready_ns, i)) {
                break;
            }
            let Some(op) = self.stream.next() else {
                self.stream_done = true;
                break;
            };
            let target = match (op, tid_of(op)) {
                (Op::Begin(t), _) => {
                    self.owner.insert(t, i);
                    i
                }
                (_, Some(t)) => self.owner.get(&t).copied().unwrap_or(i),
                (_, None) => i,
            };
            if let Op::Commit(t) | Op::Abort(t) = op {
                self.owner.remove(&t);
            }
            clients[target].queue.push_back(op);
            pick = next_busy(clients);
        }
        pick
    }

    /// The fill's writes, each sent by the client `deal` would pick (with
    /// every queue empty: the idle client that submits earliest) at that
    /// client's time, through the same driver call `Executor::run` makes:
    /// the device sees the same calls at the same clock. What is skipped is
    /// the host's bookkeeping that the measured phase resets anyway (latency
    /// histograms, per-operation dealing), a third of a large fill's wall
    /// time. Without page data to write, the driver call itself is skipped
    /// and the writes go to the device as one run (`fill_run`). Stops at the
    /// fill's closing flush, queued for `deal`, or at once when the run
    /// records a trace (each operation is recorded there). `tests/fill.rs`
    /// checks these paths leave the same device as the general one.
    fn fill_writes(&mut self, ex: &mut Executor, progress: &mut dyn FnMut(u64)) -> Result<(), RunError> {
        if ex.record.is_some() || self.clients.iter().any(|c| !c.queue.is_empty()) {
            return Ok(());
        }
        if ex.writes_bypass() {
            self.fill_run(ex, progress)?;
        }
        while self.stream.in_fill() {
            let Some(p) = next_idle(&self.clients) else { break };
            let Some(op) = self.stream.next() else {
                self.stream_done = true;
                break;
            };
            let Op::Write(_) = op else {
                self.clients[p].queue.push_back(op);
                break;
            };
            let at = self.clients[p].ready_ns;
            let done = ex.fill_write(at, op).map_err(|source| RunError::Device {
                index: self.index,
                op,
                source,
            })?;
            self.clients[p].ready_ns = done + self.think_ns;
            self.index += 1;
            if self.index.is_multiple_of(4096) {
                progress(self.index);
            }
        }
        Ok(())
    }

    /// The rest of the fill's writes as one run on the device
    /// (`Device::write_run`; the driver would only count them): each sent
    /// by the client the loop of `fill_writes` would pick, at its time.
    fn fill_run(&mut self, ex: &mut Executor, progress: &mut dyn FnMut(u64)) -> Result<(), RunError> {
        let Some(mut p) = next_idle(&self.clients) else {
            return Ok(());
        };
        let lpns = self.stream.take_fill_writes();
        let (start, think, base) = (lpns.start, self.think_ns, self.index);
        let clients = &mut self.clients;
        let mut index = base;
        let first_at = clients[p].ready_ns;
        let r = ex.write_run(lpns, first_at, &mut |done| {
            clients[p].ready_ns = done + think;
            index += 1;
            if index.is_multiple_of(4096) {
                progress(index);
            }
            if clients.len() > 1 {
                p = next_idle(clients).expect("no client has work queued during the fill");
            }
            clients[p].ready_ns
        });
        self.index = index;
        r.map_err(|(lpn, source)| RunError::Device {
            index: base + (lpn - start) as u64,
            op: Op::Write(lpn),
            source,
        })
    }

    /// The fill is done: a barrier, then the measured phase.
    fn start_measured_phase(&mut self, ex: &mut Executor) -> Result<(), RunError> {
        let t = self.clients.iter().map(|c| c.ready_ns).max().unwrap_or(self.start_ns);
        ex.dev.set_clock(t);
        ex.barrier(t).map_err(|source| RunError::Device {
            index: self.index,
            op: Op::Flush,
            source,
        })?;
        self.fill = Some(ex.dev.stats());
        ex.dev.reset_stats();
        ex.reset_measurements();
        let now = ex.dev.now_ns();
        self.clients.iter_mut().for_each(|c| c.ready_ns = now);
        if let Some((at, torn)) = self.cut {
            let base = ex.dev.nand().op_count();
            ex.dev.nand_mut().arm_power_cut(PowerCut {
                at_op: base + at,
                torn,
                seed: self.seed,
            });
        }
        self.fill_wall = self.started.elapsed();
        self.started = Instant::now();
        Ok(())
    }

    /// Client `p` submits the next operation of its queue.
    fn submit(&mut self, ex: &mut Executor, p: usize) -> Result<(), RunError> {
        let op = self.clients[p].queue.pop_front().expect("a busy client has work");
        let at = self.clients[p].ready_ns;
        match ex.run(p as u32, at, op) {
            Ok((done, outcome)) => {
                self.clients[p].ready_ns = done + self.think_ns;
                if let Outcome::TableFullAborted(tid) = outcome {
                    // The host aborted it: nothing more of it is sent.
                    self.stream.forget(tid);
                    self.owner.remove(&tid);
                    self.clients[p].queue.retain(|o| tid_of(*o) != Some(tid));
                }
                Ok(())
            }
            Err(DeviceError::PowerLoss) if self.cut.is_some() && self.fill.is_some() => Err(RunError::PowerCut {
                host_ops: ex.counts.ops,
                measured: Box::new(ex.dev.stats()),
            }),
            Err(source) => Err(RunError::Device {
                index: self.index,
                op,
                source,
            }),
        }
    }
}
