//! The crash-point enumerator.
//!
//! 1. A dry run of the workload on a fresh device records the kind of every
//!    NAND operation the workload issues (after format), and which host
//!    operation issues it.
//! 2. For every operation that changes the array (program, partial program,
//!    erase) and every torn variant asked for, the workload runs with power
//!    cut at that operation; then the NAND alone is remounted and checked:
//!    - recovery succeeds and the FTL invariants hold;
//!    - every logical page holds a value the reference model allows (the one
//!      durable at the last flush, or one written after it), intact;
//!    - erase counts are not below those of the last durable checkpoint, nor
//!      below the largest count any page of the block records in its OOB
//!      (metadata rings included).
//!
//!    One more point cuts power after the whole workload, with nothing torn.
//!    The run up to each cut is forked from one rolling run of the workload
//!    (`fork.rs`), not replayed from a fresh device; `replay_from_scratch`
//!    replays instead, the reference the fork is checked against.
//! 3. Recovery itself is cut: at every operation of the recovery that changes
//!    the array (with the same torn variants), then recovered again; the result
//!    must hold the same logical contents as the uncut recovery. The flash at
//!    each such cut is the recovery's starting flash with its logged programs
//!    and erases before the cut redone (`Nand::redo`): reads change nothing.
//! 4. At every checkpoint of the dry run, a recovery from a copy of the NAND
//!    must rebuild the durable state the live device holds (`durable.rs`).
//! 5. Two-cut runs (`second_cuts`, `second.rs`): after a point's recovery
//!    passed its checks, the host goes on with a continuation of the
//!    workload on the recovered device, and power is cut again inside it, at
//!    every one of its mutating operations or at a seeded sample of them;
//!    recovery and the same checks follow, against a model that starts from
//!    what the first recovery returned. State a mount rebuilds in DRAM is
//!    tested this way, and against the live device's by step 4.
//!
//! The dry runs (the workload's, and each continuation's) also check the
//! FTL's and the protocol's DRAM invariants on the live device after every
//! host operation: every crash point runs the same operations up to its cut,
//! so this covers the state before each cut (after recovery the protocol's
//! tables are often empty, where their checks cannot fail).
//!
//! With `in_flight`, the run also cuts at every distinct instant of the
//! device clock with programs or erases in flight on several dies
//! (`inflight.rs`).
//!
//! Cuts at reads are not enumerated separately: a cut just before a read leaves
//! the same flash as a cut just before the next program or erase, with fewer
//! operations acknowledged, so it is a strictly weaker check.

mod durable;
pub(crate) mod fork;
mod second;

