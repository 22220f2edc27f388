//! Helpers the protocol test files share: `tiny` at 64 blocks per plane with
//! full data, a page of one byte, and a read that checks the page is whole.

#![allow(dead_code)]

use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::AnyDevice;

/// `tiny` at 64 blocks per plane, full data; a rule violation panics.
pub fn nand() -> Nand {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64;
    Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

/// Resident memory of this process, bytes (the memory tests, each alone in
/// its binary).
pub fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

/// A page of `v`s.
pub fn page(d: &dyn AnyDevice, v: u8) -> Vec<u8> {
    vec![v; d.info().page_size as usize]
}

/// The byte logical page `lpn` holds, checking every byte of it is that one.
pub fn reads(d: &mut dyn AnyDevice, lpn: u32) -> u8 {
    let mut buf = page(d, 0);
    d.read(lpn, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == buf[0]), "lpn {lpn} holds mixed bytes");
    buf[0]
}
