//! A workload in progress, and reaching each crash point by forking it.
//!
//! A cut at flash operation `k` leaves what the run leaves when every host
//! operation before the one that issues `k` completes and that one is cut.
//! Replaying the workload from a fresh device to each cut costs the whole
//! prefix at every point. Instead one rolling run walks the workload once;
//! at the host operation each point's cut falls in, it is forked (the
//! device's DRAM state and its NAND, the op stream, the driver and the
//! model: [`AnyDevice::fork`] and `Clone`), the cut is armed on the fork,
//! and the fork goes on until power is lost, exactly as the replayed run
//! would from that operation on. Nothing the replay would check is skipped.

use super::{durable, lost_page, panic_message, CrashError, DeviceSpec};
use crate::data::Content;
use crate::model::TxModel;
use crate::run::{Driver, Outcome};
use crate::workload::{OpStream, WorkloadSpec};
use txftl_ftl::{DeviceError, Op};
use txftl_nand::{PowerCut, Torn};
use txftl_protocols::AnyDevice;

/// The state of a workload between two host operations.
#[derive(Clone)]
pub(crate) struct Run {
    pub stream: OpStream,
    pub driver: Driver,
    pub model: TxModel,
    /// Host operations issued so far.
    pub host_ops: u64,
    pub table_full_aborts: u64,
    /// Reads the device reported lost to bit errors (each checked genuine).
    pub reported_losses: u64,
}

/// What one host operation ended in.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Done (or refused as the contract allows); the run goes on.
    Next,
    /// Power was lost during it.
    Cut,
    /// The stream has no more operations.
    End,
}

impl Run {
    /// A workload from its start, on a device of `logical_pages` pages of `page_size` bytes.
    pub fn first(spec: WorkloadSpec, logical_pages: u32, page_size: u32) -> Run {
        Run {
            stream: OpStream::new(spec, logical_pages),
            driver: Driver::new(page_size, true),
            model: TxModel::new(logical_pages),
            host_ops: 0,
            table_full_aborts: 0,
            reported_losses: 0,
        }
    }

    /// Issues the next host operation. `check_each`: check the device's DRAM
    /// invariants after it (dry runs). `Err`: a violation.
    pub fn step(&mut self, dev: &mut dyn AnyDevice, check_each: bool) -> Result<Step, String> {
        let Some(op) = self.stream.next() else {
            return Ok(Step::End);
        };
        let index = self.host_ops;
        self.host_ops += 1;
        match self.driver.apply(dev, op, &mut self.model) {
            Ok(Outcome::Done) => {}
            // The host's reaction to a full table, as `txftl run` does it.
            Ok(Outcome::TableFullAborted(tid)) => {
                self.stream.forget(tid);
                self.table_full_aborts += 1;
            }
            Ok(Outcome::WrongRead { lpn, expected, got }) => {
                return Err(format!(
                    "read of lpn {lpn} (host op {index}) returned {got:?}, latest write is {expected:?}"
                ));
            }
            Err(DeviceError::PowerLoss) => return Ok(Step::Cut),
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
                self.reported_losses += 1;
            }
            // A write or trim the protocol's isolation refuses (SCC, NoLgn: a
            // page another open transaction wrote) does not happen; the model
            // is unchanged.
            Err(DeviceError::IsolationUnsupported { .. })
                if matches!(op, Op::Write(_) | Op::TxWrite(..) | Op::WriteEnd(..) | Op::Trim(_)) => {}
            Err(e) => return Err(format!("host op {index} ({op:?}) failed: {e}")),
        }
        if check_each {
            dev.check_invariants()
                .map_err(|e| format!("invariant broken on the live device after host op {index} ({op:?}): {e}"))?;
        }
        Ok(Step::Next)
    }

    /// Runs until the stream ends or power is lost; true if it was lost.
    pub fn until_cut(&mut self, dev: &mut dyn AnyDevice, check_each: bool) -> Result<bool, String> {
        loop {
            match self.step(dev, check_each)? {
                Step::Next => {}
                Step::Cut => return Ok(true),
                Step::End => return Ok(false),
            }
        }
    }
}

/// What a dry run learned: the kind of every flash operation, and where
/// each host operation's begin (flash operation indexes from the run's start).
pub(super) struct DryRun {
    pub log: Vec<txftl_nand::FlashOp>,
    pub host_starts: Vec<u64>,
    pub end: Run,
    /// The recovery-equivalence checks run (`durable.rs`), what they found,
    /// and their wall time.
    pub durable_checks: u64,
    pub durable_mismatches: Vec<durable::Mismatch>,
    pub durable_seconds: f64,
}

