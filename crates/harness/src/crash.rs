//! The crash-point enumerator.
//!
//! 1. A dry run of the workload on a fresh device records the kind of every
//!    NAND operation the workload issues (after format).
//! 2. For every operation that changes the array (program, partial program,
//!    erase) and every torn variant asked for, a fresh device runs the same
//!    workload with power cut at that operation; then the NAND alone is
//!    remounted and checked:
//!    - recovery succeeds and the FTL invariants hold;
//!    - every logical page holds a value the reference model allows (the one
//!      durable at the last flush, or one written after it), intact;
//!    - erase counts are not below those of the last durable checkpoint, nor
//!      below the largest count any page of the block records in its OOB
//!      (metadata rings included).
//!
//!    One more point cuts power after the whole workload, with nothing torn.
//! 3. Recovery itself is cut: at every operation of the recovery that changes
//!    the array (with the same torn variants), then recovered again; the result
//!    must hold the same logical contents as the uncut recovery.
//!
//! The dry run also checks the FTL's and the protocol's DRAM invariants on the
//! live device after every host operation: every crash point replays the same
//! operations up to its cut, so this covers the state before each cut (after
//! recovery the protocol's tables are often empty, where their checks cannot fail).
//!
//! With `in_flight`, the run also cuts at every distinct instant of the
//! device clock with programs or erases in flight on several dies
//! (`inflight.rs`).
//!
//! Cuts at reads are not enumerated separately: a cut just before a read leaves
//! the same flash as a cut just before the next program or erase, with fewer
//! operations acknowledged, so it is a strictly weaker check.

use crate::data::Content;
use crate::exercise::{Exercised, Expect};
use crate::inflight::{InFlight, InFlightReport};
use crate::model::TxModel;
use crate::run::{logical_state, Driver, Outcome};
use crate::workload::{OpStream, WorkloadSpec};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use txftl_ftl::Op;
use txftl_ftl::{DeviceError, DeviceStats, FtlConfig};
use txftl_nand::{FaultModel, FlashOp, Nand, NandConfig, PowerCut, Torn};
use txftl_protocols::{AnyDevice, ProtocolOptions};

/// How to build the device under test: always the same, fresh.
#[derive(Clone, Debug)]
pub struct DeviceSpec {
    pub protocol: String,
    pub nand: NandConfig,
    /// Bit errors, ECC, read retry, program and erase failures (None: off).
    pub faults: Option<FaultModel>,
    pub ftl: FtlConfig,
    pub opts: ProtocolOptions,
}

impl DeviceSpec {
    /// The `tiny` preset (full data, violations panic), default FTL and protocol options.
    pub fn tiny(protocol: &str) -> DeviceSpec {
        DeviceSpec {
            protocol: protocol.into(),
            nand: txftl_nand::preset("tiny")
                .expect("tiny preset")
                .config(txftl_nand::DataMode::Full, txftl_nand::ViolationPolicy::Panic),
            faults: None,
            ftl: FtlConfig::default(),
            opts: ProtocolOptions::default(),
        }
    }

    pub fn fresh(&self) -> Result<Box<dyn AnyDevice>, DeviceError> {
        let mut nand = Nand::new(self.nand)?;
        nand.set_fault_model(self.faults).map_err(DeviceError::Config)?;
        txftl_protocols::format(&self.protocol, nand, self.ftl.clone(), &self.opts)
    }
}

#[derive(Clone, Debug)]
pub struct CrashSpec {
    pub device: DeviceSpec,
    pub workload: WorkloadSpec,
    pub torn: Vec<Torn>,
    /// Also cut every recovery at each of its own mutating operations.
    pub recovery_cuts: bool,
    /// Only this crash point (replaying a failure).
    pub only: Option<(u64, Torn)>,
    pub threads: usize,
    /// The command line that reproduces this run, without `--at`/`--torn`.
    pub replay_base: String,
    /// What the scenario is meant to exercise: the run fails if any stays at zero.
    pub expect: Vec<Expect>,
    /// Cuts at instants of the device clock (`inflight.rs`).
    pub in_flight: InFlight,
}

