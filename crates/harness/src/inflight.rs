//! Cuts at an instant of the device clock: every operation in flight on any
//! die then is torn or lost, not only the last one issued (DESIGN.md's
//! contract; the NAND side is `txftl_nand::InstantCut`).
//!
//! A cut at one operation index leaves every earlier operation finished. On
//! parallel dies that misses states: a program queued behind an erase on a
//! busy die may still be waiting while one issued after it on an idle die is
//! done, so a transaction's last page can be on flash without an earlier
//! one (LightTx's page-count commit rule is for exactly that).
//!
//! 1. The dry run traces every NAND operation's issue, start and done times
//!    (`Nand::op_trace`) and when each host operation returned.
//! 2. A cut at instant `T`: the operations issued at or before `T` happen,
//!    the first one issued after `T` (the stop) and every later one never do;
//!    of those that happen, the ones not done at `T` are in flight. One that
//!    had started changing cells is torn in the point's variant (each drawing
//!    its own bytes), one still queued or crossing the channel is lost; the
//!    variant `none` loses them all. Program times vary on real parts (MLC
//!    pages, wear) where the timing model has one latency, and two programs
//!    started on two dies end in either order: so each point also lets every
//!    proper subset of the started operations finish (`finish`, a bit per
//!    started operation in issue order). That reaches the state the timing
//!    alone never does, since a host program waits for the transfer of the
//!    one before it: a later page on flash, an earlier one of the same
//!    transaction torn or lost. The host saw return only the operations
//!    that returned by `T` (`Driver::ack_by_ns`): a write acknowledged at its
//!    transfer is a candidate, a flush or commit that waited past `T` is in
//!    flight, as the reference model (`model.rs`) takes them.
//! 3. The state at `T` changes only at those times, and never comes back
//!    (issues, starts, completions and returns only accumulate), so the
//!    instants enumerated are the distinct states among them with a program
//!    or erase in flight. A state with none is the cut at its stop operation
//!    with fewer operations acknowledged: the operation enumeration covers it.
//!
//! Each point replays the workload from a fresh device with the cut armed,
//! then checks recovery as an operation cut does (`crash.rs`). Recovery is
//! not cut again here: the operation enumeration does that.

use crate::crash::fork::{Run, Step};
use crate::crash::{check_against_model, erase_count_below_oob, panic_message, recover, CrashError, CrashSpec, CrashViolation};
use crate::exercise::Exercised;
use crate::model::TxModel;
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use txftl_ftl::DeviceError;
use txftl_nand::{InstantCut, OpTrace, Torn};
use txftl_protocols::AnyDevice;

/// Which cuts at instants of the device clock a crash run tries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum InFlight {
    /// None: cuts at operations only.
    #[default]
    Off,
    /// Every distinct instant with a program or erase in flight, besides the
    /// cuts at operations.
    Every,
    /// Only this point: a replay.
    Only {
        /// The instant, ns on the device clock.
        at_ns: u64,
        torn: Torn,
        /// Bit i: the i-th started operation in flight (in issue order) finishes.
        finish: u64,
    },
}

/// What the enumeration of instants found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct InFlightReport {
    /// Distinct instants with a program or erase in flight.
    pub instants: u64,
    /// Crash points tried: each instant with every torn variant asked for
    /// and every proper subset of its started operations finishing (one
    /// point, `none`, where nothing in flight had started).
    pub points: u64,
    /// The most programs and erases in flight at one instant, and the most
    /// of them started (torn rather than lost).
    pub max_in_flight: u64,
    pub max_started: u64,
    /// Instants at which an operation issued later is done while an earlier
    /// one is still in flight, by the timing alone; and points at which one
    /// is done or finishes while an earlier one is torn or lost: flash states
    /// no cut at one operation reaches.
    pub out_of_order_instants: u64,
    pub out_of_order_points: u64,
    /// Dry-run operations issued earlier on the device clock than one before
    /// them (the FTL's clock only moves forward: expected 0).
    pub issue_inversions: u64,
    /// Commits that had returned to the host but were not durable at the
    /// instant of a cut (Möbius's A-SWRITE, `async-commit=1`), summed over
    /// the points; and of them those recovery showed absent, whole: the
    /// acknowledged transactions a power cut takes back (the paper's "false
    /// positives"), allowed by the contract until the commit is durable.
    pub acked_not_durable: u64,
    pub acked_lost: u64,
    pub violation_count: u64,
}

