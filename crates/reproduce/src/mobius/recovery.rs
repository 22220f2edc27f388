//! Fig. 11: recovery time against the scanning zone (sec. V-B). The x-axis
//! is the data written since the last persistence point: a fresh device
//! (the format's checkpoint), then `zone` bytes of 8-page writes at random
//! logical pages, then a power cut, then the mount's recovery on the device
//! clock. No checkpoint of the framework's interval falls in the writes
//! (it is set past them), so each protocol's own rule decides what its
//! recovery reads:
//!
//! - LightTx scans its zone (`zone-blocks` set to the zone's size), with
//!   summary pages as its paper has them (sec. IV-D): a block filled in the
//!   zone by its first page and its summary page, an open one page by page
//!   (the variant `lighttx-no-summary-pages` reads every page);
//! - DFTL scans the whole device (`scan-recovery=1`: every page of every
//!   block in use), as the paper's DFTL must (sec. III-F: "Whole SSD
//!   scanning is needed"); beside it, the variant `dftl-checkpoint` rolls
//!   forward only the blocks written since its last checkpoint (its cache's
//!   write-backs do not persist the directory; an eviction that finds the
//!   checkpoint ring full takes one), the framework's recovery;
//! - Möbius reads its active ALA (merged every `active-ala` inodes, 12 MB
//!   by default) and probes its allocation window: the zone's size does not
//!   set what it reads.
//!
//! Transactions are buffered static ones on Möbius (one inode each), of 8
//! pages on LightTx; DFTL has no transactions: 8 plain writes.

use super::params::Params;
use super::results::RecoveryPoint;
use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::Error;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::DataMode;
use txftl_protocols::{AnyDevice, ProtocolOptions};

/// Pages per transaction (or per group of plain writes on DFTL).
pub const TX_PAGES: u32 = 8;

/// The runs of Fig. 11, in the paper's legend order, then our variant, and
/// their names.
pub const PROTOCOLS: [(&str, &str); 5] = [
    ("mobius", "Möbius"),
    ("lighttx", "LightTx"),
    ("dftl", "DFTL"),
    ("dftl-checkpoint", "DFTL, checkpoint and roll-forward (variant)"),
    ("lighttx-no-summary-pages", "LightTx, no summary pages (variant)"),
];

/// The protocol a run of [`PROTOCOLS`] formats.
fn protocol_of(key: &str) -> &str {
    if key.starts_with("dftl") {
        "dftl"
    } else if key.starts_with("lighttx") {
        "lighttx"
    } else {
        key
    }
}

fn options(params: &Params, key: &str, zone_bytes: u64) -> ProtocolOptions {
    let block = params.recovery_block_bytes();
    match key {
        "lighttx" => super::protocol_options("lighttx").with("zone-blocks", zone_bytes.div_ceil(block).max(1)),
        "lighttx-no-summary-pages" => ProtocolOptions::new().with("zone-blocks", zone_bytes.div_ceil(block).max(1)),
        "dftl" => ProtocolOptions::new().with("scan-recovery", 1),
        _ => ProtocolOptions::new(),
    }
}

/// `zone_bytes` of writes on a fresh device of `protocol`.
fn write_zone(dev: &mut dyn AnyDevice, protocol: &str, zone_bytes: u64, seed: u64) -> Result<(), DeviceError> {
    let info = dev.info();
    let pages = zone_bytes / info.page_size as u64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut tid = 1;
    let mut written = 0;
    while written < pages {
        let lpns: Vec<u32> = (0..TX_PAGES).map(|_| rng.gen_range(0..info.logical_pages)).collect();
        if protocol == "dftl" {
            for &l in &lpns {
                dev.write(l, &[])?;
            }
        } else {
            dev.begin(tid)?;
            for &l in &lpns {
                dev.write_tx(tid, l, &[])?;
            }
            dev.commit(tid)?;
            tid += 1;
        }
        written += TX_PAGES as u64;
    }
    Ok(())
}

/// One point: run `key` of [`PROTOCOLS`] after `zone_bytes` of writes and a
/// power cut.
pub fn run(params: &Params, key: &str, zone_bytes: u64) -> Result<RecoveryPoint, Error> {
    let protocol = protocol_of(key);
    let nand_cfg = nand_config(&params.recovery_preset(), DataMode::MetaOnly);
    let ftl = FtlConfig {
        // No checkpoint of the framework's interval inside the writes.
        checkpoint_every_pages: 4 * (zone_bytes / params.page_bytes()).max(1),
        ..FtlConfig::default()
    };
    let opts = options(params, key, zone_bytes);
    check_device_fits(protocol, &nand_cfg, &ftl, &opts, 0)?;
    let mut dev = txftl_protocols::format(protocol, ram(nand_cfg)?, ftl.clone(), &opts).map_err(device_error)?;
    write_zone(&mut *dev, protocol, zone_bytes, params.head.seed)
        .map_err(|e| Error::Failed(format!("Fig. 11: {protocol}, {zone_bytes} bytes of writes: {e}")))?;
    let before = dev.stats();
    let mut nand = dev.into_nand();
    nand.power_off();
    nand.power_on();
    let dev = txftl_protocols::mount(protocol, nand, ftl, &opts)
        .map_err(|e| Error::Failed(format!("Fig. 11: {protocol}: recovery after the power cut: {e}")))?;
    let r = dev
        .recovery_report()
        .ok_or_else(|| Error::Failed(format!("Fig. 11: {protocol}: the mount gave no recovery report")))?;
    Ok(RecoveryPoint {
        protocol: key.into(),
        zone_mib: (zone_bytes >> 20) as u32,
        recovery_ms: r.time_ns as f64 / 1e6,
        load_ms: r.load_ns as f64 / 1e6,
        log_ms: r.protocol_read_ns as f64 / 1e6,
        scan_ms: r.scan_ns as f64 / 1e6,
        seal_ms: r.seal_ns as f64 / 1e6,
        other_ms: r.time_ns.saturating_sub(r.load_ns + r.protocol_read_ns + r.scan_ns + r.seal_ns) as f64 / 1e6,
        pages_read: r.flash_reads,
        checkpoints_before: before.checkpoints,
    })
}