/// Runs `run` on `dev` to its end with the operation log on, checking the
/// device's invariants after every host operation. With `durable` (the
/// device's spec), also the recovery-equivalence check after every host
/// operation that took a checkpoint (`durable.rs`). `Err`: a violation.
pub(super) fn dry_run(dev: &mut dyn AnyDevice, mut run: Run, durable: Option<&DeviceSpec>) -> Result<DryRun, String> {
    dev.nand_mut().set_op_log(true);
    let mut host_starts = Vec::new();
    let (mut durable_checks, mut durable_mismatches, mut durable_seconds) = (0, Vec::new(), 0.0);
    let mut checkpoints = dev.stats().checkpoints;
    loop {
        host_starts.push(dev.nand().op_log().len() as u64);
        // An assertion of the device's (a state transition it checks) is a
        // broken invariant found at the moment it breaks.
        let index = run.host_ops;
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run.step(dev, true))).unwrap_or_else(|p| {
            Err(format!(
                "invariant broken on the live device in host op {index}: panicked: {}",
                panic_message(&*p)
            ))
        });
        match step? {
            Step::Next => {}
            Step::Cut => return Err("power was lost with no cut armed".into()),
            Step::End => {
                host_starts.pop();
                break;
            }
        }
        let Some(spec) = durable else { continue };
        let now = dev.stats().checkpoints;
        if now == checkpoints {
            continue;
        }
        assert!(now > checkpoints, "the checkpoint count went back from {checkpoints} to {now}");
        checkpoints = now;
        let started = std::time::Instant::now();
        durable_checks += 1;
        if let Some(why) = durable::check(spec, dev) {
            durable_mismatches.push(durable::Mismatch {
                host_op: run.host_ops - 1,
                flash_ops: dev.nand().op_log().len() as u64,
                message: why,
            });
        }
        durable_seconds += started.elapsed().as_secs_f64();
    }
    let log = dev.nand().op_log().to_vec();
    dev.nand_mut().set_op_log(false);
    Ok(DryRun {
        log,
        host_starts,
        end: run,
        durable_checks,
        durable_mismatches,
        durable_seconds,
    })
}

/// A run stopped by its cut (or at its end, for the point past the last
/// operation): the device, whose DRAM state the power cut is about to
/// drop, and the workload's state at that moment.
pub(super) struct Cut {
    pub dev: Box<dyn AnyDevice>,
    pub run: Run,
}

/// Forks `dev` and `run`, arms a cut at flash operation `base + at`, and
/// runs the fork until power is lost. `Err`: a violation before the cut.
pub(super) fn cut_fork(
    dev: &dyn AnyDevice,
    run: &Run,
    base: u64,
    at: u64,
    torn: Torn,
    seed: u64,
) -> Result<Result<Cut, String>, CrashError> {
    let mut dev = dev.fork().ok_or(CrashError::NoFork)?;
    let mut run = run.clone();
    dev.nand_mut().arm_power_cut(PowerCut {
        at_op: base + at,
        torn,
        seed,
    });
    Ok(run.until_cut(&mut *dev, false).map(|_| Cut { dev, run }))
}

/// Walks a run once from `dev` and `run` (as the dry run did: its
/// `host_starts` and `flash_ops`) and calls `f(at, torn, dev, run)` for
/// every point, in order of `at` (`points` must be sorted so), with the
/// rolling device and run at the start of the host operation that issues
/// flash operation `at` (at its end for `at == flash_ops`).
pub(super) fn for_each_point(
    dev: &dyn AnyDevice,
    run: &Run,
    host_starts: &[u64],
    flash_ops: u64,
    points: &[(u64, Torn)],
    mut f: impl FnMut(u64, Torn, &dyn AnyDevice, &Run) -> Result<(), CrashError>,
) -> Result<(), CrashError> {
    let mut dev = dev.fork().ok_or(CrashError::NoFork)?;
    let mut run = run.clone();
    let mut next = 0usize;
    for &(at, torn) in points {
        // Complete every host operation that ends at or before `at`.
        while next < host_starts.len() && host_starts.get(next + 1).copied().unwrap_or(flash_ops) <= at {
            match run.step(&mut *dev, false) {
                Ok(Step::Next) => next += 1,
                other => return Err(CrashError::Diverged(format!("host op {next} ended in {other:?}"))),
            }
        }
        f(at, torn, &*dev, &run)?;
    }
    Ok(())
}
