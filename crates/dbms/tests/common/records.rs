//! The record-level engine's crash test, shared by its recovery managers
//! (`aries.rs`: ARIES on `plain`; `flag_ex.rs`: Flag Commit's extended
//! manager on `cfc-ex` and `afc-ex`): on the `tiny` geometry (SLC for the
//! flag commits) with 2 KiB pages in full-data mode, a short run of a few
//! clients with record locks, steals, injected rollbacks, deadlock
//! restarts and checkpoints, cut at every flash operation that changes the
//! array with every torn variant. The NAND alone is remounted, the DBMS
//! restarts and every record must hold the version its last acknowledged
//! committer wrote; the records of the commit in flight at the cut show
//! all or none. Every eighth point's restart is then itself cut at each of
//! its mutating operations (its torn variants in turn) and restarted again.

use super::{arm, remount};
use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;
use txftl_dbms::{records_on_flash, restart, CommitLog, DbmsConfig, DbmsError, DbmsReport, RecordDbms, Recovery, RestartReport};
use txftl_harness::DeviceSpec;
use txftl_nand::{Nand, PowerCut, Torn};
use txftl_protocols::AnyDevice;

/// One recovery manager on one protocol, and how a failing point replays.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    pub protocol: &'static str,
    pub recovery: Recovery,
    /// The environment variable that replays one point.
    pub replay_env: &'static str,
    /// The test binary (`cargo test --test NAME`).
    pub test: &'static str,
}

pub fn config_of(recovery: Recovery) -> DbmsConfig {
    DbmsConfig {
        clients: 6,
        buffer_pages: 8,
        warehouses: 1,
        db_pages: 80,
        max_pages_per_tx: 8,
        transactions: 120,
        abort_pct: 20,
        seed: 3,
        recovery,
        log_pages: 40,
        checkpoint_log_pages: 2,
        record_commits: true,
        ..DbmsConfig::default()
    }
}

pub struct Outcome {
    pub dev: Box<dyn AnyDevice>,
    /// Clients mid-rollback when the run stopped.
    pub rolling_back: usize,
    pub base_op: u64,
    pub result: Result<DbmsReport, DbmsError>,
    pub log: CommitLog,
}

impl Case {
    pub fn config(&self) -> DbmsConfig {
        config_of(self.recovery)
    }

    /// `tiny` (or the SLC `tiny` a flag commit needs) with 2 KiB pages.
    pub fn spec(&self) -> DeviceSpec {
        let mut s = DeviceSpec::tiny(self.protocol);
        s.nand.geometry.page_size = 2048;
        s
    }

    pub fn run(&self, cut: Option<(u64, Torn)>, log_ops: bool) -> Outcome {
        self.run_with(self.config(), cut, log_ops)
    }

    pub fn run_with(&self, cfg: DbmsConfig, cut: Option<(u64, Torn)>, log_ops: bool) -> Outcome {
        let mut dev = self.spec().fresh().expect("the tiny device formats");
        let mut db = RecordDbms::new(&mut *dev, cfg).expect("the configuration fits the tiny device");
        db.load().expect("the load runs uncut");
        let base_op = arm(db.device().nand_mut(), cut, log_ops);
        let result = db.run();
        let log = db.commit_log().clone();
        let rolling_back = db.rolling_back();
        drop(db);
        Outcome {
            dev,
            rolling_back,
            base_op,
            result,
            log,
        }
    }

    pub fn mount(&self, nand: Nand) -> Result<Box<dyn AnyDevice>, String> {
        remount(&self.spec(), nand)
    }

    /// Every record against the commit log; the commit in flight all or none.
    fn check_records(&self, dev: &mut dyn AnyDevice, log: &CommitLog) -> Result<(), String> {
        let found = records_on_flash(dev, &self.config()).map_err(|e| format!("reading the records: {e}"))?;
        let mut want = BTreeMap::new();
        for rec in &log.acknowledged {
            for &r in &rec.records {
                want.insert(r, rec.tid);
            }
        }
        // The commits in flight (their records are disjoint: each held its
        // records' locks to the end), each all or none.
        let in_flight: BTreeMap<(u32, u32), u32> = log
            .in_flight
            .iter()
            .flat_map(|r| r.records.iter().map(move |&k| (k, r.tid)))
            .collect();
        let mut shown: BTreeMap<u32, usize> = BTreeMap::new();
        let keys: BTreeSet<(u32, u32)> = found.keys().chain(want.keys()).chain(in_flight.keys()).copied().collect();
        for k in keys {
            let (f, w) = (found.get(&k).copied().unwrap_or(0), want.get(&k).copied().unwrap_or(0));
            if in_flight.get(&k) == Some(&f) && f != 0 {
                *shown.entry(f).or_default() += 1;
            } else if f != w {
                return Err(format!("record {k:?} holds version {f}; the last acknowledged commit of it is {w}"));
            }
        }
        for r in &log.in_flight {
            let (n, all) = (
                shown.get(&r.tid).copied().unwrap_or(0),
                r.records.iter().collect::<BTreeSet<_>>().len(),
            );
            if n != 0 && n != all {
                return Err(format!(
                    "the commit in flight of transaction {} shows on {n} of its {all} records",
                    r.tid
                ));
            }
        }
        Ok(())
    }

