//! A full-data array takes memory for the pages it has programmed, not for
//! its capacity: a block's data chunk is allocated when first written, from
//! the kernel's zeroed pages, and never filled (an unprogrammed page reads
//! as 0xFF from its program count). One test in this binary: it reads the
//! process's resident memory.

use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};

/// Resident memory of this process, bytes.
fn rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse::<u64>().unwrap() * 1024
}

#[test]
fn a_full_data_array_grows_with_the_pages_programmed() {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 128; // 1 GiB of 8 KiB pages
    let cfg = p.config(DataMode::Full, ViolationPolicy::Error);
    let g = cfg.geometry;
    let capacity = g.page_count() as u64 * g.page_size as u64;
    assert!(capacity >= 1 << 30, "{capacity}");
    let before = rss();
    let mut nand = Nand::try_new(cfg).unwrap();
    let fresh = rss().saturating_sub(before);
    let data = vec![0x5Au8; g.page_size as usize];
    let oob = vec![0u8; g.oob_size as usize];
    // 1,024 pages (8 MiB), the first pages of blocks all over the array.
    let stride = g.pages_per_block * (g.block_count() / 1024);
    for i in 0..1024 {
        nand.program(i * stride, 0, &data, &oob).unwrap();
    }
    let written = rss().saturating_sub(before);
    // The spare areas (filled) and per-page tables are ~1/30 of the data.
    assert!(fresh < capacity / 8, "a fresh array of {capacity} bytes took {fresh}");
    assert!(written < capacity / 8, "1,024 pages programmed, {written} bytes resident");
    let mut buf = vec![0u8; g.page_size as usize];
    let mut spare = oob.clone();
    nand.read(stride, 0, Some(&mut buf), &mut spare).unwrap();
    assert_eq!(buf, data);
    nand.read(1, 0, Some(&mut buf), &mut spare).unwrap();
    assert!(buf.iter().all(|&b| b == 0xFF), "a page never programmed reads erased");
}
