//! The enumeration behind [`sql_crashtest`]: an uncut dry run learns the
//! scenario's flash operations, then every crash point (or every n-th) is
//! cut, restarted and checked against the oracle, and its restart is cut
//! again (the module doc of [`super`]).

use super::probe::{ProbeShared, Shared, Span};
use super::{
    check, differs, heavy, loaded_image, mount, op_count, other, page_size, restart, scenario, take_nand, tpcc, Boot, DryRun, Observed,
    Oracle, Phase, Promise, ScenarioOutcome, SqlCrashError, SqlCrashReport, SqlCrashSpec, SqlExercised, SqlExpect, SqlViolation,
    SqlWorkload,
};
use crate::heavy::Statement;
use crate::tpcc::TxKind;
use crate::workload::costs;
use crate::{Canary, Stack, StackError};
use std::sync::{Arc, Mutex};
use txftl_ftl::ProtocolCounters;
use txftl_nand::{FlashOp, Nand, PowerCut, Torn};

/// Enumerates the crash points of the scenario and checks the promise at each.
pub fn sql_crashtest(spec: &SqlCrashSpec, progress: &dyn Fn(u64, u64)) -> Result<SqlCrashReport, SqlCrashError> {
    // One crash run at a time in a process: each boot reseeds SQLite's
    // process-wide PRNG (`Boot`), and a reseed in the middle of another
    // run's boot could hand that boot a nonce it already used.
    static ONE_RUN: Mutex<()> = Mutex::new(());
    let _one = ONE_RUN.lock().unwrap_or_else(|e| e.into_inner());
    let promise = Promise::of(spec.mode, spec.synchronous);
    let shared: Shared = Arc::new(Mutex::new(ProbeShared::default()));
    let (image, oracle) = image_and_oracle(spec, &shared)?;
    let dry = dry_run(spec, &image, &oracle, &shared)?;
    let (points, total) = crash_points(spec, &dry.log)?;
    let tried = points.len() as u64;
    let runs = CutRuns {
        spec,
        promise,
        shared: &shared,
        image: &image,
        oracle: &oracle,
        base: dry.base,
    };
    let mut found = Findings {
        ex: SqlExercised::default(),
        replay_base: &spec.replay_base,
        violation_count: 0,
        violations: Vec::new(),
    };
    for (n, &(at, torn)) in points.iter().enumerate() {
        progress(n as u64 + 1, tried);
        count_cut(&mut found.ex, at, &dry);
        runs.cut_at(n, (at, torn), &mut found)?;
    }
    let expected = check_exercised(spec, &found.ex, &dry.dry_run)?;
    Ok(SqlCrashReport {
        workload: spec.workload,
        mode: spec.mode,
        synchronous: spec.synchronous,
        promise,
        canary: spec.canary,
        big_at: spec.big_at.filter(|&b| b < spec.transactions),
        flash_ops: dry.log.len() as u64,
        mutating_ops: dry.log.iter().filter(|k| k.mutates()).count() as u64,
        crash_points_total: total,
        crash_points: tried,
        dry_run: dry.dry_run,
        exercised: found.ex,
        expected,
        violation_count: found.violation_count,
        violations: found.violations,
    })
}

/// The loaded image every run starts from, and the oracle its restarts are
/// judged against.
fn image_and_oracle(spec: &SqlCrashSpec, shared: &Shared) -> Result<(Nand, Oracle), SqlCrashError> {
    // TPC-C's and heavy's oracles run first: the load follows their spec.
    let first = match spec.workload {
        SqlWorkload::Tpcc { scale } => Some(Oracle::Tpcc(Box::new(
            tpcc::oracle(tpcc::tpcc_spec(scale, spec.transactions, spec.seed), spec.rollback_at).map_err(SqlCrashError::DryRun)?,
        ))),
        SqlWorkload::Heavy { rows, insert_rows } => Some(Oracle::Heavy(Box::new(
            heavy::oracle(heavy::heavy_spec(rows, insert_rows, page_size(&spec.nand), spec.seed)).map_err(SqlCrashError::DryRun)?,
        ))),
        SqlWorkload::Partsupp => None,
    };
    let image = loaded_image(spec, first.as_ref())?;
    let oracle = match first {
        Some(o) => o,
        // The table as loaded (read on a copy, so the dry run below issues
        // exactly the operations every crash run issues).
        None => Oracle::Partsupp({
            let mut copy = image.snapshot();
            copy.power_on();
            let stack = mount(spec, copy, shared, Boot::Load).map_err(SqlCrashError::DryRun)?;
            let conn = stack.open("crash.db", page_size(&spec.nand))?;
            costs(&conn).map_err(StackError::from)?
        }),
    };
    Ok((image, oracle))
}

