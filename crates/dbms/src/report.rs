//! What a run reports, and the commit log the crash tests check against.

use crate::buffer::BufferCounts;
use crate::config::DbmsConfig;
use crate::tpcc::Profile;
use serde::Serialize;
use std::collections::BTreeMap;
use txftl_ftl::{DeviceStats, Tid};
use txftl_host::latency::Latency;
use txftl_host::LatencySummary;

/// A committed transaction's id and the DB pages it wrote.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct CommitRecord {
    pub tid: Tid,
    pub pages: Vec<u32>,
    /// The records it wrote (page, slot), under record-level locking.
    pub records: Vec<(u32, u32)>,
}

/// The device commits of a run, kept with `record_commits`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CommitLog {
    /// Commits the device returned, in order.
    pub acknowledged: Vec<CommitRecord>,
    /// Commits issued and not returned (a power cut stopped them): one at
    /// most in an engine whose commit is one device call; several in Flag
    /// Commit's extended manager, whose commit forces its log record first
    /// and flags its pending records once that is on flash.
    pub in_flight: Vec<CommitRecord>,
}

impl CommitLog {
    /// The commit of `tid` returned.
    pub fn acknowledge(&mut self, tid: u32) {
        if let Some(i) = self.in_flight.iter().position(|r| r.tid == tid) {
            let r = self.in_flight.remove(i);
            self.acknowledged.push(r);
        }
    }
}

/// A run's results. Times are simulated (the device clock).
#[derive(Clone, Debug, Serialize)]
pub struct DbmsReport {
    pub protocol: &'static str,
    pub config: DbmsConfig,
    /// DB pages the database occupies.
    pub db_pages: u32,
    pub committed: u64,
    /// Injected rollbacks (delta).
    pub aborted: u64,
    /// Deadlocks found, and the restarts of their victims.
    pub deadlocks: u64,
    pub restarts: u64,
    /// Restarts per committed transaction (the paper's Fig. 15b measure).
    pub restart_ratio: f64,
    pub committed_by_profile: BTreeMap<&'static str, u64>,
    /// The run's span on the device clock.
    pub sim_ns: u64,
    /// Committed transactions per simulated second.
    pub throughput_tx_per_s: f64,
    /// First start of a transaction (restarts included) to its commit's return.
    pub mean_execution_ns: f64,
    /// Its commit's start (the first forced page write) to its return.
    pub mean_commit_response_ns: f64,
    pub execution: LatencySummary,
    pub commit_response: LatencySummary,
    pub buffer: BufferCounts,
    /// The device's counters over the run (programs, erases, GC copies...).
    /// GC time is not among them.
    pub device: DeviceStats,
    /// The log's costs, for a logging recovery manager.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub log: Option<crate::wal::LogCounts>,
}

impl std::fmt::Display for DbmsReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = |ns: f64| ns / 1e6;
        writeln!(
            f,
            "{}: {} committed, {} rolled back (injected), {} restarts (ratio {:.3}) in {:.3} s simulated",
            self.protocol,
            self.committed,
            self.aborted,
            self.restarts,
            self.restart_ratio,
            self.sim_ns as f64 / 1e9
        )?;
        writeln!(
            f,
            "  throughput {:.1} tx/s; execution {:.2} ms, commit response {:.2} ms (means)",
            self.throughput_tx_per_s,
            ms(self.mean_execution_ns),
            ms(self.mean_commit_response_ns)
        )?;
        writeln!(
            f,
            "  buffer: {} hits, {} misses, {} steal writes, {} forced writes",
            self.buffer.hits, self.buffer.misses, self.buffer.steal_writes, self.buffer.force_writes
        )?;
        write!(
            f,
            "  device: {} programs, {} reads, {} erases, {} GC copies",
            self.device.flash_programs, self.device.flash_reads, self.device.flash_erases, self.device.gc_copies
        )?;
        if let Some(l) = &self.log {
            write!(
                f,
                "\n  log: {} records, {} page writes, {} forces, {} commit records, {} pages read back, {} checkpoints",
                l.records, l.page_writes, l.forces, l.commit_records, l.page_reads, l.checkpoints
            )?;
        }
        Ok(())
    }
}

/// What the run counts as it goes.
#[derive(Default)]
pub(crate) struct Tally {
    pub committed: u64,
    pub aborted: u64,
    pub deadlocks: u64,
    pub restarts: u64,
    pub by_profile: BTreeMap<&'static str, u64>,
    pub execution: Latency,
    pub commit_response: Latency,
    pub start_ns: u64,
    pub end_ns: u64,
}

impl Tally {
    pub fn committed(&mut self, profile: Profile, execution_ns: u64, commit_ns: u64) {
        self.committed += 1;
        *self.by_profile.entry(profile.name()).or_default() += 1;
        self.execution.record(execution_ns);
        self.commit_response.record(commit_ns);
    }

    pub fn report(&self, protocol: &'static str, cfg: &DbmsConfig, db_pages: u32, buffer: BufferCounts, device: DeviceStats) -> DbmsReport {
        let sim_ns = self.end_ns - self.start_ns;
        let execution = self.execution.summary();
        let commit_response = self.commit_response.summary();
        DbmsReport {
            protocol,
            config: cfg.clone(),
            db_pages,
            committed: self.committed,
            aborted: self.aborted,
            deadlocks: self.deadlocks,
            restarts: self.restarts,
            restart_ratio: if self.committed == 0 {
                0.0
            } else {
                self.restarts as f64 / self.committed as f64
            },
            committed_by_profile: self.by_profile.clone(),
            sim_ns,
            throughput_tx_per_s: txftl_host::per_second(self.committed, sim_ns as f64 / 1e9),
            mean_execution_ns: execution.mean_ns,
            mean_commit_response_ns: commit_response.mean_ns,
            execution,
            commit_response,
            buffer,
            device,
            log: None,
        }
    }
}
