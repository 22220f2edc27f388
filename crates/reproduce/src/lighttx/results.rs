//! What the experiments of `reproduce lighttx` measured (the JSON's `figures`).

use serde::Serialize;
use txftl_ftl::{DeviceStats, RecoveryReport};

pub use crate::tpcc_trace::Workload;

/// One replay: a protocol at an isolation level, abort ratio and zone size.
#[derive(Clone, Debug, Serialize)]
pub struct Run {
    pub protocol: String,
    pub isolation: String,
    pub abort_pct: u32,
    /// LightTx's zone size, blocks (0: the framework's interval); None for the others.
    pub zone_blocks: Option<u32>,
    /// Percent of the logical pages written before the trace.
    pub fill_pct: u32,
    /// Transactions ended (committed or aborted) per simulated second: the
    /// paper's throughput, flat for a protocol to which aborts cost nothing.
    pub tx_per_sim_s: f64,
    pub committed_per_sim_s: f64,
    pub commits: u64,
    pub aborts: u64,
    pub segments: u64,
    pub commit_waits: u64,
    /// Device time of a commit and of an abort request, mean, ns (0: none):
    /// what an aborted transaction saves over a committed one at its end.
    pub commit_mean_ns: f64,
    pub abort_mean_ns: f64,
    pub sim_s: f64,
    /// Fig. 7: valid-page moves and erases of GC (and forced erases), ms.
    pub gc_overhead_ms: f64,
    /// Fig. 9: pages written to make mappings persistent (every page the
    /// checkpoints write: L2P table, block table and record; and the
    /// protocol's own map pages), and their share of the host's page writes.
    pub mapping_writes: u64,
    pub mapping_ratio_pct: f64,
    /// Of them, the L2P table pages and the protocol's map pages alone.
    pub mapping_l2p_ratio_pct: f64,
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
    pub fill_pct: u32,
    pub error: String,
}

/// GC without aborts as the trace goes: strict, 0% aborts, at a fill, the
/// GC victims after each prefix of the trace (a fresh device per prefix;
/// transactions the cut leaves open are replayed as aborts).
#[derive(Clone, Debug, Serialize)]
pub struct GcOnset {
    pub fill_pct: u32,
    pub protocol: String,
    /// (percent of the trace's operations, GC victims, host writes) per
    /// prefix, the whole trace last.
    pub prefixes: Vec<(u32, u64, u64)>,
}

impl GcOnset {
    /// The first prefix with a GC victim, percent of the trace (None: no GC).
    pub fn first_gc_pct(&self) -> Option<u32> {
        self.prefixes.iter().find(|x| x.1 > 0).map(|x| x.0)
    }
}

/// A check of Figs. 6 and 7 evaluated at every fill of the sweep.
#[derive(Clone, Debug, Serialize)]
pub struct SweepCheck {
    pub id: String,
    /// (fill, ours as the checks table shows it, within 25% or None when not counted).
    pub by_fill: Vec<(u32, String, Option<bool>)>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub workload: Workload,
    /// The runs of Figs. 5 to 9, at the default fill.
    pub runs: Vec<Run>,
    /// Figs. 6 and 7 (strict, every abort ratio) at every fill of the sweep,
    /// the default's runs among them.
    pub sweep: Vec<Run>,
    pub gc_onset: Vec<GcOnset>,
    /// The checks of Figs. 6 and 7 at every fill.
    pub sweep_checks: Vec<SweepCheck>,
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
        let zone = super::has_zones(protocol).then_some(default_zone);
        self.run(protocol, "strict", abort_pct, zone)
    }
    /// The strict run of Figs. 6 and 7 at `fill` (the sweep's).
    pub fn swept(&self, protocol: &str, abort_pct: u32, fill: u32) -> Option<&Run> {
        self.sweep
            .iter()
            .find(|r| r.protocol == protocol && r.abort_pct == abort_pct && r.fill_pct == fill)
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
        if super::has_zones(protocol) {
            self.run(protocol, "strict", 0, Some(zone))
        } else {
            self.strict(protocol, 0, default_zone)
        }
    }
}
