//! Scale issue, item 5: a device's memory is estimated before anything is
//! allocated (flash array, FTL tables, metadata pages a metadata-only array
//! keeps), the estimate covers what building the device allocates, and a
//! device whose tables do not fit is refused with a typed error that says
//! how much it needs. (One test in this binary: it sets an environment
//! variable.)

use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, MemoryError, Nand, ViolationPolicy};
use txftl_protocols::{format, memory_needed, ProtocolOptions};

mod common;
use common::rss;

#[test]
fn the_estimate_covers_a_device_and_one_that_does_not_fit_is_refused_with_its_size() {
    let opts = ProtocolOptions::default();
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 2048; // 16 GiB raw
    let ncfg = p.config(DataMode::MetaOnly, ViolationPolicy::Error);
    for protocol in ["plain", "xftl"] {
        let need = memory_needed(protocol, &ncfg, &FtlConfig::default(), &opts).unwrap();
        let allocated = need.flash_array + need.ftl.tables;
        let before = rss();
        let mut dev = format(protocol, Nand::try_new(ncfg).unwrap(), FtlConfig::default(), &opts).unwrap();
        let built = rss().saturating_sub(before);
        assert_eq!(dev.info().logical_pages, need.ftl.logical_pages);
        // Building takes at most the estimate: the tables that store their
        // default as zero are the kernel's zeroed pages, resident only as
        // entries are set.
        assert!(
            built <= allocated + allocated / 10,
            "{protocol}: building the device took {built} bytes, the estimate says {allocated} ({need:?})"
        );
        // Every logical page written once sets every L2P entry and programs
        // a page per entry: the estimate still covers it, and now most of
        // it is resident (X-FTL's transaction table stays unwritten).
        // (An empty buffer: a metadata-only device is written without data.)
        // The pages go in a scrambled order (a prime stride): written in
        // order, a block's spare areas are one run and take no memory per
        // page, which is not the case the estimate must cover.
        let n = need.ftl.logical_pages as u64;
        assert_ne!(n % 7919, 0);
        for i in 0..n {
            dev.write((i * 7919 % n) as u32, &[]).unwrap();
        }
        dev.flush().unwrap();
        let written = rss().saturating_sub(before);
        let total = need.flash_array + need.ftl.total();
        assert!(
            written <= total + total / 10 && written >= allocated / 3,
            "{protocol}: every page written, the device took {written} bytes, the estimate says {total} ({need:?})"
        );
        drop(dev);
    }

    // A cap just above the flash array: the array is built, the FTL refuses.
    let need = memory_needed("plain", &ncfg, &FtlConfig::default(), &opts).unwrap();
    std::env::set_var("TXFTL_MEMORY_AVAILABLE", (need.flash_array + (1 << 20)).to_string());
    let nand = Nand::try_new(ncfg).unwrap();
    let e = format("plain", nand, FtlConfig::default(), &opts).err().expect("refused");
    assert!(e.to_string().contains(&txftl_nand::gib(need.ftl.total())), "{e}");
    match e {
        DeviceError::Memory(MemoryError::TooLarge { needed, .. }) => assert_eq!(needed, need.ftl.total()),
        other => panic!("expected a typed memory error, got {other}"),
    }
    // Below the array: the array itself is refused.
    std::env::set_var("TXFTL_MEMORY_AVAILABLE", (need.flash_array / 2).to_string());
    assert!(matches!(
        Nand::try_new(ncfg),
        Err(txftl_nand::NandError::Memory(MemoryError::TooLarge { .. }))
    ));
    std::env::remove_var("TXFTL_MEMORY_AVAILABLE");
}