#[derive(Clone, Debug, Serialize)]
pub struct CrashViolation {
    /// The operation cut (a cut at an instant: the first operation issued after it).
    pub at_op: u64,
    /// A cut at an instant: its time on the device clock.
    pub at_ns: Option<u64>,
    pub torn: Torn,
    /// Set when the violation appeared after recovery itself was cut.
    pub recovery_cut: Option<(u64, Torn)>,
    pub message: String,
    pub replay: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct CrashReport {
    pub protocol: String,
    pub workload: WorkloadSpec,
    pub host_ops: u64,
    /// NAND operations the workload issues (dry run, after format).
    pub flash_ops: u64,
    /// Of which programs, partial programs and erases.
    pub mutating_ops: u64,
    /// Counters of the dry run (shows GC and checkpoints happened).
    pub dry_run: DeviceStats,
    /// What the run exercised (dry run, and every crash point's recovery).
    pub exercised: Exercised,
    pub crash_points: u64,
    pub recovery_crash_points: u64,
    pub violation_count: u64,
    /// The first violations found (at most 50), in crash-point order.
    pub violations: Vec<CrashViolation>,
    /// Cuts at instants (with `in_flight`): their count and findings (their
    /// violations are among the above).
    pub in_flight: Option<InFlightReport>,
}

#[derive(Debug, thiserror::Error)]
pub enum CrashError {
    #[error("the uncut dry run failed: {0}")]
    DryRun(String),
    #[error("the scenario was meant to exercise {} but did not: it proves nothing there (exercised: {exercised:?})", missing.join(", "))]
    NotExercised {
        missing: Vec<&'static str>,
        exercised: Box<Exercised>,
    },
    #[error("no cut at {at_ns} ns: it is not an instant with a program or erase in flight (a violation's replay names one)")]
    NoSuchInstant { at_ns: u64 },
    #[error("crash point {at} does not exist: the workload issues {ops} flash operations (points 0 to {ops}, the last one after every operation)")]
    NoSuchPoint { at: u64, ops: u64 },
    #[error(transparent)]
    Device(#[from] DeviceError),
}

struct PointResult {
    at: u64,
    torn: Torn,
    violations: Vec<(Option<(u64, Torn)>, String)>,
    recovery_points: u64,
    exercised: Exercised,
}

/// The end of a run of the workload.
pub(crate) struct RunEnd {
    pub(crate) model: TxModel,
    /// Power was cut.
    cut: bool,
    /// When each host operation returned, on the device clock.
    pub(crate) acks_ns: Vec<u64>,
    /// With an acknowledgment deadline: the erase counts the last checkpoint
    /// recorded as of the last host operation returned by then (a checkpoint
    /// waits for its programs, so it is durable).
    pub(crate) durable_erase_counts: Vec<u32>,
    table_full_aborts: u64,
    /// Reads the device reported lost to bit errors (each checked genuine).
    reported_losses: u64,
    /// Transactional writes to a page another open transaction had written.
    cross_tx_updates: u64,
}

/// Runs the workload until it ends or power is cut. `check_each`: check the
/// device's DRAM invariants after every host operation (the dry run).
fn run_until_cut(spec: &CrashSpec, dev: &mut dyn AnyDevice, check_each: bool) -> Result<RunEnd, String> {
    run_until(spec, dev, check_each, None)
}

/// [`run_until_cut`]; with `ack_by_ns`, an operation that returns after it
/// is in flight at a cut then (`Driver::ack_by_ns`).
pub(crate) fn run_until(spec: &CrashSpec, dev: &mut dyn AnyDevice, check_each: bool, ack_by_ns: Option<u64>) -> Result<RunEnd, String> {
    let info = dev.info();
    let mut model = TxModel::new(info.logical_pages);
    let mut driver = Driver::new(info.page_size, true);
    driver.ack_by_ns = ack_by_ns;
    let mut acks_ns = Vec::new();
    let mut durable_erase_counts = if ack_by_ns.is_some() {
        dev.checkpoint_erase_counts()
    } else {
        Vec::new()
    };
    let mut stream = OpStream::new(spec.workload, info.logical_pages);
    let mut table_full_aborts = 0;
    let mut reported_losses = 0;
    let mut index = 0u64;
    while let Some(op) = stream.next() {
        match driver.apply(dev, op, &mut model) {
            Ok(Outcome::Done) => {}
            // The host's reaction to a full table, as `txftl run` does it.
            Ok(Outcome::TableFullAborted(tid)) => {
                stream.forget(tid);
                table_full_aborts += 1;
            }
            Ok(Outcome::WrongRead { lpn, expected, got }) => {
                return Err(format!(
                    "read of lpn {lpn} (host op {index}) returned {got:?}, latest write is {expected:?}"
                ));
            }
            Err(DeviceError::PowerLoss) => {
                return Ok(RunEnd {
                    model,
                    cut: true,
                    acks_ns,
                    durable_erase_counts,
                    table_full_aborts,
                    reported_losses,
                    cross_tx_updates: stream.cross_tx_updates,
                })
            }
            // A read the device reports lost to bit errors: allowed only if the
            // page really is beyond ECC (a loss reported, not a bug hidden).
            Err(DeviceError::DataLost { lpn, ppn }) if matches!(op, Op::Read(_) | Op::TxRead(..)) => {
                match lost_page(dev.nand(), lpn, ppn) {
                    Err(why) => return Err(format!("host op {index} ({op:?}) reported lpn {lpn} lost, but {why}")),
                    // No cut yet in this run: nothing mapped can be torn.
                    Ok(Some(Content::Foreign)) => {
                        return Err(format!(
                            "host op {index} ({op:?}) reported lpn {lpn} lost, but page {ppn} is torn with no cut"
                        ))
                    }
                    Ok(_) => {}
                }
                reported_losses += 1;
            }
            // A write the protocol's isolation refuses (SCC: a page another
            // open transaction wrote) does not happen; the model is unchanged.
            Err(DeviceError::IsolationUnsupported { .. }) if matches!(op, Op::Write(_) | Op::TxWrite(..)) => {}
            Err(e) => return Err(format!("host op {index} ({op:?}) failed: {e}")),
        }
        if check_each {
            dev.check_invariants()
                .map_err(|e| format!("invariant broken on the live device after host op {index} ({op:?}): {e}"))?;
        }
        acks_ns.push(dev.now_ns());
        if ack_by_ns.is_some() {
            durable_erase_counts = dev.checkpoint_erase_counts();
        }
        index += 1;
    }
    Ok(RunEnd {
        model,
        cut: false,
        acks_ns,
        durable_erase_counts,
        table_full_aborts,
        reported_losses,
        cross_tx_updates: stream.cross_tx_updates,
    })
}

/// Checks a page the device reported lost. `Err(why)` if the loss is not
/// genuine. Genuine: a copy GC made of a page beyond ECC (its OOB says lost;
/// `Ok(None)`: what it held is gone), or a page ECC fails on at every retry
/// level (`Ok(Some(raw))`: what its cells hold under the errors, a complete
/// write of `lpn` or `Foreign` when torn, which the caller judges). Either way
/// the page's raw spare area must name `lpn` (recovery mapped the right page).
fn lost_page(nand: &Nand, lpn: u32, ppn: u32) -> Result<Option<Content>, String> {
    use txftl_ftl::oob::{Oob, OobState};
    let oob = match Oob::decode(&nand.inspect_oob(ppn)) {
        OobState::Valid(o) => o,
        other => return Err(format!("physical page {ppn}'s spare area is {other}")),
    };
    if oob.lpn != lpn {
        return Err(format!("physical page {ppn} belongs to lpn {}", oob.lpn));
    }
    if oob.lost {
        return Ok(None);
    }
    if !nand.inspect_unreadable(ppn) {
        return Err(format!("physical page {ppn} is readable"));
    }
    match crate::data::decode(&nand.inspect_data(ppn)) {
        raw @ Content::Foreign => Ok(Some(raw)),
        raw @ Content::Written { lpn: l, .. } if l == lpn => Ok(Some(raw)),
        other => Err(format!("physical page {ppn} holds {other:?} under its bit errors")),
    }
}

/// The version a page reported lost held (`None` if unknown: a GC copy
/// marked lost, or torn), once `lost_page` accepted it.
pub(crate) fn lost_version(nand: &Nand, lpn: u32, ppn: u32) -> Option<u64> {
    match lost_page(nand, lpn, ppn) {
        Ok(Some(Content::Written { version, .. })) => Some(version),
        _ => None,
    }
}

/// Erase counts must never be below what the block's own pages record in their
/// OOB (the count the FTL had when it programmed them): recovery that ignores
/// them would let wear go back. Metadata rings included.
pub(crate) fn erase_count_below_oob(dev: &dyn AnyDevice) -> Option<String> {
    let nand = dev.nand();
    let geo = *nand.geometry();
    let counts = dev.erase_counts();
    for b in 0..geo.block_count() {
        let recorded = (0..geo.pages_per_block)
            .filter_map(|p| match txftl_ftl::oob::Oob::decode(&nand.inspect_oob(geo.ppn(b, p))) {
                txftl_ftl::oob::OobState::Valid(o) => Some(o.erase_count),
                _ => None,
            })
            .max();
        if let Some(r) = recorded.filter(|&r| r > counts[b as usize]) {
            return Some(format!(
                "erase count of block {b} recovered as {} but its pages record {r}",
                counts[b as usize]
            ));
        }
    }
    None
}

pub(crate) fn check_against_model(state: &[Content], model: &TxModel, nand: &Nand) -> Vec<String> {
    let mut out = Vec::new();
    for (lpn, content) in state.iter().enumerate() {
        let lpn = lpn as u32;
        let value = match *content {
            Content::Lost { ppn } => {
                // A reported loss: genuine, and of a version the model allows
                // (read from the raw cells under the errors).
                match lost_page(nand, lpn, ppn) {
                    Err(why) => {
                        out.push(format!("lpn {lpn} reported lost, but {why}"));
                        continue;
                    }
                    Ok(Some(Content::Written { version, .. })) => Some(version),
                    // A lost-marked GC copy: the version it held is gone.
                    Ok(None) => continue,
                    // A torn page whose data ECC cannot read either: recovery
                    // cannot tell it from a decayed one and keeps it, reported
                    // lost. Only a write the cut could interrupt may be torn.
                    Ok(Some(_)) if model.allowed(lpn).len() > 1 => continue,
                    Ok(Some(other)) => {
                        out.push(format!(
                            "lpn {lpn} reported lost, a page holding {other:?}, but no write to it was in flight"
                        ));
                        continue;
                    }
                }
            }
            Content::Unwritten => None,
            Content::Written { lpn: l, version } if l == lpn => Some(version),
            Content::Written { lpn: l, version } => {
                out.push(format!("lpn {lpn} holds the page of lpn {l} (version {version})"));
                continue;
            }
            Content::Foreign => {
                out.push(format!("lpn {lpn} holds a torn or foreign page"));
                continue;
            }
        };
        let allowed = model.allowed(lpn);
        if !allowed.contains(&value) {
            out.push(format!("lpn {lpn} holds version {value:?}; allowed: {allowed:?}"));
        }
        if out.len() >= 5 {
            break;
        }
    }
    out
}

/// Recovers, checks invariants; returns the device and its logical contents.
pub(crate) fn recover(spec: &CrashSpec, nand: Nand) -> Result<(Box<dyn AnyDevice>, Vec<Content>), String> {
    let mut dev = txftl_protocols::mount(&spec.device.protocol, nand, spec.device.ftl.clone(), &spec.device.opts)
        .map_err(|e| format!("recovery failed: {e}"))?;
    dev.check_invariants()
        .map_err(|e| format!("invariant broken after recovery: {e}"))?;
    let state = logical_state(&mut *dev).map_err(|e| format!("reading back after recovery failed: {e}"))?;
    Ok((dev, state))
}

fn run_point(spec: &CrashSpec, at: u64, torn: Torn) -> Result<PointResult, DeviceError> {
    let mut result = PointResult {
        at,
        torn,
        violations: Vec::new(),
        recovery_points: 0,
        exercised: Exercised::default(),
    };
    let mut dev = spec.device.fresh()?;
    let base = dev.nand().op_count();
    dev.nand_mut().arm_power_cut(PowerCut {
        at_op: base + at,
        torn,
        seed: spec.workload.seed,
    });
    let model = match run_until_cut(spec, &mut *dev, false) {
        Ok(r) => r.model,
        Err(msg) => {
            result.violations.push((None, msg));
            return Ok(result);
        }
    };
    let ckpt_erase_counts = dev.checkpoint_erase_counts();
    // The power cut: every piece of DRAM state is dropped with the device.
    let mut nand = dev.into_nand();
    nand.power_off();
    nand.power_on();
    let before_recovery = nand.snapshot();
    let (dev, state) = match recover(spec, nand) {
        Ok(r) => r,
        Err(msg) => {
            result.violations.push((None, msg));
            return Ok(result);
        }
    };
    if let Some(r) = dev.recovery_report() {
        result.exercised.add_recovery(&r);
    }
    for msg in check_against_model(&state, &model, dev.nand()) {
        result.violations.push((None, msg));
    }
    let value_of = |lpn: u32| match state[lpn as usize] {
        Content::Written { lpn: l, version } if l == lpn => Some(version),
        // A reported loss of a page that held this version (checked above).
        Content::Lost { ppn } => lost_version(dev.nand(), lpn, ppn),
        _ => None,
    };
    if let Some(msg) = model.atomic_violation(value_of) {
        result.violations.push((None, msg));
    }
    let ec = dev.erase_counts();
    if let Some(b) = (0..ec.len()).find(|&b| ec[b] < ckpt_erase_counts.get(b).copied().unwrap_or(0)) {
        result.violations.push((
            None,
            format!("erase count of block {b} went back from {} to {}", ckpt_erase_counts[b], ec[b]),
        ));
    }
    if let Some(msg) = erase_count_below_oob(&*dev) {
        result.violations.push((None, msg));
    }
    drop(dev);
    if !spec.recovery_cuts {
        return Ok(result);
    }
    // Enumerate cuts inside recovery.
    let mut probe = before_recovery.snapshot();
    probe.set_op_log(true);
    let log: Vec<FlashOp> = match txftl_protocols::mount_or_return(&spec.device.protocol, probe, spec.device.ftl.clone(), &spec.device.opts)
    {
        Ok(d) => d.nand().op_log().to_vec(),
        Err((_, n)) => n.op_log().to_vec(),
    };
    for (j, kind) in log.iter().enumerate() {
        if !kind.mutates() {
            continue;
        }
        for &rt in &spec.torn {
            result.recovery_points += 1;
            let mut n = before_recovery.snapshot();
            n.arm_power_cut(PowerCut {
                at_op: j as u64,
                torn: rt,
                seed: spec.workload.seed ^ 0x5EED,
            });
            let n = match txftl_protocols::mount_or_return(&spec.device.protocol, n, spec.device.ftl.clone(), &spec.device.opts) {
                Ok(d) => d.into_nand(),
                Err((_, n)) => *n,
            };
            let mut n = n;
            n.power_off();
            n.power_on();
            match recover(spec, n) {
                Ok((_, again)) if again == state => {}
                Ok((_, again)) => {
                    let lpn = again.iter().zip(&state).position(|(a, b)| a != b).unwrap_or(0);
                    result.violations.push((
                        Some((j as u64, rt)),
                        format!(
                            "recovery cut and rerun reached a different state: lpn {lpn} is {:?}, not {:?}",
                            again[lpn], state[lpn]
                        ),
                    ));
                }
                Err(msg) => result
                    .violations
                    .push((Some((j as u64, rt)), format!("after a cut during recovery: {msg}"))),
            }
        }
    }
    Ok(result)
}

/// Enumerates every crash point of the workload and checks the contract at each.
/// `progress(done, total)` is called as points finish (from worker threads).
pub fn crashtest(spec: &CrashSpec, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<CrashReport, CrashError> {
    // Dry run: learn the operations.
    let mut dev = spec.device.fresh()?;
    dev.nand_mut().set_op_log(true);
    dev.nand_mut().set_op_trace(spec.in_flight != InFlight::Off);
    let host_ops = OpStream::new(spec.workload, dev.info().logical_pages).total_ops();
    let dry = run_until_cut(spec, &mut *dev, true).map_err(CrashError::DryRun)?;
    if dry.cut {
        return Err(CrashError::DryRun("power was lost with no cut armed".into()));
    }
    let dry_run = dev.stats();
    let log: Vec<FlashOp> = dev.nand().op_log().to_vec();
    let mut points: Vec<(u64, Torn)> = Vec::new();
    for (i, kind) in log.iter().enumerate() {
        if kind.mutates() {
            points.extend(spec.torn.iter().map(|&t| (i as u64, t)));
        }
    }
    points.push((log.len() as u64, Torn::None)); // after the last operation
    if let Some(only) = spec.only {
        // A point past the end would "pass" without testing anything.
        if only.0 > log.len() as u64 {
            return Err(CrashError::NoSuchPoint {
                at: only.0,
                ops: log.len() as u64,
            });
        }
        points = vec![only];
    }
    if let InFlight::Only { .. } = spec.in_flight {
        points.clear();
    }
    let total = points.len() as u64;
    let done = AtomicU64::new(0);
    let threads = spec.threads.max(1);
    let mut results: Vec<PointResult> = Vec::new();
    let chunks: Vec<Vec<(u64, Torn)>> = (0..threads)
        .map(|t| points.iter().copied().skip(t).step_by(threads).collect())
        .collect();
    let outcome: Result<(), DeviceError> = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                let done = &done;
                s.spawn(move || {
                    let mut out = Vec::new();
                    for &(at, torn) in chunk {
                        // A NAND rule violation panics at the faulty operation: report it
                        // as a violation of this crash point rather than losing the run.
                        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_point(spec, at, torn)));
                        out.push(match r {
                            Ok(r) => r?,
                            Err(panic) => {
                                let msg = panic
                                    .downcast_ref::<String>()
                                    .cloned()
                                    .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                                    .unwrap_or_else(|| "panic".into());
                                PointResult {
                                    at,
                                    torn,
                                    violations: vec![(None, format!("panicked: {msg}"))],
                                    recovery_points: 0,
                                    exercised: Exercised::default(),
                                }
                            }
                        });
                        progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
                    }
                    Ok::<_, DeviceError>(out)
                })
            })
            .collect();
        for h in handles {
            results.extend(h.join().expect("crash worker panicked")?);
        }
        Ok(())
    });
    outcome?;
    results.sort_by_key(|r| (r.at, r.torn));
    let mut violations = Vec::new();
    let mut violation_count = 0;
    let mut recovery_crash_points = 0;
    let mut exercised = Exercised::from_dry_run(&dry_run, dry.table_full_aborts, dry.reported_losses);
    exercised.cross_tx_updates = dry.cross_tx_updates;
    for r in &results {
        recovery_crash_points += r.recovery_points;
        exercised.add_recovery_counts(&r.exercised);
        for (rcut, message) in &r.violations {
            violation_count += 1;
            if violations.len() < 50 {
                violations.push(CrashViolation {
                    at_op: r.at,
                    at_ns: None,
                    torn: r.torn,
                    recovery_cut: *rcut,
                    message: message.clone(),
                    replay: format!("{} --at {} --torn {}", spec.replay_base, r.at, r.torn.name()),
                });
            }
        }
    }
    let in_flight = match spec.in_flight {
        InFlight::Off => None,
        _ => {
            let trace = dev.nand().op_trace().to_vec();
            let f = crate::inflight::enumerate(spec, &trace, &dry.acks_ns, 50 - violations.len(), progress)?;
            violation_count += f.report.violation_count;
            exercised.add_recovery_counts(&f.exercised);
            violations.extend(f.violations);
            Some(f.report)
        }
    };
    // A replay of one point exercises what that point does; expectations are
    // for whole enumerations.
    let replay = spec.only.is_some() || matches!(spec.in_flight, InFlight::Only { .. });
    let missing: Vec<&'static str> = spec
        .expect
        .iter()
        .filter(|&&e| !replay && exercised.count(e) == 0)
        .map(|e| e.name())
        .collect();
    if !missing.is_empty() {
        return Err(CrashError::NotExercised {
            missing,
            exercised: Box::new(exercised),
        });
    }
    Ok(CrashReport {
        protocol: spec.device.protocol.clone(),
        workload: spec.workload,
        host_ops,
        flash_ops: log.len() as u64,
        mutating_ops: log.iter().filter(|k| k.mutates()).count() as u64,
        dry_run,
        exercised,
        crash_points: total,
        recovery_crash_points,
        violation_count,
        violations,
        in_flight,
    })
}
