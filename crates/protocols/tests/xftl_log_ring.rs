//! X-FTL's X-L2P table as a log of page groups: a table of many pages (600
//! entries, 21 pages on `tiny`) whose older pages stay unchanged while commits
//! go on (one new entry each, slot after slot), so the log ring wraps and the
//! pages recovery still needs must be moved ahead of its erases. Power is cut at every
//! program and erase of the scenario (each torn variant); after recovery from
//! the NAND alone every committed transaction is whole, the one in flight whole
//! or absent.

use std::collections::BTreeMap;
use txftl_ftl::{DeviceError, FtlConfig};
use txftl_nand::{preset, DataMode, Nand, PowerCut, Torn, ViolationPolicy};
use txftl_protocols::{format, mount, AnyDevice, ProtocolOptions};

/// X-L2P entries for X-FTL; nothing for the other protocols.
fn opts(protocol: &str) -> ProtocolOptions {
    ProtocolOptions::new()
        .with("xl2p-entries", 600)
        .for_entry(txftl_protocols::entry(protocol).expect("a known protocol"))
}
const TXS: u32 = 200;
const PAGES_PER_TX: u32 = 1;

fn cfg() -> FtlConfig {
    // No interval checkpoints: every table page written since the last one
    // stays needed, which is what makes moving them necessary.
    FtlConfig {
        checkpoint_every_pages: 1_000_000,
        ..FtlConfig::default()
    }
}

fn fresh() -> Box<dyn AnyDevice> {
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane *= 4;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    format("xftl", nand, cfg(), &opts("xftl")).unwrap()
}

fn page(ps: usize, tx: u32) -> Vec<u8> {
    let mut b = vec![0u8; ps];
    b[..4].copy_from_slice(&tx.to_le_bytes());
    b
}

/// Runs the scenario; returns the transactions whose commit returned, and the
/// one whose commit was in flight at the cut (if any).
fn run(dev: &mut dyn AnyDevice) -> Result<(Vec<u32>, Option<u32>), DeviceError> {
    let ps = dev.info().page_size as usize;
    let mut committed = Vec::new();
    for t in 1..=TXS {
        // Distinct pages per transaction: no commit supersedes an older one, so
        // the table pages of older commits are never rewritten.
        let r = (|| {
            dev.begin(t)?;
            for i in 0..PAGES_PER_TX {
                dev.write_tx(t, t * PAGES_PER_TX + i, &page(ps, t))?;
            }
            Ok(())
        })();
        match r {
            Ok(()) => {}
            Err(DeviceError::PowerLoss) => return Ok((committed, None)),
            Err(e) => return Err(e),
        }
        match dev.commit(t) {
            Ok(_) => committed.push(t),
            Err(DeviceError::PowerLoss) => return Ok((committed, Some(t))),
            Err(e) => return Err(e),
        }
    }
    Ok((committed, None))
}

fn check(dev: &mut dyn AnyDevice, committed: &[u32], in_flight: Option<u32>) -> Result<(), String> {
    let ps = dev.info().page_size as usize;
    let mut buf = vec![0u8; ps];
    let mut seen: BTreeMap<u32, usize> = BTreeMap::new();
    for t in 1..=TXS {
        for i in 0..PAGES_PER_TX {
            let lpn = t * PAGES_PER_TX + i;
            dev.read(lpn, &mut buf).map_err(|e| format!("read {lpn}: {e}"))?;
            let got = u32::from_le_bytes(buf[..4].try_into().unwrap());
            if got == t {
                *seen.entry(t).or_default() += 1;
            } else if got != 0 {
                return Err(format!("lpn {lpn} holds transaction {got}'s page"));
            }
        }
    }
    for &t in committed {
        if seen.get(&t) != Some(&(PAGES_PER_TX as usize)) {
            return Err(format!(
                "committed transaction {t} shows {:?} of {PAGES_PER_TX} pages",
                seen.get(&t)
            ));
        }
    }
    for (&t, &n) in &seen {
        let allowed = committed.contains(&t) || (Some(t) == in_flight && n == PAGES_PER_TX as usize);
        if !allowed {
            return Err(format!(
                "transaction {t} shows {n} pages but did not commit (in flight: {in_flight:?})"
            ));
        }
    }
    Ok(())
}

#[test]
fn pages_still_needed_move_ahead_of_the_ring_and_every_cut_holds() {
    // The uncut run: it must move table pages, and count its operations.
    let mut dev = fresh();
    let base = dev.nand().op_count();
    dev.nand_mut().set_op_log(true);
    let (committed, _) = run(&mut *dev).unwrap();
    assert_eq!(committed.len(), TXS as usize);
    let s = dev.stats();
    assert!(s.protocol_log_moves > 0, "no table page was moved ahead: {s:?}");
    assert_eq!(s.checkpoints, 0, "{s:?}");
    assert!(
        s.protocol_meta_writes - s.protocol_log_moves < 3 * s.commits,
        "a commit writes only the table pages it changed: {s:?}"
    );
    let log: Vec<_> = dev.nand().op_log().to_vec();
    let mut points = 0;
    for (at, kind) in log.iter().enumerate() {
        if !kind.mutates() {
            continue;
        }
        for torn in [Torn::None, Torn::Partial, Torn::Data] {
            points += 1;
            let mut dev = fresh();
            dev.nand_mut().arm_power_cut(PowerCut {
                at_op: base + at as u64,
                torn,
                seed: 7,
            });
            let (committed, in_flight) = run(&mut *dev).unwrap();
            let mut nand = dev.into_nand();
            nand.power_off();
            nand.power_on();
            let mut dev =
                mount("xftl", nand, cfg(), &opts("xftl")).unwrap_or_else(|e| panic!("cut at op {at} ({torn:?}): recovery failed: {e}"));
            dev.check_invariants().unwrap_or_else(|e| panic!("cut at op {at} ({torn:?}): {e}"));
            check(&mut *dev, &committed, in_flight).unwrap_or_else(|e| panic!("cut at op {at} ({torn:?}): {e}"));
        }
    }
    assert!(points > 1000, "{points} crash points");
}