/// What the uncut dry run learned, crash points counting from the
/// scenario's start.
struct Probed {
    /// The NAND operation count at the scenario's start (from the boot).
    base: u64,
    /// The scenario's NAND operations.
    log: Vec<FlashOp>,
    /// Device calls during which GC ran or a table-reclaim checkpoint was taken.
    spans: Vec<Span>,
    /// Where each phase, and each TPC-C transaction, began.
    marks: Vec<(Phase, u64)>,
    kind_marks: Vec<(u64, Option<TxKind>)>,
    /// Heavy: where each statement began.
    step_marks: Vec<(u64, Option<Statement>)>,
    dry_run: DryRun,
}

/// Dry run: learn the scenario's NAND operations, phases, GC and reclaims.
fn dry_run(spec: &SqlCrashSpec, image: &Nand, oracle: &Oracle, shared: &Shared) -> Result<Probed, SqlCrashError> {
    let mut probe = image.snapshot();
    probe.power_on(); // restart the op counter at 0 for this boot
    let stack = mount(spec, probe, shared, Boot::Scenario).map_err(SqlCrashError::DryRun)?;
    let base = op_count(&stack)?;
    let stats0 = stack.with_fs_mut(|fs| fs.device().stats())?;
    let remapped0 = stack.with_fs_mut(|fs| fs.stats().remapped_pages)?;
    let temp0 = stack.vfs.temp_stats();
    stack.with_fs_mut(|fs| fs.device_mut().nand_mut().set_op_log(true))?;
    shared.lock().map_err(|_| other("probe lock poisoned"))?.record = true;
    let dry = scenario(spec, oracle, &stack)?;
    shared.lock().map_err(|_| other("probe lock poisoned"))?.record = false;
    check_dry_run(spec, oracle, &dry, &stack)?;
    let stats1 = stack.with_fs_mut(|fs| fs.device().stats())?;
    let remapped1 = stack.with_fs_mut(|fs| fs.stats().remapped_pages)?;
    let temp1 = stack.vfs.temp_stats();
    let log: Vec<FlashOp> = stack.with_fs_mut(|fs| fs.device().nand().op_log().to_vec())?;
    drop(stack);
    let spans: Vec<Span> = std::mem::take(&mut shared.lock().map_err(|_| other("probe lock poisoned"))?.spans);
    // Spans and marks count from the boot; crash points from the scenario's start.
    let spans: Vec<Span> = spans
        .into_iter()
        .map(|s| Span {
            first_op: s.first_op.saturating_sub(base),
            end_op: s.end_op.saturating_sub(base),
            ..s
        })
        .collect();
    let marks: Vec<(Phase, u64)> = dry.marks.iter().map(|&(p, m)| (p, m.saturating_sub(base))).collect();
    let kind_marks: Vec<(u64, Option<TxKind>)> = dry.kind_marks.iter().map(|&(m, k)| (m.saturating_sub(base), k)).collect();
    let step_marks: Vec<(u64, Option<Statement>)> = dry.step_marks.iter().map(|&(m, s)| (m.saturating_sub(base), s)).collect();
    let dry_run = DryRun {
        gc_runs: stats1.gc_runs - stats0.gc_runs,
        gc_copies: stats1.gc_copies - stats0.gc_copies,
        checkpoints: stats1.checkpoints - stats0.checkpoints,
        table_reclaim_checkpoints: spans.iter().filter(|s| s.table_reclaim()).count() as u64,
        commit_checkpoints: spans.iter().filter(|s| s.commit_checkpoint()).count() as u64,
        commits: stats1.commits - stats0.commits,
        aborts: stats1.aborts - stats0.aborts,
        pages_remapped: remapped1 - remapped0,
        temp_files_opened: temp1.files_opened - temp0.files_opened,
        subjournals_opened: temp1.subjournals_opened - temp0.subjournals_opened,
        sort_temp_files: dry.heavy.sort_temp_files,
        protocol: counters_since(&stats0.protocol, &stats1.protocol),
    };
    Ok(Probed {
        base,
        log,
        spans,
        marks,
        kind_marks,
        step_marks,
        dry_run,
    })
}

