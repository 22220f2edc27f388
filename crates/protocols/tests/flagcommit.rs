//! CFC and AFC (Flag Commit), scenario by scenario (the crash contract is
//! in txftl-harness's crash tests): what a commit and an abort program, the
//! flags GC moves before a victim goes, the programs per page within NOP,
//! and recovery from the NAND alone after DRAM is dropped.

mod common;
use common::{page, reads as read};
use txftl_ftl::extensions::TxEnd;
use txftl_ftl::{Device, DeviceError, Ftl, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::afc::{Afc, AfcHooks};
use txftl_protocols::cfc::{Cfc, CfcHooks};
use txftl_protocols::flagcommit::{FlagDevice, FlagHooks, FlagRule};
use txftl_protocols::AnyDevice;

fn nand() -> Nand {
    Nand::new(preset("tiny-slc").unwrap().config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
}

fn device<R: FlagRule>(block_flags: bool) -> FlagDevice<R> {
    let n = nand();
    let hooks = FlagHooks::<R>::new(n.geometry(), block_flags, false);
    FlagDevice::new(Ftl::format(n, FtlConfig::default(), hooks).unwrap())
}

/// Power loss: DRAM is gone, the NAND is mounted again.
fn power_cycle<R: FlagRule>(d: FlagDevice<R>) -> FlagDevice<R>
where
    FlagDevice<R>: AnyDevice,
{
    let n = Box::new(d).into_nand();
    let hooks = FlagHooks::<R>::new(n.geometry(), true, false);
    FlagDevice::new(Ftl::mount(n, FtlConfig::default(), hooks).unwrap())
}

fn partials(d: &dyn Device) -> u64 {
    d.stats().flash_partial_programs
}

/// CFC: one partial program commits (TRUE on the last page); a `write_end`
/// last page is programmed TRUE and the commit programs nothing; an abort
/// programs nothing at all.
#[test]
fn cfc_commits_by_one_flag_and_aborts_by_nothing() {
    let mut d: Cfc = device(true);
    d.begin(1).unwrap();
    for lpn in 0..3 {
        d.write_tx(1, lpn, &page(&d, 0xA0 + lpn as u8)).unwrap();
    }
    let (p, f) = (d.stats().flash_programs, partials(&d));
    d.commit(1).unwrap();
    assert_eq!((d.stats().flash_programs, partials(&d)), (p, f + 1), "one partial program, no page");
    d.begin(2).unwrap();
    d.write_tx(2, 0, &page(&d, 0xB0)).unwrap();
    d.write_end(2, 1, &page(&d, 0xB1)).unwrap();
    let f = partials(&d);
    d.commit(2).unwrap();
    assert_eq!(partials(&d), f, "write_end's TRUE page commits: nothing more");
    d.begin(3).unwrap();
    d.write_tx(3, 2, &page(&d, 0xC2)).unwrap();
    let (p, f) = (d.stats().flash_programs, partials(&d));
    d.abort(3).unwrap();
    assert_eq!((d.stats().flash_programs, partials(&d)), (p, f), "an abort programs nothing");
    assert_eq!(d.stats().aborts, 1);
    let mut d = power_cycle(d);
    assert_eq!((read(&mut d, 0), read(&mut d, 1), read(&mut d, 2)), (0xB0, 0xB1, 0xA2));
}

/// AFC: the first page is FALSE, the commit flips it (one partial program,
/// with `write_end` too); an abort programs nothing; an open transaction at
/// the cut is gone after it.
#[test]
fn afc_flips_the_first_page_and_drops_an_open_transaction() {
    let mut d: Afc = device(true);
    d.begin(1).unwrap();
    for lpn in 0..3 {
        d.write_tx(1, lpn, &page(&d, 0xA0 + lpn as u8)).unwrap();
    }
    let f = partials(&d);
    d.commit(1).unwrap();
    assert_eq!(partials(&d), f + 1);
    d.begin(2).unwrap();
    d.write_tx(2, 0, &page(&d, 0xB0)).unwrap();
    let f = partials(&d);
    d.write_end(2, 1, &page(&d, 0xB1)).unwrap();
    assert_eq!(partials(&d), f + 1, "AFC's flip is mandatory, write_end or not (§3.3)");
    d.commit(2).unwrap();
    d.begin(3).unwrap();
    d.write_tx(3, 2, &page(&d, 0xC2)).unwrap();
    d.write_tx(3, 0, &page(&d, 0xC0)).unwrap();
    let mut d = power_cycle(d);
    assert_eq!((read(&mut d, 0), read(&mut d, 1), read(&mut d, 2)), (0xB0, 0xB1, 0xA2));
    assert_eq!(d.ftl().hooks().recovered_uncommitted, 1);
}

/// Transactions rewritten until GC runs many times, some aborted: no page
/// takes more programs than the array's NOP, flags GC moved keep every
/// committed page after a power cycle, and no abort comes back.
fn churn<R: FlagRule>(block_flags: bool) -> (u64, u64)
where
    FlagDevice<R>: AnyDevice,
{
    let mut d: FlagDevice<R> = device(block_flags);
    let n = d.info().logical_pages.min(40);
    let mut want = vec![0u8; n as usize];
    let mut tag = 1u8;
    for t in 1..400u32 {
        d.begin(t).unwrap();
        let lpns: Vec<u32> = (0..4).map(|i| (t * 7 + i * 13) % n).collect();
        for &l in &lpns {
            d.write_tx(t, l, &page(&d, tag)).unwrap();
        }
        if t % 4 == 0 {
            d.abort(t).unwrap();
        } else {
            d.commit(t).unwrap();
            for &l in &lpns {
                want[l as usize] = tag;
            }
        }
        tag = tag.wrapping_add(1).max(1);
    }
    let s = d.stats();
    let geo = *d.ftl().nand().geometry();
    for ppn in 0..geo.page_count() {
        assert!(d.ftl().nand().inspect_programs(ppn) <= geo.nop, "page {ppn} past NOP");
    }
    let moves = s.protocol.get("fc_gc_flag_moves");
    let mut d = power_cycle(d);
    for l in 0..n {
        if want[l as usize] != 0 {
            assert_eq!(read(&mut d, l), want[l as usize], "lpn {l}");
        }
    }
    (s.gc_runs, moves)
}

#[test]
fn cfc_gc_moves_flags_and_keeps_every_commit() {
    let (gc, moves) = churn::<txftl_protocols::cfc::CfcRule>(false);
    assert!(gc > 50 && moves > 0, "{gc} GC runs, {moves} flags moved");
    let (gc, _) = churn::<txftl_protocols::cfc::CfcRule>(true);
    assert!(gc > 50);
}

#[test]
fn afc_gc_moves_false_and_brings_no_abort_back() {
    let (gc, moves) = churn::<txftl_protocols::afc::AfcRule>(true);
    assert!(gc > 50 && moves > 0, "{gc} GC runs, {moves} FALSE moved");
}

/// What Flag Commit cannot do is refused with a typed error.
#[test]
fn refusals() {
    let mut d: Cfc = device(true);
    assert!(matches!(d.trim(0), Err(DeviceError::Unsupported { .. })));
    d.begin(1).unwrap();
    d.begin(2).unwrap();
    d.write_tx(1, 5, &page(&d, 1)).unwrap();
    assert!(matches!(
        d.write_tx(2, 5, &page(&d, 2)),
        Err(DeviceError::IsolationUnsupported { .. })
    ));
    d.write_end(1, 6, &page(&d, 1)).unwrap();
    assert!(matches!(d.abort(1), Err(DeviceError::CallOrder(_))), "write_end committed it");
    assert!(matches!(d.commit(9), Err(DeviceError::UnknownTransaction(9))));
    let _: &CfcHooks = d.ftl().hooks();
    let _: Option<&AfcHooks> = None;
}