/// The state of a cut at an instant, as the dry run's trace gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Instant {
    pub t_ns: u64,
    /// Index of the first operation issued after `t_ns` (relative to the
    /// first after format).
    pub stop: u64,
    /// Programs and erases in flight: index, and whether it had started.
    pub in_flight: Vec<(u64, bool)>,
    /// Host operations that returned by `t_ns`.
    pub acked: usize,
}

/// A crash point: the instant (its index), the variant, and which started
/// operations finish.
type Point = (usize, Torn, u64);

/// Started operations whose finishing subsets are enumerated (a die runs
/// one operation at a time: at most the dies, 2 on the tiny geometries).
const FINISH_STARTED_MAX: usize = 4;

impl Instant {
    /// The operations this point tears or loses (index, torn), the others
    /// in flight finishing.
    fn cut(&self, torn: Torn, finish: u64) -> Vec<(u64, Torn)> {
        let mut nth_started = 0;
        self.in_flight
            .iter()
            .filter_map(|&(i, started)| {
                if !started {
                    return Some((i, Torn::None));
                }
                nth_started += 1;
                (finish >> (nth_started - 1) & 1 == 0).then_some((i, torn))
            })
            .collect()
    }

    /// Is a program or erase issued after one this point cuts done (or
    /// finishing) at it?
    fn out_of_order(&self, trace: &[OpTrace], finish: u64) -> bool {
        let cut = self.cut(Torn::None, finish);
        let Some(&(first, _)) = cut.first() else { return false };
        let later = (first + 1..self.stop).filter(|&i| trace[i as usize].kind.mutates()).count();
        later > cut.len() - 1
    }

    fn same_state(&self, o: &Instant) -> bool {
        (self.stop, &self.in_flight, self.acked) == (o.stop, &o.in_flight, o.acked)
    }
    fn started(&self) -> usize {
        self.in_flight.iter().filter(|f| f.1).count()
    }
}

/// The distinct states of a cut at an instant with a program or erase in
/// flight, in time order; and how many of them are out of issue order.
pub(crate) fn instants(trace: &[OpTrace], acks_ns: &[u64]) -> (Vec<Instant>, u64) {
    let mut times: Vec<u64> = trace.iter().flat_map(|o| [o.at_ns, o.start_ns, o.done_ns]).collect();
    times.extend_from_slice(acks_ns);
    times.sort_unstable();
    times.dedup();
    // The stop is the first operation whose issue time, or an earlier one's,
    // is past the instant: the operations before it are a prefix.
    let max_at: Vec<u64> = trace
        .iter()
        .scan(0u64, |m, o| {
            *m = (*m).max(o.at_ns);
            Some(*m)
        })
        .collect();
    let mutating_before: Vec<usize> = std::iter::once(0)
        .chain(trace.iter().scan(0, |n, o| {
            *n += o.kind.mutates() as usize;
            Some(*n)
        }))
        .collect();
    let (mut out, mut out_of_order) = (Vec::<Instant>::new(), 0u64);
    let (mut next, mut active) = (0usize, Vec::<usize>::new());
    for t in times {
        let stop = max_at.partition_point(|&a| a <= t);
        while next < stop {
            let o = &trace[next];
            if o.kind.mutates() && o.done_ns > o.at_ns {
                active.push(next);
            }
            next += 1;
        }
        // Done once is done for every later instant.
        active.retain(|&i| trace[i].done_ns > t);
        let Some(&first) = active.first() else { continue };
        let inst = Instant {
            t_ns: t,
            stop: stop as u64,
            in_flight: active.iter().map(|&i| (i as u64, trace[i].started_by(t))).collect(),
            acked: acks_ns.partition_point(|&a| a <= t),
        };
        if out.last().is_some_and(|l| l.same_state(&inst)) {
            continue;
        }
        // Programs and erases after the first in flight, and before the stop,
        // that are not in flight are done: out of issue order.
        if mutating_before[stop] - mutating_before[first + 1] > active.len() - 1 {
            out_of_order += 1;
        }
        out.push(inst);
    }
    (out, out_of_order)
}

