//! What a crash run exercised, and what it was meant to.
//!
//! A crash test that never tore a page with an intact OOB, never trimmed, or
//! never let GC move a protocol's pages proves nothing about those paths while
//! still reporting 0 violations. Every report carries these counts, and a run
//! given expectations fails if one of them stayed at zero.

use serde::Serialize;
use txftl_ftl::{DeviceStats, ProtocolCounters, RecoveryReport};

/// Counts of what a crash run exercised: from its uncut dry run, and summed
/// over the recoveries of every crash point.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Exercised {
    pub gc_runs: u64,
    pub checkpoints: u64,
    pub commits: u64,
    pub aborts: u64,
    pub trims: u64,
    /// GC moves of pages the protocol kept live (X-FTL's uncommitted pages).
    pub gc_protocol_copies: u64,
    /// Greedy GC choices the protocol's skipped victims changed (NoLgn's
    /// locked blocks), and the extra pages they made GC copy.
    pub gc_victims_skipped: u64,
    pub gc_skip_extra_copies: u64,
    /// Protocol records written while a transaction was open (X-FTL: tables with active entries).
    pub protocol_records_with_open_tx: u64,
    /// Transactions the host aborted because the device's table was full.
    pub table_full_aborts: u64,
    /// Protocol log pages moved ahead of the ring's erases, and metadata ring
    /// blocks swapped with the data pool for wear.
    pub protocol_log_moves: u64,
    pub ring_swaps: u64,
    /// Checkpoint table pages left in place by a later checkpoint (incremental
    /// checkpoints), and moved ahead of the checkpoint ring's erases.
    pub map_pages_kept: u64,
    pub map_moves: u64,
    /// Recoveries: torn pages found, and of those, pages with an intact OOB and torn data.
    pub torn_pages: u64,
    pub torn_data_intact_oob: u64,
    /// Recoveries: pages rolled forward, and protocol updates applied (X-FTL: committed entries).
    pub pages_rolled_forward: u64,
    pub protocol_updates_applied: u64,
    /// Flash faults in the dry run (with a fault model): bit errors corrected,
    /// read retries, reads uncorrectable after every retry, failed programs,
    /// blocks retired after one, blocks gone bad (erase failures), reads the
    /// host saw reported lost (each checked genuine), pages GC copied lost.
    pub corrected_bits: u64,
    pub read_retries: u64,
    pub uncorrectable_reads: u64,
    pub program_failures: u64,
    pub retired_blocks: u64,
    pub bad_blocks: u64,
    pub reported_losses: u64,
    pub lost_page_copies: u64,
    /// Recoveries: pages the scan could not decode.
    pub unreadable_pages: u64,
    /// Transactional writes to a page another open transaction had written
    /// (several uncommitted versions of one page at once).
    pub cross_tx_updates: u64,
    /// Recoveries: pages of blocks in use at the checkpoint that the protocol
    /// asked to read (LightTx's Unavailable Zone).
    pub zone_pages_scanned: u64,
    /// Recoveries: commit records rejected, their transaction missing pages
    /// (cuts at instants make them).
    pub commits_rejected: u64,
    /// Summary pages written in the dry run (`txftl_ftl`'s `summary.rs`);
    /// recoveries: blocks read by their summary page alone, and blocks whose
    /// summary page was read but not trusted (read page by page).
    pub summary_pages_written: u64,
    pub summaries_trusted: u64,
    pub summary_fallbacks: u64,
    /// The protocol's own counters in the dry run (SCC's forced erases,
    /// BPCC's pinned pages moved: what its entry declares).
    pub protocol: ProtocolCounters,
}

