//! An empty device takes memory for what is written to it, not for its
//! capacity: the L2P stores "unmapped" and the packed spare store "erased"
//! as zero, so both come from the kernel's zeroed pages and cost nothing
//! until a page is mapped or programmed. One test in this binary: it reads
//! the process's resident memory.

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

mod common;
use common::rss;

#[test]
fn an_empty_64_gib_device_takes_a_fraction_of_its_tables() {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 8192; // 64 GiB of 8 KiB pages
    let cfg = p.config(DataMode::MetaOnly, ViolationPolicy::Error);
    let pages = cfg.geometry.page_count() as u64;
    // The per-page tables written whole: the L2P (4 bytes a logical page)
    // and the packed spare store's logical page and sequence offset (6).
    let whole = pages * (4 + 6);
    let before = rss();
    let mut dev = txftl_protocols::format(
        "plain",
        Nand::try_new(cfg).unwrap(),
        FtlConfig::default(),
        &ProtocolOptions::default(),
    )
    .unwrap();
    // Written as a metadata-only device is: without data.
    for lpn in 0..1024 {
        dev.write(lpn, &[]).unwrap();
    }
    dev.flush().unwrap();
    let taken = rss().saturating_sub(before);
    // Per-block tables, the format's checkpoint, and the transparent huge
    // pages the first writes touch (2 MiB each: the first pages of a block
    // on each of the 8 dies land in 8 regions of each per-page table, where
    // the kernel gives huge pages) take the rest: 15 to 21 MB here.
    assert!(
        taken < whole / 2,
        "an empty device of {pages} pages took {taken} bytes (its per-page tables: {whole})"
    );
    dev.read(1023, &mut []).unwrap();
    dev.read(1024, &mut []).unwrap();
}
