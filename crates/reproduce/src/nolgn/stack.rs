//! The experiments' stacks: a fresh `femu` device of one of the three
//! systems, full data (SQLite reads its pages back), preconditioned with
//! random 4 KiB writes before the file system is made on it, then the
//! file system and SQLite's VFS; and the counters at one moment.
//!
//! The preconditioning writes go to the device, not through the file
//! system: they stand for the paper's "4 million 4 KB write operations on
//! the SSD" before each test (and Fig. 11's "random overwrite iterations").
//! The file system never trims, so they stay valid data the FTL's GC moves
//! until the file system's own writes land on their logical pages.

use super::params::Params;
use super::System;
use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::Error;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::FtlConfig;
use txftl_nand::DataMode;
use txftl_protocols::ProtocolOptions;
use txftl_sqlite::{Snapshot, Stack, Synchronous};

/// Stream of the seed the preconditioning's logical pages are drawn from.
const STREAM_PRECONDITION: u64 = 7;

/// How a device is aged before the file system is made on it.
#[derive(Clone, Copy, Debug)]
pub enum Precondition {
    /// As many writes as the device has logical pages (the paper's 4
    /// million on its 16 GB), each to a page drawn uniformly at random:
    /// about 63% of the pages hold data after them.
    DeviceWorth,
    /// Random writes until this share of the logical pages, percent, holds data.
    FillPct(u32),
}

/// The stack's counters now ([`Stack::snapshot`]).
pub fn snap(stack: &Stack) -> Result<Snapshot, Error> {
    stack.snapshot().map_err(Error::failed)
}

/// A built stack: the system's device, aged, with the file system and VFS.
pub struct Built {
    pub stack: Stack,
    /// Preconditioning writes sent, and the logical pages holding data after them.
    pub writes: u64,
    pub filled_pages: u64,
    pub logical_pages: u32,
}

/// A fresh device of `system` on the run's preset, aged by `pre`, with the
/// file system and the VFS; connections open at `sync`.
pub fn build(params: &Params, system: System, pre: Precondition, sync: Synchronous) -> Result<Built, Error> {
    let p = params.preset();
    // Metadata-only: the aged pages carry no data (the array stores none
    // for them, so the paper's 16 GB fits), while every page the file
    // system and SQLite write carries its bytes, which the array keeps and
    // GC copies (`DataMode::MetaOnly`).
    let nand_cfg = nand_config(&p, DataMode::MetaOnly);
    let ftl = FtlConfig::default();
    let opts = ProtocolOptions::default();
    let mode = system.mode()?;
    check_device_fits(mode.protocol(), &nand_cfg, &ftl, &opts, 0)?;
    let mut dev = txftl_protocols::format(mode.protocol(), ram(nand_cfg)?, ftl, &opts).map_err(device_error)?;
    let logical = dev.info().logical_pages;
    let mut written = vec![false; logical as usize];
    let (mut writes, mut filled) = (0u64, 0u64);
    // Writes at most, and logical pages holding data at most.
    let (limit, target) = match pre {
        Precondition::DeviceWorth => (logical as u64, u64::MAX),
        Precondition::FillPct(pct) => (u64::MAX, logical as u64 * pct as u64 / 100),
    };
    let mut rng = ChaCha8Rng::seed_from_u64(params.head.seed);
    rng.set_stream(STREAM_PRECONDITION);
    while writes < limit && filled < target {
        let lpn = rng.gen_range(0..logical);
        dev.write(lpn, &[])
            .map_err(|e| Error::Failed(format!("{}: precondition: {e}", system.label())))?;
        writes += 1;
        if !written[lpn as usize] {
            written[lpn as usize] = true;
            filled += 1;
        }
    }
    dev.flush()
        .map_err(|e| Error::Failed(format!("{}: precondition: {e}", system.label())))?;
    let mut stack = Stack::format(dev, mode).map_err(|e| Error::Failed(format!("{}: {e}", system.label())))?;
    stack.synchronous = sync;
    stack
        .with_fs_mut(|fs| fs.set_read_cache(params.read_cache_pages))
        .map_err(Error::failed)?
        .map_err(Error::failed)?;
    Ok(Built {
        stack,
        writes,
        filled_pages: filled,
        logical_pages: logical,
    })
}

/// Why the stack's last VFS call failed, for an error message.
pub fn why(stack: &Stack) -> String {
    stack.last_error().map(|e| format!(" ({e})")).unwrap_or_default()
}
