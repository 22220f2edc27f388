//! `dftl`: the cache's cost and what survives a power cut.

use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn device(cmt_pages: u32) -> Box<dyn AnyDevice> {
    device_with(ProtocolOptions::new().with("cmt-pages", cmt_pages))
}

fn device_with(opts: ProtocolOptions) -> Box<dyn AnyDevice> {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = 64; // 6 translation pages of 128 entries
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format("dftl", nand, FtlConfig::default(), &opts).unwrap()
}

/// Every logical page written `rounds` times, the translation pages in turn.
fn write_rounds(d: &mut dyn AnyDevice, rounds: u8) {
    let n = d.info().logical_pages;
    let pages = n.div_ceil(128);
    for r in 1..=rounds {
        // Each write on the next translation page.
        for i in 0..pages * 128 {
            let lpn = (i % pages) * 128 + i / pages;
            if lpn < n {
                d.write(lpn, &vec![r; d.info().page_size as usize]).unwrap();
            }
        }
        d.flush().unwrap();
    }
}

#[test]
fn a_cache_smaller_than_the_table_misses_and_writes_changed_pages_back() {
    let mut small = device(1);
    let mut whole = device(64);
    write_rounds(&mut *small, 2);
    write_rounds(&mut *whole, 2);
    let (s, w) = (small.stats(), whole.stats());
    let pages = small.info().logical_pages.div_ceil(128) as u64;
    assert!(s.protocol.get("cmt_misses") > 100 * pages, "{s:?}");
    assert!(s.protocol.get("cmt_write_backs") > 100 && s.map_reads > 0, "{s:?}");
    // A cache holding the whole table misses once a page and writes nothing back.
    assert_eq!(w.protocol.get("cmt_misses"), pages, "{w:?}");
    assert_eq!(
        w.protocol.get("cmt_write_backs") + w.protocol.get("cmt_eviction_checkpoints"),
        0,
        "{w:?}"
    );
    assert!(s.map_l2p_writes > w.map_l2p_writes && s.sim_time_ns > w.sim_time_ns, "{s:?}\n{w:?}");
}

/// `evict-checkpoint=1`: every changed victim costs a checkpoint (a record,
/// the block table and a superblock besides the page), more than writing it
/// back alone.
#[test]
fn evicting_by_checkpoint_costs_more_than_writing_back() {
    let opts = ProtocolOptions::new().with("cmt-pages", 1);
    let mut back = device_with(opts.clone());
    let mut ckpt = device_with(opts.with("evict-checkpoint", 1));
    write_rounds(&mut *back, 2);
    write_rounds(&mut *ckpt, 2);
    let (b, c) = (back.stats(), ckpt.stats());
    assert_eq!(c.protocol.get("cmt_write_backs"), 0, "{c:?}");
    assert!(c.protocol.get("cmt_eviction_checkpoints") > 100, "{c:?}");
    assert!(c.checkpoints > b.checkpoints + 100, "{b:?}\n{c:?}");
    assert!(c.map_writes > b.map_writes && c.sim_time_ns > b.sim_time_ns, "{b:?}\n{c:?}");
}

#[test]
fn what_was_flushed_survives_a_power_cut_with_a_cold_cache() {
    let mut d = device(1);
    write_rounds(&mut *d, 3);
    let nand = d.into_nand();
    let opts = ProtocolOptions::new().with("cmt-pages", 1);
    let mut d = mount("dftl", nand, FtlConfig::default(), &opts).unwrap();
    let mut buf = vec![0u8; d.info().page_size as usize];
    for lpn in 0..d.info().logical_pages {
        d.read(lpn, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == 3), "lpn {lpn}");
    }
    d.check_invariants().unwrap();
    assert!(d.stats().protocol.get("cmt_misses") > 0, "reads after the mount page the table in");
}

/// `scan-recovery=1` (the Möbius paper's DFTL): after the same writes and
/// power cut, recovery reads every page of every block in use, more than
/// the roll-forward's blocks written since the checkpoint, on the device
/// clock, and rebuilds the same mappings.
#[test]
fn scan_recovery_reads_every_block_in_use_and_maps_the_same() {
    let mut recovered = Vec::new();
    for scan in [0, 1] {
        let opts = ProtocolOptions::new().with("cmt-pages", 1).with("scan-recovery", scan);
        let mut d = device_with(opts.clone());
        write_rounds(&mut *d, 3);
        assert!(d.stats().checkpoints > 1, "a checkpoint falls inside the writes");
        // One more round, half written and flushed: the roll-forward's part.
        let n = d.info().logical_pages;
        for lpn in 0..n / 2 {
            d.write(lpn, &vec![4; d.info().page_size as usize]).unwrap();
        }
        d.flush().unwrap();
        let mut nand = d.into_nand();
        nand.power_off();
        nand.power_on();
        let mut d = mount("dftl", nand, FtlConfig::default(), &opts).unwrap();
        let report = d.recovery_report().unwrap();
        let mut buf = vec![0u8; d.info().page_size as usize];
        for lpn in 0..n {
            d.read(lpn, &mut buf).unwrap();
            let want = if lpn < n / 2 { 4 } else { 3 };
            assert!(buf.iter().all(|&b| b == want), "scan-recovery={scan}, lpn {lpn}");
        }
        d.check_invariants().unwrap();
        recovered.push(report);
    }
    let (roll, scan) = (&recovered[0], &recovered[1]);
    // The whole-SSD scan reads at least every logical page's newest copy.
    let n = u64::from(device(1).info().logical_pages);
    assert!(scan.flash_reads >= roll.flash_reads + n / 2, "{roll:?}\n{scan:?}");
    assert!(scan.time_ns > roll.time_ns, "{roll:?}\n{scan:?}");
}
