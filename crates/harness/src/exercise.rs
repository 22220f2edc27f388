//! What a crash run exercised, and what it was meant to.
//!
//! A crash test that never tore a page with an intact OOB, never trimmed, or
//! never let GC move a protocol's pages proves nothing about those paths while
//! still reporting 0 violations. Every report carries these counts, and a run
//! given expectations fails if one of them stayed at zero.

use serde::Serialize;
use txftl_ftl::{DeviceStats, RecoveryReport};

/// Counts of what a crash run exercised: from its uncut dry run, and summed
/// over the recoveries of every crash point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Exercised {
    /// The dry run's device counters: every framework counter (GC runs,
    /// checkpoints, commits, aborts, trims, GC moves of the protocol's
    /// pages, log moves, flash faults...: `DeviceStats::SPECS`) and the
    /// protocol's own (SCC's forced erases, BPCC's pinned pages moved).
    #[serde(flatten)]
    pub dry_run: DeviceStats,
    /// Transactions the host aborted because the device's table was full.
    pub table_full_aborts: u64,
    /// Reads the host saw reported lost in the dry run (each checked genuine).
    pub reported_losses: u64,
    /// Transactional writes to a page another open transaction had written
    /// (several uncommitted versions of one page at once).
    pub cross_tx_updates: u64,
    /// Recoveries: torn pages found, and of those, pages with an intact OOB and torn data.
    pub torn_pages: u64,
    pub torn_data_intact_oob: u64,
    /// Recoveries: pages rolled forward, and protocol updates applied (X-FTL: committed entries).
    pub pages_rolled_forward: u64,
    pub protocol_updates_applied: u64,
    /// Recoveries: pages the scan could not decode.
    pub unreadable_pages: u64,
    /// Recoveries: pages of blocks in use at the checkpoint that the protocol
    /// asked to read (LightTx's Unavailable Zone).
    pub zone_pages_scanned: u64,
    /// Recoveries: commit records rejected, their transaction missing pages
    /// (cuts at instants make them).
    pub commits_rejected: u64,
    /// Recoveries: blocks read by their summary page alone, and blocks whose
    /// summary page was read but not trusted (read page by page).
    pub summaries_trusted: u64,
    pub summary_fallbacks: u64,
}

impl Exercised {
    pub fn from_dry_run(s: &DeviceStats, table_full_aborts: u64, reported_losses: u64) -> Exercised {
        Exercised {
            dry_run: *s,
            table_full_aborts,
            reported_losses,
            ..Exercised::default()
        }
    }

    pub fn add_recovery(&mut self, r: &RecoveryReport) {
        self.torn_pages += r.torn_pages_found;
        self.torn_data_intact_oob += r.torn_data_intact_oob;
        self.pages_rolled_forward += r.pages_rolled_forward;
        self.protocol_updates_applied += r.protocol_updates_applied;
        self.unreadable_pages += r.unreadable_pages;
        self.zone_pages_scanned += r.protocol_pages_scanned;
        self.commits_rejected += r.protocol_commits_rejected;
        self.summaries_trusted += r.summary_pages_read - r.summary_fallbacks;
        self.summary_fallbacks += r.summary_fallbacks;
    }

    /// Adds the recovery counts of another run (one crash point's).
    pub fn add_recovery_counts(&mut self, o: &Exercised) {
        self.torn_pages += o.torn_pages;
        self.torn_data_intact_oob += o.torn_data_intact_oob;
        self.pages_rolled_forward += o.pages_rolled_forward;
        self.protocol_updates_applied += o.protocol_updates_applied;
        self.unreadable_pages += o.unreadable_pages;
        self.zone_pages_scanned += o.zone_pages_scanned;
        self.commits_rejected += o.commits_rejected;
        self.summaries_trusted += o.summaries_trusted;
        self.summary_fallbacks += o.summary_fallbacks;
    }

    /// The count `e` names. Panics on a device counter `DeviceStats` does
    /// not declare (a misspelt expectation is a bug, as a protocol counter's is).
    pub fn count(&self, e: Expect) -> u64 {
        match e {
            Expect::Device(key) => self
                .dry_run
                .get(key)
                .unwrap_or_else(|| panic!("device counter `{key}` is not declared (DeviceStats::SPECS)")),
            Expect::TableFull => self.table_full_aborts,
            Expect::TornDataIntactOob => self.torn_data_intact_oob,
            Expect::CrossTxUpdates => self.cross_tx_updates,
            Expect::ZoneScans => self.zone_pages_scanned,
            Expect::CommitsRejected => self.commits_rejected,
            Expect::SummariesTrusted => self.summaries_trusted,
            Expect::SummaryFallbacks => self.summary_fallbacks,
            Expect::Protocol(key) => self.dry_run.protocol.get(key),
        }
    }
}

/// Something a crash scenario is meant to exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    /// One of the dry run's framework counters, by its key
    /// (`DeviceStats::SPECS`: `"commits"`, `"gc_runs"`, `"host_trims"`...).
    Device(&'static str),
    TableFull,
    TornDataIntactOob,
    CrossTxUpdates,
    ZoneScans,
    CommitsRejected,
    /// Blocks recovery read by their summary alone; summary pages recovery
    /// read and did not trust (torn, newer than the checkpoint...).
    SummariesTrusted,
    SummaryFallbacks,
    /// One of the protocol's own counters, by the key its entry declares.
    Protocol(&'static str),
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::Device(key) => key,
            Expect::TableFull => "transactions aborted on a full table",
            Expect::TornDataIntactOob => "torn pages with an intact OOB",
            Expect::CrossTxUpdates => "writes to a page another open transaction wrote",
            Expect::ZoneScans => "recovery reads of the protocol's zones (blocks in use at the checkpoint)",
            Expect::CommitsRejected => "commit records recovery rejected, their transaction missing pages",
            Expect::SummariesTrusted => "blocks recovery read by their summary page alone",
            Expect::SummaryFallbacks => "summary pages recovery read and did not trust",
            Expect::Protocol(key) => key,
        }
    }
}
