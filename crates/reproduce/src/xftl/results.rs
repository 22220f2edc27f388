//! What the experiments of `reproduce xftl` measured (the JSON's
//! `figures`), and the quantities the checks, notes and tables derive from
//! them.

use super::compare::{ModeRun, Restart, WorkloadRun};
use super::params::Params;
use super::{paper, xftl};
use crate::fmt::{mean, ms};
use crate::paper::Head;
use serde::Serialize;
use txftl_protocols::SqlJournal;
use txftl_sqlite::Mode;

/// Figure 5 at one validity: every mode at every K (Table 1 is its K = 5 column).
#[derive(Clone, Debug, Serialize)]
pub struct Figure5 {
    pub validity_pct: u32,
    pub runs: Vec<ModeRun>,
}

impl Figure5 {
    pub fn run(&self, mode: Mode, k: u32) -> Option<&ModeRun> {
        self.runs.iter().find(|r| r.mode == mode && r.k == k)
    }
}

/// Restart figures of one mode (Table 5).
#[derive(Clone, Debug, Serialize)]
pub struct RestartSummary {
    pub mode: Mode,
    pub cuts: usize,
    /// SQLite's own recovery, mean over every cut, ms (device clock).
    pub sqlite_mean_ms: f64,
    /// Cuts after which SQLite had something to recover (a hot journal to
    /// roll back, WAL frames to read), and the mean over those, ms.
    pub cuts_with_recovery: usize,
    pub sqlite_mean_with_recovery_ms: f64,
    /// X-FTL: loading the X-L2P table and applying its committed entries, mean ms.
    pub xl2p_load_mean_ms: f64,
    pub fs_mount_mean_ms: f64,
    pub ftl_recovery_mean_ms: f64,
    /// What the paper's Table 5 measures in this mode: SQLite's recovery
    /// (RBJ, WAL) over the cuts that had one, the X-L2P table's (X-FTL).
    pub paper_comparable_ms: f64,
    pub all_ok: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct Table5 {
    pub runs: Vec<Restart>,
    pub summary: Vec<RestartSummary>,
}

/// One TPC-C mix in every mode (Table 4).
#[derive(Clone, Debug, Serialize)]
pub struct TpccMix {
    pub id: String,
    pub name: String,
    /// New-Order, Payment, Order-Status, Delivery, Stock-Level, percent.
    pub mix: [u32; 5],
    pub runs: Vec<WorkloadRun>,
}

impl TpccMix {
    /// Transactions per minute in `mode` (the paper's "tpmC") on device +
    /// host time (`head`'s host model; device time alone without one).
    pub fn tpm(&self, mode: Mode, head: &Head) -> f64 {
        self.runs.iter().find(|r| r.mode == mode).map_or(0.0, |r| {
            txftl_host::per_second(r.units, r.elapsed_s + head.host_s(&r.host_work)) * 60.0
        })
    }

