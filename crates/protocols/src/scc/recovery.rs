//! SCC recovery: which transactions' cycles are complete, from every page on
//! the device (the whole-device scan), and the newest committed version of
//! each logical page.
//!
//! A transaction is committed iff every page of it found links to a page
//! that is found too, or to a version of a logical page that a newer version
//! found supersedes (TxFlash's rule: a committed page GC erased because a
//! newer committed version replaced it leaves a gap in its cycle that the
//! newer version explains). That is sound because of the SCC invariant the
//! device keeps (`mod.rs`): while any page of an uncommitted transaction lies
//! on flash, no newer version of any logical page it wrote exists, and the
//! last page it programmed links to a page that never reached the flash.

use super::format::PageLink;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Ppn};

/// One intact page the scan found.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub ppn: Ppn,
    pub seq: u64,
    pub lpn: Lpn,
    pub link: PageLink,
}

/// An uncommitted transaction with pages still on flash: what it wrote or
/// linked to (the lpns no newer version may be written of while it is there)
/// and where its pages are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadTx {
    pub lpns: BTreeSet<Lpn>,
    pub ppns: BTreeSet<Ppn>,
}

#[derive(Clone, Debug, Default)]
pub struct Resolved {
    /// Logical page -> (its newest committed version's page, that page's sequence number).
    pub mappings: BTreeMap<Lpn, (Ppn, u64)>,
    /// Uncommitted transactions with pages found, by TxID.
    pub dead: BTreeMap<u32, DeadTx>,
    pub committed: u32,
    pub max_tx_id: u32,
    /// Largest version found or linked to.
    pub max_version: u64,
}

/// One distinct page of a transaction: (lpn, version, newest copy's sequence number, its page, its links).
type TxPage = (Lpn, u64, u64, Ppn, PageLink);

pub fn resolve(pages: &[Found]) -> Resolved {
    let mut r = Resolved::default();
    // (tx, lpn, version) -> the newest copy (largest sequence number).
    let mut present: BTreeMap<(u32, Lpn, u64), (u64, Ppn, PageLink)> = BTreeMap::new();
    let mut newest: BTreeMap<Lpn, u64> = BTreeMap::new();
    for p in pages {
        if p.link.tx_id == 0 {
            continue; // not an SCC page
        }
        r.max_tx_id = r.max_tx_id.max(p.link.tx_id);
        r.max_version = r.max_version.max(p.link.version).max(p.link.next_version);
        let e = newest.entry(p.lpn).or_insert(p.link.version);
        *e = (*e).max(p.link.version);
        let key = (p.link.tx_id, p.lpn, p.link.version);
        match present.get(&key) {
            Some(&(seq, _, _)) if seq >= p.seq => {}
            _ => {
                present.insert(key, (p.seq, p.ppn, p.link));
            }
        }
    }
    let mut by_tx: BTreeMap<u32, Vec<TxPage>> = BTreeMap::new();
    for (&(tx, lpn, ver), &(seq, ppn, link)) in &present {
        by_tx.entry(tx).or_default().push((lpn, ver, seq, ppn, link));
    }
    // The ppns of every copy, for a dead transaction's list.
    let mut copies: BTreeMap<u32, BTreeSet<Ppn>> = BTreeMap::new();
    for p in pages.iter().filter(|p| p.link.tx_id != 0) {
        copies.entry(p.link.tx_id).or_default().insert(p.ppn);
    }
    let mut best: BTreeMap<Lpn, (u64, Ppn, u64)> = BTreeMap::new();
    for (tx, tx_pages) in by_tx {
        let complete = tx_pages.iter().all(|&(_, _, _, _, l)| {
            present.contains_key(&(tx, l.next_lpn, l.next_version)) || newest.get(&l.next_lpn).is_some_and(|&v| v > l.next_version)
        });
        if complete {
            r.committed += 1;
            for (lpn, ver, seq, ppn, _) in tx_pages {
                if best.get(&lpn).is_none_or(|&(v, _, _)| ver > v) {
                    best.insert(lpn, (ver, ppn, seq));
                }
            }
        } else {
            let d = r.dead.entry(tx).or_default();
            for &(lpn, _, _, _, l) in &tx_pages {
                d.lpns.insert(lpn);
                d.lpns.insert(l.next_lpn);
            }
            d.ppns = copies.remove(&tx).unwrap_or_default();
        }
    }
    r.mappings = best.into_iter().map(|(lpn, (_, ppn, seq))| (lpn, (ppn, seq))).collect();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ppn: Ppn, tx: u32, lpn: Lpn, version: u64, next: (Lpn, u64)) -> Found {
        Found {
            ppn,
            seq: ppn as u64 + 1,
            lpn,
            link: PageLink {
                tx_id: tx,
                version,
                next_lpn: next.0,
                next_version: next.1,
            },
        }
    }

    #[test]
    fn complete_cycle_commits_and_open_chain_does_not() {
        // tx 1: A(1) -> B(2) -> A(1); tx 2: C(3) -> D(4), D never programmed.
        let r = resolve(&[page(0, 1, 10, 1, (11, 2)), page(1, 1, 11, 2, (10, 1)), page(2, 2, 12, 3, (13, 4))]);
        assert_eq!(r.committed, 1);
        assert_eq!(r.mappings.get(&10), Some(&(0, 1)));
        assert_eq!(r.mappings.get(&11), Some(&(1, 2)));
        assert!(!r.mappings.contains_key(&12));
        assert_eq!(r.dead[&2].lpns, [12, 13].into_iter().collect());
        assert_eq!(r.max_version, 4);
    }

    #[test]
    fn a_gap_a_newer_version_explains_is_not_a_break() {
        // tx 1: A(1) -> B(2) -> A(1), then tx 3 rewrote A (5) and GC erased A(1).
        let r = resolve(&[page(1, 1, 11, 2, (10, 1)), page(7, 3, 10, 5, (10, 5))]);
        assert_eq!(r.committed, 2);
        assert_eq!(r.mappings.get(&11), Some(&(1, 2)));
        assert_eq!(r.mappings.get(&10), Some(&(7, 8)));
    }

    #[test]
    fn the_newest_committed_version_wins_and_copies_count_once() {
        let r = resolve(&[page(0, 1, 10, 1, (10, 1)), page(5, 2, 10, 4, (10, 4)), page(9, 2, 10, 4, (10, 4))]);
        assert_eq!(r.committed, 2);
        // The newest copy of version 4.
        assert_eq!(r.mappings.get(&10), Some(&(9, 10)));
    }
}