/// What the protocol's counters counted between two snapshots.
fn counters_since(before: &ProtocolCounters, after: &ProtocolCounters) -> ProtocolCounters {
    let mut d = ProtocolCounters::new(after.specs());
    for (key, v) in after.iter() {
        d.add(key, v.saturating_sub(before.get(key)));
    }
    d
}

/// Refuses a dry run that did not run the whole scenario as planned (with no
/// cut armed, nothing may stop it).
fn check_dry_run(spec: &SqlCrashSpec, oracle: &Oracle, dry: &ScenarioOutcome, stack: &Stack) -> Result<(), SqlCrashError> {
    if let Oracle::Heavy(o) = oracle {
        let h = &dry.heavy;
        if h.in_flight || h.done != heavy::STEPS.len() || h.sorted != Some(o.sorted) {
            return Err(SqlCrashError::DryRun(format!(
                "the heavy statements on the device stopped early or went otherwise than in memory ({} of {} returned, the ORDER BY's rows {}): {}",
                h.done,
                heavy::STEPS.len(),
                match h.sorted {
                    Some(d) if d == o.sorted => "as in memory",
                    Some(_) => "not those of the in-memory run",
                    None => "not read",
                },
                stack.last_error().unwrap_or_default()
            )));
        }
    } else if let Oracle::Tpcc(o) = oracle {
        if dry.tpcc.in_flight || dry.tpcc.outcomes != o.outcomes {
            return Err(SqlCrashError::DryRun(format!(
                "the TPC-C run on the device stopped early or went otherwise than in memory ({} of {} transactions returned, outcomes {:?} where the in-memory run had {:?}): {}",
                dry.tpcc.outcomes.len(),
                o.txs.len(),
                dry.tpcc.outcomes,
                o.outcomes,
                stack.last_error().unwrap_or_default()
            )));
        }
    } else if dry.in_flight.is_some() || dry.side_in_flight || dry.side_rows != 1 {
        return Err(SqlCrashError::DryRun(format!(
            "the scenario stopped early without a cut ({} of {} transactions committed): {}",
            dry.committed.len(),
            spec.transactions,
            stack.last_error().unwrap_or_default()
        )));
    }
    Ok(())
}

/// The crash points to try (every torn variant of every mutating operation,
/// and the point after the last operation), and how many there are in all:
/// only `spec.only` when it is set, else every `spec.sample_every`-th.
fn crash_points(spec: &SqlCrashSpec, log: &[FlashOp]) -> Result<(Vec<(u64, Torn)>, u64), SqlCrashError> {
    let mut points: Vec<(u64, Torn)> = Vec::new();
    for (i, k) in log.iter().enumerate() {
        if k.mutates() {
            points.extend(spec.torn.iter().map(|&t| (i as u64, t)));
        }
    }
    points.push((log.len() as u64, Torn::None));
    let total = points.len() as u64;
    if let Some(only) = spec.only {
        if only.0 > log.len() as u64 {
            return Err(SqlCrashError::NoSuchPoint {
                at: only.0,
                ops: log.len() as u64,
            });
        }
        points = vec![only];
    } else if spec.sample_every > 1 {
        // Always keep the last point (the whole scenario, uncut).
        let last = points.len() - 1;
        points = points
            .iter()
            .enumerate()
            .filter(|&(i, _)| (i as u64).is_multiple_of(spec.sample_every) || i == last)
            .map(|(_, &p)| p)
            .collect();
    }
    Ok((points, total))
}

