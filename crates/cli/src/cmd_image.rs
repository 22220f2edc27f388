//! Device images: format, put, get, info.

use crate::cmd_run::add_recovery;
use crate::open::{create_image, open_image, refuse_pending_host_log, SyncArgs};
use crate::setup::{describe, nand_config};
use crate::table::{thousands, Figures};
use crate::{CliError, DeviceArgs};
use clap::Args;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, ImageSync};
use txftl_protocols::AnyDevice;
use txftl_reproduce::wrapln;

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
    #[command(flatten)]
    pub sync: SyncArgs,
}

#[derive(Args, Debug)]
pub struct PutArgs {
    #[arg(long)]
    pub image: PathBuf,
    /// The image's protocol [default: the one the image was formatted for;
    /// another is refused].
    #[arg(long, value_parser = crate::setup::protocol_parser())]
    pub protocol: Option<String>,
    /// First logical page to write.
    #[arg(long, default_value_t = 0)]
    pub lpn: u32,
    /// File whose bytes are written (the last page is zero-padded); `-` for
    /// standard input. Read page by page, never whole.
    pub file: PathBuf,
    #[command(flatten)]
    pub sync: SyncArgs,
}

#[derive(Args, Debug)]
pub struct GetArgs {
    #[arg(long)]
    pub image: PathBuf,
    /// The image's protocol [default: the one the image was formatted for;
    /// another is refused].
    #[arg(long, value_parser = crate::setup::protocol_parser())]
    pub protocol: Option<String>,
    #[arg(long, default_value_t = 0)]
    pub lpn: u32,
    /// Bytes to read from --lpn on.
    #[arg(long)]
    pub bytes: u64,
    /// Output file (default: standard output).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// Mounts an image. `get` and `info` mount it read-only: looking at a device
/// writes nothing to it (no sealing checkpoint, no wear, no `--sync`).
pub(crate) fn mount(image: &Path, protocol: Option<&str>, cfg: FtlConfig, sync: ImageSync) -> Result<Box<dyn AnyDevice>, CliError> {
    if cfg.read_only {
        if let Some(bytes) = txftl_fs::pending_host_log(image) {
            eprintln!(
                "note: {}: its host log holds {bytes} bytes of file-system changes a process left, not on the device yet \
                 (the next load of the image by the SQLite extension replays them)",
                image.display()
            );
        }
    } else {
        refuse_pending_host_log(image)?;
    }
    let nand = open_image(image, sync)?;
    // The image knows its protocol: the superblock records it.
    let (protocol, nand) = match protocol {
        Some(p) => (p.to_string(), nand),
        None => match txftl_ftl::formatted_protocol(nand) {
            (Ok(p), nand) => (p, nand),
            (Err(e), _) => return Err(CliError::Failed(format!("mounting {}: {e}", image.display()))),
        },
    };
    let dev = txftl_protocols::mount(&protocol, nand, cfg, &txftl_protocols::ProtocolOptions::default())
        .map_err(|e| CliError::Failed(format!("mounting {}: {e}", image.display())))?;
    Ok(dev)
}

pub fn format(args: FormatArgs) -> Result<ExitCode, CliError> {
    // The small preset the protocol's NAND needs pick (`tiny`, `tiny-slc`);
    // an unknown protocol is refused by the resolution.
    let tiny = txftl_protocols::entry(args.device.protocol()).map_or("tiny", |e| e.nand.tiny_preset());
    let (d, opts) = crate::setup::resolve_with_protocol(&args.device, tiny)?;
    if args.image.exists() {
        return Err(CliError::Usage(format!(
            "{} already exists; refusing to overwrite it",
            args.image.display()
        )));
    }
    let sync = args.sync.mode();
    crate::open::check_device_fits(args.device.protocol(), &nand_config(&d.preset, DataMode::Full), &d.ftl, &opts, 0)?;
    let nand = create_image(&args.image, nand_config(&d.preset, DataMode::Full), sync)?;
    let dev = txftl_protocols::format(args.device.protocol(), nand, d.ftl, &opts).map_err(crate::open::device_error)?;
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
    wrapln!(
        "formatted {} for {}: {} logical pages of {} bytes on {}",
        args.image.display(),
        info.protocol,
        thousands(info.logical_pages as u64),
        info.page_size,
        describe(&d.preset)
    );
    Ok(ExitCode::SUCCESS)
}

/// The input of `put`: a file or standard input.
fn open_input(path: &Path) -> Result<(Box<dyn Read>, Option<u64>), CliError> {
    if path.as_os_str() == "-" {
        return Ok((Box::new(std::io::stdin().lock()), None));
    }
    let f = std::fs::File::open(path).map_err(|e| CliError::Failed(format!("{}: {e}", path.display())))?;
    // A regular file's length is known up front; a pipe's or a device's is not.
    let len = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
    Ok((Box::new(f), len))
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
fn read_page(input: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match input.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// Writes the input page by page (never holding more than one page of it), so
/// an input larger than the room from --lpn to the device end is refused as
/// soon as it is known to be: up front for a regular file (nothing is
/// written), at the first byte past the end for a stream.
pub fn put(args: PutArgs) -> Result<ExitCode, CliError> {
    let (mut input, known_len) = open_input(&args.file)?;
    let mut dev = mount(&args.image, args.protocol.as_deref(), FtlConfig::default(), args.sync.mode())?;
    let info = dev.info();
    let ps = info.page_size as usize;
    let logical = info.logical_pages as u64;
    if args.lpn as u64 >= logical {
        return Err(CliError::Usage(format!(
            "--lpn {} is past the device end ({} logical pages)",
            args.lpn, info.logical_pages
        )));
    }
    let room = (logical - args.lpn as u64) * ps as u64;
    let room_text = format!(
        "the {room} bytes from lpn {} to the device end ({} logical pages of {ps} B)",
        args.lpn, info.logical_pages
    );
    if let Some(len) = known_len.filter(|&len| len > room) {
        return Err(CliError::Failed(format!(
            "{} is {len} bytes, more than {room_text}; nothing was written",
            args.file.display()
        )));
    }
    let mut page = vec![0u8; ps];
    let mut crc = crc32fast::Hasher::new();
    let (mut total, mut pages) = (0u64, 0u64);
    let mut overflow = false;
    loop {
        let n = read_page(&mut input, &mut page).map_err(|e| CliError::Failed(format!("{}: {e}", args.file.display())))?;
        if n == 0 {
            break;
        }
        if args.lpn as u64 + pages == logical {
            overflow = true;
            break;
        }
        page[n..].fill(0);
        dev.write(args.lpn + pages as u32, &page).map_err(CliError::failed)?;
        crc.update(&page[..n]);
        total += n as u64;
        pages += 1;
    }
    // Even after an overflow, what was written is flushed and the image closed
    // cleanly: the user is told exactly which pages now hold the input's start.
    dev.flush().map_err(CliError::failed)?;
    dev.close().map_err(CliError::failed)?;
    if overflow {
        return Err(CliError::Failed(format!(
            "{} is longer than {room_text}: stopped there; lpn {}..{} hold its first {total} bytes",
            args.file.display(),
            args.lpn,
            args.lpn as u64 + pages - 1
        )));
    }
    wrapln!(
        "wrote {total} bytes to {pages} pages from lpn {} (crc32 {:08x})",
        args.lpn,
        crc.finalize()
    );
    Ok(ExitCode::SUCCESS)
}

fn crc32(b: &[u8]) -> u32 {
    crc32fast::hash(b)
}

pub fn get(args: GetArgs) -> Result<ExitCode, CliError> {
    let mut dev = mount(&args.image, args.protocol.as_deref(), read_only(), ImageSync::Close)?;
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

fn read_only() -> FtlConfig {
    FtlConfig {
        read_only: true,
        ..FtlConfig::default()
    }
}

pub fn info(image: &Path, protocol: Option<&str>, json: bool) -> Result<ExitCode, CliError> {
    let dev = mount(image, protocol, read_only(), ImageSync::Close)?;
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
                "{} ch x {} dies x {} planes x {} blocks x {} pages, {}",
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
