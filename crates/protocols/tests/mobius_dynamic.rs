//! `mobius`'s dynamic transaction: `dwrite` HEAD/BODY/REAR, its chain
//! through the pages' spare areas, the inode after the REAR, the refusals
//! while it is open, and what recovery makes of a cut anywhere in it
//! (including the one the chain walk alone decides: REAR on flash, inode
//! not).

mod common;

use common::{nand, page, reads};
use txftl_ftl::extensions::{require, DynamicPos, Extension};
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

fn dwrite(d: &mut dyn AnyDevice, lpn: u32, v: u8, pos: DynamicPos) -> Result<u64, DeviceError> {
    let data = page(d, v);
    require(d.dynamic_tx_calls(), "mobius", Extension::DynamicTx)?.dwrite(lpn, &data, pos)
}

/// A dynamic transaction: one head record, one inode after its REAR; its
/// pages unseen by plain reads until then; other writes refused while it is
/// open; a one-page transaction is a lone REAR; an abort writes an inode
/// and restores nothing it did not change. Everything survives a cut.
#[test]
fn a_dynamic_transaction_is_seen_whole_at_its_rear() {
    let mut d = format("mobius", nand(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    d.write(1, &page(&*d, 9)).unwrap();
    dwrite(&mut *d, 1, 1, DynamicPos::Head).unwrap();
    dwrite(&mut *d, 2, 1, DynamicPos::Body).unwrap();
    assert_eq!(reads(&mut *d, 1), 9, "an open dynamic transaction is invisible to plain reads");
    assert!(matches!(d.write(5, &page(&*d, 5)), Err(DeviceError::CallOrder(_))));
    assert!(matches!(d.trim(5), Err(DeviceError::CallOrder(_))));
    assert!(matches!(dwrite(&mut *d, 3, 1, DynamicPos::Head), Err(DeviceError::CallOrder(_))));
    dwrite(&mut *d, 3, 1, DynamicPos::Rear).unwrap();
    assert_eq!((reads(&mut *d, 1), reads(&mut *d, 2), reads(&mut *d, 3)), (1, 1, 1));
    assert!(matches!(dwrite(&mut *d, 3, 1, DynamicPos::Body), Err(DeviceError::CallOrder(_))));
    dwrite(&mut *d, 4, 2, DynamicPos::Rear).unwrap();
    dwrite(&mut *d, 1, 3, DynamicPos::Head).unwrap();
    require(d.dynamic_tx_calls(), "mobius", Extension::DynamicTx)
        .unwrap()
        .dabort()
        .unwrap();
    let p = d.stats().protocol;
    assert_eq!((p.get("mobius_head_records"), p.get("mobius_dynamic_inodes")), (3, 3), "{p:?}");
    let mut nand = d.into_nand();
    nand.power_on();
    let mut d = mount("mobius", nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let got: Vec<u8> = (1..=4).map(|l| reads(&mut *d, l)).collect();
    assert_eq!(got, vec![1, 1, 1, 2]);
    assert_eq!(d.stats().protocol.get("mobius_chain_pages_read"), 0, "every chain had its inode");
    d.check_invariants().unwrap();
}

/// A device without dynamic transactions refuses `dwrite`, typed.
#[test]
fn a_protocol_without_dynamic_transactions_refuses_them() {
    let mut d = format("lighttx", nand(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    assert!(matches!(
        dwrite(&mut *d, 1, 1, DynamicPos::Head),
        Err(DeviceError::Unsupported { .. })
    ));
}

/// What a mount after a cut found: pages 0..5, the walk's counters (pages
/// read, closed chains found), the invariants.
type AfterCut = (Vec<u8>, (u64, u64), Result<(), String>);

/// [`AfterCut`] of a cut at the `k`-th flash operation of a dynamic
/// transaction of 2s over committed 1s (None: it ended before).
fn cut_dynamic_at(protocol: &str, k: u64) -> Option<AfterCut> {
    let mut d = format(protocol, nand(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    for lpn in 0..5 {
        d.write(lpn, &page(&*d, 1)).unwrap();
    }
    d.flush().unwrap();
    let ops = d.nand().op_count();
    d.nand_mut().arm_power_cut(txftl_nand::PowerCut {
        at_op: ops + k,
        torn: txftl_nand::Torn::None,
        seed: 1,
    });
    let r = (0..5).try_for_each(|lpn| {
        let pos = match lpn {
            0 => DynamicPos::Head,
            4 => DynamicPos::Rear,
            _ => DynamicPos::Body,
        };
        dwrite(&mut *d, lpn, 2, pos).map(|_| ())
    });
    if r.is_ok() {
        return None;
    }
    let mut nand = d.into_nand();
    nand.power_on();
    let mut d = mount(protocol, nand, FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    let got = (0..5)
        .map(|lpn| {
            let mut buf = page(&*d, 0);
            d.read(lpn, &mut buf).map(|_| buf[0]).unwrap_or(0xEE)
        })
        .collect();
    let p = d.stats().protocol;
    let walk = (p.get("mobius_chain_pages_read"), p.get("mobius_chains_closed_found"));
    Some((got, walk, d.check_invariants()))
}

/// A cut at every flash operation of a dynamic transaction (head record,
/// five pages, inode): recovery shows it whole or not at all; the cut that
/// leaves the REAR on flash and not the inode is decided by walking the
/// chain, found closed (committed); the others before it walk a chain that
/// breaks off. The canary, which takes a chain's intact prefix, shows the
/// transaction in part.
#[test]
fn a_cut_inside_a_dynamic_transaction_and_the_chain_walk() {
    let (mut walked, mut closed) = (0, 0);
    for k in 0.. {
        let Some((got, (pages, found), invariants)) = cut_dynamic_at("mobius", k) else {
            break;
        };
        assert!(got == vec![1; 5] || got == vec![2; 5], "cut at op {k}: {got:?}");
        invariants.unwrap();
        walked += (pages > 0) as u32;
        closed += found;
        if found > 0 {
            assert_eq!(got, vec![2; 5], "cut at op {k}: a closed chain is committed");
        }
    }
    assert!(walked >= 4 && closed == 1, "walks {walked}, closed chains {closed}");
    let caught = (0..)
        .map_while(|k| cut_dynamic_at("mobius-canary", k))
        .any(|(got, _, invariants)| (got != vec![1; 5] && got != vec![2; 5]) || invariants.is_err());
    assert!(caught, "the canary showed no transaction in part");
}

/// The transactional calls with `dynamic-pct=100`: each transaction is the
/// dynamic one, its last page held back to become the REAR; a second one
/// begun while it is open is refused; read_tx sees its own pages, plain
/// reads the committed ones.
#[test]
fn the_transactional_calls_as_dynamic_transactions() {
    let opts = ProtocolOptions::new().with("dynamic-pct", 100);
    let mut d = format("mobius", nand(), FtlConfig::default(), &opts).unwrap();
    d.begin(1).unwrap();
    for lpn in 0..4 {
        d.write_tx(1, lpn, &page(&*d, 5)).unwrap();
    }
    let mut buf = page(&*d, 0);
    d.read_tx(1, 0, &mut buf).unwrap();
    assert_eq!(buf[0], 5, "a page of the chain, read through the transaction");
    d.read_tx(1, 3, &mut buf).unwrap();
    assert_eq!(buf[0], 5, "the page held back");
    assert_eq!(reads(&mut *d, 0), 0);
    assert!(matches!(d.begin(2), Err(DeviceError::CallOrder(_))));
    d.commit(1).unwrap();
    d.begin(3).unwrap();
    d.write_tx(3, 0, &page(&*d, 6)).unwrap();
    d.write_tx(3, 9, &page(&*d, 6)).unwrap();
    d.abort(3).unwrap();
    let s = d.stats();
    assert_eq!((s.commits, s.aborts, s.protocol.get("mobius_head_records")), (1, 1, 2), "{s:?}");
    let mut nand = d.into_nand();
    nand.power_on();
    let mut d = mount("mobius", nand, FtlConfig::default(), &opts).unwrap();
    let got: Vec<u8> = [0, 1, 2, 3, 9].iter().map(|&l| reads(&mut *d, l)).collect();
    assert_eq!(got, vec![5, 5, 5, 5, 0]);
}

/// A static transaction's commit while the dynamic one is open is refused
/// and leaves it open, whole: it commits once the dynamic one ended.
#[test]
fn a_static_commit_refused_during_a_dynamic_transaction_stays_open() {
    let mut d = format("mobius", nand(), FtlConfig::default(), &ProtocolOptions::new()).unwrap();
    d.begin(1).unwrap();
    d.write_tx(1, 7, &page(&*d, 4)).unwrap();
    dwrite(&mut *d, 1, 1, DynamicPos::Head).unwrap();
    assert!(matches!(d.commit(1), Err(DeviceError::CallOrder(_))));
    require(d.dynamic_tx_calls(), "mobius", Extension::DynamicTx)
        .unwrap()
        .dabort()
        .unwrap();
    d.commit(1).unwrap();
    assert_eq!((reads(&mut *d, 7), reads(&mut *d, 1)), (4, 0));
}
