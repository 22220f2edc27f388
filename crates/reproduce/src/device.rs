//! Building the experiments' devices: refusing, before anything is
//! allocated, a device the machine has no memory for (with the message a
//! user reads: a bad argument, not a failed run), and describing a preset.
//! The CLI's commands use the same checks.

use crate::Error;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, Nand, NandConfig, NandError, Preset, ViolationPolicy};
use txftl_protocols::{AnyDevice, ProtocolOptions};

/// The preset's array with `data`; a rule violation is an FTL bug, reported
/// as a typed error, not a panic.
pub fn nand_config(p: &Preset, data: DataMode) -> NandConfig {
    p.config(data, ViolationPolicy::Error)
}

/// A RAM array; a device too large for the machine is refused with its size.
pub fn ram(cfg: NandConfig) -> Result<Nand, Error> {
    let hint = match cfg.data_mode {
        DataMode::Full => ", or --data meta (stores no page data)",
        DataMode::MetaOnly => "",
    };
    Nand::try_new(cfg).map_err(|e| match e {
        NandError::Memory(m) => Error::Usage(format!(
            "{m}; choose a smaller device (--blocks-per-plane, --preset or device file){hint}"
        )),
        e => Error::Usage(e.to_string()),
    })
}

/// Refuses a new device whose flash array and FTL tables (and, for a run on
/// full data, the workload's reference model: `model_bytes` per logical page)
/// would not fit in the memory the machine has, saying what it needs, before
/// anything is allocated.
pub fn check_device_fits(
    protocol: &str,
    nand: &NandConfig,
    cfg: &FtlConfig,
    opts: &ProtocolOptions,
    model_bytes: u64,
) -> Result<(), Error> {
    let need = txftl_protocols::memory_needed(protocol, nand, cfg, opts).map_err(|e| Error::Usage(e.to_string()))?;
    let model = model_bytes * need.ftl.logical_pages as u64;
    let needed = need.total() + model;
    let hint = match nand.data_mode {
        DataMode::Full => ", or --data meta (stores no page data)",
        DataMode::MetaOnly => "",
    };
    match txftl_nand::available_memory() {
        Some(available) if needed > available => {
            let model = if model > 0 {
                format!(", the workload's reference model {}", txftl_nand::gib(model))
            } else {
                String::new()
            };
            Err(Error::Usage(format!(
                "the device needs {} of memory ({need}{model}) but only {} is available \
                 (MemAvailable, or TXFTL_MEMORY_AVAILABLE if lower); choose a smaller --blocks-per-plane or preset{hint}",
                txftl_nand::gib(needed),
                txftl_nand::gib(available)
            )))
        }
        _ => Ok(()),
    }
}

/// A fresh device of `protocol` with `opts` on preset `p`, metadata only,
/// preconditioned: `fill_pct`% of its logical pages written once,
/// sequentially, without transactions, then flushed. Refused before
/// anything is allocated if the machine has no memory for it.
pub fn preconditioned(protocol: &str, p: &Preset, opts: &ProtocolOptions, fill_pct: u32) -> Result<Box<dyn AnyDevice>, Error> {
    let nand_cfg = nand_config(p, DataMode::MetaOnly);
    let ftl = FtlConfig::default();
    check_device_fits(protocol, &nand_cfg, &ftl, opts, 0)?;
    let mut dev = txftl_protocols::format(protocol, ram(nand_cfg)?, ftl, opts).map_err(device_error)?;
    let fill = (dev.info().logical_pages as u64 * fill_pct as u64 / 100) as u32;
    for lpn in 0..fill {
        dev.write(lpn, &[])
            .map_err(|e| Error::Failed(format!("{protocol}: precondition: {e}")))?;
    }
    dev.flush().map_err(|e| Error::Failed(format!("{protocol}: precondition: {e}")))?;
    Ok(dev)
}

/// What the user reads when building a device failed: a device too large
/// for memory, or without what the protocol needs of the NAND, is a bad
/// argument, anything else a failed run.
pub fn device_error(e: txftl_ftl::DeviceError) -> Error {
    match e {
        txftl_ftl::DeviceError::Memory(m) => Error::Usage(format!("{m}; choose a smaller --blocks-per-plane or preset")),
        // The user chose a device the protocol cannot commit on.
        e @ txftl_ftl::DeviceError::NandUnsuitable { .. } => Error::Usage(e.to_string()),
        e => Error::Failed(e.to_string()),
    }
}

/// Refuses memory a run-time allocation (the SQLite stacks build their own
/// devices) would not find, with the same message as [`ram`].
pub fn check_fits(cfg: &NandConfig) -> Result<(), Error> {
    let needed = Nand::memory_needed(cfg);
    match txftl_nand::available_memory() {
        Some(available) if needed > available => Err(Error::Usage(format!(
            "{}; choose a smaller device (--blocks-per-plane, --preset or device file)",
            txftl_nand::MemoryError::TooLarge { needed, available }
        ))),
        _ => Ok(()),
    }
}

/// A preset in one line: name, cell, raw capacity and geometry.
pub fn describe(p: &Preset) -> String {
    let g = &p.geometry;
    let raw = g.capacity_bytes();
    let raw = if raw >= 1 << 20 {
        format!("{} MiB", raw >> 20)
    } else {
        format!("{} KiB", raw >> 10)
    };
    format!(
        "{} ({}, {raw} raw, {} ch x {} dies x {} planes x {} blocks x {} pages of {} B)",
        p.name, g.cell, g.channels, g.dies_per_channel, g.planes_per_die, g.blocks_per_plane, g.pages_per_block, g.page_size
    )
}
