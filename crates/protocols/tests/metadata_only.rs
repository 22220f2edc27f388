//! Scale issue, item 4: metadata-only arrays keep the OOB packed (the FTL's
//! codec) and whole only what does not pack (torn pages, metadata pages,
//! X-FTL's transactional pages). A power cut at every mutating operation of
//! a workload with GC, checkpoints, trims and (on X-FTL) transactions, torn
//! every way, must recover (the NAND model panics on any broken rule) with the
//! FTL's invariants holding, and a cut that tears nothing, or leaves garbage,
//! must recover the same mappings as on a full-data array.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, FlashOp, Nand, PowerCut, Torn, ViolationPolicy};
use txftl_protocols::{format, mount_or_return, AnyDevice, ProtocolOptions};

/// X-L2P entries for X-FTL; nothing for the other protocols.
fn opts(protocol: &str) -> ProtocolOptions {
    ProtocolOptions::new()
        .with("xl2p-entries", 24)
        .for_entry(txftl_protocols::entry(protocol).expect("a known protocol"))
}

fn cfg() -> FtlConfig {
    FtlConfig {
        checkpoint_every_pages: 40,
        ..FtlConfig::default()
    }
}

/// Random writes at 90% fill with flushes, trims and (on X-FTL) transactions.
fn workload(d: &mut dyn AnyDevice, full: bool) -> Result<(), DeviceError> {
    let (ps, pages) = (d.info().page_size as usize, d.info().logical_pages);
    let buf = vec![0x42u8; if full { ps } else { 0 }];
    let working = pages * 9 / 10;
    for lpn in 0..working {
        d.write(lpn, &buf)?;
    }
    d.flush()?;
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    for i in 0..300u32 {
        let lpn = rng.gen_range(0..working);
        match rng.gen_range(0..10) {
            0 => {
                d.trim(lpn)?;
            }
            1 if d.transactional() => {
                d.begin(i + 1)?;
                d.write_tx(i + 1, lpn, &buf)?;
                d.write_tx(i + 1, rng.gen_range(0..working), &buf)?;
                d.commit(i + 1)?;
            }
            _ => {
                d.write(lpn, &buf)?;
            }
        }
        if i % 8 == 7 {
            d.flush()?;
        }
    }
    Ok(())
}

fn fresh(protocol: &str, mode: DataMode) -> Box<dyn AnyDevice> {
    let nand = Nand::new(preset("tiny").unwrap().config(mode, ViolationPolicy::Panic)).unwrap();
    format(protocol, nand, cfg(), &opts(protocol)).unwrap()
}

/// Runs the workload with a cut at `at` (from the start of the array), then
/// recovers; returns the recovered mappings.
fn cut_and_recover(protocol: &str, mode: DataMode, at: u64, torn: Torn) -> Vec<Option<u32>> {
    let mut d = fresh(protocol, mode);
    d.nand_mut().arm_power_cut(PowerCut { at_op: at, torn, seed: at });
    assert!(workload(&mut *d, mode == DataMode::Full).is_err(), "cut {at} not reached");
    let mut nand = d.into_nand();
    nand.power_on();
    let d = match mount_or_return(protocol, nand, cfg(), &opts(protocol)) {
        Ok(d) => d,
        Err(f) => panic!("{protocol} {mode:?}: recovery after a cut at {at} ({torn:?}) failed: {}", f.0),
    };
    d.check_invariants()
        .unwrap_or_else(|e| panic!("{protocol} {mode:?} cut at {at} ({torn:?}): {e}"));
    mappings(&*d)
}

fn mappings(d: &dyn AnyDevice) -> Vec<Option<u32>> {
    (0..d.info().logical_pages).map(|lpn| d.mapping(lpn)).collect()
}

fn every_cut(protocol: &str) {
    let mut d = fresh(protocol, DataMode::MetaOnly);
    let base = d.nand().op_count();
    d.nand_mut().set_op_log(true);
    workload(&mut *d, false).unwrap();
    let s = d.stats();
    assert!(s.gc_runs > 0 && s.checkpoints > 5 && s.host_trims > 0, "{s:?}");
    let log = d.nand().op_log().to_vec();
    let cuts: Vec<u64> = (0..log.len()).filter(|&i| log[i].mutates()).map(|i| base + i as u64).collect();
    assert!(cuts.iter().any(|&c| log[(c - base) as usize] == FlashOp::Erase));
    assert!(cuts.len() > 500, "{} mutating operations", cuts.len());
    for &at in &cuts {
        for torn in Torn::ALL {
            let meta = cut_and_recover(protocol, DataMode::MetaOnly, at, torn);
            if matches!(torn, Torn::None | Torn::Garbage) {
                assert_eq!(meta, cut_and_recover(protocol, DataMode::Full, at, torn), "cut at {at} ({torn:?})");
            }
        }
    }
}

