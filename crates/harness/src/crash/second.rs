//! Two-cut runs: recover, continue the workload, cut again.
//!
//! A cut and a recovery test the flash a run leaves and the code that reads
//! it; they do not test what the mount rebuilds in DRAM (a protocol's
//! tables of committed versions, the free pool, the next sequence number),
//! since nothing runs on it before the next cut. So after a crash point's
//! recovery has passed its checks, the host goes on: a continuation of the
//! workload (the same shape, `second_ops` host operations, its own stream
//! seeded from the workload's seed and the first cut's operation, no fill,
//! transaction ids above those used before the cut) runs on the recovered
//! device; transactions open at the cut are gone. Its dry run checks the
//! live device's invariants after every host operation, as the workload's
//! does; then power is cut again at every mutating operation of the
//! continuation (every torn variant, and after its last operation:
//! [`SecondCuts::Every`]) or at a seeded sample of those
//! ([`SecondCuts::Sample`]), each reached by forking one rolling run of the
//! continuation. Each is recovered and checked as the first cut is,
//! against a model that starts from what the first recovery returned.

use super::fork::{self, Run};
use super::{guarded, lost_version, recover_and_check, CrashError, CrashSpec, Found, PointResult, SecondCuts};
use crate::data::{splitmix, Content};
use crate::model::{TxModel, Value};
use crate::workload::{OpStream, WorkloadSpec};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use txftl_nand::{FlashOp, Nand, Torn};
use txftl_protocols::AnyDevice;

/// The seed of the continuation after a cut at flash operation `at`.
fn continuation_seed(seed: u64, at: u64) -> u64 {
    splitmix(seed ^ splitmix(at ^ 0xC047_1A0E))
}

/// The value a recovered page holds, as a model's starting value; `None`
/// for a page reported lost (flash faults): what it holds is not known.
fn start_value(nand: &Nand, model: &TxModel, lpn: u32, content: Content) -> Option<Value> {
    match content {
        Content::Written { lpn: l, version } if l == model.page_named(lpn, version) => Some(Some(version)),
        Content::Lost { ppn } => lost_version(nand, lpn, ppn).map(Some),
        _ => Some(None),
    }
}

/// Continues the workload on `dev`, recovered from the cut `first` to
/// `state`, and cuts it again; `at_cut`: the workload's state at the first
/// cut (its next transaction id, its next page version). Adds the second
/// cuts and their violations to `result`.
pub(super) fn continue_and_cut(
    spec: &CrashSpec,
    first: (u64, Torn),
    dev: Box<dyn AnyDevice>,
    state: &[Content],
    at_cut: &Run,
    result: &mut PointResult,
) -> Result<(), CrashError> {
    let values: Option<Vec<Value>> = (0..state.len())
        .map(|lpn| start_value(dev.nand(), &at_cut.model, lpn as u32, state[lpn]))
        .collect();
    // A page whose version a fault hid leaves no model to start from.
    let Some(values) = values else { return Ok(()) };
    result.continued = true;
    let info = dev.info();
    let seed = continuation_seed(spec.workload.seed, first.0);
    let workload = WorkloadSpec {
        seed,
        ops: spec.second_ops,
        ..spec.workload
    };
    let start = Run {
        stream: OpStream::continuation(workload, info.logical_pages, at_cut.stream.next_tid()),
        driver: at_cut.driver.after_power_cut(),
        model: at_cut.model.recovered_after(&values),
        host_ops: 0,
        table_full_aborts: 0,
        reported_losses: 0,
    };
    let mut probe = dev.fork().ok_or(CrashError::NoFork)?;
    // The continuation's checkpoints are checked as the first run's are:
    // a recovery of a copy rebuilds the state the live device holds.
    let dry = match fork::dry_run(&mut *probe, start.clone(), Some(&spec.device)) {
        Ok(d) => d,
        Err(msg) => {
            result.violations.push((Found::Continuation, msg));
            return Ok(());
        }
    };
    result.durable_checks += dry.durable_checks;
    result.violations.extend(dry.durable_mismatches.iter().map(|m| {
        let why = format!(
            "at the checkpoint of the continuation's host op {} (no second cut), a recovery of a copy of the NAND rebuilt another state than the live device holds: {}",
            m.host_op, m.message
        );
        (Found::Continuation, why)
    }));
    drop(probe);
    let points = chosen(spec, first, &dry.log)?;
    let base = dev.nand().op_count();
    let ops = dry.log.len() as u64;
    fork::for_each_point(&*dev, &start, &dry.host_starts, ops, &points, |j, u, d, r| {
        result.second_points += 1;
        let checked = guarded(j, u, || {
            let mut found = super::PointResult::new(j, u);
            match fork::cut_fork(d, r, base, j, u, seed)? {
                Ok(cut) => {
                    let mut msgs = Vec::new();
                    // What the second mount read counts too (a summary page
                    // a first cut tore is only read by a later mount).
                    if let Some(r) = recover_and_check(spec, cut, false, &mut msgs).and_then(|rec| rec.dev.recovery_report()) {
                        found.exercised.add_recovery(&r);
                    }
                    found.violations.extend(msgs.into_iter().map(|m| (Found::First, m)));
                }
                Err(msg) => found.violations.push((Found::First, msg)),
            }
            Ok(found)
        })?;
        result.exercised.add_recovery_counts(&checked.exercised);
        let at = Found::SecondCut(j, u);
        result.violations.extend(checked.violations.into_iter().map(|(_, m)| (at, m)));
        Ok(())
    })
}

/// The second cuts of a continuation whose dry run issued `log`.
fn chosen(spec: &CrashSpec, first: (u64, Torn), log: &[FlashOp]) -> Result<Vec<(u64, Torn)>, CrashError> {
    let ops = log.len() as u64;
    if let Some((j, u)) = spec.then_only {
        if j > ops {
            return Err(CrashError::NoSuchSecondPoint { at: j, ops });
        }
        return Ok(vec![(j, u)]);
    }
    let mut all: Vec<(u64, Torn)> = Vec::new();
    for (i, kind) in log.iter().enumerate() {
        if kind.mutates() {
            all.extend(spec.torn.iter().map(|&t| (i as u64, t)));
        }
    }
    all.push((ops, Torn::None));
    Ok(match spec.second_cuts {
        SecondCuts::Off => Vec::new(),
        SecondCuts::Every => all,
        SecondCuts::Sample(n) => {
            let torn_index = Torn::ALL.iter().position(|&t| t == first.1).unwrap_or(0) as u64;
            let mut rng = ChaCha8Rng::seed_from_u64(splitmix(continuation_seed(spec.workload.seed, first.0) ^ torn_index));
            let mut picked: Vec<(u64, Torn)> = all.choose_multiple(&mut rng, n as usize).copied().collect();
            picked.sort();
            picked
        }
    })
}
