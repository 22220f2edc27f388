//! Device images: format, put, get, info.

use crate::cmd_run::add_recovery;
use crate::setup::{describe, ftl_config, nand_config, resolve_preset};
use crate::table::{thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::Args;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, Nand, ViolationPolicy};
use txftl_protocols::AnyDevice;

#[derive(Args, Debug)]
pub struct FormatArgs {
    #[command(flatten)]
    pub device: DeviceArgs,
    /// Image file to create (refuses to overwrite).
    #[arg(long)]
    pub image: PathBuf,
    /// Also create the txftl file system on it (for SQLite through the loadable
    /// extension): journaled on plain, transactional on xftl.
    #[arg(long)]
    pub fs: bool,
}

#[derive(Args, Debug)]
pub struct PutArgs {
    #[arg(long)]
    pub image: PathBuf,
    #[arg(long, default_value = "plain", value_parser = crate::setup::protocol_parser())]
    pub protocol: String,
    /// First logical page to write.
    #[arg(long, default_value_t = 0)]
    pub lpn: u32,
    /// File whose bytes are written (the last page is zero-padded).
    pub file: PathBuf,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    #[arg(long)]
    pub image: PathBuf,
    #[arg(long, default_value = "plain", value_parser = crate::setup::protocol_parser())]
    pub protocol: String,
    #[arg(long, default_value_t = 0)]
    pub lpn: u32,
    /// Bytes to read from --lpn on.
    #[arg(long)]
    pub bytes: u64,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

fn mount(image: &Path, protocol: &str, cfg: FtlConfig) -> Result<Box<dyn AnyDevice>, CliError> {
    let nand = Nand::open_image(image, ViolationPolicy::Error).map_err(|e| CliError::Failed(format!("{}: {e}", image.display())))?;
    txftl_protocols::mount(protocol, nand, cfg, &txftl_protocols::ProtocolOptions::default())
        .map_err(|e| CliError::Failed(format!("mounting {}: {e}", image.display())))
}

pub fn format(args: FormatArgs) -> Result<ExitCode, CliError> {
    let p = resolve_preset(&args.device, "tiny")?;
    if args.image.exists() {
        return Err(CliError::Usage(format!(
            "{} already exists; refusing to overwrite it",
            args.image.display()
        )));
    }
    let nand = Nand::create_image(&args.image, nand_config(&p, DataMode::Full))
        .map_err(|e| CliError::Failed(format!("{}: {e}", args.image.display())))?;
    let dev = txftl_protocols::format(
        &args.device.protocol,
        nand,
        ftl_config(&args.device)?,
        &crate::setup::protocol_options(&args.device),
    )
    .map_err(CliError::failed)?;
    let info = dev.info();
    let dev = if args.fs {
        let mode = if dev.transactional() {
            txftl_fs::FsMode::Transactional
        } else {
            txftl_fs::FsMode::Journaled
        };
        txftl_fs::Fs::format(dev, mode)
            .map_err(|e| CliError::Failed(format!("file system: {e}")))?
            .into_device()
    } else {
        dev
    };
    dev.close().map_err(CliError::failed)?;
    println!(
        "formatted {} for {}: {} logical pages of {} bytes on {}",
        args.image.display(),
        info.protocol,
        thousands(info.logical_pages as u64),
        info.page_size,
        describe(&p)
    );
    Ok(ExitCode::SUCCESS)
}

pub fn put(args: PutArgs) -> Result<ExitCode, CliError> {
    let bytes = std::fs::read(&args.file).map_err(|e| CliError::Failed(format!("{}: {e}", args.file.display())))?;
    let mut dev = mount(&args.image, &args.protocol, FtlConfig::default())?;
    let info = dev.info();
    let ps = info.page_size as usize;
    let pages = bytes.len().div_ceil(ps) as u64;
    if args.lpn as u64 + pages > info.logical_pages as u64 {
        return Err(CliError::Usage(format!(
            "{} bytes need {pages} pages from lpn {}, but the device has {} logical pages",
            bytes.len(),
            args.lpn,
            info.logical_pages
        )));
    }
    let mut page = vec![0u8; ps];
    for (i, chunk) in bytes.chunks(ps).enumerate() {
        page.fill(0);
        page[..chunk.len()].copy_from_slice(chunk);
        dev.write(args.lpn + i as u32, &page).map_err(CliError::failed)?;
    }
    dev.flush().map_err(CliError::failed)?;
    dev.close().map_err(CliError::failed)?;
    println!(
        "wrote {} bytes to {pages} pages from lpn {} (crc32 {:08x})",
        bytes.len(),
        args.lpn,
        crc32(&bytes)
    );
    Ok(ExitCode::SUCCESS)
}

fn crc32(b: &[u8]) -> u32 {
    crc32fast::hash(b)
}

pub fn get(args: GetArgs) -> Result<ExitCode, CliError> {
    let mut dev = mount(&args.image, &args.protocol, FtlConfig::default())?;
    let info = dev.info();
    let ps = info.page_size as u64;
    let pages = args.bytes.div_ceil(ps);
    if args.lpn as u64 + pages > info.logical_pages as u64 {
        return Err(CliError::Usage(format!(
            "{} bytes from lpn {} run past the {} logical pages",
            args.bytes, args.lpn, info.logical_pages
        )));
    }
    let mut out = Vec::with_capacity(args.bytes as usize);
    let mut page = vec![0u8; ps as usize];
    for i in 0..pages {
        dev.read(args.lpn + i as u32, &mut page).map_err(CliError::failed)?;
        out.extend_from_slice(&page);
    }
    out.truncate(args.bytes as usize);
    dev.close().map_err(CliError::failed)?;
    match &args.out {
        Some(path) => std::fs::write(path, &out).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?,
        None => std::io::stdout().write_all(&out).map_err(CliError::failed)?,
    }
    eprintln!(
        "read {} bytes from {pages} pages from lpn {} (crc32 {:08x})",
        out.len(),
        args.lpn,
        crc32(&out)
    );
    Ok(ExitCode::SUCCESS)
}

pub fn info(image: &Path, protocol: &str, json: bool) -> Result<ExitCode, CliError> {
    let dev = mount(image, protocol, FtlConfig::default())?;
    let info = dev.info();
    let report = dev.recovery_report().unwrap_or_default();
    let (lo, hi) = dev.wear_spread();
    let geo = *dev.nand().geometry();
    if json {
        let v = serde_json::json!({ "device": info, "geometry": geo, "recovery": report, "erase_count_min": lo, "erase_count_max": hi });
        println!("{}", serde_json::to_string_pretty(&v).map_err(CliError::failed)?);
    } else {
        let mut t = Figures::new(&format!("{}", image.display()));
        t.row("protocol", info.protocol);
        t.row(
            "logical pages x page size",
            format!("{} x {} B", thousands(info.logical_pages as u64), info.page_size),
        );
        t.row(
            "geometry",
            format!(
                "{} ch x {} dies x {} planes x {} blocks x {} pages, {:?}",
                geo.channels, geo.dies_per_channel, geo.planes_per_die, geo.blocks_per_plane, geo.pages_per_block, geo.cell
            ),
        );
        t.row("erase count min / max", format!("{lo} / {hi}"));
        add_recovery(&mut t, &report);
        t.print();
    }
    dev.close().map_err(CliError::failed)?;
    Ok(ExitCode::SUCCESS)
}
