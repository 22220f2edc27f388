//! Mapping persistence follows what changed, and its share of the programs
//! does not grow with capacity: on a 64 GiB device (4,096 L2P pages),
//! uniformly random writes dirty nearly every table page between two
//! checkpoints, so checkpoints come at least 8 programs per table page apart.
//! With the old fixed interval (8 blocks per unit, 8,192 programs here) the
//! same writes cost 33.1% of the host writes in map pages (4 checkpoints).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

#[test]
fn map_writes_stay_a_bounded_share_of_random_writes_on_a_large_device() {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 8192; // 64 GiB raw
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
    let mut dev = txftl_protocols::format("plain", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let pages = dev.info().logical_pages;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    dev.reset_stats();
    for _ in 0..40_000 {
        dev.write(rng.gen_range(0..pages), &[]).unwrap();
    }
    let s = dev.stats();
    let share = s.map_writes as f64 / s.host_writes as f64;
    assert!(s.checkpoints >= 1, "{s:?}");
    assert!(
        share < 0.15,
        "map writes are {:.1}% of host writes ({} checkpoints)",
        share * 100.0,
        s.checkpoints
    );
}

/// `checkpoint_whole_map` with `checkpoint_at_flush` (the Jasmine board's
/// public firmware): every flush after writes rewrites every L2P page that
/// maps something, where the default rewrites only the pages that changed;
/// what was flushed survives a power cut either way.
#[test]
fn the_whole_map_at_every_flush_writes_every_mapped_table_page() {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 256; // 2 GiB raw: tens of L2P pages
    let run = |whole: bool| {
        let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
        let cfg = FtlConfig {
            checkpoint_at_flush: true,
            checkpoint_whole_map: whole,
            ..FtlConfig::default()
        };
        let mut dev = txftl_protocols::format("plain", nand, cfg.clone(), &ProtocolOptions::default()).unwrap();
        let pages = dev.info().logical_pages;
        // Every L2P page maps something, then 10 flushes of one page each.
        for lpn in (0..pages).step_by(512) {
            dev.write(lpn, &[]).unwrap();
        }
        dev.flush().unwrap();
        dev.reset_stats();
        for i in 0..10 {
            dev.write(i, &[]).unwrap();
            dev.flush().unwrap();
        }
        let s = dev.stats();
        let mut nand = dev.into_nand();
        nand.power_off();
        nand.power_on();
        let back = txftl_protocols::mount("plain", nand, cfg, &ProtocolOptions::default()).unwrap();
        assert!(back.info().logical_pages == pages);
        (s, pages.div_ceil(2048) as u64)
    };
    let (changed, table_pages) = run(false);
    let (whole, _) = run(true);
    assert_eq!((changed.checkpoints, whole.checkpoints), (10, 10));
    assert_eq!(changed.map_l2p_writes, 10, "one changed L2P page a flush: {changed:?}");
    assert_eq!(whole.map_l2p_writes, 10 * table_pages, "the whole table a flush: {whole:?}");
}
