//! GC after a mount that left the free pool below the GC reserve.
//!
//! A mount closes every block that was open (their erased tails are never
//! programmed), so a power cut, or a killed host process, just after the GC
//! stream took new blocks for its stripe leaves the next mount with a pool
//! of one or two blocks and no GC block open. GC used to insist on a block
//! per parallel unit: it spent each block it freed on the next unit's GC
//! block, returned `NoSpace` mid-victim with its open blocks half empty, and
//! a cut in that state left a device whose every block holds a live page and
//! no free block: every later write refused, for good (so ended a jasmine
//! image with 16 blocks per plane whose SQLite writer was killed 25 times).

use rand::{Rng, SeedableRng};
use txftl_ftl::{Capabilities, Dense, DeviceError, EventHooks, Ftl, FtlConfig, GcHooks, Hooks, PersistHooks, RecoveryHooks};
use txftl_nand::{DataMode, Nand, PowerCut, Torn, ViolationPolicy};

/// The framework with no hooks (what `plain` is).
#[derive(Clone, Copy)]
struct Bare;
impl Hooks for Bare {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities::NONE;
    fn name(&self) -> &'static str {
        "bare-test"
    }
}
impl GcHooks for Bare {}
impl PersistHooks for Bare {}
impl RecoveryHooks for Bare {}
impl EventHooks for Bare {}

/// Jasmine's layout (4 channels x 2 dies: 8 parallel units, MLC) with 16
/// blocks per plane as the image had, and small blocks and pages.
fn small_jasmine() -> Nand {
    let mut p = txftl_nand::preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 16;
    p.geometry.pages_per_block = 16;
    p.geometry.page_size = 512;
    p.geometry.oob_size = 64;
    Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

/// Every logical page written, then random overwrites with a power cut
/// every few hundred flash operations (`Torn::None`: the operation in flight
/// never reaches the array, as when the host process is killed), each
/// followed by a mount: no write may fail for want of space.
#[test]
fn gc_keeps_finding_room_after_mounts_that_left_the_pool_below_the_reserve() {
    for seed in 0..3u64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut f = Ftl::format(small_jasmine(), FtlConfig::default(), Bare).unwrap();
        let units = f.nand().geometry().unit_count();
        let n = f.logical_pages();
        let ps = f.page_size() as usize;
        for lpn in 0..n {
            f.write_page(lpn, &vec![1; ps]).unwrap();
        }
        let (mut mounts, mut short_mounts, mut armed) = (0, 0, false);
        for i in 0..2_000u32 {
            if !armed {
                let at_op = f.nand().op_count() + rng.gen_range(1..200);
                f.nand_mut().arm_power_cut(PowerCut {
                    at_op,
                    torn: Torn::None,
                    seed,
                });
                armed = true;
            }
            let lpn = rng.gen_range(0..n);
            match f.write_page(lpn, &vec![(i % 251) as u8; ps]) {
                Ok(_) => {}
                Err(DeviceError::PowerLoss) => {
                    let mut nand = f.into_nand();
                    nand.power_on();
                    f = Ftl::mount(nand, FtlConfig::default(), Bare).unwrap();
                    f.check_invariants().unwrap();
                    mounts += 1;
                    short_mounts += (f.free_blocks() < units) as u32;
                    armed = false;
                }
                Err(e) => panic!(
                    "seed {seed}: write {i} (lpn {lpn}) after {mounts} mounts failed: {e} ({} free blocks)",
                    f.free_blocks()
                ),
            }
        }
        // The case at stake was reached: mounts left fewer free blocks
        // than GC's stripe has units.
        assert!(
            short_mounts > 0,
            "seed {seed}: none of {mounts} mounts left fewer than {units} free blocks"
        );
    }
}
