//! Flash faults through the device interface: an uncorrectable page is a
//! typed, counted loss after read retry (never silent data), and failed
//! programs retire their block without losing a page.

use rand::{Rng, SeedableRng};
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{DataMode, FaultModel, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

fn device(model: FaultModel) -> Box<dyn txftl_protocols::AnyDevice> {
    device_in(DataMode::Full, model)
}

fn device_in(mode: DataMode, model: FaultModel) -> Box<dyn txftl_protocols::AnyDevice> {
    let cfg = txftl_nand::preset("tiny").unwrap().config(mode, ViolationPolicy::Panic);
    let nand = Nand::new(cfg).unwrap();
    let mut dev = txftl_protocols::format("plain", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    dev.nand_mut().set_fault_model(Some(model)).unwrap();
    dev
}

fn quiet() -> FaultModel {
    FaultModel {
        rber_fresh: 0.0,
        rber_worn: 0.0,
        program_fail_fresh: 0.0,
        program_fail_worn: 0.0,
        erase_fail_fresh: 0.0,
        erase_fail_worn: 0.0,
        ..FaultModel::profile("typical", 3).unwrap()
    }
}

#[test]
fn a_page_beyond_ecc_is_reported_lost_after_every_read_retry() {
    let mut dev = device(quiet());
    let page = vec![0x5Au8; dev.info().page_size as usize];
    dev.write(7, &page).unwrap();
    dev.flush().unwrap();
    // Ten days at a rate no ECC survives.
    dev.nand_mut()
        .set_fault_model(Some(FaultModel {
            rber_fresh: 0.05,
            rber_worn: 0.05,
            ..quiet()
        }))
        .unwrap();
    let mut buf = vec![0u8; page.len()];
    match dev.read(7, &mut buf) {
        Err(DeviceError::DataLost { lpn: 7, .. }) => {}
        other => panic!("expected DataLost for lpn 7, got {other:?}"),
    }
    let s = dev.stats();
    assert_eq!(s.uncorrectable_reads, 1);
    assert_eq!(s.lost_page_reads, 1);
    assert_eq!(s.read_retries, quiet().read_retries as u64, "every retry level was tried");
    // The device stays usable, and a rewrite replaces the lost page.
    dev.nand_mut().set_fault_model(Some(quiet())).unwrap();
    dev.write(7, &page).unwrap();
    dev.read(7, &mut buf).unwrap();
    assert_eq!(buf, page);
}

#[test]
fn corrected_errors_are_counted_and_the_data_is_intact() {
    let mut dev = device(FaultModel {
        rber_fresh: 2e-3,
        rber_worn: 2e-3,
        ..quiet()
    });
    let ps = dev.info().page_size as usize;
    for lpn in 0..20u32 {
        dev.write(lpn, &vec![lpn as u8; ps]).unwrap();
    }
    let mut buf = vec![0u8; ps];
    for lpn in 0..20u32 {
        dev.read(lpn, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == lpn as u8));
    }
    assert!(dev.stats().corrected_bits > 0);
}

#[test]
fn failed_programs_retire_their_blocks_and_lose_no_page() {
    let mut dev = device(FaultModel {
        // Each failure retires a whole block: tiny keeps one spare, so a
        // higher rate wears the device out (a typed DeviceWornOut).
        program_fail_fresh: 0.006,
        program_fail_worn: 0.006,
        ..quiet()
    });
    let ps = dev.info().page_size as usize;
    let pages = dev.info().logical_pages;
    let mut latest = vec![None; pages as usize];
    for i in 0..3 * pages {
        let lpn = (i * 7) % pages;
        let byte = (i % 251) as u8;
        dev.write(lpn, &vec![byte; ps]).unwrap();
        latest[lpn as usize] = Some(byte);
    }
    let s = dev.stats();
    assert!(s.program_failures > 0 && s.retired_blocks > 0, "{s:?}");
    dev.check_invariants().unwrap();
    let mut buf = vec![0u8; ps];
    for lpn in 0..pages {
        dev.read(lpn, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| Some(b) == latest[lpn as usize]), "lpn {lpn}");
    }
}

/// Scale issue, item 4: the FTL keeps no reverse map; GC learns whose page it
/// copies from the page's OOB. When bit errors took the spare area itself of
/// a mapped page, the L2P alone tells: GC finds the logical page there, copies
/// the page marked lost, and the mapping stays right.
#[test]
fn gc_copies_a_page_whose_spare_area_is_lost_under_its_logical_page() {
    lost_spare_area_is_copied_under_its_logical_page(DataMode::Full);
}

/// The same in metadata-only mode with pages written without data: their
/// spare areas are packed, and GC's reads hand them up as fields
/// (`Nand::read_fields`) except where the decode fails, which hands up
/// the bytes a failed decode leaves.
#[test]
fn gc_copies_a_packed_page_whose_spare_area_is_lost_under_its_logical_page() {
    lost_spare_area_is_copied_under_its_logical_page(DataMode::MetaOnly);
}

fn lost_spare_area_is_copied_under_its_logical_page(mode: DataMode) {
    let mut dev = device_in(mode, quiet());
    let (ps, pages) = (dev.info().page_size as usize, dev.info().logical_pages);
    let page = |lpn: u32| if mode == DataMode::Full { vec![lpn as u8; ps] } else { Vec::new() };
    let working = pages * 9 / 10;
    for lpn in 0..working {
        dev.write(lpn, &page(lpn)).unwrap();
    }
    dev.flush().unwrap();
    // Errors that ECC (2 bits per 64 bytes, no retry) often cannot correct,
    // in the spare area too.
    let harsh = FaultModel {
        rber_fresh: 2e-3,
        rber_worn: 2e-3,
        codeword_bytes: 64,
        ecc_bits: 2,
        read_retries: 0,
        ..quiet()
    };
    dev.nand_mut().set_fault_model(Some(harsh)).unwrap();
    let os = dev.nand().geometry().oob_size as usize;
    let spare_lost = |dev: &mut Box<dyn txftl_protocols::AnyDevice>| -> Vec<u32> {
        (0..working)
            .filter(|&lpn| {
                let ppn = dev.mapping(lpn).unwrap();
                let mut oob = vec![0u8; os];
                matches!(
                    dev.nand_mut().read(ppn, 0, None, &mut oob),
                    Err(txftl_nand::NandError::Uncorrectable { oob: true, .. })
                )
            })
            .collect()
    };
    let before = spare_lost(&mut dev);
    assert!(!before.is_empty(), "some mapped page must lose its spare area");
    // Random overwrites of the other pages until GC has moved every one of
    // those (their blocks keep some valid pages, so GC must copy them).
    let keep: std::collections::BTreeSet<u32> = before.iter().copied().collect();
    let placed: Vec<u32> = before.iter().map(|&lpn| dev.mapping(lpn).unwrap()).collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut writes = 0;
    while before.iter().zip(&placed).any(|(&lpn, &ppn)| dev.mapping(lpn) == Some(ppn)) {
        let lpn = rng.gen_range(0..working);
        if !keep.contains(&lpn) {
            dev.write(lpn, &page(lpn)).unwrap();
            writes += 1;
            assert!(writes < 100 * pages, "GC never moved the pages");
        }
    }
    assert!(dev.stats().lost_page_copies > 0);
    dev.check_invariants().unwrap();
    let mut buf = vec![0u8; ps];
    for &lpn in &before {
        match dev.read(lpn, &mut buf) {
            Err(DeviceError::DataLost { lpn: l, .. }) => assert_eq!(l, lpn),
            other => panic!("lpn {lpn}: expected a reported loss, got {other:?}"),
        }
    }
}