/// The instants' enumeration merged into a crash run's report.
pub(crate) struct InFlightOutcome {
    pub report: InFlightReport,
    /// The first violations (at most `keep`), in time order.
    pub violations: Vec<CrashViolation>,
    /// Recovery counts summed over every point.
    pub exercised: Exercised,
}

struct InstantResult {
    t_ns: u64,
    stop: u64,
    torn: Torn,
    finish: u64,
    violations: Vec<String>,
    exercised: Exercised,
    /// Commits that had returned but were not durable at the instant, and
    /// of them those recovery showed absent.
    acked_not_durable: u64,
    acked_lost: u64,
}

/// Enumerates the cuts at instants of the dry run (`trace`, and `acks_ns`:
/// when each host operation returned) and checks the contract at each.
pub(crate) fn enumerate(spec: &CrashSpec, keep: usize, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<InFlightOutcome, CrashError> {
    // Its own dry run, tracing every operation's times and every host
    // operation's return (the operation enumeration's dry run records neither).
    let mut dev = spec.device.fresh()?;
    dev.nand_mut().set_op_trace(true);
    let dry = run_until(spec, &mut *dev, false, None).map_err(CrashError::DryRun)?;
    let trace: Vec<OpTrace> = dev.nand().op_trace().to_vec();
    drop(dev);
    let (trace, acks_ns) = (&trace[..], &dry.acks_ns[..]);
    let (all, out_of_order) = instants(trace, acks_ns);
    let mut report = InFlightReport {
        instants: all.len() as u64,
        max_in_flight: all.iter().map(|i| i.in_flight.len() as u64).max().unwrap_or(0),
        max_started: all.iter().map(|i| i.started() as u64).max().unwrap_or(0),
        out_of_order_instants: out_of_order,
        issue_inversions: trace.windows(2).filter(|w| w[1].at_ns < w[0].at_ns).count() as u64,
        ..InFlightReport::default()
    };
    let mut points: Vec<Point> = Vec::new();
    for (k, inst) in all.iter().enumerate() {
        let started = inst.started().min(FINISH_STARTED_MAX);
        if started == 0 {
            // Nothing started: every variant loses everything in flight.
            points.push((k, Torn::None, 0));
            continue;
        }
        for &t in &spec.torn {
            // Every proper subset finishes; all of them finishing is a later instant.
            points.extend((0..(1u64 << started) - 1).map(|finish| (k, t, finish)));
        }
    }
    if let InFlight::Only { at_ns, torn, finish } = spec.in_flight {
        let k = all
            .iter()
            .position(|i| i.t_ns == at_ns)
            .ok_or(CrashError::NoSuchInstant { at_ns })?;
        points = vec![(k, torn, finish)];
    }
    report.points = points.len() as u64;
    report.out_of_order_points = points.iter().filter(|&&(k, _, f)| all[k].out_of_order(trace, f)).count() as u64;
    let results = run_points(spec, &all, &points, progress)?;
    let mut outcome = InFlightOutcome {
        report,
        violations: Vec::new(),
        exercised: Exercised::default(),
    };
    for r in &results {
        outcome.exercised.add_recovery_counts(&r.exercised);
        outcome.report.acked_not_durable += r.acked_not_durable;
        outcome.report.acked_lost += r.acked_lost;
        for message in &r.violations {
            outcome.report.violation_count += 1;
            if outcome.violations.len() < keep {
                outcome.violations.push(CrashViolation {
                    at_op: r.stop,
                    at_ns: Some(r.t_ns),
                    torn: r.torn,
                    recovery_cut: None,
                    second_cut: None,
                    message: message.clone(),
                    replay: format!(
                        "{} --in-flight --at-ns {} --finish {} --torn {}",
                        spec.replay_base,
                        r.t_ns,
                        r.finish,
                        r.torn.name()
                    ),
                });
            }
        }
    }
    Ok(outcome)
}

/// Runs the points on `spec.threads` workers; results in (time, variant) order.
fn run_points(
    spec: &CrashSpec,
    all: &[Instant],
    points: &[Point],
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<InstantResult>, DeviceError> {
    let total = points.len() as u64;
    let done = AtomicU64::new(0);
    let threads = spec.threads.max(1);
    let mut results = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|w| {
                let done = &done;
                s.spawn(move || {
                    let mut out = Vec::new();
                    for &(k, torn, finish) in points.iter().skip(w).step_by(threads) {
                        // A NAND rule violation panics at the faulty operation:
                        // a violation of this point, not the end of the run.
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_instant(spec, &all[k], torn, finish)));
                        out.push(match r {
                            Ok(r) => r?,
                            Err(panic) => InstantResult {
                                t_ns: all[k].t_ns,
                                stop: all[k].stop,
                                torn,
                                finish,
                                violations: vec![format!("panicked: {}", panic_message(&*panic))],
                                exercised: Exercised::default(),
                                acked_not_durable: 0,
                                acked_lost: 0,
                            },
                        });
                        progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                    }
                    Ok::<_, DeviceError>(out)
                })
            })
            .collect();
        let mut results = Vec::new();
        for h in handles {
            results.extend(h.join().expect("crash worker panicked")?);
        }
        Ok::<_, DeviceError>(results)
    })?;
    results.sort_by_key(|r| (r.t_ns, r.torn, r.finish));
    Ok(results)
}