#[test]
fn plain_on_metadata_only_data_survives_cuts() {
    every_cut("plain");
}

#[test]
fn xftl_on_metadata_only_data_survives_cuts() {
    every_cut("xftl");
}

/// A metadata-only array keeps the data of metadata pages, which recovery
/// reads; the FTL tells it to forget those no checkpoint it may fall back to
/// names, so what it holds stays about two checkpoints' worth (the current
/// and the previous one, records and table pages), whatever the ring's size.
#[test]
fn metadata_only_arrays_keep_two_checkpoints_of_metadata() {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64;
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
    let mut d = format("plain", nand, cfg(), &opts("plain")).unwrap();
    let pages = d.info().logical_pages;
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    for i in 0..20_000u32 {
        d.write(rng.gen_range(0..pages * 9 / 10), &[]).unwrap();
        if i % 64 == 0 {
            d.flush().unwrap();
        }
    }
    let s = d.stats();
    let g = *d.nand().geometry();
    let table_pages = pages.div_ceil(g.page_size / 4) + (g.block_count() * 8).div_ceil(g.page_size);
    assert!(s.checkpoints > 100 && s.map_writes > 20 * table_pages as u64, "{s:?}");
    // Two checkpoints (table pages and a one-page record each), and the two
    // superblock blocks.
    let bound = 2 * (table_pages as usize + 1) + 2 * g.pages_per_block as usize;
    let held = d.nand().inspect_stored_data_pages();
    assert!(held <= bound, "the array holds {held} metadata pages, more than {bound}");
    d.check_invariants().unwrap();
    // And what it holds is enough: the device mounts after a cut.
    let mut n = d.into_nand();
    n.power_off();
    n.power_on();
    let d = txftl_protocols::mount("plain", n, cfg(), &opts("plain")).unwrap();
    d.check_invariants().unwrap();
}

/// Successive versions of a table page differ in a few entries, so the
/// metadata-only array keeps most of them as patches against an earlier
/// version (`Nand::program_like`, the FTL's hint): it holds far fewer bytes
/// than whole pages, and every page it holds reads back exactly the bytes a
/// full-data array of the same run holds there, though the pages the patches
/// were made against have been forgotten or erased since.
#[test]
fn metadata_only_table_pages_are_kept_as_patches_and_read_back_exactly() {
    // 8 KiB pages: 2,048 entries a table page, of which a checkpoint every
    // 40 programs changes a few.
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 16;
    let run = |mode: DataMode| {
        let nand = Nand::new(p.config(mode, ViolationPolicy::Panic)).unwrap();
        let mut d = format("plain", nand, cfg(), &opts("plain")).unwrap();
        let pages = d.info().logical_pages;
        let buf = vec![7u8; if mode == DataMode::Full { d.info().page_size as usize } else { 0 }];
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for i in 0..20_000u32 {
            d.write(rng.gen_range(0..pages * 9 / 10), &buf).unwrap();
            if i % 64 == 0 {
                d.flush().unwrap();
            }
        }
        d
    };
    let (meta, full) = (run(DataMode::MetaOnly), run(DataMode::Full));
    assert_eq!(meta.stats(), full.stats());
    let g = *meta.nand().geometry();
    let (mut compared, zeros) = (0, vec![0u8; g.page_size as usize]);
    for ppn in 0..g.page_count() {
        let kept = meta.nand().inspect_data(ppn);
        if meta.nand().inspect_programs(ppn) > 0 && kept != zeros {
            assert_eq!(kept, full.nand().inspect_data(ppn), "page {ppn}");
            compared += 1;
        }
    }
    let held = meta.nand().inspect_stored_data_pages();
    let bytes = meta.nand().inspect_stored_data_bytes();
    let whole = held as u64 * g.page_size as u64;
    eprintln!("{held} metadata pages kept in {bytes} bytes ({whole} whole), {compared} compared");
    assert!(compared * 10 >= held * 9, "{compared} of {held} pages compared");
    assert!(bytes * 2 < whole, "{bytes} bytes for {held} pages of {}", g.page_size);
}
