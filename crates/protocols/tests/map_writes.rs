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