    /// Transactions per simulated minute in `mode` on device time alone.
    pub fn device_tpm(&self, mode: Mode) -> f64 {
        self.runs
            .iter()
            .find(|r| r.mode == mode)
            .map_or(0.0, |r| r.transactions_per_sim_minute())
    }
}

/// Table 1 (K = 5, 50%) with the whole L2P table written at every barrier
/// (the Jasmine board's public firmware, `checkpoint_whole_map`), at one
/// device size: the variant beside ours, whose map pages per flush grow
/// with the capacity.
#[derive(Clone, Debug, Serialize)]
pub struct WholeMapRun {
    pub blocks_per_plane: u32,
    pub capacity_mib: u64,
    /// L2P table pages of the raw capacity (4 B an entry).
    pub l2p_pages: u64,
    pub runs: Vec<ModeRun>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Figures {
    pub figure5: Vec<Figure5>,
    /// Table 1 (K = 5, 50% validity) again with the other behaviour at a
    /// flush (`Params::map_at_flush` negated: by default without the mapping
    /// table written at every barrier, i.e. txftl's roll-forward FTL): the
    /// ablation behind the notes on flash writes.
    pub table1_ablation: Vec<ModeRun>,
    /// Table 1 with the whole map at every barrier, at half the run's
    /// device size and at its size.
    pub table1_whole_map: Vec<WholeMapRun>,
    pub table5: Table5,
    pub tpcc: Vec<TpccMix>,
    /// Table 4's run-length sweep (`Params::tpcc_longer`): the mixes of
    /// `run::LONGER_MIXES` again, on fresh devices, that many times as long.
    pub tpcc_longer: Vec<TpccMix>,
}

impl Figures {
    pub fn fig5(&self, validity: u32) -> Option<&Figure5> {
        self.figure5.iter().find(|f| f.validity_pct == validity)
    }
}

/// Whether SQLite had something to recover after this cut: RBJ a hot
/// journal (rolled back: it writes database pages back), WAL always (after a
/// crash its first open rebuilds the WAL index from the WAL's frames), X-FTL
/// never (no journal; its recovery is the FTL's X-L2P table).
pub fn sqlite_recovered(r: &Restart) -> bool {
    match r.mode.journal() {
        SqlJournal::Delete | SqlJournal::Truncate | SqlJournal::Persist | SqlJournal::Batch => r.sqlite_recovery_page_writes > 0,
        SqlJournal::Wal => true,
        SqlJournal::Off | SqlJournal::Memory => false,
    }
}

pub fn summarize(mode: Mode, runs: &[&Restart]) -> RestartSummary {
    let with: Vec<&&Restart> = runs.iter().filter(|r| sqlite_recovered(r)).collect();
    let sqlite_mean_with_recovery_ms = mean(with.iter().map(|r| ms(r.sqlite_recovery_ns)));
    let xl2p_load_mean_ms = mean(runs.iter().map(|r| ms(r.ftl_recovery.protocol_read_ns)));
    RestartSummary {
        mode,
        cuts: runs.len(),
        sqlite_mean_ms: mean(runs.iter().map(|r| ms(r.sqlite_recovery_ns))),
        cuts_with_recovery: with.len(),
        sqlite_mean_with_recovery_ms,
        xl2p_load_mean_ms,
        fs_mount_mean_ms: mean(runs.iter().map(|r| ms(r.fs_mount_ns))),
        ftl_recovery_mean_ms: mean(runs.iter().map(|r| ms(r.ftl_recovery.time_ns))),
        paper_comparable_ms: if mode == xftl() {
            xl2p_load_mean_ms
        } else {
            sqlite_mean_with_recovery_ms
        },
        all_ok: runs.iter().all(|r| r.integrity == "ok" && r.committed_state_ok),
    }
}

/// Host page writes of the workload (the aging filler excluded), as Table 1 counts them.
pub fn host_writes(r: &ModeRun) -> u64 {
    r.host.host_page_writes() - r.host.other_page_writes
}

/// Flash programs (full and partial).
pub fn programs(r: &ModeRun) -> u64 {
    r.device.flash_programs + r.device.flash_partial_programs
}

/// A run's elapsed time on device + host time, seconds (`head`'s host
/// model; device time alone without one).
pub fn elapsed(r: &ModeRun, head: &Head) -> f64 {
    r.elapsed_s + head.host_s(&r.host_work)
}

/// Mean over K of the ratio of elapsed times `slow / fast` at one validity,
/// on device + host time.
pub fn speedup(f: &Figure5, ks: &[u32], slow: Mode, fast: Mode, head: &Head) -> f64 {
    mean(
        ks.iter()
            .filter_map(|&k| Some(elapsed(f.run(slow, k)?, head) / elapsed(f.run(fast, k)?, head))),
    )
}

/// A count of our run scaled to the paper's 1,000 transactions (quick mode runs fewer).
pub fn scale_tx(v: f64, params: &Params) -> f64 {
    v * 1000.0 / params.transactions as f64
}

/// Where the flash programs of a run went, per host page write: the host's
/// pages themselves, GC copies, mapping checkpoints and superblocks, the
/// protocol's own pages (X-L2P tables). Measured, from the device counters.
pub fn programs_breakdown(r: &ModeRun) -> String {
    let h = host_writes(r).max(1) as f64;
    let d = &r.device;
    // The device's host writes include the aging filler's (none during the
    // measured phase) and the file system's: the same pages as `host_writes`.
    format!(
        "per host page write: {:.2} host programs + {:.2} GC copies + {:.2} map/superblock + {:.2} X-L2P (victims {:.0}% valid)",
        d.host_writes as f64 / h,
        d.gc_copies as f64 / h,
        (d.map_writes + d.superblock_writes) as f64 / h,
        d.protocol_meta_writes as f64 / h,
        r.gc_victim_validity_pct.unwrap_or(0.0)
    )
}

/// Flash programs per host page write of a run.
pub fn factor(r: &ModeRun) -> f64 {
    programs(r) as f64 / host_writes(r).max(1) as f64
}

/// Map and superblock pages a run wrote.
pub fn map_pages(r: &ModeRun) -> u64 {
    r.device.map_writes + r.device.superblock_writes
}

/// What the paper's Table 1 implies about its firmware's metadata writes, per
/// fsync, from its own counts: the flash writes left after its host writes
/// and its GC copies (GC runs x 64: half a 128-page block at its 50% victim
/// validity), and the pages of the blocks it erased beyond its GC victims
/// (the paper: "the block erase count includes ... the metadata blocks erased
/// by FTL"), 128 a block. Two derivations of the same quantity; they agree
/// within 20% in every mode.
pub fn paper_metadata_per_fsync(p: &paper::Table1Row) -> (f64, f64) {
    let excess = (p.flash_writes - p.total - p.gc * 64.0) / p.fsyncs;
    let erased = (p.erases - p.gc) * 128.0 / p.fsyncs;
    (excess, erased)
}