/// Counts crash point `at` in its phase, its TPC-C transaction type, and in
/// GC and table reclaim when it falls inside them.
fn count_cut(ex: &mut SqlExercised, at: u64, dry: &Probed) {
    let (phase, in_gc, in_reclaim) = classify(at, &dry.marks, &dry.spans, dry.log.len() as u64);
    match phase {
        Phase::Open => ex.cuts_in_open += 1,
        Phase::Commit => ex.cuts_in_commits += 1,
        Phase::Rollback => ex.cuts_in_rollback += 1,
        Phase::Big => ex.cuts_in_big += 1,
        Phase::End => ex.cuts_at_end += 1,
    }
    match kind_at(at, &dry.kind_marks) {
        Some(TxKind::NewOrder) => ex.cuts_in_new_order += 1,
        Some(TxKind::Payment) => ex.cuts_in_payment += 1,
        Some(TxKind::Delivery) => ex.cuts_in_delivery += 1,
        _ => {}
    }
    if let Some(s) = kind_at(at, &dry.step_marks) {
        ex.cuts_in_statements.count(s);
    }
    ex.cuts_in_gc += in_gc as u64;
    ex.cuts_in_table_reclaim += in_reclaim as u64;
}

/// What the crash points found: what they exercised, and the violations
/// (every one counted, the first 50 kept).
struct Findings<'a> {
    ex: SqlExercised,
    /// The command line that reproduces the run, without `--at`/`--torn`.
    replay_base: &'a str,
    violation_count: u64,
    violations: Vec<SqlViolation>,
}

impl Findings<'_> {
    /// A violation at crash point (`at`, `torn`), after the cut `rcut` inside
    /// its restart if any.
    fn violation(&mut self, at: u64, torn: Torn, rcut: Option<(u64, Torn)>, message: String) {
        self.violation_count += 1;
        if self.violations.len() < 50 {
            self.violations.push(SqlViolation {
                at_op: at,
                torn,
                recovery_cut: rcut,
                message,
                replay: format!("{} --at {at} --torn {}", self.replay_base, torn.name()),
            });
        }
    }
}

/// What every crash point's run starts from: the loaded image, the oracle,
/// the probe's shared state, and the scenario's first operation.
struct CutRuns<'a> {
    spec: &'a SqlCrashSpec,
    promise: Promise,
    shared: &'a Shared,
    image: &'a Nand,
    oracle: &'a Oracle,
    /// The NAND operation count at the scenario's start (from the boot).
    base: u64,
}