use crate::data::Content;
use crate::exercise::{Exercised, Expect};
use crate::inflight::{InFlight, InFlightReport};
use crate::model::TxModel;
use crate::run::{logical_state_kept, same_logical_state};
use crate::workload::{OpStream, WorkloadSpec};
use fork::{Cut, Run};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use txftl_ftl::{DeviceError, DeviceStats, FtlConfig};
use txftl_nand::{FaultModel, FlashOp, MutationRecord, Nand, NandConfig, PowerCut, Torn};
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
    /// The small preset the protocol's NAND needs pick (`tiny`, or
    /// `tiny-slc` for a protocol that needs SLC; `tiny` for an unknown name,
    /// which [`DeviceSpec::fresh`] refuses), full data, violations panic,
    /// default FTL and protocol options.
    pub fn tiny(protocol: &str) -> DeviceSpec {
        let preset = txftl_protocols::entry(protocol).map_or("tiny", |e| e.nand.tiny_preset());
        DeviceSpec {
            protocol: protocol.into(),
            nand: txftl_nand::preset(preset)
                .expect("the tiny presets exist")
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

/// Which second cuts a crash point's continuation gets (`second.rs`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SecondCuts {
    /// No continuation: one cut per run.
    Off,
    /// Every mutating operation of the continuation, every torn variant,
    /// and the point after its last operation.
    Every,
    /// This many of those, drawn with ChaCha8 seeded from the workload's
    /// seed and the first cut (the same ones on every run).
    Sample(u32),
}

impl SecondCuts {
    /// `off`, `every`, or a sample size.
    pub fn parse(s: &str) -> Option<SecondCuts> {
        match s {
            "off" => Some(SecondCuts::Off),
            "every" => Some(SecondCuts::Every),
            n => n.parse().ok().map(SecondCuts::Sample),
        }
    }
    pub fn name(self) -> String {
        match self {
            SecondCuts::Off => "off".into(),
            SecondCuts::Every => "every".into(),
            SecondCuts::Sample(n) => n.to_string(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct CrashSpec {
    pub device: DeviceSpec,
    pub workload: WorkloadSpec,
    pub torn: Vec<Torn>,
    /// Also cut every recovery at each of its own mutating operations.
    pub recovery_cuts: bool,
    /// After each point's recovery, continue and cut again.
    pub second_cuts: SecondCuts,
    /// Host operations of each continuation.
    pub second_ops: u64,
    /// Only this crash point (replaying a failure).
    pub only: Option<(u64, Torn)>,
    /// Only this second cut, at the point `only` names (replaying a failure).
    pub then_only: Option<(u64, Torn)>,
    /// Replay the workload from a fresh device to every crash point instead
    /// of forking one rolling run (slower; the reference the fork must match).
    pub replay_from_scratch: bool,
    pub threads: usize,
    /// The command line that reproduces this run, without `--at`/`--torn`.
    pub replay_base: String,
    /// What the scenario is meant to exercise: the run fails if any stays at zero.
    pub expect: Vec<Expect>,
    /// Cuts at instants of the device clock (`inflight.rs`).
    pub in_flight: InFlight,
}

impl CrashSpec {
    /// A cut at every flash operation with every torn variant (and, with
    /// `recovery_cuts`, at every mutating operation of each recovery), no
    /// second cuts (continuations of 30 host operations if they are turned
    /// on), no cuts at instants, forked on two threads: what the crash
    /// tests start from. `replay_base`: the command line that reproduces
    /// the run, without `--at`/`--torn`.
    pub fn every_point(
        device: DeviceSpec,
        workload: WorkloadSpec,
        expect: Vec<Expect>,
        recovery_cuts: bool,
        replay_base: String,
    ) -> CrashSpec {
        CrashSpec {
            device,
            workload,
            torn: Torn::ALL.to_vec(),
            recovery_cuts,
            second_cuts: SecondCuts::Off,
            second_ops: 30,
            only: None,
            then_only: None,
            replay_from_scratch: false,
            threads: 2,
            replay_base,
            expect,
            in_flight: InFlight::Off,
        }
    }

    /// The command that replays one point (with its second cut, if any).
    fn replay(&self, at: u64, torn: Torn, second: Option<(u64, Torn)>) -> String {
        let mut s = format!("{} --at {at} --torn {}", self.replay_base, torn.name());
        if let Some((j, u)) = second {
            s += &format!(" --second-ops {} --then-at {j} --then-torn {}", self.second_ops, u.name());
        }
        s
    }
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
    /// Set when it appeared after the continuation was cut there (its
    /// flash operation index from the end of the first recovery).
    pub second_cut: Option<(u64, Torn)>,
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
    pub second_cuts: SecondCuts,
    /// Crash points whose recovery was continued, and the second cuts tried in those continuations.
    pub continued_points: u64,
    pub second_crash_points: u64,
    pub violation_count: u64,
    /// The first violations found (at most 50), in crash-point order.
    pub violations: Vec<CrashViolation>,
    /// Wall time of the enumeration (a figure of the emulator, not of the device).
    pub wall_seconds: f64,
    /// Crash points of every kind (first, recovery, second) per wall second.
    pub points_per_second: f64,
    /// Recovery-equivalence checks run, one at each checkpoint of the dry
    /// run and of each continuation's (`durable.rs`; a mismatch is a
    /// violation above), and the first dry run's checks' wall time.
    pub durable_checks: u64,
    pub durable_check_seconds: f64,
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
    #[error("second crash point {at} does not exist: the continuation issues {ops} flash operations (points 0 to {ops})")]
    NoSuchSecondPoint { at: u64, ops: u64 },
    #[error("the protocol's device cannot be forked (replay every point from scratch instead)")]
    NoFork,
    #[error("the rolling run left the dry run's path: {0}")]
    Diverged(String),
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Where a violation was found, below the crash point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Found {
    /// After the first cut's recovery.
    First,
    /// After recovery was cut at its own operation, and rerun.
    RecoveryCut(u64, Torn),
    /// In the continuation's dry run, on the recovered device.
    Continuation,
    /// After the continuation was cut there and recovered.
    SecondCut(u64, Torn),
}

struct PointResult {
    at: u64,
    torn: Torn,
    violations: Vec<(Found, String)>,
    recovery_points: u64,
    second_points: u64,
    continued: bool,
    exercised: Exercised,
    /// Recovery-equivalence checks the continuation's dry run ran.
    durable_checks: u64,
}

impl PointResult {
    fn new(at: u64, torn: Torn) -> PointResult {
        PointResult {
            at,
            torn,
            violations: Vec::new(),
            recovery_points: 0,
            second_points: 0,
            continued: false,
            exercised: Exercised::default(),
            durable_checks: 0,
        }
    }
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

/// The version `lpn` shows after recovery, for the atomicity check of the
/// commit in flight. A page reported lost whose cells hold a torn page is
/// the write the cut interrupted (the only one that can be torn, as
/// `check_against_model` says): with the commit in flight writing `lpn`, it
/// is that commit's page, kept (reported lost) as the commit's own.
pub(crate) fn shown_version(state: &[Content], model: &TxModel, nand: &Nand, lpn: u32) -> Option<u64> {
    match state[lpn as usize] {
        Content::Written { lpn: l, version } if l == model.page_named(lpn, version) => Some(version),
        Content::Lost { ppn } => match lost_page(nand, lpn, ppn) {
            Ok(Some(Content::Written { version, .. })) => Some(version),
            Ok(Some(Content::Foreign)) => model.in_flight_version(lpn),
            _ => None,
        },
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
            Content::Written { lpn: l, version } if l == model.page_named(lpn, version) => Some(version),
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
    out.extend(model.remap_violation(|lpn| shown_version(state, model, nand, lpn)));
    out
}

/// A recovered device, its logical contents, and the programs and erases
/// of the mount if its NAND logged them (taken before the read-back, which
/// may write: DFTL's cache).
type Remounted = (Box<dyn AnyDevice>, Vec<Content>, Vec<MutationRecord>);

/// Recovers, checks invariants; returns the device and its logical contents.
pub(crate) fn recover(spec: &CrashSpec, nand: Nand) -> Result<Remounted, String> {
    recover_kept(spec, nand, None)
}

/// [`recover`], keeping the bytes the pages read back in `bytes` when given
/// (`logical_state_kept`).
fn recover_kept(spec: &CrashSpec, nand: Nand, bytes: Option<&mut Vec<u8>>) -> Result<Remounted, String> {
    let mut dev = mount_checked(spec, nand)?;
    let log = dev.nand().redo_log().to_vec();
    dev.nand_mut().set_redo_log(false);
    let state = logical_state_kept(&mut *dev, bytes).map_err(|e| format!("reading back after recovery failed: {e}"))?;
    Ok((dev, state, log))
}

/// Recovery from `nand` and the FTL's invariant check after it.
fn mount_checked(spec: &CrashSpec, nand: Nand) -> Result<Box<dyn AnyDevice>, String> {
    let dev = txftl_protocols::mount(&spec.device.protocol, nand, spec.device.ftl.clone(), &spec.device.opts)
        .map_err(|e| format!("recovery failed: {e}"))?;
    dev.check_invariants()
        .map_err(|e| format!("invariant broken after recovery: {e}"))?;
    Ok(dev)
}

/// The flash a cut left, recovered, and what recovery started from.
struct Recovered {
    dev: Box<dyn AnyDevice>,
    state: Vec<Content>,
    /// The flash before recovery, the programs and erases recovery issued
    /// and the bytes its pages read back (kept only for recovery cuts).
    before: Option<(Nand, Vec<MutationRecord>, Vec<u8>)>,
}

/// Replays the workload from a fresh device up to a cut at `at`: the
/// reference path (`replay_from_scratch`). `Ok(Err)`: a violation before the cut.
fn cut_by_replay(spec: &CrashSpec, at: u64, torn: Torn) -> Result<Result<Cut, String>, CrashError> {
    let mut dev = spec.device.fresh()?;
    let base = dev.nand().op_count();
    dev.nand_mut().arm_power_cut(PowerCut {
        at_op: base + at,
        torn,
        seed: spec.workload.seed,
    });
    let info = dev.info();
    let mut run = Run::first(spec.workload, info.logical_pages, info.page_size);
    Ok(run.until_cut(&mut *dev, false).map(|_| Cut { dev, run }))
}

/// Drops the cut device's DRAM state (the power cut), recovers from its
/// NAND alone and checks the contract against the run's model, adding to
/// `violations`. The recovered device and its contents if recovery succeeded.
fn recover_and_check(spec: &CrashSpec, cut: Cut, keep_before: bool, violations: &mut Vec<String>) -> Option<Recovered> {
    let Cut { dev, run } = cut;
    let ckpt_erase_counts = dev.checkpoint_erase_counts();
    let mut nand = dev.into_nand();
    nand.power_off();
    nand.power_on();
    let before = keep_before.then(|| nand.snapshot());
    nand.set_redo_log(keep_before);
    let mut bytes = Vec::new();
    let (dev, state, log) = match recover_kept(spec, nand, keep_before.then_some(&mut bytes)) {
        Ok(r) => r,
        Err(msg) => {
            violations.push(msg);
            return None;
        }
    };
    violations.extend(check_against_model(&state, &run.model, dev.nand()));
    // A reported loss of a page that held this version (checked above).
    let value_of = |lpn: u32| shown_version(&state, &run.model, dev.nand(), lpn);
    if let Some(msg) = run.model.atomic_violation(value_of) {
        violations.push(msg);
    }
    if let Some(msg) = run.model.order_violation(value_of) {
        violations.push(msg);
    }
    let ec = dev.erase_counts();
    if let Some(b) = (0..ec.len()).find(|&b| ec[b] < ckpt_erase_counts.get(b).copied().unwrap_or(0)) {
        violations.push(format!(
            "erase count of block {b} went back from {} to {}",
            ckpt_erase_counts[b], ec[b]
        ));
    }
    if let Some(msg) = erase_count_below_oob(&*dev) {
        violations.push(msg);
    }
    Some(Recovered {
        dev,
        state,
        before: before.map(|b| (b, log, bytes)),
    })
}

/// Checks one crash point: recovery from the flash `cut` left, the recovery
/// cuts, and the two-cut runs of its continuation.
fn run_point(spec: &CrashSpec, at: u64, torn: Torn, cut: Result<Cut, String>) -> Result<PointResult, CrashError> {
    let mut result = PointResult::new(at, torn);
    let cut = match cut {
        Ok(c) => c,
        Err(msg) => {
            result.violations.push((Found::First, msg));
            return Ok(result);
        }
    };
    let continues = spec.second_cuts != SecondCuts::Off || spec.then_only.is_some();
    let at_cut = continues.then(|| cut.run.clone());
    let mut found = Vec::new();
    let recovered = recover_and_check(spec, cut, spec.recovery_cuts, &mut found);
    result.violations.extend(found.into_iter().map(|m| (Found::First, m)));
    let Some(rec) = recovered else {
        return Ok(result);
    };
    if let Some(r) = rec.dev.recovery_report() {
        result.exercised.add_recovery(&r);
    }
    if let Some((before, log, bytes)) = &rec.before {
        cut_recoveries(spec, before, log, (&rec.state, bytes), &mut result);
    }
    // A wrong first recovery is reported as such: continuing from it
    // would only report the same fault again.
    if let (Some(at_cut), true) = (at_cut, result.violations.is_empty()) {
        second::continue_and_cut(spec, (at, torn), rec.dev, &rec.state, &at_cut, &mut result)?;
    }
    Ok(result)
}

/// Cuts the recovery that started from `before` at each of its own
/// programs and erases (`log`, every torn variant), recovers again and
/// compares with `state`, the uncut recovery's contents (and the bytes they
/// were read from: `same_logical_state`). The flash at each cut is `before`
/// with the recovery's earlier programs and erases redone (its reads change
/// nothing): one recovery per cut, not two.
fn cut_recoveries(spec: &CrashSpec, before: &Nand, log: &[MutationRecord], (state, bytes): (&[Content], &[u8]), result: &mut PointResult) {
    let mut rolling = before.snapshot();
    for rec in log {
        let j = rec.op_index;
        for &rt in &spec.torn {
            result.recovery_points += 1;
            let mut n = rolling.snapshot();
            n.arm_power_cut(PowerCut {
                at_op: j,
                torn: rt,
                seed: spec.workload.seed ^ 0x5EED,
            });
            // Torn by the armed cut: it fails with PowerLoss, as it did in a recovery cut there.
            let _ = n.redo(rec);
            n.power_off();
            n.power_on();
            let again = mount_checked(spec, n).and_then(|mut dev| {
                dev.nand_mut().set_redo_log(false);
                same_logical_state(&mut *dev, state, bytes).map_err(|e| format!("reading back after recovery failed: {e}"))
            });
            match again {
                Ok(None) => {}
                Ok(Some((lpn, content))) => result.violations.push((
                    Found::RecoveryCut(j, rt),
                    format!(
                        "recovery cut and rerun reached a different state: lpn {lpn} is {content:?}, not {:?}",
                        state[lpn as usize]
                    ),
                )),
                Err(msg) => result
                    .violations
                    .push((Found::RecoveryCut(j, rt), format!("after a cut during recovery: {msg}"))),
            }
        }
        // Done whole (its own result, a failed program included): the flash
        // before the recovery's next operation.
        let _ = rolling.redo(rec);
    }
}

/// Runs one point. A NAND rule violation panics at the faulty operation:
/// it is reported as a violation of this crash point rather than losing the run.
fn guarded(at: u64, torn: Torn, f: impl FnOnce() -> Result<PointResult, CrashError>) -> Result<PointResult, CrashError> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => {
            let mut r = PointResult::new(at, torn);
            r.violations.push((Found::First, format!("panicked: {}", panic_message(&*panic))));
            Ok(r)
        }
    }
}

pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic".into())
}

/// One worker's points, in order: each forked from the worker's own
/// rolling run of the workload, or replayed from scratch.
fn worker(spec: &CrashSpec, points: &[(u64, Torn)], dry: &fork::DryRun, tick: &dyn Fn()) -> Result<Vec<PointResult>, CrashError> {
    let mut out = Vec::with_capacity(points.len());
    if spec.replay_from_scratch {
        for &(at, torn) in points {
            out.push(guarded(at, torn, || run_point(spec, at, torn, cut_by_replay(spec, at, torn)?))?);
            tick();
        }
        return Ok(out);
    }
    let dev = spec.device.fresh()?;
    let base = dev.nand().op_count();
    let info = dev.info();
    let run = Run::first(spec.workload, info.logical_pages, info.page_size);
    let ops = dry.log.len() as u64;
    fork::for_each_point(&*dev, &run, &dry.host_starts, ops, points, |at, torn, d, r| {
        let cut = || fork::cut_fork(d, r, base, at, torn, spec.workload.seed);
        out.push(guarded(at, torn, || run_point(spec, at, torn, cut()?))?);
        tick();
        Ok(())
    })?;
    Ok(out)
}

/// Every point of `points`, on `spec.threads` workers; results sorted by point.
fn enumerate(
    spec: &CrashSpec,
    points: &[(u64, Torn)],
    dry: &fork::DryRun,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Vec<PointResult>, CrashError> {
    let total = points.len() as u64;
    let done = AtomicU64::new(0);
    let tick = || progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
    let threads = spec.threads.max(1);
    // Interleaved, so every worker's share spreads over the whole workload.
    let chunks: Vec<Vec<(u64, Torn)>> = (0..threads)
        .map(|t| points.iter().copied().skip(t).step_by(threads).collect())
        .collect();
    let mut results = std::thread::scope(|s| {
        let handles: Vec<_> = chunks
            .iter()
            .map(|chunk| {
                let tick = &tick;
                s.spawn(move || worker(spec, chunk, dry, tick))
            })
            .collect();
        let mut results = Vec::new();
        for h in handles {
            results.extend(h.join().expect("crash worker panicked")?);
        }
        Ok::<_, CrashError>(results)
    })?;
    results.sort_by_key(|r| (r.at, r.torn));
    Ok(results)
}

/// The crash points of a dry run's operations: each mutating one with
/// every torn variant, and the point after the last; or the one asked for.
fn points_of(spec: &CrashSpec, log: &[FlashOp]) -> Result<Vec<(u64, Torn)>, CrashError> {
    let ops = log.len() as u64;
    if let Some(only) = spec.only {
        // A point past the end would "pass" without testing anything.
        if only.0 > ops {
            return Err(CrashError::NoSuchPoint { at: only.0, ops });
        }
        return Ok(vec![only]);
    }
    let mut points: Vec<(u64, Torn)> = Vec::new();
    for (i, kind) in log.iter().enumerate() {
        if kind.mutates() {
            points.extend(spec.torn.iter().map(|&t| (i as u64, t)));
        }
    }
    points.push((ops, Torn::None)); // after the last operation
    Ok(points)
}

/// Enumerates every crash point of the workload and checks the contract at each.
/// `progress(done, total)` is called as points finish (from worker threads).
pub fn crashtest(spec: &CrashSpec, progress: &(dyn Fn(u64, u64) + Sync)) -> Result<CrashReport, CrashError> {
    let started = std::time::Instant::now();
    // Dry run: learn the operations.
    let mut dev = spec.device.fresh()?;
    let info = dev.info();
    let host_ops = OpStream::new(spec.workload, info.logical_pages).total_ops();
    let start = Run::first(spec.workload, info.logical_pages, info.page_size);
    let dry = fork::dry_run(&mut *dev, start, Some(&spec.device)).map_err(CrashError::DryRun)?;
    let dry_run = dev.stats();
    drop(dev);
    let mut points = points_of(spec, &dry.log)?;
    if let InFlight::Only { .. } = spec.in_flight {
        points.clear();
    }
    let results = enumerate(spec, &points, &dry, progress)?;
    let mut report = CrashReport {
        protocol: spec.device.protocol.clone(),
        workload: spec.workload,
        host_ops,
        flash_ops: dry.log.len() as u64,
        mutating_ops: dry.log.iter().filter(|k| k.mutates()).count() as u64,
        dry_run,
        exercised: Exercised::from_dry_run(&dry_run, dry.end.table_full_aborts, dry.end.reported_losses),
        crash_points: points.len() as u64,
        recovery_crash_points: 0,
        second_cuts: spec.second_cuts,
        continued_points: 0,
        second_crash_points: 0,
        violation_count: 0,
        violations: Vec::new(),
        wall_seconds: 0.0,
        points_per_second: 0.0,
        durable_checks: 0,
        durable_check_seconds: 0.0,
        in_flight: None,
    };
    report.exercised.cross_tx_updates = dry.end.stream.cross_tx_updates;
    report.durable_checks = dry.durable_checks;
    report.durable_check_seconds = dry.durable_seconds;
    add_durable_mismatches(spec, &mut report, &dry.durable_mismatches);
    for r in &results {
        add_point(spec, &mut report, r);
    }
    if spec.in_flight != InFlight::Off {
        let keep = 50usize.saturating_sub(report.violations.len());
        let f = crate::inflight::enumerate(spec, keep, progress)?;
        report.violation_count += f.report.violation_count;
        report.exercised.add_recovery_counts(&f.exercised);
        report.violations.extend(f.violations);
        report.in_flight = Some(f.report);
    }
    // A replay of one point exercises what that point does; expectations are
    // for whole enumerations.
    let replay = spec.only.is_some() || matches!(spec.in_flight, InFlight::Only { .. });
    let missing: Vec<&'static str> = spec
        .expect
        .iter()
        .filter(|&&e| !replay && report.exercised.count(e) == 0)
        .map(|e| e.name())
        .collect();
    if !missing.is_empty() {
        return Err(CrashError::NotExercised {
            missing,
            exercised: Box::new(report.exercised),
        });
    }
    report.wall_seconds = started.elapsed().as_secs_f64();
    let all = report.crash_points + report.recovery_crash_points + report.second_crash_points;
    report.points_per_second = all as f64 / report.wall_seconds.max(1e-9);
    Ok(report)
}

/// Adds the dry run's recovery-equivalence mismatches to the report, each
/// as a violation at the point after the host operation that took the
/// checkpoint, nothing torn: a replay of any point runs the dry run, and
/// the check, again.
fn add_durable_mismatches(spec: &CrashSpec, report: &mut CrashReport, found: &[durable::Mismatch]) {
    for m in found {
        report.violation_count += 1;
        if report.violations.len() >= 50 {
            continue;
        }
        report.violations.push(CrashViolation {
            at_op: m.flash_ops,
            at_ns: None,
            torn: Torn::None,
            recovery_cut: None,
            second_cut: None,
            message: format!(
                "at the checkpoint of host op {} (no cut), a recovery of a copy of the NAND rebuilt another state than the live device holds: {}",
                m.host_op, m.message
            ),
            replay: spec.replay(m.flash_ops, Torn::None, None),
        });
    }
}

/// Adds one point's counts and violations (the first 50 kept) to the report.
fn add_point(spec: &CrashSpec, report: &mut CrashReport, r: &PointResult) {
    report.recovery_crash_points += r.recovery_points;
    report.second_crash_points += r.second_points;
    report.continued_points += r.continued as u64;
    report.durable_checks += r.durable_checks;
    report.exercised.add_recovery_counts(&r.exercised);
    for (found, message) in &r.violations {
        report.violation_count += 1;
        if report.violations.len() >= 50 {
            continue;
        }
        let (recovery_cut, second_cut, replay_second, message) = match *found {
            Found::First => (None, None, None, message.clone()),
            Found::RecoveryCut(j, t) => (Some((j, t)), None, None, message.clone()),
            // Any second cut replays the continuation's dry run first.
            Found::Continuation => (None, None, Some((0, Torn::None)), format!("continuing after recovery: {message}")),
            Found::SecondCut(j, u) => (None, Some((j, u)), Some((j, u)), format!("after a second cut: {message}")),
        };
        report.violations.push(CrashViolation {
            at_op: r.at,
            at_ns: None,
            torn: r.torn,
            recovery_cut,
            second_cut,
            message,
            replay: spec.replay(r.at, r.torn, replay_second),
        });
    }
}
