//! Devices and helpers shared by the file-system tests.
#![allow(dead_code)]

use txftl_fs::{Fs, FsMode, Ino};
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

/// The two metadata modes and the device each runs on.
pub const MODES: [(&str, FsMode); 2] = [("plain", FsMode::Journaled), ("xftl", FsMode::Transactional)];

/// A fresh NAND array: `tiny` with `blocks_per_plane` blocks of `pages_per_block` pages of `page_size` bytes.
pub fn nand(blocks_per_plane: u32, pages_per_block: u32, page_size: u32) -> Nand {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = blocks_per_plane;
    p.geometry.pages_per_block = pages_per_block;
    p.geometry.page_size = page_size;
    Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

pub fn device_on(protocol: &str, nand: Nand) -> Box<dyn AnyDevice> {
    format(protocol, nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

/// A device with an X-L2P table of `entries` (ignored by `plain`).
pub fn device_with_table(protocol: &str, nand: Nand, entries: u32) -> Box<dyn AnyDevice> {
    format(
        protocol,
        nand,
        FtlConfig::default(),
        &ProtocolOptions::new()
            .with("xl2p-entries", entries)
            .for_entry(txftl_protocols::entry(protocol).expect("a known protocol")),
    )
    .unwrap()
}

/// `tiny` at 128 blocks per plane with the paper's 500-entry X-L2P table, so
/// transactions of a few hundred pages fit.
pub fn medium_device(protocol: &str) -> Box<dyn AnyDevice> {
    device_with_table(protocol, nand(128, 8, 512), 500)
}

/// `tiny` at 64 blocks per plane, as `fs.rs` uses.
pub fn small_device(protocol: &str) -> Box<dyn AnyDevice> {
    device_on(protocol, nand(64, 8, 512))
}

/// Power off and on, then recovery from the NAND alone.
pub fn remount_nand(mut n: Nand, protocol: &str) -> Box<dyn AnyDevice> {
    n.power_off();
    n.power_on();
    // A mount takes the table size the device was formatted with.
    mount(protocol, n, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

pub fn remount(dev: Box<dyn AnyDevice>, protocol: &str) -> Box<dyn AnyDevice> {
    remount_nand(dev.into_nand(), protocol)
}

/// A power cut (only the device survives) and a mount of the file system.
pub fn cut_and_mount(fs: Fs, protocol: &str, mode: FsMode) -> Fs {
    Fs::mount(remount(fs.into_device(), protocol), mode).unwrap()
}

/// Bytes derived from a seed and a page index, so each page of each file is recognisable.
pub fn page_bytes(len: usize, seed: u32, page: u32) -> Vec<u8> {
    let mut x = (seed as u64) << 32 | page as u64;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 56) as u8
        })
        .collect()
}

/// Reads the whole file as `tx` sees it.
pub fn read_all(fs: &mut Fs, tx: Option<u32>, ino: Ino) -> Vec<u8> {
    let size = fs.size(tx, ino).unwrap() as usize;
    let mut buf = vec![0u8; size];
    assert_eq!(fs.read(tx, ino, 0, &mut buf).unwrap(), size);
    buf
}

/// The expected contents of a file of `pages` pages written page by page with `page_bytes(seed)`.
pub fn expected(page_size: usize, seed: u32, pages: u32) -> Vec<u8> {
    (0..pages).flat_map(|p| page_bytes(page_size, seed, p)).collect()
}
