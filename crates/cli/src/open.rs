//! Opening devices for the commands: image files (created or opened, locked,
//! synced as `--sync` says) and RAM arrays, with the errors a user should see.

use crate::{CliError, DeviceArgs};
use clap::Args;
use std::path::Path;
use txftl_ftl::FtlConfig;
use txftl_nand::{ImageError, ImageSync, Nand, NandConfig, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

/// When the image file reaches the host's disk (commands that open an image).
#[derive(Args, Clone, Debug)]
pub struct SyncArgs {
    /// Sync the image file to the host's disk at close only (default), at every
    /// device flush and commit too (flush), or after every flash program and
    /// erase (always). A host crash loses what was not synced.
    #[arg(long, value_parser = ImageSync::NAMES)]
    pub sync: Option<String>,
}

impl SyncArgs {
    pub fn mode(&self) -> ImageSync {
        self.sync.as_deref().and_then(ImageSync::parse).unwrap_or_default()
    }
}

/// What the user reads for an image that cannot be opened or created.
fn image_error(path: &Path, e: ImageError) -> CliError {
    match e {
        // Already names the image and its holder.
        ImageError::InUse { .. } => CliError::Failed(e.to_string()),
        // The arguments asked for a device this machine cannot hold.
        ImageError::Memory(m) => CliError::Usage(format!(
            "{}: {m}; choose a smaller device (--blocks-per-plane, --preset or device file)",
            path.display()
        )),
        e => CliError::Failed(format!("{}: {e}", path.display())),
    }
}

/// Opens an existing image (locked while the NAND lives).
pub fn open_image(path: &Path, sync: ImageSync) -> Result<Nand, CliError> {
    let mut nand = Nand::open_image(path, ViolationPolicy::Error).map_err(|e| match e {
        // The image exists: too large for this machine is a failed run, not bad arguments.
        ImageError::Memory(m) => CliError::Failed(format!("{}: {m}", path.display())),
        e => image_error(path, e),
    })?;
    nand.set_image_sync(sync);
    Ok(nand)
}

/// Creates a new image (refusing an existing file), locked while the NAND lives.
/// A host log left at its path by an image removed since is removed too: it
/// belonged to that one.
pub fn create_image(path: &Path, cfg: NandConfig, sync: ImageSync) -> Result<Nand, CliError> {
    let mut nand = Nand::create_image(path, cfg).map_err(|e| image_error(path, e))?;
    let log = txftl_fs::host_log_path(path);
    if log.exists() {
        std::fs::remove_file(&log).map_err(|e| CliError::Failed(format!("{}: {e}", log.display())))?;
    }
    nand.set_image_sync(sync);
    Ok(nand)
}

/// Refuses to write to an image whose host log holds changes a process left
/// (the file system's, replayed by the next file-system mount): raw writes
/// under it would be overwritten by that replay, or break it.
pub fn refuse_pending_host_log(path: &Path) -> Result<(), CliError> {
    match txftl_fs::pending_host_log(path) {
        Some(bytes) => Err(CliError::Failed(format!(
            "{}: its host log ({}, {bytes} bytes) holds file-system changes a process left; \
             load the image with the SQLite extension once to replay them, or remove that file to discard them",
            path.display(),
            txftl_fs::host_log_path(path).display()
        ))),
        None => Ok(()),
    }
}

// The memory checks are the `txftl-reproduce` library's (its experiments
// build devices too), with the same messages; here they return the CLI's error.

/// A RAM array; a device too large for the machine is refused with its size.
pub fn ram(cfg: NandConfig) -> Result<Nand, CliError> {
    Ok(txftl_reproduce::device::ram(cfg)?)
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
) -> Result<(), CliError> {
    Ok(txftl_reproduce::device::check_device_fits(protocol, nand, cfg, opts, model_bytes)?)
}

/// What the user reads when building a device failed: a device too large
/// for memory is a bad argument (exit 2), anything else a failed run.
pub fn device_error(e: txftl_ftl::DeviceError) -> CliError {
    txftl_reproduce::device::device_error(e).into()
}

/// Refuses memory a run-time allocation (the SQLite commands build their own
/// devices) would not find, with the same message as [`ram`].
pub fn check_fits(cfg: &NandConfig) -> Result<(), CliError> {
    Ok(txftl_reproduce::device::check_fits(cfg)?)
}

/// An existing image fixes the geometry, the endurance, the data mode and
/// (formatted into its superblock) the over-provisioning and the checkpoint stripe:
/// options that would set them are refused instead of ignored.
pub fn refuse_options_fixed_by_image(device: &DeviceArgs, data: Option<&str>) -> Result<(), CliError> {
    let given = [
        ("--preset", device.preset.is_some()),
        ("--config", device.config.is_some()),
        ("--mqsim-config", device.mqsim_config.is_some()),
        ("--blocks-per-plane", device.blocks_per_plane.is_some()),
        ("--endurance", device.endurance.is_some()),
        ("--overprovision", device.overprovision.is_some()),
        ("--checkpoint-stripe", device.checkpoint_stripe.is_some()),
        ("--data", data.is_some()),
    ];
    let named: Vec<&str> = given.iter().filter(|(_, g)| *g).map(|(n, _)| *n).collect();
    if named.is_empty() {
        return Ok(());
    }
    Err(CliError::Usage(format!(
        "{} cannot apply to an existing image: the image fixes the geometry, endurance, over-provisioning, checkpoint stripe and data (always full); drop {}",
        named.join(", "),
        if named.len() == 1 { "it" } else { "them" }
    )))
}
