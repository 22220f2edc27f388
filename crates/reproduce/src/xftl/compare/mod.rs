//! The X-FTL paper's experiments on real SQLite (`txftl compare`, and
//! `txftl reproduce xftl`): the synthetic workload in every mode on identical
//! devices, measured as the paper's Table 1 (host and device I/O), Figure 5
//! (elapsed time per K) and Table 5 (restart time after a power cut), and
//! other workloads (TPC-C for Table 4, YCSB, sqlite-bench) the same way.
//!
//! Each run: a fresh device of the preset (full data), the file system on it,
//! aged with a filler file (sized so that greedy GC finds about the target share
//! of valid pages in its victims: utilization u = (v - 1) / ln v from the LFS
//! cleaning analysis, then one random overwrite of the filler), the `partsupp`
//! table loaded, counters reset, then the transactions. The victim validity GC
//! actually saw is measured and reported.

mod partsupp;
mod restart;
mod workload;

pub use partsupp::{run_mode, ModeRun};
pub use restart::{restart, restart_points, Restart};
pub use workload::{run_workload, Workload, WorkloadRun};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_fs::FileClass;
use txftl_ftl::FtlConfig;
use txftl_nand::{Nand, NandConfig};
use txftl_protocols::ProtocolOptions;
use txftl_sqlite::{Mode, Stack, StackError};

/// The device, the workload's size and the aging of every run.
#[derive(Clone, Debug)]
pub struct CompareSpec {
    pub nand: NandConfig,
    pub ftl: FtlConfig,
    /// Options of the modes' protocols: each mode's device takes those its
    /// protocol's entry declares.
    pub opts: ProtocolOptions,
    pub rows: u32,
    pub transactions: u32,
    pub seed: u64,
    /// Target share of valid pages in GC victims, percent (0: no aging).
    pub validity_pct: u32,
    /// The host's clean-page cache, pages (0: none; the file system's
    /// `set_read_cache`).
    pub read_cache_pages: usize,
}

/// The line that says which FTL behaviour at a flush a run had.
pub fn map_at_flush_line(on: bool) -> &'static str {
    if on {
        "FTL: mapping table written at every flush (the X-FTL paper's OpenSSD firmware, its sec. 6.3.4; --map-at-flush off: roll-forward instead)"
    } else {
        "FTL: a flush is made durable by roll-forward over the spare areas, checkpoints by program count (--map-at-flush off; the paper's firmware writes its table at every flush)"
    }
}

/// A fresh device of the mode's protocol with the file system on it.
fn device(spec: &CompareSpec, mode: Mode) -> Result<Stack, StackError> {
    let nand = Nand::new(spec.nand).map_err(|e| StackError::Other(e.to_string()))?;
    let dev = txftl_protocols::format(mode.protocol(), nand, spec.ftl.clone(), &spec.opts.for_entry(mode.entry()))
        .map_err(|e| StackError::Other(e.to_string()))?;
    let stack = Stack::format(dev, mode)?;
    stack.with_fs_mut(|fs| fs.set_read_cache(spec.read_cache_pages))??;
    Ok(stack)
}

/// Utilization at which greedy GC under uniform random writes finds a share
/// `v` of valid pages in victims (Rosenblum & Ousterhout's LFS analysis).
pub fn utilization_for_validity(v: f64) -> f64 {
    if v <= 0.0 {
        return 0.0;
    }
    (v - 1.0) / v.ln()
}

/// Fills and scrambles a filler file so GC works at the target victim validity.
fn age(stack: &Stack, spec: &CompareSpec) -> Result<(), StackError> {
    if spec.validity_pct == 0 {
        return Ok(());
    }
    let u = utilization_for_validity(spec.validity_pct as f64 / 100.0);
    stack.with_fs_mut(|fs| -> Result<(), StackError> {
        let ps = fs.page_size();
        let info = fs.device().info();
        // Physical data pages: logical capacity plus the over-provisioned share.
        let physical =
            info.logical_pages as f64 / (1.0 - spec.ftl.overprovision_pct.unwrap_or(txftl_ftl::DEFAULT_OVERPROVISION_PCT) as f64 / 100.0);
        let db_pages = (spec.rows as f64 * 230.0 / ps as f64) * 1.3;
        let target = ((u * physical) - db_pages).max(0.0).min(info.logical_pages as f64 * 0.95) as u64;
        let filler = fs.create("aging.bin", FileClass::Other)?;
        let page = vec![0xA5u8; ps];
        for p in 0..target {
            fs.write(None, filler, p * ps as u64, &page)?;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed ^ 0xA6E);
        for _ in 0..target {
            let p = rng.gen_range(0..target.max(1));
            fs.write(None, filler, p * ps as u64, &page)?;
        }
        fs.fsync(None, filler)?;
        Ok(())
    })??;
    Ok(())
}

fn reset_counters(stack: &Stack) -> Result<u64, StackError> {
    stack.with_fs_mut(|fs| {
        fs.reset_stats();
        fs.device_mut().reset_stats();
        fs.device().now_ns()
    })
}

/// A fresh, aged device with `db` opened on it: the stack, the connection
/// and the database's page size (the file system's page).
fn open_aged(spec: &CompareSpec, mode: Mode, db: &str) -> Result<(Stack, rusqlite::Connection, usize), StackError> {
    let stack = device(spec, mode)?;
    age(&stack, spec)?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size())?;
    let conn = stack.open(db, page_size)?;
    Ok((stack, conn, page_size))
}