/// One cut at an instant: replay with it armed, recover, check (the checks
/// of `crash.rs`'s operation cuts, recovery not cut again).
fn run_instant(spec: &CrashSpec, inst: &Instant, torn: Torn, finish: u64) -> Result<InstantResult, DeviceError> {
    let mut r = InstantResult {
        t_ns: inst.t_ns,
        stop: inst.stop,
        torn,
        finish,
        violations: Vec::new(),
        exercised: Exercised::default(),
        acked_not_durable: 0,
        acked_lost: 0,
    };
    let mut dev = spec.device.fresh()?;
    let base = dev.nand().op_count();
    dev.nand_mut().arm_instant_cut(InstantCut {
        stop_at_op: base + inst.stop,
        in_flight: inst.cut(torn, finish).into_iter().map(|(i, t)| (base + i, t)).collect(),
        seed: spec.workload.seed,
    });
    let end = match run_until(spec, &mut *dev, false, Some(inst.t_ns)) {
        Ok(end) => end,
        Err(msg) => {
            r.violations.push(msg);
            return Ok(r);
        }
    };
    // The power cut (if the workload ended first, power goes after it):
    // the operations in flight end as the cut says, DRAM is dropped.
    let mut nand = dev.into_nand();
    nand.power_off();
    nand.power_on();
    let (dev, state, _) = match recover(spec, nand) {
        Ok(x) => x,
        Err(msg) => {
            r.violations.push(msg);
            return Ok(r);
        }
    };
    if let Some(report) = dev.recovery_report() {
        r.exercised.add_recovery(&report);
    }
    r.violations.extend(check_against_model(&state, &end.model, dev.nand()));
    let value_of = |lpn: u32| crate::crash::shown_version(&state, &end.model, dev.nand(), lpn);
    r.violations.extend(end.model.atomic_violation(value_of));
    r.violations.extend(end.model.order_violation(value_of));
    (r.acked_not_durable, r.acked_lost) = end.model.acknowledged_not_durable(value_of);
    // Only a checkpoint whose host operation returned by the instant is
    // known durable: its erase counts must not go back.
    let (ec, durable) = (dev.erase_counts(), &end.durable_erase_counts);
    if let Some(b) = (0..ec.len()).find(|&b| ec[b] < durable.get(b).copied().unwrap_or(0)) {
        r.violations
            .push(format!("erase count of block {b} went back from {} to {}", durable[b], ec[b]));
    }
    r.violations.extend(erase_count_below_oob(&*dev));
    Ok(r)
}

