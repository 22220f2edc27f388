//! NoLgn-FTL, scenario by scenario (the crash contract is in txftl-harness's
//! crash tests): what each command programs, what others read of an open
//! transaction's pages, the locks GC skips, the bounded P2P table, and what
//! recovery decides from the NAND alone (a cut is `into_nand`: DRAM is lost).

mod common;
use common::{nand, page, reads};
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn device_with(cfg: FtlConfig, opts: &ProtocolOptions) -> Box<dyn AnyDevice> {
    format("nolgn", nand(), cfg, opts).unwrap()
}

fn device() -> Box<dyn AnyDevice> {
    device_with(FtlConfig::default(), &ProtocolOptions::new())
}

/// A power cut: DRAM is lost, the mount recovers from the NAND alone.
fn cut(d: Box<dyn AnyDevice>, cfg: FtlConfig) -> Box<dyn AnyDevice> {
    mount("nolgn", d.into_nand(), cfg, &ProtocolOptions::new()).unwrap()
}

fn counter(d: &dyn AnyDevice, key: &str) -> u64 {
    d.stats().protocol.get(key)
}

fn programs(d: &dyn AnyDevice) -> u64 {
    d.stats().flash_programs
}

fn write_end(d: &mut dyn AnyDevice, tid: u32, lpn: u32, v: u8) {
    let data = page(d, v);
    d.tx_end_calls()
        .expect("nolgn offers write_end")
        .write_end(tid, lpn, &data)
        .unwrap();
}

#[test]
fn with_write_end_a_commit_programs_nothing() {
    let mut d = device();
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&*d, 0xA1)).unwrap();
    assert_eq!(programs(&*d), 0, "the newest page waits in DRAM");
    d.write_tx(1, 4, &page(&*d, 0xA2)).unwrap();
    assert_eq!(programs(&*d), 1, "the next write programs it");
    write_end(&mut *d, 1, 5, 0xA3);
    assert_eq!(programs(&*d), 3, "write_end programs the held page and its own");
    d.commit(1).unwrap();
    assert_eq!(programs(&*d), 3, "the commit programs nothing");
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 4), reads(&mut *d, 5)), (0xA1, 0xA2, 0xA3));
    assert_eq!((counter(&*d, "nolgn_end_writes"), counter(&*d, "nolgn_commit_programs")), (1, 0));

    // Without write_end, the commit programs the held-back last page.
    d.begin(2).unwrap();
    d.write_tx(2, 3, &page(&*d, 0xB1)).unwrap();
    d.write_tx(2, 4, &page(&*d, 0xB2)).unwrap();
    let before = programs(&*d);
    d.commit(2).unwrap();
    assert_eq!(programs(&*d), before + 1);
    assert_eq!(counter(&*d, "nolgn_commit_programs"), 1);
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 4)), (0xB1, 0xB2));
}

#[test]
fn others_read_the_old_version_and_an_abort_brings_it_back() {
    let mut d = device();
    d.write(7, &page(&*d, 1)).unwrap();
    d.begin(1).unwrap();
    d.write_tx(1, 7, &page(&*d, 2)).unwrap();
    d.write_tx(1, 8, &page(&*d, 3)).unwrap();
    d.write_tx(1, 9, &page(&*d, 4)).unwrap();
    let mut buf = page(&*d, 0);
    d.read_tx(1, 7, &mut buf).unwrap();
    assert_eq!(buf[0], 2, "the transaction reads its own page");
    d.read_tx(1, 9, &mut buf).unwrap();
    assert_eq!(buf[0], 4, "and its held-back one");
    assert_eq!((reads(&mut *d, 7), reads(&mut *d, 8)), (1, 0), "anyone else reads the old versions");
    let before = programs(&*d);
    d.abort(1).unwrap();
    assert_eq!(programs(&*d), before, "an abort programs nothing");
    assert_eq!((reads(&mut *d, 7), reads(&mut *d, 8), reads(&mut *d, 9)), (1, 0, 0));
    assert_eq!(counter(&*d, "nolgn_rollback_pages"), 2, "two pages were programmed, one held");
    d.check_invariants().unwrap();
}

