//! What the experiments of `reproduce lighttx` measured (the JSON's `figures`).

use serde::Serialize;
use txftl_ftl::{DeviceStats, RecoveryReport};

/// The recorded trace's shape and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct Workload {
    /// TPC-C transactions run, and the device transactions they made (read-only ones make none).
    pub tpcc_transactions: u64,
    pub device_transactions: u64,
    pub trace_ops: u64,
    /// Distinct pages a device transaction writes.
    pub tx_pages_mean: f64,
    pub tx_pages_max: u64,
    /// Host page writes per TPC-C transaction, by kind (New-Order, Payment,
    /// Order-Status, Delivery, Stock-Level): what makes the mean.
    pub host_pages_by_kind: Vec<(String, u64, f64)>,
    /// The logical pages the most transactions write, and how many write
    /// each: what leaves no-page-conflict no room.
    pub most_shared_pages: Vec<(u32, u64)>,
    pub consistency: String,
    pub record_wall_s: f64,
}

/// One replay: a protocol at an isolation level, abort ratio and zone size.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub protocol: String,
    pub isolation: String,
    pub abort_pct: u32,
    /// LightTx's zone size, blocks (0: the framework's interval); None for the others.
    pub zone_blocks: Option<u32>,
    /// Transactions ended (committed or aborted) per simulated second: the
    /// paper's throughput, flat for a protocol to which aborts cost nothing.
    pub tx_per_sim_s: f64,
    pub committed_per_sim_s: f64,
    pub commits: u64,
    pub aborts: u64,
    pub segments: u64,
    pub commit_waits: u64,
    pub sim_s: f64,
    /// Fig. 7: valid-page moves and erases of GC (and forced erases), ms.
    pub gc_overhead_ms: f64,
    /// Fig. 9: pages written to make mappings persistent (checkpoint table
    /// pages and records, superblocks, the protocol's own map pages), and
    /// their share of the host's page writes.
    pub mapping_writes: u64,
    pub mapping_ratio_pct: f64,
    pub measured: DeviceStats,
}

/// Fig. 8: a power cut after the trace, and the mount's recovery.
#[derive(Clone, Debug, Serialize)]
pub struct RecoveryRun {
    pub protocol: String,
    pub zone_blocks: Option<u32>,
    pub capacity_gib: f64,
    pub recovery_s: f64,
    pub report: RecoveryReport,
}

/// A run the device failed (e.g. out of space): no point in its figure, the
/// error in the report, and the command exits non-zero after printing it.
#[derive(Clone, Debug, Serialize)]
pub struct FailedRun {
    pub figure: String,
    pub protocol: String,
    pub isolation: String,
    pub abort_pct: u32,
    pub zone_blocks: Option<u32>,
    pub error: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub workload: Workload,
    pub runs: Vec<Run>,
    pub recovery: Vec<RecoveryRun>,
    pub failed: Vec<FailedRun>,
}

impl Figures {
    pub fn run(&self, protocol: &str, isolation: &str, abort_pct: u32, zone: Option<u32>) -> Option<&Run> {
        self.runs.iter().find(|r| {
            r.protocol == protocol && r.isolation == isolation && r.abort_pct == abort_pct && (zone.is_none() || r.zone_blocks == zone)
        })
    }
    /// The strict run of Figs. 6 and 7 at `abort_pct` (LightTx at its default zone).
    pub fn strict(&self, protocol: &str, abort_pct: u32, default_zone: u32) -> Option<&Run> {
        let zone = (protocol == "lighttx").then_some(default_zone);
        self.run(protocol, "strict", abort_pct, zone)
    }
    pub fn recovery_of(&self, protocol: &str, zone: Option<u32>) -> Option<&RecoveryRun> {
        self.recovery
            .iter()
            .find(|r| r.protocol == protocol && (zone.is_none() || r.zone_blocks == zone))
    }
}

impl Figures {
    /// Fig. 9's run of `protocol` at zone size `zone`: LightTx's at that
    /// zone; the others have no zones (their strict run without aborts).
    pub fn fig9(&self, protocol: &str, zone: u32, default_zone: u32) -> Option<&Run> {
        if protocol == "lighttx" {
            self.run("lighttx", "strict", 0, Some(zone))
        } else {
            self.strict(protocol, 0, default_zone)
        }
    }
}