impl Exercised {
    pub fn from_dry_run(s: &DeviceStats, table_full_aborts: u64, reported_losses: u64) -> Exercised {
        Exercised {
            gc_runs: s.gc_runs,
            checkpoints: s.checkpoints,
            commits: s.commits,
            aborts: s.aborts,
            trims: s.host_trims,
            gc_protocol_copies: s.gc_protocol_copies,
            gc_victims_skipped: s.gc_victims_skipped,
            gc_skip_extra_copies: s.gc_skip_extra_copies,
            protocol_records_with_open_tx: s.protocol_records_with_open_tx,
            table_full_aborts,
            protocol_log_moves: s.protocol_log_moves,
            ring_swaps: s.ring_swaps,
            map_pages_kept: s.map_pages_kept,
            map_moves: s.map_moves,
            corrected_bits: s.corrected_bits,
            read_retries: s.read_retries,
            uncorrectable_reads: s.uncorrectable_reads,
            program_failures: s.program_failures,
            retired_blocks: s.retired_blocks,
            bad_blocks: s.bad_blocks,
            reported_losses,
            lost_page_copies: s.lost_page_copies,
            summary_pages_written: s.summary_pages_written,
            protocol: s.protocol,
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

    pub fn count(&self, e: Expect) -> u64 {
        match e {
            Expect::Gc => self.gc_runs,
            Expect::Checkpoints => self.checkpoints,
            Expect::Commits => self.commits,
            Expect::Aborts => self.aborts,
            Expect::Trims => self.trims,
            Expect::GcOfProtocolPages => self.gc_protocol_copies,
            Expect::GcSkips => self.gc_victims_skipped,
            Expect::RecordsWithOpenTx => self.protocol_records_with_open_tx,
            Expect::TableFull => self.table_full_aborts,
            Expect::TornDataIntactOob => self.torn_data_intact_oob,
            Expect::LogMoves => self.protocol_log_moves,
            Expect::RingSwaps => self.ring_swaps,
            Expect::MapPagesKept => self.map_pages_kept,
            Expect::MapMoves => self.map_moves,
            Expect::CorrectedBits => self.corrected_bits,
            Expect::ReadRetries => self.read_retries,
            Expect::Uncorrectable => self.uncorrectable_reads,
            Expect::ProgramFailures => self.program_failures,
            Expect::BadBlocks => self.bad_blocks,
            Expect::CrossTxUpdates => self.cross_tx_updates,
            Expect::ZoneScans => self.zone_pages_scanned,
            Expect::CommitsRejected => self.commits_rejected,
            Expect::SummaryWrites => self.summary_pages_written,
            Expect::SummariesTrusted => self.summaries_trusted,
            Expect::SummaryFallbacks => self.summary_fallbacks,
            Expect::Protocol(key) => self.protocol.get(key),
        }
    }
}

/// Something a crash scenario is meant to exercise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Expect {
    Gc,
    Checkpoints,
    Commits,
    Aborts,
    Trims,
    GcOfProtocolPages,
    /// GC choices the protocol's skipped victims changed.
    GcSkips,
    RecordsWithOpenTx,
    TableFull,
    TornDataIntactOob,
    LogMoves,
    RingSwaps,
    MapPagesKept,
    MapMoves,
    CorrectedBits,
    ReadRetries,
    Uncorrectable,
    ProgramFailures,
    BadBlocks,
    CrossTxUpdates,
    ZoneScans,
    CommitsRejected,
    /// Summary pages written; blocks recovery read by their summary alone;
    /// summary pages recovery read and did not trust (torn, newer than the
    /// checkpoint...).
    SummaryWrites,
    SummariesTrusted,
    SummaryFallbacks,
    /// One of the protocol's own counters, by the key its entry declares.
    Protocol(&'static str),
}

impl Expect {
    pub fn name(self) -> &'static str {
        match self {
            Expect::Gc => "GC runs",
            Expect::Checkpoints => "checkpoints",
            Expect::Commits => "commits",
            Expect::Aborts => "aborts",
            Expect::Trims => "trims",
            Expect::GcOfProtocolPages => "GC moves of the protocol's uncommitted pages",
            Expect::GcSkips => "GC choices changed by the protocol's skipped victims",
            Expect::RecordsWithOpenTx => "protocol records written with a transaction open",
            Expect::TableFull => "transactions aborted on a full table",
            Expect::TornDataIntactOob => "torn pages with an intact OOB",
            Expect::LogMoves => "protocol log pages moved ahead of the ring's erases",
            Expect::RingSwaps => "metadata ring blocks swapped with the data pool",
            Expect::MapPagesKept => "checkpoint table pages left in place by a later checkpoint",
            Expect::MapMoves => "checkpoint table pages moved ahead of the checkpoint ring's erases",
            Expect::CorrectedBits => "bit errors corrected by ECC",
            Expect::ReadRetries => "read retries",
            Expect::Uncorrectable => "reads uncorrectable after every retry",
            Expect::ProgramFailures => "failed programs",
            Expect::BadBlocks => "blocks gone bad",
            Expect::CrossTxUpdates => "writes to a page another open transaction wrote",
            Expect::ZoneScans => "recovery reads of the protocol's zones (blocks in use at the checkpoint)",
            Expect::CommitsRejected => "commit records recovery rejected, their transaction missing pages",
            Expect::SummaryWrites => "summary pages written",
            Expect::SummariesTrusted => "blocks recovery read by their summary page alone",
            Expect::SummaryFallbacks => "summary pages recovery read and did not trust",
            Expect::Protocol(key) => key,
        }
    }
}