#[test]
fn a_page_another_open_transaction_wrote_is_refused_and_abort_after_write_end_too() {
    let mut d = device();
    d.begin(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(1, 7, &page(&*d, 1)).unwrap();
    let refused = |r: Result<u64, DeviceError>| matches!(r, Err(DeviceError::IsolationUnsupported { .. }));
    assert!(refused(d.write_tx(2, 7, &page(&*d, 2))));
    assert!(refused(d.write(7, &page(&*d, 2))));
    assert!(refused(d.trim(7)));
    write_end(&mut *d, 1, 8, 1);
    assert!(matches!(d.abort(1), Err(DeviceError::CallOrder(_))), "its end is on flash");
    assert!(matches!(d.write_tx(1, 9, &page(&*d, 1)), Err(DeviceError::CallOrder(_))));
    d.commit(1).unwrap();
    d.write_tx(2, 7, &page(&*d, 2)).unwrap();
    d.commit(2).unwrap();
    assert_eq!(reads(&mut *d, 7), 2);
}

#[test]
fn a_full_p2p_table_refuses_a_new_entry_only() {
    let mut d = device_with(FtlConfig::default(), &ProtocolOptions::new().with("p2p-entries", 2));
    d.begin(1).unwrap();
    d.write_tx(1, 1, &page(&*d, 1)).unwrap();
    d.write_tx(1, 2, &page(&*d, 1)).unwrap();
    assert!(matches!(
        d.write_tx(1, 3, &page(&*d, 1)),
        Err(DeviceError::TableFull { capacity: 2 })
    ));
    d.write_tx(1, 1, &page(&*d, 2)).unwrap();
    d.commit(1).unwrap();
    assert_eq!((reads(&mut *d, 1), reads(&mut *d, 2), reads(&mut *d, 3)), (2, 1, 0));
    assert_eq!(counter(&*d, "nolgn_p2p_peak"), 2);
}

/// After a cut: a committed transaction stays, one with its end page on
/// flash but no commit yet is committed, and an open one is rolled back,
/// though the L2P pointed to its pages.
#[test]
fn recovery_keeps_the_end_flagged_and_rolls_back_the_rest() {
    let cfg = FtlConfig::default();
    let mut d = device_with(cfg.clone(), &ProtocolOptions::new());
    for lpn in 0..6 {
        d.write(lpn, &page(&*d, 1)).unwrap();
    }
    d.flush().unwrap();
    d.begin(1).unwrap();
    d.write_tx(1, 0, &page(&*d, 2)).unwrap();
    d.write_tx(1, 1, &page(&*d, 2)).unwrap();
    d.commit(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(2, 2, &page(&*d, 3)).unwrap();
    d.write_tx(2, 3, &page(&*d, 3)).unwrap();
    d.write_tx(2, 9, &page(&*d, 3)).unwrap();
    d.begin(3).unwrap();
    d.write_tx(3, 4, &page(&*d, 4)).unwrap();
    write_end(&mut *d, 3, 5, 4);
    assert_eq!(reads(&mut *d, 2), 1);
    let mut d = cut(d, cfg);
    let got: Vec<u8> = (0..6).map(|l| reads(&mut *d, l)).collect();
    assert_eq!(got, [2, 2, 1, 1, 4, 4]);
    assert_eq!(reads(&mut *d, 9), 0, "a page no one had goes back to unmapped");
    assert_eq!(counter(&*d, "nolgn_recovered_commits"), 2);
    assert_eq!(counter(&*d, "nolgn_recovered_rollbacks"), 1);
    assert_eq!(
        counter(&*d, "nolgn_rollback_pages"),
        2,
        "the third page was held back, never programmed"
    );
    d.check_invariants().unwrap();
    // Nothing is open after a mount: every page takes writes.
    d.write(2, &page(&*d, 5)).unwrap();
}

/// A checkpoint after every program: one comes right after a commit's
/// end-flagged page. It must record the transaction ended, not open, or
/// recovery (finding the flag older than the checkpoint) rolls it back.
#[test]
fn a_checkpoint_right_after_the_end_page_keeps_the_commit() {
    let cfg = FtlConfig {
        checkpoint_every_pages: 1,
        ..FtlConfig::default()
    };
    for with_write_end in [false, true] {
        let mut d = device_with(cfg.clone(), &ProtocolOptions::new());
        d.write(1, &page(&*d, 1)).unwrap();
        d.begin(1).unwrap();
        d.write_tx(1, 1, &page(&*d, 2)).unwrap();
        if with_write_end {
            write_end(&mut *d, 1, 2, 2);
        } else {
            d.write_tx(1, 2, &page(&*d, 2)).unwrap();
        }
        d.commit(1).unwrap();
        let mut d = cut(d, cfg.clone());
        assert_eq!((reads(&mut *d, 1), reads(&mut *d, 2)), (2, 2), "write_end: {with_write_end}");
    }
}

/// An open transaction's old pages lock their blocks: GC takes other
/// victims (counted), and the old versions are there for the abort.
#[test]
fn gc_skips_locked_blocks_and_the_old_versions_survive() {
    let mut d = device();
    // Half the device: locked blocks hold back their dead pages, and a full
    // device could run out of victims (the paper's stall).
    let n = d.info().logical_pages / 2;
    for lpn in 0..n {
        d.write(lpn, &page(&*d, 1)).unwrap();
    }
    d.begin(1).unwrap();
    // Old versions spread over the first blocks written.
    for lpn in (0..n).step_by(37).take(8) {
        d.write_tx(1, lpn, &page(&*d, 2)).unwrap();
    }
    // Overwrites in scattered order, so victims keep some live pages.
    let mut x = 0x2545_f491_u32;
    for _ in 0..4 * n {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        let lpn = x % n;
        if !lpn.is_multiple_of(37) {
            d.write(lpn, &page(&*d, 10)).unwrap();
        }
    }
    let s = d.stats();
    assert!(s.gc_runs > 0 && s.gc_victims_skipped > 0, "{s:?}");
    assert!(counter(&*d, "nolgn_locked_blocks_peak") >= 2);
    d.check_invariants().unwrap();
    d.abort(1).unwrap();
    for lpn in (0..n).step_by(37).take(8) {
        assert_eq!(reads(&mut *d, lpn), 1, "lpn {lpn}");
    }
}

/// The full scan reads every block in use; the same transactions come back.
#[test]
fn the_full_scan_reads_every_block() {
    let opts = ProtocolOptions::new().with("full-scan", 1);
    let cfg = FtlConfig {
        checkpoint_at_flush: true,
        ..FtlConfig::default()
    };
    let mut d = device_with(cfg.clone(), &opts);
    for lpn in 0..40 {
        d.write(lpn, &page(&*d, 1)).unwrap();
    }
    d.flush().unwrap();
    d.begin(1).unwrap();
    d.write_tx(1, 3, &page(&*d, 2)).unwrap();
    d.write_tx(1, 4, &page(&*d, 2)).unwrap();
    let mut d = mount("nolgn", d.into_nand(), cfg, &opts).unwrap();
    assert_eq!((reads(&mut *d, 3), reads(&mut *d, 4)), (1, 1));
    let r = d.recovery_report().unwrap();
    assert!(r.protocol_pages_scanned >= 40, "{r:?}");
}
