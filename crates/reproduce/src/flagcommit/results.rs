//! What the experiments of `reproduce flagcommit` measured: one [`Run`]
//! per protocol, fill and abort ratio (and flag layout), with its recovery
//! after a power cut where Fig. 13b asks for one; Table 3's memory.

use serde::Serialize;

/// One DBMS run: its results on the device clock, and the device's counters.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub protocol: String,
    /// `block-flags=0`: page-based flags (CFC and AFC only).
    pub page_flags: bool,
    /// `summary-pages=1`: a summary page closes each data block (the
    /// recovery points of Fig. 13b).
    pub summary_pages: bool,
    pub fill_pct: u32,
    pub abort_pct: u32,
    pub committed: u64,
    pub aborted: u64,
    pub restarts: u64,
    /// Committed transactions per simulated second.
    pub throughput: f64,
    pub mean_execution_ms: f64,
    pub mean_commit_ms: f64,
    pub sim_s: f64,
    /// Transactions that wrote a page (the others never began on the device).
    pub device_commits: u64,
    pub host_writes: u64,
    pub flash_programs: u64,
    pub partial_programs: u64,
    pub flash_reads: u64,
    pub flash_erases: u64,
    /// Die time of every flash operation, and of GC's (the device's counters).
    pub flash_busy_s: f64,
    pub gc_s: f64,
    pub gc_runs: u64,
    pub gc_copies: u64,
    pub gc_plan_reads: u64,
    pub gc_flag_programs: u64,
    /// Blocks a stream took from another parallel unit (its own had none free).
    pub blocks_borrowed: u64,
    /// The most programs any page took since its erase (the NAND's NOP
    /// bounds it), over the device's life: format, fill, load, warm-up, run.
    pub max_programs_per_page: u8,
    /// The per-page program histogram over the same span: entry `k - 1`,
    /// the times a page took its `k`-th program since its erase, up to the NOP.
    pub programs_per_page: Vec<u64>,
    pub recovery: Option<Recovery>,
}

impl Run {
    /// GC's share of the flash's die time, percent.
    pub fn gc_share_pct(&self) -> f64 {
        if self.flash_busy_s > 0.0 {
            100.0 * self.gc_s / self.flash_busy_s
        } else {
            0.0
        }
    }

    /// GC time per committed transaction, ms.
    pub fn gc_ms_per_commit(&self) -> f64 {
        if self.committed > 0 {
            1e3 * self.gc_s / self.committed as f64
        } else {
            0.0
        }
    }

    /// Partial programs of commits (those GC issued apart) per device commit.
    pub fn partial_programs_per_commit(&self) -> f64 {
        crate::fmt::ratio((self.partial_programs - self.gc_flag_programs) as f64, self.device_commits as f64)
    }

    /// GC's flag programs per victim.
    pub fn flag_programs_per_victim(&self) -> f64 {
        crate::fmt::ratio(self.gc_flag_programs as f64, self.gc_runs as f64)
    }
}

/// The mount after a power cut at the end of a run (Fig. 13b).
#[derive(Clone, Debug, Serialize)]
pub struct Recovery {
    pub time_ms: f64,
    pub flash_reads: u64,
    /// Pages the framework's roll-forward read (blocks written since the
    /// checkpoint), and the pages of the blocks the protocol asked to scan
    /// (every block in use, for CFC, AFC, BPCC and SCC); of the latter, the
    /// summary pages read and the spares a summary could not hold; then the
    /// live spares read again for their flags.
    pub pages_scanned: u64,
    pub protocol_pages_scanned: u64,
    pub summary_pages_read: u64,
    pub summary_spare_reads: u64,
    pub spare_rereads: u64,
    /// Reads that are neither (the checkpoint, the protocol's chains...).
    pub other_reads: u64,
}

/// Table 3: a protocol's DRAM tables at the paper's 32 GB.
#[derive(Clone, Debug, Serialize)]
pub struct Memory {
    pub protocol: String,
    pub mb: f64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    pub runs: Vec<Run>,
    pub memory: Vec<Memory>,
    /// Flash programs (whole and partial) an abort issued, per protocol:
    /// one transaction of a few pages, aborted on a fresh device.
    pub abort_programs: Vec<(String, u64)>,
    /// Sec. 5.3's runs: the extended protocols and WAL.
    pub ex_runs: Vec<super::ex::ExRun>,
}

impl Figures {
    pub fn run(&self, protocol: &str, fill: u32, delta: u32) -> Option<&Run> {
        self.runs
            .iter()
            .find(|r| r.protocol == protocol && !r.page_flags && r.recovery.is_none() && r.fill_pct == fill && r.abort_pct == delta)
    }

    /// Fig. 13b's recovery of `protocol` (the default point, summary pages on).
    pub fn recovery(&self, protocol: &str) -> Option<&Recovery> {
        self.runs
            .iter()
            .filter(|r| r.protocol == protocol)
            .find_map(|r| r.recovery.as_ref())
    }

    /// Sec. 5.3's run of `lineup` at `point`.
    pub fn ex_run(&self, lineup: &str, point: super::ex::ExPoint) -> Option<&super::ex::ExRun> {
        self.ex_runs.iter().find(|r| r.lineup == lineup && r.point == point)
    }

    pub fn page_flag_run(&self, protocol: &str) -> Option<&Run> {
        self.runs.iter().find(|r| r.protocol == protocol && r.page_flags)
    }
}
