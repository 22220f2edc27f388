//! Executing host operations on the device at their submission times.
//!
//! The concurrent host runs every operation in order of submission time (a
//! discrete-event simulation): it sets the device clock to the operation's
//! submission time ([`txftl_ftl::Device::set_clock`]), issues it, and takes
//! the device clock afterwards as its completion. Dies and channels keep their
//! own busy-until clocks, so an operation submitted while another client's
//! operation still occupies its die queues behind it, and operations on free
//! units overlap.

use crate::latency::Latencies;
use crate::trace::{TraceKind, TraceOp, TraceRecord};
use serde::Serialize;
use std::collections::BTreeMap;
use txftl_ftl::AnyDevice;
use txftl_ftl::DeviceError;
use txftl_ftl::Op;
use txftl_workload::model::TxModel;
use txftl_workload::run::{Driver, Outcome};

/// Counts of what the host saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostCounts {
    /// Host operations issued (each page of a multi-page request counts once).
    pub ops: u64,
    pub commits: u64,
    pub aborts: u64,
    /// Reads that did not return the latest write (must be 0).
    pub wrong_reads: u64,
    /// Reads the device refused as lost to bit errors (fault model on).
    pub lost_reads: u64,
    /// Transactions the host aborted because the device's table was full.
    pub table_full_aborts: u64,
    /// Writes and trims the protocol's isolation refused (SCC, BPCC, NoLgn: a
    /// page another open transaction wrote): they did not happen.
    pub isolation_refusals: u64,
    /// Barriers the host waited at.
    pub barriers: u64,
}

/// The trace record of an operation.
pub fn trace_op(client: u32, at_ns: u64, op: Op) -> TraceOp {
    let (lpn, pages) = op.lpn().map_or((0, 0), |l| (l, 1));
    TraceOp::new(at_ns, client, op.tid(), TraceKind::Op(op.kind()), lpn, pages).with_arg(op.arg())
}

pub struct Executor<'d> {
    pub dev: &'d mut dyn AnyDevice,
    pub driver: Driver,
    pub model: TxModel,
    pub lat: Latencies,
    pub counts: HostCounts,
    pub record: Option<TraceRecord>,
    /// Submission time of each open transaction's begin.
    tx_start: BTreeMap<u32, u64>,
}

