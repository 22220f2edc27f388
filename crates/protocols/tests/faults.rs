//! Flash faults through the device interface: an uncorrectable page is a
//! typed, counted loss after read retry (never silent data), and failed
//! programs retire their block without losing a page.

use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{DataMode, FaultModel, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

fn device(model: FaultModel) -> Box<dyn txftl_protocols::AnyDevice> {
    let cfg = txftl_nand::preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic);
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
