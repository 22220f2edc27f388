//! The experiments: the DBMS of `crates/dbms` (50 clients, strict 2PL, an
//! LRU buffer, force at commit) on each protocol's device, one run per
//! point; the mount after a power cut at the end of a run (Fig. 13b); the
//! memory of each protocol's tables at 32 GB (Table 3); and one aborted
//! transaction's programs.

use super::params::Params;
use super::results::{Memory, Recovery, Run};
use super::{Protocol, PROTOCOLS};
use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::Error;
use txftl_dbms::{Dbms, DbmsConfig, DbmsReport};
use txftl_ftl::{AnyDevice, FtlConfig, ProtocolOptions};
use txftl_nand::DataMode;

/// One point of the experiments.
#[derive(Clone, Copy, Debug)]
pub struct Point {
    pub fill_pct: u32,
    pub abort_pct: u32,
    /// Page-based flags (`block-flags=0`) instead of the default block-based.
    pub page_flags: bool,
    /// Summary pages on (`summary-pages=1`), and after the run a power cut
    /// and the mount (Fig. 13b).
    pub recover: bool,
}

/// The protocol's options at `point`; summary pages only where the
/// geometry holds them (BPCC's and SCC's 32 protocol bytes a record do not
/// fit a 2 KiB summary page: they scan every spare instead).
fn options(p: &Protocol, nand: &txftl_nand::NandConfig, point: Point) -> ProtocolOptions {
    let mut o = ProtocolOptions::new();
    if point.page_flags {
        o = o.with("block-flags", 0);
    }
    if point.recover {
        let with = o.clone().with("summary-pages", 1);
        if txftl_protocols::memory_needed(p.name, nand, &FtlConfig::default(), &with).is_ok() {
            o = with;
        }
    }
    o
}

/// The DBMS's configuration at `point`, for `protocol`.
pub fn dbms_config(params: &Params, p: &Protocol, point: Point) -> DbmsConfig {
    DbmsConfig {
        clients: params.clients,
        buffer_pages: params.buffer_pages,
        pinned_frames_per_tx: p.pinned_frames(),
        db_pages: params.db_pages,
        flash_pages_per_db_page: params.flash_pages_per_db_page,
        cold_fill_pct: point.fill_pct,
        warehouses: params.warehouses,
        abort_pct: point.abort_pct,
        transactions: params.transactions,
        warmup_transactions: params.warmup_transactions,
        seed: params.head.seed,
        ..DbmsConfig::default()
    }
}

/// `protocol` at `point`: format, fill, load, warm up, measure; then, if
/// asked, a power cut and the mount.
pub fn run(params: &Params, p: &Protocol, point: Point) -> Result<Run, Error> {
    let nand_cfg = nand_config(&params.preset(), DataMode::MetaOnly);
    let opts = options(p, &nand_cfg, point);
    let ftl = FtlConfig::default();
    check_device_fits(p.name, &nand_cfg, &ftl, &opts, 0)?;
    let mut dev = txftl_protocols::format(p.name, ram(nand_cfg)?, ftl.clone(), &opts).map_err(device_error)?;
    let what = || format!("{} at fill {}%, delta {}%", p.label, point.fill_pct, point.abort_pct);
    let report = {
        let mut db = Dbms::new(&mut *dev, dbms_config(params, p, point)).map_err(|e| Error::Failed(format!("{}: {e}", what())))?;
        db.load()
            .and_then(|_| db.run())
            .map_err(|e| Error::Failed(format!("{}: {e}", what())))?
    };
    let programs_per_page = program_histogram(&*dev);
    let recovery = if point.recover {
        Some(recover(dev, p, ftl, &opts).map_err(|e| Error::Failed(format!("{}: recovery: {e}", what())))?)
    } else {
        None
    };
    let summary_pages = opts.contains("summary-pages");
    Ok(to_run(p, point, &report, (programs_per_page, summary_pages), recovery))
}

