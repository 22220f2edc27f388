//! Atomic-Write, scenario by scenario (the crash contract is in
//! txftl-harness's crash tests).

use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn page(dev: &dyn AnyDevice, tag: u8) -> Vec<u8> {
    vec![tag; dev.info().page_size as usize]
}

fn read(dev: &mut dyn AnyDevice, lpn: u32) -> u8 {
    let mut buf = vec![0u8; dev.info().page_size as usize];
    dev.read(lpn, &mut buf).unwrap();
    buf[0]
}

/// Atomic-Write, the baseline: strict isolation only, and the mapping table
/// appended to its mapping log at every commit.
#[test]
fn atomic_write_runs_one_transaction_at_a_time_and_writes_the_map_at_each_commit() {
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let mut d = format("atomic-write", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    d.begin(1).unwrap();
    assert!(matches!(d.begin(2), Err(DeviceError::IsolationUnsupported { .. })));
    d.write_tx(1, 3, &page(&*d, 7)).unwrap();
    d.write_tx(1, 4, &page(&*d, 7)).unwrap();
    let before = d.stats();
    d.commit(1).unwrap();
    let after = d.stats();
    // The flagged last page, and one page of the group's mappings in the mapping log.
    assert_eq!(after.flash_programs - before.flash_programs, 2, "{after:?}");
    assert_eq!(after.protocol_meta_writes - before.protocol_meta_writes, 1, "{after:?}");
    assert_eq!(after.map_writes, before.map_writes, "no checkpoint per commit");
    // Recovery redoes the group from its mapping page.
    let mut d = mount("atomic-write", d.into_nand(), FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    assert!(d.recovery_report().unwrap().protocol_pages_read >= 1);
    assert_eq!((read(&mut *d, 3), read(&mut *d, 4)), (7, 7));
    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&*d, 9)).unwrap();
    let programs = d.stats().flash_programs;
    d.abort(2).unwrap();
    assert_eq!(d.stats().flash_programs, programs);
    let d2 = mount("atomic-write", d.into_nand(), FtlConfig::default(), &ProtocolOptions::default());
    let mut d2 = d2.unwrap();
    assert_eq!((read(&mut *d2, 3), read(&mut *d2, 4)), (7, 7));
}