    /// Remounts, restarts (cut at `second` operations into the restart,
    /// then remounted and restarted again), and checks.
    pub fn recover_and_check(&self, nand: Nand, log: &CommitLog, second: Option<(u64, Torn)>) -> Result<RestartReport, String> {
        let mut dev = self.mount(nand)?;
        if let Some((at, torn)) = second {
            let nand = dev.nand_mut();
            let base = nand.op_count();
            nand.arm_power_cut(PowerCut {
                at_op: base + at,
                torn,
                seed: at ^ 0x5eed,
            });
            match restart(&mut *dev, &self.config()) {
                Err(e) if e.is_power_loss() => {}
                Err(e) => return Err(format!("the restart failed before its cut: {e}")),
                Ok(_) => return Err("the restart ended before its cut".into()),
            }
            dev = self.mount(dev.into_nand())?;
        }
        let report = restart(&mut *dev, &self.config()).map_err(|e| format!("restart failed: {e}"))?;
        self.check_records(&mut *dev, log)?;
        Ok(report)
    }

    /// The mutating operations of the restart after a cut at `at`, counted
    /// from the mount's end.
    fn restart_ops(&self, at: u64, torn: Torn) -> Vec<u64> {
        let o = self.run(Some((at, torn)), false);
        let mut dev = self.mount(o.dev.into_nand()).expect("the device mounts");
        dev.nand_mut().set_op_log(true);
        let base = dev.nand().op_count();
        restart(&mut *dev, &self.config()).expect("the restart runs");
        assert_eq!(dev.nand().op_count() - base, dev.nand().op_log().len() as u64);
        dev.nand().mutating_ops()
    }

    /// A cut's restart report, and whether the cut fell during a rollback.
    pub fn point(&self, at: u64, torn: Torn, second: Option<(u64, Torn)>) -> Result<(RestartReport, bool), String> {
        let o = self.run(Some((at, torn)), false);
        let in_rollback = o.rolling_back > 0;
        match &o.result {
            Err(e) if e.is_power_loss() => {}
            Err(e) => return Err(format!("the run failed before the cut: {e}")),
            Ok(_) => return Err("the run ended before the cut".into()),
        }
        self.recover_and_check(o.dev.into_nand(), &o.log, second).map(|r| (r, in_rollback))
    }

    pub fn replay_line(&self, at: u64, torn: Torn, second: Option<(u64, Torn)>) -> String {
        let s = second.map_or(String::new(), |(s, t)| format!(":{s}:{}", t.name()));
        format!(
            "{}={at}:{}{s} cargo test -p txftl-dbms --test {}",
            self.replay_env,
            torn.name(),
            self.test
        )
    }

    /// The uncut run's report and mutating operations, after checking it
    /// end to end (its restart included).
    pub fn dry_run(&self) -> (DbmsReport, Vec<u64>) {
        let o = self.run(None, true);
        let report = o.result.as_ref().unwrap_or_else(|e| panic!("the uncut run failed: {e}")).clone();
        eprintln!("{report}");
        assert!(report.buffer.steal_writes > 0, "no steal");
        assert!(report.aborted > 0, "no rollback");
        let ops: Vec<u64> = o.dev.nand().mutating_ops();
        assert_eq!(o.dev.nand().op_count() - o.base_op, o.dev.nand().op_log().len() as u64);
        self.recover_and_check(o.dev.into_nand(), &o.log, None)
            .unwrap_or_else(|e| panic!("after the uncut run: {e}"));
        (report, ops)
    }

