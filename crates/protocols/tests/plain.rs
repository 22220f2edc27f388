//! The plain FTL, scenario by scenario.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use txftl_ftl::{Device, DeviceError, Ftl, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, PowerCut, Torn, ViolationPolicy};
use txftl_protocols::plain::Plain;
use txftl_protocols::{format, mount, ProtocolOptions};

fn nand(name: &str) -> Nand {
    Nand::new(preset(name).unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

fn page(size: u32, lpn: u32, version: u32) -> Vec<u8> {
    let mut p = vec![0u8; size as usize];
    for (i, b) in p.iter_mut().enumerate() {
        *b = (lpn as usize * 31 + version as usize * 7 + i) as u8;
    }
    p
}

#[test]
fn write_read_overwrite_trim() {
    let mut f = Ftl::format(nand("tiny"), FtlConfig::default(), Plain::default()).unwrap();
    let ps = f.page_size();
    let mut buf = vec![0u8; ps as usize];
    f.write(3, &page(ps, 3, 1)).unwrap();
    f.read(3, &mut buf).unwrap();
    assert_eq!(buf, page(ps, 3, 1));
    f.write(3, &page(ps, 3, 2)).unwrap();
    f.read(3, &mut buf).unwrap();
    assert_eq!(buf, page(ps, 3, 2));
    f.trim(3).unwrap();
    f.read(3, &mut buf).unwrap();
    assert!(buf.iter().all(|&b| b == 0));
    f.check_invariants().unwrap();
}

#[test]
fn bad_input_is_typed() {
    let mut f = Ftl::format(nand("tiny"), FtlConfig::default(), Plain::default()).unwrap();
    let lp = f.logical_pages();
    let ps = f.page_size();
    assert!(matches!(f.write(lp, &page(ps, 0, 0)), Err(DeviceError::OutOfRange { .. })));
    assert!(matches!(f.write(0, &[1, 2, 3]), Err(DeviceError::BufferSize { got: 3, .. })));
    assert!(matches!(f.begin(1), Err(DeviceError::Unsupported { protocol: "plain", .. })));
    let cfg = FtlConfig {
        overprovision_pct: Some(100),
        ..FtlConfig::default()
    };
    assert!(matches!(
        Ftl::format(nand("tiny"), cfg, Plain::default()),
        Err(DeviceError::Config(_))
    ));
    assert!(matches!(
        Ftl::mount(nand("tiny"), FtlConfig::default(), Plain::default()),
        Err(DeviceError::NotFormatted)
    ));
}

/// Random overwrites at full logical capacity: GC must keep up, data must stay right.
#[test]
fn random_overwrites_with_gc_keep_every_page() {
    for policy in [txftl_ftl::GcPolicy::Greedy, txftl_ftl::GcPolicy::CostBenefit] {
        let cfg = FtlConfig {
            gc_policy: policy,
            ..FtlConfig::default()
        };
        let mut f = Ftl::format(nand("tiny"), cfg, Plain::default()).unwrap();
        let (lp, ps) = (f.logical_pages(), f.page_size());
        let mut versions = vec![0u32; lp as usize];
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for lpn in 0..lp {
            versions[lpn as usize] = 1;
            f.write(lpn, &page(ps, lpn, 1)).unwrap();
        }
        for _ in 0..3000 {
            let lpn = rng.gen_range(0..lp);
            versions[lpn as usize] += 1;
            f.write(lpn, &page(ps, lpn, versions[lpn as usize])).unwrap();
        }
        f.check_invariants().unwrap();
        let s = f.stats();
        assert!(s.gc_runs > 0 && s.gc_copies > 0 && s.checkpoints > 0, "{s:?}");
        assert!(s.write_amplification() > 1.0);
        let mut buf = vec![0u8; ps as usize];
        for lpn in 0..lp {
            f.read(lpn, &mut buf).unwrap();
            assert_eq!(buf, page(ps, lpn, versions[lpn as usize]), "lpn {lpn} under {policy:?}");
        }
    }
}

/// Mount after a clean close, and after a cut with no tear: the same data.
#[test]
fn remount_restores_mapping() {
    let mut f = Ftl::format(nand("tiny"), FtlConfig::default(), Plain::default()).unwrap();
    let (lp, ps) = (f.logical_pages(), f.page_size());
    for lpn in 0..lp {
        f.write(lpn, &page(ps, lpn, 1)).unwrap();
    }
    for lpn in (0..lp).step_by(3) {
        f.write(lpn, &page(ps, lpn, 2)).unwrap();
    }
    f.flush().unwrap();
    let n = f.close().unwrap();
    let mut f = Ftl::mount(n, FtlConfig::default(), Plain::default()).unwrap();
    f.check_invariants().unwrap();
    let report = f.recovery_report().unwrap();
    assert_eq!(report.pages_rolled_forward, 0, "a clean close leaves nothing to roll forward");
    let mut buf = vec![0u8; ps as usize];
    for lpn in 0..lp {
        f.read(lpn, &mut buf).unwrap();
        assert_eq!(buf, page(ps, lpn, if lpn % 3 == 0 { 2 } else { 1 }));
    }
    // Writes after the last checkpoint come back through roll-forward.
    for lpn in 0..10 {
        f.write(lpn, &page(ps, lpn, 9)).unwrap();
    }
    f.flush().unwrap();
    let mut n = f.into_nand();
    n.power_off();
    n.power_on();
    let mut f = Ftl::mount(n, FtlConfig::default(), Plain::default()).unwrap();
    assert!(
        f.recovery_report().unwrap().pages_rolled_forward > 0,
        "writes after the last checkpoint come back by roll-forward"
    );
    for lpn in 0..10 {
        f.read(lpn, &mut buf).unwrap();
        assert_eq!(buf, page(ps, lpn, 9));
    }
    f.check_invariants().unwrap();
}

#[test]
fn a_worn_out_device_says_so_and_stays_readable() {
    let mut p = preset("tiny").unwrap();
    p.endurance = 6;
    let n = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let mut f = Ftl::format(
        n,
        FtlConfig {
            wear_spread_max: 1000,
            ..FtlConfig::default()
        },
        Plain::default(),
    )
    .unwrap();
    let (lp, ps) = (f.logical_pages(), f.page_size());
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    let mut latest = vec![None; lp as usize];
    let mut worn_out = None;
    for i in 0..200_000u32 {
        let lpn = rng.gen_range(0..lp);
        match f.write(lpn, &page(ps, lpn, i)) {
            Ok(_) => latest[lpn as usize] = Some(i),
            Err(e @ DeviceError::DeviceWornOut { .. }) => {
                worn_out = Some(e.to_string());
                break;
            }
            Err(e) => panic!("wear-out reported as: {e}"),
        }
    }
    let msg = worn_out.expect("blocks wearing out must end in DeviceWornOut, not \"no space\"");
    assert!(msg.contains("worn out"), "{msg}");
    assert!(f.stats().bad_blocks > 0);
    // Every acknowledged write is still readable.
    let mut buf = vec![0u8; ps as usize];
    for lpn in 0..lp {
        f.read(lpn, &mut buf).unwrap();
        match latest[lpn as usize] {
            Some(v) => assert_eq!(buf, page(ps, lpn, v)),
            None => assert!(buf.iter().all(|&b| b == 0)),
        }
    }
    f.check_invariants().unwrap();
    // Trimming frees space: writes work again.
    for lpn in 0..lp / 2 {
        f.trim(lpn).unwrap();
    }
    f.flush().unwrap();
    f.write(0, &page(ps, 0, 1)).unwrap();
}

#[test]
fn power_cut_mid_write_recovers() {
    for at in [5u64, 40, 77] {
        for torn in Torn::ALL {
            let mut f = Ftl::format(nand("tiny"), FtlConfig::default(), Plain::default()).unwrap();
            let ps = f.page_size();
            let base = f.nand().op_count();
            f.nand_mut().arm_power_cut(PowerCut {
                at_op: base + at,
                torn,
                seed: 9,
            });
            let mut err = None;
            for i in 0..200u32 {
                if let Err(e) = f.write(i % 20, &page(ps, i % 20, i)) {
                    err = Some(e);
                    break;
                }
            }
            assert!(matches!(err, Some(DeviceError::PowerLoss)), "{err:?}");
            let mut n = f.into_nand();
            n.power_on();
            let f = Ftl::mount(n, FtlConfig::default(), Plain::default()).unwrap();
            f.check_invariants().unwrap();
        }
    }
}

/// Hot/cold skew: after the fill, every write goes to 10% of the pages. The
/// blocks holding the cold 90% are never GC victims (all their pages stay
/// valid), so without static wear leveling they are never erased; with it,
/// their data moves and the erase-count spread stays bounded.
#[test]
fn static_wear_leveling_bounds_the_spread() {
    let spread = |wear_spread_max: u32| {
        let cfg = FtlConfig {
            wear_spread_max,
            ..FtlConfig::default()
        };
        let mut p = preset("tiny").unwrap();
        p.geometry.blocks_per_plane = 64;
        let n = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let mut f = Ftl::format(n, cfg, Plain::default()).unwrap();
        let (lp, ps) = (f.logical_pages(), f.page_size());
        for lpn in 0..lp {
            f.write(lpn, &page(ps, lpn, 0)).unwrap();
        }
        let hot = lp / 10;
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        for i in 0..100_000u32 {
            let lpn = rng.gen_range(0..hot);
            f.write(lpn, &page(ps, lpn, i)).unwrap();
        }
        f.check_invariants().unwrap();
        let (lo, hi) = f.wear_spread();
        (hi - lo, f.stats().wear_level_runs)
    };
    let (without, runs_without) = spread(100_000);
    let (with, runs_with) = spread(8);
    assert_eq!(runs_without, 0);
    assert!(runs_with > 0, "static wear leveling never ran");
    assert!(with < without, "spread with static WL {with} should be below {without} without it");
    assert!(without > 100, "the skew must unbalance wear without static WL: spread {without}");
    assert!(with <= 8 + 16, "spread {with} far above the threshold");
}

fn nand_ops(n: &txftl_nand::Nand) -> (u64, u64) {
    let s = n.stats();
    (s.programs + s.partial_programs, s.erases)
}

/// Reliability issue, item 5: looking at a device must not wear it. A mount
/// that finds nothing to recover, followed by a close, programs and erases
/// nothing; a read-only mount of a device that needs recovery reads it right,
/// writes nothing and refuses writes; a normal mount then still recovers it.
#[test]
fn a_mount_that_changes_nothing_writes_nothing_and_read_only_refuses_writes() {
    let cfg = FtlConfig::default();
    let nand = Nand::new(preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let mut d = format("plain", nand, cfg.clone(), &ProtocolOptions::default()).unwrap();
    let ps = d.info().page_size as usize;
    d.write(2, &vec![7u8; ps]).unwrap();
    let nand = d.close().unwrap();
    let before = nand_ops(&nand);
    let d = mount("plain", nand, cfg.clone(), &ProtocolOptions::default()).unwrap();
    assert!(!d.recovery_report().unwrap().sealed);
    let nand = d.close().unwrap();
    assert_eq!(nand_ops(&nand), before, "a clean mount and close wrote to the flash");

    // Write more, then cut power: the next mount has pages to roll forward.
    let mut d = mount("plain", nand, cfg.clone(), &ProtocolOptions::default()).unwrap();
    d.write(3, &vec![8u8; ps]).unwrap();
    d.flush().unwrap();
    let mut nand = d.into_nand();
    nand.power_off();
    nand.power_on();
    let before = nand_ops(&nand);
    let ro = FtlConfig {
        read_only: true,
        ..cfg.clone()
    };
    let mut d = mount("plain", nand, ro, &ProtocolOptions::default()).unwrap();
    let mut buf = vec![0u8; ps];
    d.read(3, &mut buf).unwrap();
    assert_eq!(buf[0], 8, "a read-only mount rolls forward in DRAM");
    assert!(matches!(d.write(4, &buf), Err(DeviceError::ReadOnly(_))));
    assert!(matches!(d.trim(2), Err(DeviceError::ReadOnly(_))));
    assert!(!d.recovery_report().unwrap().sealed);
    let nand = d.close().unwrap();
    assert_eq!(nand_ops(&nand), before, "a read-only mount wrote to the flash");
    let mut d = mount("plain", nand, cfg, &ProtocolOptions::default()).unwrap();
    assert!(
        d.recovery_report().unwrap().sealed,
        "the roll-forward is sealed by a writable mount"
    );
    d.read(3, &mut buf).unwrap();
    assert_eq!(buf[0], 8);
    d.check_invariants().unwrap();
}

/// An array formatted with on-flash format 1 (whole checkpoints, superblock
/// magic "TXFTLSB1") is refused with a reason, not as corrupted or unformatted.
#[test]
fn on_flash_format_1_is_refused_with_a_reason() {
    use txftl_ftl::oob::Oob;
    use txftl_ftl::PageKind;
    let mut n = nand("tiny");
    let g = *n.geometry();
    let mut data = vec![0u8; g.page_size as usize];
    data[..8].copy_from_slice(b"TXFTLSB1");
    let mut oob = vec![0u8; g.oob_size as usize];
    Oob::new(PageKind::Superblock, 0, 1, 0, &[]).encode(&mut oob);
    n.program(0, 0, &data, &oob).unwrap();
    let e = Ftl::mount(n, FtlConfig::default(), Plain::default()).err().expect("refused");
    assert!(matches!(e, DeviceError::Config(_)) && e.to_string().contains("format 1"), "{e}");
}