fn to_run(
    p: &Protocol,
    point: Point,
    r: &DbmsReport,
    (programs_per_page, summary_pages): (Vec<u64>, bool),
    recovery: Option<Recovery>,
) -> Run {
    let d = &r.device;
    Run {
        protocol: p.name.into(),
        page_flags: point.page_flags,
        summary_pages,
        fill_pct: point.fill_pct,
        abort_pct: point.abort_pct,
        committed: r.committed,
        aborted: r.aborted,
        restarts: r.restarts,
        throughput: r.throughput_tx_per_s,
        mean_execution_ms: r.mean_execution_ns / 1e6,
        mean_commit_ms: r.mean_commit_response_ns / 1e6,
        sim_s: r.sim_ns as f64 / 1e9,
        device_commits: d.commits,
        host_writes: d.host_writes,
        flash_programs: d.flash_programs,
        partial_programs: d.flash_partial_programs,
        flash_reads: d.flash_reads,
        flash_erases: d.flash_erases,
        flash_busy_s: d.flash_busy_ns as f64 / 1e9,
        gc_s: d.gc_busy_ns as f64 / 1e9,
        gc_runs: d.gc_runs,
        gc_copies: d.gc_copies,
        gc_plan_reads: d.gc_plan_reads,
        gc_flag_programs: d.gc_flag_programs,
        blocks_borrowed: d.blocks_borrowed,
        max_programs_per_page: programs_per_page.iter().rposition(|&n| n > 0).map_or(0, |k| k as u8 + 1),
        programs_per_page,
        recovery,
    }
}

/// The per-page program histogram since the format, up to the NOP (the
/// NAND counts every page's programs as they happen, erased pages' too).
fn program_histogram(dev: &dyn AnyDevice) -> Vec<u64> {
    let nand = dev.nand();
    let nop = (nand.geometry().nop as usize).clamp(1, txftl_nand::PROGRAMS_COUNTED);
    nand.stats().pages_reaching[..nop].to_vec()
}

/// A power cut (nothing in flight: the run has ended), then the mount:
/// what its recovery read, on the device clock.
fn recover(dev: Box<dyn AnyDevice>, p: &Protocol, ftl: FtlConfig, opts: &ProtocolOptions) -> Result<Recovery, txftl_ftl::DeviceError> {
    let mut nand = dev.into_nand();
    nand.power_off();
    nand.power_on();
    let dev = txftl_protocols::mount(p.name, nand, ftl, opts)?;
    let r = dev
        .recovery_report()
        .ok_or_else(|| txftl_ftl::DeviceError::Corrupted("the mount gave no recovery report".into()))?;
    let kinds = r.pages_scanned + r.protocol_pages_scanned + r.spare_rereads;
    Ok(Recovery {
        time_ms: r.time_ns as f64 / 1e6,
        flash_reads: r.flash_reads,
        pages_scanned: r.pages_scanned,
        protocol_pages_scanned: r.protocol_pages_scanned,
        summary_pages_read: r.summary_pages_read,
        summary_spare_reads: r.summary_spare_reads,
        spare_rereads: r.spare_rereads,
        other_reads: r.flash_reads.saturating_sub(kinds),
    })
}

/// Table 3: each protocol's DRAM tables on the preset at 32 GB, estimated
/// from the geometry (nothing allocated).
pub fn memory(params: &Params) -> Result<Vec<Memory>, Error> {
    let nand_cfg = nand_config(&params.table3_preset(), DataMode::MetaOnly);
    PROTOCOLS
        .iter()
        .map(|p| {
            let m = txftl_protocols::memory_needed(p.name, &nand_cfg, &FtlConfig::default(), &ProtocolOptions::new())
                .map_err(|e| Error::Failed(format!("Table 3: {e}")))?;
            Ok(Memory {
                protocol: p.name.into(),
                mb: m.ftl.tables as f64 / (1u64 << 20) as f64,
            })
        })
        .collect()
}

/// Pages of the aborted transaction of [`abort_programs`].
const ABORTED_PAGES: u32 = 4;

/// The flash programs (whole and partial) one abort issues: a transaction
/// of a few pages on a fresh device, then its abort.
pub fn abort_programs(params: &Params, p: &Protocol) -> Result<u64, Error> {
    let nand_cfg = nand_config(&params.preset(), DataMode::MetaOnly);
    let fail = |e: txftl_ftl::DeviceError| Error::Failed(format!("{}: an aborted transaction: {e}", p.label));
    let mut dev = txftl_protocols::format(p.name, ram(nand_cfg)?, FtlConfig::default(), &ProtocolOptions::new()).map_err(device_error)?;
    dev.begin(1).map_err(fail)?;
    for lpn in 0..ABORTED_PAGES {
        dev.write_tx(1, lpn, &[]).map_err(fail)?;
    }
    let before = dev.stats();
    dev.abort(1).map_err(fail)?;
    let after = dev.stats();
    Ok((after.flash_programs + after.flash_partial_programs) - (before.flash_programs + before.flash_partial_programs))
}