/// The end of a run of the workload.
pub(crate) struct RunEnd {
    pub(crate) model: TxModel,
    /// When each host operation returned, on the device clock.
    pub(crate) acks_ns: Vec<u64>,
    /// With an acknowledgment deadline: the erase counts the last checkpoint
    /// recorded as of the last host operation returned by then (a checkpoint
    /// waits for its programs, so it is durable).
    pub(crate) durable_erase_counts: Vec<u32>,
}

/// Runs the workload until it ends or power is cut. `check_each`: check the
/// device's DRAM invariants after every host operation. With `ack_by_ns`, an
/// operation that returns after it is in flight at a cut then
/// (`Driver::ack_by_ns`).
pub(crate) fn run_until(spec: &CrashSpec, dev: &mut dyn AnyDevice, check_each: bool, ack_by_ns: Option<u64>) -> Result<RunEnd, String> {
    let info = dev.info();
    let mut run = Run::first(spec.workload, info.logical_pages, info.page_size);
    run.driver.ack_by_ns = ack_by_ns;
    let mut acks_ns = Vec::new();
    let mut durable_erase_counts = if ack_by_ns.is_some() {
        dev.checkpoint_erase_counts()
    } else {
        Vec::new()
    };
    while run.step(dev, check_each)? == Step::Next {
        acks_ns.push(dev.now_ns());
        if ack_by_ns.is_some() {
            durable_erase_counts = dev.checkpoint_erase_counts();
        }
    }
    Ok(RunEnd {
        model: run.model,
        acks_ns,
        durable_erase_counts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_nand::FlashOp;

    fn op(kind: FlashOp, at_ns: u64, start_ns: u64, done_ns: u64) -> OpTrace {
        OpTrace {
            kind,
            target: 0,
            at_ns,
            start_ns,
            done_ns,
        }
    }

    #[test]
    fn instants_are_the_distinct_states_with_something_in_flight() {
        // An erase on a busy die (issued 0, runs 10..100), then a program on
        // an idle die (issued 0, runs 2..20), then a read issued at 30.
        let trace = [
            op(FlashOp::Erase, 0, 10, 100),
            op(FlashOp::Program, 0, 2, 20),
            op(FlashOp::Read, 30, 40, 40),
        ];
        let (all, out_of_order) = instants(&trace, &[5, 30, 45]);
        type State = (u64, u64, Vec<(u64, bool)>, usize);
        let states: Vec<State> = all.iter().map(|i| (i.t_ns, i.stop, i.in_flight.clone(), i.acked)).collect();
        assert_eq!(
            states,
            vec![
                (0, 2, vec![(0, false), (1, false)], 0),
                (2, 2, vec![(0, false), (1, true)], 0),
                (5, 2, vec![(0, false), (1, true)], 1),
                (10, 2, vec![(0, true), (1, true)], 1),
                (20, 2, vec![(0, true)], 1),
                (30, 3, vec![(0, true)], 2),
                (45, 3, vec![(0, true)], 3),
            ]
        );
        // From 20 the program issued after the erase is done before it.
        assert_eq!(out_of_order, 3);
    }
}