impl CutRuns<'_> {
    /// The `n`-th crash point tried: the scenario cut at operation `at`
    /// (torn as `torn`), the restart checked, then cuts inside the restart.
    fn cut_at(&self, n: usize, (at, torn): (u64, Torn), found: &mut Findings) -> Result<(), SqlCrashError> {
        let spec = self.spec;
        let mut nand = self.image.snapshot();
        nand.power_on();
        let stack = mount(spec, nand, self.shared, Boot::Scenario).map_err(SqlCrashError::DryRun)?;
        stack.with_fs_mut(|fs| {
            fs.device_mut().nand_mut().arm_power_cut(PowerCut {
                at_op: self.base + at,
                torn,
                seed: spec.seed,
            })
        })?;
        let outcome = scenario(spec, self.oracle, &stack)?;
        // The cut: drop SQLite, the file system and the FTL; keep the NAND.
        drop(stack);
        let mut nand = take_nand(self.shared)?;
        nand.power_off();
        nand.power_on();
        let before_restart = nand.snapshot();
        let first = restart(spec, nand, self.shared, Boot::Restart(at, torn));
        let first = match check(self.promise, self.oracle, &outcome, first, &mut found.ex) {
            Ok(o) => o,
            Err(msg) => {
                found.violation(at, torn, None, msg);
                return Ok(());
            }
        };
        if spec.recovery_cuts == 0 {
            return Ok(());
        }
        self.cut_restarts(n, (at, torn), &before_restart, &outcome, first.as_ref(), found)
    }

    /// The restart's own operations, then cuts inside it (a sample of its
    /// programs and erases, torn in turn as `spec.torn` lists), each followed
    /// by a second restart held to the same oracle; `first` is what the uncut
    /// restart found.
    fn cut_restarts(
        &self,
        n: usize,
        (at, torn): (u64, Torn),
        before_restart: &Nand,
        outcome: &ScenarioOutcome,
        first: Option<&Observed>,
        found: &mut Findings,
    ) -> Result<(), SqlCrashError> {
        let spec = self.spec;
        let mut probe_nand = before_restart.snapshot();
        probe_nand.set_op_log(true);
        let _ = restart(spec, probe_nand, self.shared, Boot::Restart(at, torn));
        let rlog: Vec<FlashOp> = take_nand(self.shared)?.op_log().to_vec();
        let mutating: Vec<usize> = (0..rlog.len()).filter(|&j| rlog[j].mutates()).collect();
        found.ex.recovery_mutating_ops += mutating.len() as u64;
        for (s, &idx) in sample(mutating.len(), spec.recovery_cuts).iter().enumerate() {
            let j = mutating[idx] as u64;
            let rt = spec.torn[(s + n) % spec.torn.len()];
            found.ex.recovery_cuts += 1;
            let mut cut = before_restart.snapshot();
            cut.arm_power_cut(PowerCut {
                at_op: j,
                torn: rt,
                seed: spec.seed ^ 0x5EED,
            });
            let _ = restart(spec, cut, self.shared, Boot::Restart(at, torn));
            let mut again = take_nand(self.shared)?;
            again.power_off();
            again.power_on();
            let second = restart(spec, again, self.shared, Boot::Second(at, torn, j, rt));
            match check(self.promise, self.oracle, outcome, second, &mut found.ex) {
                // Durable: a cut restart reaches what the uncut one did (the
                // in-flight transaction does not change sides).
                Ok(Some(o)) if self.promise == Promise::Durable && first.is_some_and(|f| f.contents != o.contents) => {
                    let f = first.map(|f| &f.contents);
                    found.violation(
                        at,
                        torn,
                        Some((j, rt)),
                        format!("after a cut inside the restart, {}", differs(self.oracle, &o.contents, f)),
                    );
                }
                Ok(_) => {}
                Err(msg) => found.violation(at, torn, Some((j, rt)), format!("after a cut inside the restart: {msg}")),
            }
        }
        Ok(())
    }
}

/// What the scenario was meant to exercise (nothing when replaying one
/// point); an error if any of it stayed at zero, unless a canary runs.
fn check_exercised(spec: &SqlCrashSpec, ex: &SqlExercised, dry_run: &DryRun) -> Result<Vec<SqlExpect>, SqlCrashError> {
    // The recovery cuts' second restarts were counted in `check` too: the
    // outcome counts in `ex` are per restart, the cut counts per crash point.
    let expected = if spec.only.is_some() {
        Vec::new()
    } else {
        SqlExpect::for_spec(spec)
    };
    let missing: Vec<&'static str> = expected.iter().filter(|e| e.count(ex, dry_run) == 0).map(|e| e.name()).collect();
    if !missing.is_empty() && spec.canary == Canary::None {
        return Err(SqlCrashError::NotExercised {
            missing,
            exercised: Box::new(*ex),
            dry_run: Box::new(*dry_run),
        });
    }
    Ok(expected)
}

/// The TPC-C transaction type (heavy: the statement) scenario operation
/// `at` falls in, if any.
fn kind_at<K: Copy>(at: u64, kind_marks: &[(u64, Option<K>)]) -> Option<K> {
    kind_marks.iter().rev().find(|&&(m, _)| m <= at).and_then(|&(_, k)| k)
}

/// The phase and the GC / table-reclaim attribution of scenario operation `at`.
fn classify(at: u64, marks: &[(Phase, u64)], spans: &[Span], ops: u64) -> (Phase, bool, bool) {
    let phase = if at >= ops {
        Phase::End
    } else {
        marks.iter().rev().find(|&&(_, m)| m <= at).map_or(Phase::Open, |&(p, _)| p)
    };
    let span = spans.iter().find(|s| s.first_op <= at && at < s.end_op);
    (phase, span.is_some_and(|s| s.gc), span.is_some_and(|s| s.table_reclaim()))
}

/// Evenly spaced indices into `n` items, at most `max`.
fn sample(n: usize, max: u32) -> Vec<usize> {
    let max = max as usize;
    if n <= max {
        return (0..n).collect();
    }
    (0..max).map(|i| i * n / max).collect()
}