    /// The replay the environment asks for, if it does: true if it ran.
    pub fn replay(&self) -> bool {
        let Ok(v) = std::env::var(self.replay_env) else { return false };
        let parts: Vec<&str> = v.split(':').collect();
        let (at, torn) = (
            parts[0].parse().expect("an operation index"),
            Torn::parse(parts[1]).expect("a torn variant"),
        );
        let second = parts.get(2).map(|s| {
            let t = parts.get(3).map_or(Torn::Garbage, |t| Torn::parse(t).expect("a torn variant"));
            (s.parse().expect("a restart operation index"), t)
        });
        self.point(at, torn, second)
            .unwrap_or_else(|e| panic!("{}: {e}", self.replay_line(at, torn, second)));
        true
    }

    /// Every cut of `ops` (the dry run's), and every eighth point's restart
    /// cut in turn; the totals, after asserting nothing failed.
    /// The cuts at the `n`th mutating operation, `at`: every torn variant,
    /// and for every eighth operation the cuts in the garbage variant's
    /// restart. Their failures and totals.
    fn cuts_at(&self, n: usize, at: u64) -> (Vec<String>, Totals) {
        let mut failures = Vec::new();
        let mut t = Totals::default();
        for torn in Torn::ALL {
            match self.point(at, torn, None) {
                Err(e) => failures.push(format!("{e}\n  replay: {}", self.replay_line(at, torn, None))),
                Ok((r, in_rollback)) => {
                    t.in_rollbacks += in_rollback as u64;
                    t.redone += r.redone;
                    t.undone += r.undone;
                    t.in_doubt_committed += r.in_doubt_committed;
                    if n.is_multiple_of(8) && torn == Torn::Garbage {
                        for (i, s) in self.restart_ops(at, torn).into_iter().enumerate() {
                            t.second_cuts += 1;
                            let t2 = Torn::ALL[i % Torn::ALL.len()];
                            if let Err(e) = self.point(at, torn, Some((s, t2))) {
                                failures.push(format!("{e}\n  replay: {}", self.replay_line(at, torn, Some((s, t2)))));
                            }
                        }
                    }
                }
            }
        }
        (failures, t)
    }

    pub fn every_cut(&self, ops: &[u64]) -> Totals {
        let started = Instant::now();
        // Each operation's cuts on every core (`par_map`), summed in order.
        let indexed: Vec<(usize, u64)> = ops.iter().copied().enumerate().collect();
        let mut failures = Vec::new();
        let mut t = Totals::default();
        for (ft, tt) in super::par_map(&indexed, |&(n, at)| self.cuts_at(n, at)) {
            failures.extend(ft);
            t.in_rollbacks += tt.in_rollbacks;
            t.redone += tt.redone;
            t.undone += tt.undone;
            t.in_doubt_committed += tt.in_doubt_committed;
            t.second_cuts += tt.second_cuts;
        }
        eprintln!(
            "{} on {}: {} mutating operations, {} cuts ({} during a rollback), {} cuts in restarts, {} failing; restarts redid {} and undid {} records, committed {} in doubt; {:.1} s",
            self.recovery.name(),
            self.protocol,
            ops.len(),
            ops.len() * Torn::ALL.len(),
            t.in_rollbacks,
            t.second_cuts,
            failures.len(),
            t.redone,
            t.undone,
            t.in_doubt_committed,
            started.elapsed().as_secs_f64()
        );
        assert!(
            failures.is_empty(),
            "{} failing cuts; the first:\n{}",
            failures.len(),
            failures[..failures.len().min(5)].join("\n")
        );
        t
    }

    /// The canary `canary` (a recovery manager of this case's protocol)
    /// must be caught by some cut (no torn variant).
    pub fn catches(&self, canary: Recovery) {
        let cfg = config_of(canary);
        let dry = self.run_with(cfg.clone(), None, true);
        if let Err(e) = &dry.result {
            panic!("the canary's uncut run failed: {e}");
        }
        let ops: Vec<u64> = dry.dev.nand().mutating_ops();
        let canary_case = Case { recovery: canary, ..*self };
        let caught = ops.iter().find_map(|&at| {
            let o = self.run_with(cfg.clone(), Some((at, Torn::None)), false);
            assert!(o.result.as_ref().is_err_and(|e| e.is_power_loss()));
            canary_case
                .recover_and_check(o.dev.into_nand(), &o.log, None)
                .err()
                .map(|e| (at, e))
        });
        let (at, e) = caught.expect("no cut caught the canary");
        eprintln!("{} caught at operation {at}: {e}", canary.name());
    }
}

/// What the cuts' restarts did.
#[derive(Clone, Copy, Debug, Default)]
pub struct Totals {
    pub in_rollbacks: u64,
    pub redone: u64,
    pub undone: u64,
    pub second_cuts: u64,
    pub in_doubt_committed: u64,
}
