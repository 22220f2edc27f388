//! Sec. 5.3's experiments: the record-level engine of `crates/dbms` (strict
//! 2PL on records, steal, no-force, fuzzy checkpoints) with Flag Commit's
//! extended manager on CFC_ex and AFC_ex, and with ARIES on `plain` (the
//! paper's WAL), over the `flagcommit` preset: the default point, max_c
//! swept (Fig. 15), the trace split by pages written (Fig. 18), the buffer
//! swept (Fig. 19). Fig. 16 sets the default point beside the basic
//! protocols' (`run.rs`), Fig. 17 reads its log and GC.
//!
//! The extended protocols' NAND allows a page one program and `max_c`
//! partial programs (NOP = max_c + 1): the paper varies "the maximum
//! partial programming level (max_c)" itself (sec. 5.3.1), where the
//! preset's NOP 2 is Table 2's level for the basic protocols.

use super::params::Params;
use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::Error;
use serde::Serialize;
use txftl_dbms::{run_dbms, DbmsConfig, DbmsReport, Recovery};
use txftl_ftl::{AnyDevice, FtlConfig, ProtocolOptions};
use txftl_nand::DataMode;

/// A recovery manager on a protocol, as the figures name it.
#[derive(Clone, Copy, Debug)]
pub struct Lineup {
    pub name: &'static str,
    pub label: &'static str,
    pub protocol: &'static str,
    pub recovery: Recovery,
}

/// Fig. 16's legend order.
pub const LINEUP: [Lineup; 3] = [
    Lineup {
        name: "cfc-ex",
        label: "CFC_ex",
        protocol: "cfc-ex",
        recovery: Recovery::FlagEx,
    },
    Lineup {
        name: "afc-ex",
        label: "AFC_ex",
        protocol: "afc-ex",
        recovery: Recovery::FlagEx,
    },
    Lineup {
        name: "wal",
        label: "WAL",
        protocol: "plain",
        recovery: Recovery::Aries,
    },
];

pub fn lineup(name: &str) -> &'static Lineup {
    LINEUP.iter().find(|l| l.name == name).expect("one of LINEUP")
}

/// One point of sec. 5.3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct ExPoint {
    pub max_c: u32,
    pub buffer_pages: u32,
    /// Plans writing this many distinct pages only (Fig. 18's lambda).
    pub written: (u32, u32),
}

/// Fig. 18's split: lambda <= 10 and lambda > 10.
pub const SHORT: (u32, u32) = (0, 10);
pub const LONG: (u32, u32) = (11, u32::MAX);
pub const ALL: (u32, u32) = (0, u32::MAX);

/// The log region, log pages (8 MiB of 2 KiB pages), every run of sec.
/// 5.3 alike: ARIES keeps the log from the oldest open transaction's first
/// record and from the checkpoint before the last, and among 50 clients
/// running TPC-C's long transactions (Fig. 18's lambda > 10) a checkpoint
/// takes hundreds of log pages to complete: a 1,024-page log fills.
pub const LOG_PAGES: u32 = 4096;

/// The cold fill, percent, at most `fill_pct` and as much as leaves the
/// database and the log room on a device of `have` logical pages (the
/// quick run's small device cannot hold the log at 90%).
fn cold_fill(cfg: &DbmsConfig, have: u32, fill_pct: u32) -> u32 {
    let room = (have as u64).saturating_sub(cfg.logical_pages() + cfg.log_region_pages() as u64);
    fill_pct.min((room * 100 / have as u64) as u32)
}

/// One run of sec. 5.3.
#[derive(Clone, Debug, Serialize)]
pub struct ExRun {
    pub lineup: String,
    pub point: ExPoint,
    /// The cold fill, percent (below the run's default where the device
    /// cannot hold the log beside it).
    pub fill_pct: u32,
    /// The NAND's programs a page (one, and max_c partial ones).
    pub nop: u8,
    pub committed: u64,
    pub aborted: u64,
    pub restarts: u64,
    pub restart_ratio: f64,
    pub throughput: f64,
    pub mean_execution_ms: f64,
    pub mean_commit_ms: f64,
    pub gc_s: f64,
    pub gc_runs: u64,
    pub gc_copies: u64,
    pub flash_reads: u64,
    pub flash_programs: u64,
    pub partial_programs: u64,
    pub log_records: u64,
    pub log_page_writes: u64,
    pub log_forces: u64,
    pub log_pages_read_back: u64,
    pub commit_records: u64,
    /// Versions read (`read_versions`) and versions written holding two or
    /// more transactions' pending records (the extended protocols).
    pub versions_read: u64,
    pub shared_writes: u64,
    pub max_programs_per_page: u8,
    /// The per-page program histogram from the format: entry `k - 1`, the
    /// times a page took its `k`-th program since its erase, up to the NOP.
    pub programs_per_page: Vec<u64>,
}

impl ExRun {
    pub fn gc_ms_per_commit(&self) -> f64 {
        crate::fmt::ratio(1e3 * self.gc_s, self.committed as f64)
    }

    pub fn log_pages_per_commit(&self) -> f64 {
        crate::fmt::ratio(self.log_page_writes as f64, self.committed as f64)
    }
}

