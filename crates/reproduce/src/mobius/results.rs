//! What the runs of `reproduce mobius` measured.

use serde::Serialize;

/// One point of Figs. 7 and 8: an interface, a pattern, a size.
#[derive(Clone, Debug, Serialize)]
pub struct Point {
    /// [`super::Interface::key`].
    pub interface: String,
    /// [`super::Pattern::key`].
    pub pattern: String,
    pub pages: u32,
    /// Mean latency of a compound write, submission to acknowledgement, µs
    /// (simulated).
    pub latency_us: f64,
    /// Its pages' bytes over that latency, MB/s (10^6 bytes).
    pub bandwidth_mb_s: f64,
    /// Translation pages read (cache misses) per page written.
    pub map_reads_per_page: f64,
    /// Flash programs per page written, the flush between compound writes
    /// included (inodes, head records, checkpoints).
    pub programs_per_page: f64,
    /// Checkpoints taken during the point's compound writes and flushes
    /// (DFTL's directory persistence; Möbius's merges, and the framework's
    /// interval), each waited for by the write that triggers it.
    pub checkpoints: u64,
}

/// One point of Fig. 11: a protocol's recovery after `zone_mib` of writes.
#[derive(Clone, Debug, Serialize)]
pub struct RecoveryPoint {
    pub protocol: String,
    pub zone_mib: u32,
    /// The mount's recovery, simulated ms, and its parts: the superblock and
    /// checkpoint load, the protocol's log (LightTx's zone scan, Möbius's
    /// ALA and chain), the framework's scan (DFTL's roll-forward, the block
    /// probes), the sealing checkpoint.
    pub recovery_ms: f64,
    pub load_ms: f64,
    pub log_ms: f64,
    pub scan_ms: f64,
    pub seal_ms: f64,
    /// The rest: the framework's erase-count reads of metadata ring blocks
    /// (`ring_erase_counts`), which the report does not list apart.
    pub other_ms: f64,
    pub pages_read: u64,
    /// Checkpoints the protocol took during the writes (DFTL's when its ring
    /// filled, Möbius's merges).
    pub checkpoints_before: u64,
}

/// One replay of Fig. 9's TPC-C.
#[derive(Clone, Debug, Serialize)]
pub struct TpsRun {
    /// [`super::tpcc::FIG9`]'s key.
    pub key: String,
    /// Committed transactions per simulated second.
    pub tps: f64,
    pub sim_s: f64,
    pub commits: u64,
    /// Mean latency of a commit, simulated µs.
    pub commit_mean_us: f64,
    pub flash_programs: u64,
    /// Of the programs: checkpoint pages (tables, records, write-backs) and
    /// the protocol's own (Möbius's inodes, Atomic-Write's commit pages).
    pub map_writes: u64,
    pub protocol_meta_writes: u64,
    /// Pages the host wrote, and GC's copies.
    pub host_writes: u64,
    pub gc_copies: u64,
}

/// One of Fig. 9's Filebench bar groups: the personality's recorded run,
/// and its trace's replays.
#[derive(Clone, Debug, Serialize)]
pub struct FilebenchBars {
    pub workload: FilebenchWorkload,
    pub runs: Vec<TpsRun>,
}

impl FilebenchBars {
    pub fn run(&self, key: &str) -> Option<&TpsRun> {
        self.runs.iter().find(|r| r.key == key)
    }

    /// Filebench operations (flowops) per simulated second of replay `key`.
    pub fn ops_per_s(&self, key: &str) -> f64 {
        self.run(key)
            .map_or(0.0, |r| txftl_host::per_second(self.workload.report.flowops, r.sim_s))
    }
}

/// A personality's recorded run and its trace's shape.
#[derive(Clone, Debug, Serialize)]
pub struct FilebenchWorkload {
    pub personality: String,
    pub report: txftl_host::filebench::Report,
    pub device_transactions: u64,
    pub trace_ops: u64,
    /// Distinct pages a device transaction writes.
    pub tx_pages_mean: f64,
    pub tx_pages_max: u64,
    /// fsyncs sent the ordered way because one transaction could not hold them.
    pub one_tx_fallbacks: u64,
    /// Device page reads of the file system during the run.
    pub page_reads: u64,
    pub record_wall_s: f64,
}

/// One replay of Fig. 10.
#[derive(Clone, Debug, Serialize)]
pub struct WaRun {
    pub protocol: String,
    /// Flash programs per page the trace writes: the same denominator on
    /// every protocol (DFTL's host journal is not in it).
    pub write_amplification: f64,
    pub host_writes: u64,
    /// The host redo journal's writes (DFTL, no transactions of its own).
    pub journal_writes: u64,
    pub flash_programs: u64,
    pub gc_copies: u64,
    /// Checkpoint pages (tables, block table, records) and write-backs.
    pub map_writes: u64,
    /// The protocol's own pages: Möbius's inodes, Atomic-Write's commit pages.
    pub protocol_meta_writes: u64,
    pub inodes: u64,
    pub commits: u64,
}

/// Fig. 7's random compound writes through DFTL and DWRITE with another
/// cache size (the paper gives none): the sweep its setup misses name.
#[derive(Clone, Debug, Serialize)]
pub struct CmtRun {
    /// Translation pages cached, DFTL's and Möbius's alike.
    pub cmt_pages: u32,
    /// Their share of the table's pages: "1/32", "1/8", "1/2", "all".
    pub share: String,
    pub points: Vec<Point>,
}

/// Everything a run measured.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    /// Figs. 7 and 8.
    pub compound: Vec<Point>,
    /// Fig. 7, random, DFTL and DWRITE over DFTL's cache size (the run's
    /// own among them).
    pub cmt_sweep: Vec<CmtRun>,
    /// Fig. 11.
    pub recovery: Vec<RecoveryPoint>,
    /// Fig. 9's TPC-C trace, and its replays.
    pub tps_workload: Option<crate::tpcc_trace::Workload>,
    pub tps: Vec<TpsRun>,
    /// Fig. 9's Filebench bars: fileserver, then webserver.
    pub filebench: Vec<FilebenchBars>,
    /// Fig. 10's trace, and its replays.
    pub wa_workload: Option<crate::tpcc_trace::Workload>,
    pub wa: Vec<WaRun>,
}

impl Figures {
    pub fn tps_run(&self, key: &str) -> Option<&TpsRun> {
        self.tps.iter().find(|r| r.key == key)
    }

    pub fn filebench(&self, personality: &str) -> Option<&FilebenchBars> {
        self.filebench.iter().find(|b| b.workload.personality == personality)
    }

    pub fn wa_run(&self, protocol: &str) -> Option<&WaRun> {
        self.wa.iter().find(|r| r.protocol == protocol)
    }

    pub fn recovered(&self, protocol: &str, zone_mib: u32) -> Option<&RecoveryPoint> {
        self.recovery.iter().find(|r| r.protocol == protocol && r.zone_mib == zone_mib)
    }

    pub fn point(&self, interface: &str, pattern: &str, pages: u32) -> Option<&Point> {
        self.compound
            .iter()
            .find(|p| p.interface == interface && p.pattern == pattern && p.pages == pages)
    }
}