impl<'d> Executor<'d> {
    pub fn new(dev: &'d mut dyn AnyDevice, driver: Driver, record: Option<TraceRecord>) -> Executor<'d> {
        let pages = dev.info().logical_pages;
        // Without page data there is nothing to check reads against.
        let model = if dev.nand().config().data_mode == txftl_nand::DataMode::Full {
            TxModel::new(pages)
        } else {
            TxModel::untracked()
        };
        Executor {
            dev,
            driver,
            model,
            lat: Latencies::default(),
            counts: HostCounts::default(),
            record,
            tx_start: BTreeMap::new(),
        }
    }

    fn note_record(&mut self, op: &TraceOp) -> Result<(), DeviceError> {
        if let Some(w) = &mut self.record {
            w.op(op)
                .map_err(|e| DeviceError::Config(format!("writing the trace record failed: {e}")))?;
        }
        Ok(())
    }

    /// Runs `op` for `client`, submitted at `at_ns`. Returns its completion
    /// time and what happened.
    pub fn run(&mut self, client: u32, at_ns: u64, op: Op) -> Result<(u64, Outcome), DeviceError> {
        if self.record.is_some() {
            self.note_record(&trace_op(client, at_ns, op))?;
        }
        let (done, outcome) = self.send(at_ns, op)?;
        self.lat.op(op.kind().name(), done - at_ns);
        // A transaction starts at its begin or first page (Möbius's calls),
        // and ends at its commit (an swrite, a REAR) or abort.
        if let (true, Some(t)) = (op.kind().opens_tx(), op.tid()) {
            self.tx_start.entry(t).or_insert(at_ns);
        }
        let ended = match (op.ends_tx(), &outcome) {
            (_, Outcome::TableFullAborted(t)) => Some(*t),
            (Some((t, false)), _) => Some(t),
            (Some((t, true)), _) => {
                self.counts.commits += 1;
                self.tx_done(t, done);
                None
            }
            _ => None,
        };
        if let Some(t) = ended {
            self.counts.aborts += 1;
            self.tx_done(t, done);
        }
        match outcome {
            Outcome::WrongRead { .. } => self.counts.wrong_reads += 1,
            Outcome::TableFullAborted(_) => self.counts.table_full_aborts += 1,
            Outcome::Done => {}
        }
        Ok((done, outcome))
    }

    /// Issues `op` at `at_ns` through the driver and counts it; returns its
    /// completion time and what happened. What the device reports and the
    /// host goes on from is counted and becomes `Outcome::Done`.
    fn send(&mut self, at_ns: u64, op: Op) -> Result<(u64, Outcome), DeviceError> {
        self.dev.set_clock(at_ns);
        let r = self.driver.apply(&mut *self.dev, op, &mut self.model);
        let done = self.dev.now_ns().max(at_ns);
        self.counts.ops += 1;
        let outcome = match r {
            Ok(o) => o,
            // A page lost to bit errors (fault model): the device reported it;
            // the host counts it and goes on, as a database would report it.
            Err(DeviceError::DataLost { .. }) if matches!(op, Op::Read(_) | Op::TxRead(..)) => {
                self.counts.lost_reads += 1;
                Outcome::Done
            }
            Err(DeviceError::IsolationUnsupported { .. })
                if matches!(op, Op::Write(_) | Op::TxWrite(..) | Op::WriteEnd(..) | Op::Trim(_)) =>
            {
                self.counts.isolation_refusals += 1;
                Outcome::Done
            }
            Err(e) => return Err(e),
        };
        Ok((done, outcome))
    }

    /// A fill's write `op` (no transaction open, no trace recorded) submitted
    /// at `at_ns`, as [`Executor::run`] sends it, without the latency it
    /// would record (the fill's are not reported). Returns its completion.
    pub fn fill_write(&mut self, at_ns: u64, op: Op) -> Result<u64, DeviceError> {
        debug_assert!(matches!(op, Op::Write(_)) && self.record.is_none() && self.tx_start.is_empty());
        let (done, outcome) = self.send(at_ns, op)?;
        assert!(matches!(outcome, Outcome::Done), "a plain write's outcome is Done, not {outcome:?}");
        Ok(done)
    }

    /// Can the fill's writes go to the device as one run
    /// ([`Executor::write_run`])? When no trace is recorded, no transaction
    /// is open and the driver would do nothing per write but count it.
    pub fn writes_bypass(&self) -> bool {
        self.record.is_none() && self.tx_start.is_empty() && self.driver.writes_bypass(&self.model)
    }

    /// The fill's writes of `lpns` as one [`txftl_ftl::Device::write_run`]
    /// (see there for `first_at_ns` and `next_at`), counted as
    /// [`Executor::fill_write`] counts each. Only when
    /// [`Executor::writes_bypass`].
    pub fn write_run(
        &mut self,
        lpns: std::ops::Range<u32>,
        first_at_ns: u64,
        next_at: &mut dyn FnMut(u64) -> u64,
    ) -> Result<(), (u32, DeviceError)> {
        assert!(self.writes_bypass(), "a run of writes the driver must see one by one");
        let start = lpns.start;
        let r = self.dev.write_run(lpns.clone(), first_at_ns, next_at);
        // Each write sent is counted, the failed one too (as `send` counts).
        let sent = match &r {
            Ok(()) => lpns.end - start,
            Err((lpn, _)) => lpn - start + 1,
        } as u64;
        self.counts.ops += sent;
        self.driver.applied_without_data(sent);
        r
    }

    /// Has transaction `tid` begun and not ended?
    pub fn tx_open(&self, tid: u32) -> bool {
        self.tx_start.contains_key(&tid)
    }

    fn tx_done(&mut self, tid: u32, done: u64) {
        if let Some(start) = self.tx_start.remove(&tid) {
            self.lat.transaction.record(done - start);
        }
    }

    /// A barrier released at `at_ns` (recorded; counted).
    pub fn barrier(&mut self, at_ns: u64) -> Result<(), DeviceError> {
        self.counts.barriers += 1;
        self.note_record(&TraceOp::new(at_ns, 0, None, TraceKind::Barrier, 0, 0))
    }

    /// Forgets latencies and counts (after a warm-up phase).
    pub fn reset_measurements(&mut self) {
        self.lat = Latencies::default();
        self.counts = HostCounts::default();
    }
}