/// Every point, in order: the default on each, max_c swept on the extended
/// protocols, the split, the buffer swept.
pub fn points(params: &Params) -> Vec<(&'static Lineup, ExPoint)> {
    let base = ExPoint {
        max_c: params.max_c,
        buffer_pages: params.buffer_pages,
        written: ALL,
    };
    let mut v: Vec<(&'static Lineup, ExPoint)> = LINEUP.iter().map(|l| (l, base)).collect();
    for &m in params.max_cs.iter().filter(|&&m| m != params.max_c) {
        v.extend(LINEUP[..2].iter().map(|l| (l, ExPoint { max_c: m, ..base })));
    }
    for w in [SHORT, LONG] {
        v.extend(LINEUP.iter().map(|l| (l, ExPoint { written: w, ..base })));
    }
    for &b in params.buffers.iter().filter(|&&b| b != params.buffer_pages) {
        v.extend(LINEUP.iter().map(|l| (l, ExPoint { buffer_pages: b, ..base })));
    }
    v
}

/// `l` at `point`: format (max-c on the extended protocols), fill, load,
/// warm up, measure.
pub fn run(params: &Params, l: &Lineup, point: ExPoint) -> Result<ExRun, Error> {
    let mut preset = params.preset();
    let mut opts = ProtocolOptions::new();
    if l.recovery.flag_ex() {
        preset.geometry.nop = point.max_c as u8 + 1;
        opts = opts.with("max-c", point.max_c);
    }
    let nand_cfg = nand_config(&preset, DataMode::MetaOnly);
    let ftl = FtlConfig::default();
    check_device_fits(l.protocol, &nand_cfg, &ftl, &opts, 0)?;
    let mut dev = txftl_protocols::format(l.protocol, ram(nand_cfg)?, ftl, &opts).map_err(device_error)?;
    let cfg = DbmsConfig {
        clients: params.clients,
        buffer_pages: point.buffer_pages,
        db_pages: params.db_pages,
        flash_pages_per_db_page: params.flash_pages_per_db_page,
        cold_fill_pct: params.fill_pct,
        warehouses: params.warehouses,
        abort_pct: params.abort_pct,
        transactions: params.transactions,
        warmup_transactions: params.warmup_transactions,
        seed: params.head.seed,
        recovery: l.recovery,
        max_c: point.max_c,
        pages_written: point.written,
        log_pages: LOG_PAGES,
        ..DbmsConfig::default()
    };
    let cfg = DbmsConfig {
        cold_fill_pct: cold_fill(&cfg, dev.info().logical_pages, params.fill_pct),
        ..cfg
    };
    let fill_pct = cfg.cold_fill_pct;
    let what = || {
        format!(
            "{} at max_c {}, buffer {}, written {:?}",
            l.label, point.max_c, point.buffer_pages, point.written
        )
    };
    let report = run_dbms(&mut *dev, cfg).map_err(|e| Error::Failed(format!("{}: {e}", what())))?;
    Ok(ExRun {
        fill_pct,
        ..to_run(l, point, &report, &*dev)
    })
}

fn to_run(l: &Lineup, point: ExPoint, r: &DbmsReport, dev: &dyn AnyDevice) -> ExRun {
    let d = &r.device;
    let log = r.log.unwrap_or_default();
    let nand = dev.nand();
    let nop = nand.geometry().nop;
    let hist = &nand.stats().pages_reaching[..(nop as usize).clamp(1, txftl_nand::PROGRAMS_COUNTED)];
    ExRun {
        lineup: l.name.into(),
        point,
        fill_pct: 0,
        nop,
        committed: r.committed,
        aborted: r.aborted,
        restarts: r.restarts,
        restart_ratio: r.restart_ratio,
        throughput: r.throughput_tx_per_s,
        mean_execution_ms: r.mean_execution_ns / 1e6,
        mean_commit_ms: r.mean_commit_response_ns / 1e6,
        gc_s: d.gc_busy_ns as f64 / 1e9,
        gc_runs: d.gc_runs,
        gc_copies: d.gc_copies,
        flash_reads: d.flash_reads,
        flash_programs: d.flash_programs,
        partial_programs: d.flash_partial_programs,
        log_records: log.records,
        log_page_writes: log.page_writes,
        log_forces: log.forces,
        log_pages_read_back: log.page_reads,
        commit_records: log.commit_records,
        versions_read: d.protocol.get("fcx_versions_read"),
        shared_writes: d.protocol.get("fcx_shared_writes"),
        max_programs_per_page: hist.iter().rposition(|&n| n > 0).map_or(0, |k| k as u8 + 1),
        programs_per_page: hist.to_vec(),
    }
}

/// Every point of `points`, on every core ([`crate::parallel::map`]).
pub fn run_all(params: &Params, points: &[(&'static Lineup, ExPoint)], progress: &crate::progress::Progress) -> Result<Vec<ExRun>, Error> {
    let say = |&(l, point): &(&'static Lineup, ExPoint)| {
        format!(
            "sec. 5.3, {}: max_c {}, buffer {} pages, pages written {}",
            l.label,
            point.max_c,
            point.buffer_pages,
            super::ex_checks::written_label(point.written)
        )
    };
    crate::parallel::map(points, progress, say, |&(l, point)| run(params, l, point))
}
