//! BPCC recovery: which transactions committed, from every page on the
//! device (the whole-device scan), what each logical page's newest committed
//! version is, and which pages the device must keep pinned from now on.
//!
//! A transaction is committed iff none of its pages, and none of the pages
//! they link to, is *straddled* (a page of the same logical page written by
//! another transaction has a newer version and a back pointer older than it:
//! it was written while this version was not committed, so this version was
//! aborted), and every link of it leads to a page found, or to a version a
//! newer version found explains (GC erases a committed version once a newer
//! committed one replaced it).
//!
//! That is sound because of what the device keeps (`mod.rs`): an aborted
//! transaction's last page never reaches the flash (its link is a gap); if
//! a newer version of that logical page exists, it was written after the
//! abort and straddles the gap (until a newer version commits, every write
//! points back past it; the first that commits does too), and a page that
//! straddles a version of an aborted transaction is never erased while any
//! page of that transaction is on flash. The same holds of every version an
//! aborted transaction wrote or linked to, so whichever of its pages GC left,
//! their links are either unexplained or straddled. A committed version is
//! never straddled by another transaction's page: no other transaction
//! writes a page while one that wrote it is open (no-page-conflict), and
//! every later write points back to it or past it.

use super::format::PageRecord;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Ppn};

/// One intact page the scan found.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub ppn: Ppn,
    pub seq: u64,
    pub lpn: Lpn,
    pub rec: PageRecord,
}

/// An uncommitted transaction with pages still on flash.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadTx {
    /// Every version it wrote or linked to that the scan knows of: (logical page, version).
    pub versions: BTreeMap<(Lpn, u64), FoundVersion>,
}

/// A version a dead transaction wrote or linked to, as the scan found it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FoundVersion {
    /// Every copy of its page found (none: it is a link's target only).
    pub copies: BTreeSet<Ppn>,
    /// The version whose page links to it, if that page was found.
    pub pred: Option<(Lpn, u64)>,
    /// The version its page links to, if its page was found.
    pub next: Option<(Lpn, u64)>,
}

impl DeadTx {
    /// Whether version `v` is guarded: a copy of its page, or of the page
    /// linking to it, is on flash (`mod.rs`: its straddlers stay pinned).
    pub fn guarded(&self, v: (Lpn, u64)) -> bool {
        let has_copies = |v: Option<(Lpn, u64)>| v.and_then(|v| self.versions.get(&v)).is_some_and(|d| !d.copies.is_empty());
        self.versions.get(&v).is_some_and(|d| !d.copies.is_empty() || has_copies(d.pred))
    }
}

#[derive(Clone, Debug, Default)]
pub struct Resolved {
    /// Logical page -> (its newest committed version's page, that page's sequence number, the version).
    pub mappings: BTreeMap<Lpn, (Ppn, u64, u64)>,
    /// Uncommitted transactions with pages found, by TxID.
    pub dead: BTreeMap<u32, DeadTx>,
    /// Pages (the newest copy of each) whose back pointer straddles a
    /// guarded version of a dead transaction: the versions each straddles.
    pub pinned: BTreeMap<Ppn, BTreeSet<(Lpn, u64)>>,
    pub committed: u32,
    pub max_tx_id: u32,
    /// Largest version found or linked to.
    pub max_version: u64,
}

/// One version of a logical page found: (version, TxID, back pointer).
type Version = (u64, u32, u64);

/// One distinct page of a transaction: (lpn, version, newest copy's sequence number, its page, its record).
type TxPage = (Lpn, u64, u64, Ppn, PageRecord);

/// Is version `v` of `lpn`, written by `tx`, straddled by another transaction's page?
fn straddled(versions: &BTreeMap<Lpn, Vec<Version>>, tx: u32, lpn: Lpn, v: u64) -> bool {
    versions
        .get(&lpn)
        .is_some_and(|vs| vs.iter().any(|&(w, t, back)| t != tx && back < v && v < w))
}

pub fn resolve(pages: &[Found]) -> Resolved {
    let mut r = Resolved::default();
    // (tx, lpn, version) -> the newest copy (largest sequence number).
    let mut present: BTreeMap<(u32, Lpn, u64), (u64, Ppn, PageRecord)> = BTreeMap::new();
    for p in pages {
        if p.rec.tx_id == 0 {
            continue; // not a BPCC page
        }
        r.max_tx_id = r.max_tx_id.max(p.rec.tx_id);
        r.max_version = r.max_version.max(p.rec.version).max(p.rec.next_version);
        let key = (p.rec.tx_id, p.lpn, p.rec.version);
        match present.get(&key) {
            Some(&(seq, _, _)) if seq >= p.seq => {}
            _ => {
                present.insert(key, (p.seq, p.ppn, p.rec));
            }
        }
    }
    let mut versions: BTreeMap<Lpn, Vec<Version>> = BTreeMap::new();
    for (&(tx, lpn, ver), &(_, _, rec)) in &present {
        versions.entry(lpn).or_default().push((ver, tx, rec.back));
    }
    let newest = |lpn: Lpn| versions.get(&lpn).and_then(|vs| vs.iter().map(|v| v.0).max());
    let mut by_tx: BTreeMap<u32, Vec<TxPage>> = BTreeMap::new();
    for (&(tx, lpn, ver), &(seq, ppn, rec)) in &present {
        by_tx.entry(tx).or_default().push((lpn, ver, seq, ppn, rec));
    }
    let mut copies: BTreeMap<(u32, Lpn, u64), BTreeSet<Ppn>> = BTreeMap::new();
    for p in pages.iter().filter(|p| p.rec.tx_id != 0) {
        copies.entry((p.rec.tx_id, p.lpn, p.rec.version)).or_default().insert(p.ppn);
    }
    let mut best: BTreeMap<Lpn, (u64, Ppn, u64)> = BTreeMap::new();
    for (tx, tx_pages) in by_tx {
        let committed = tx_pages.iter().all(|&(lpn, ver, _, _, rec)| {
            let (nl, nv) = (rec.next_lpn, rec.next_version);
            !straddled(&versions, tx, lpn, ver)
                && !straddled(&versions, tx, nl, nv)
                && (present.contains_key(&(tx, nl, nv)) || newest(nl).is_some_and(|w| w > nv))
        });
        if committed {
            r.committed += 1;
            for (lpn, ver, seq, ppn, _) in tx_pages {
                if best.get(&lpn).is_none_or(|&(v, _, _)| ver > v) {
                    best.insert(lpn, (ver, ppn, seq));
                }
            }
        } else {
            let d = r.dead.entry(tx).or_default();
            for &(lpn, ver, _, _, rec) in &tx_pages {
                let next = (rec.next_lpn, rec.next_version);
                let v = d.versions.entry((lpn, ver)).or_default();
                v.copies = copies.remove(&(tx, lpn, ver)).unwrap_or_default();
                v.next = Some(next);
                d.versions.entry(next).or_default().pred = Some((lpn, ver));
            }
        }
    }
    // Each page found that straddles a guarded version of a dead
    // transaction stays pinned while that version is guarded.
    for (&(tx, lpn, _), &(_, ppn, rec)) in &present {
        let srs: BTreeSet<(Lpn, u64)> = r
            .dead
            .iter()
            .filter(|(&t, _)| t != tx)
            .flat_map(|(_, d)| {
                d.versions
                    .range((lpn, 0)..=(lpn, u64::MAX))
                    .filter(|(&v, _)| rec.straddles(v.1) && d.guarded(v))
                    .map(|(&v, _)| v)
            })
            .collect();
        if !srs.is_empty() {
            r.pinned.insert(ppn, srs);
        }
    }
    r.mappings = best.into_iter().map(|(lpn, (ver, ppn, seq))| (lpn, (ppn, seq, ver))).collect();
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(ppn: Ppn, tx: u32, lpn: Lpn, version: u64, next: (Lpn, u64), back: u64) -> Found {
        Found {
            ppn,
            seq: ppn as u64 + 1,
            lpn,
            rec: PageRecord {
                tx_id: tx,
                version,
                next_lpn: next.0,
                next_version: next.1,
                back,
            },
        }
    }

    #[test]
    fn complete_cycle_commits_and_open_chain_does_not() {
        // tx 1: A(1) -> B(2) -> A(1); tx 2: C(3) -> D(4), D never programmed.
        let r = resolve(&[
            page(0, 1, 10, 1, (11, 2), 0),
            page(1, 1, 11, 2, (10, 1), 0),
            page(2, 2, 12, 3, (13, 4), 0),
        ]);
        assert_eq!(r.committed, 1);
        assert_eq!(r.mappings.get(&10), Some(&(0, 1, 1)));
        assert!(!r.mappings.contains_key(&12));
        assert_eq!(r.dead[&2].versions.keys().copied().collect::<Vec<_>>(), vec![(12, 3), (13, 4)]);
        assert!(r.dead[&2].guarded((13, 4)), "the page linking to it is on flash");
        assert!(r.pinned.is_empty());
    }

    #[test]
    fn a_gap_a_newer_version_explains_is_not_a_break() {
        // tx 1: A(1) -> B(2) -> A(1), then tx 3 rewrote A (5, back to 1) and GC erased A(1).
        let r = resolve(&[page(1, 1, 11, 2, (10, 1), 0), page(7, 3, 10, 5, (10, 5), 1)]);
        assert_eq!(r.committed, 2);
        assert_eq!(r.mappings.get(&11), Some(&(1, 2, 2)));
        assert_eq!(r.mappings.get(&10), Some(&(7, 8, 5)));
    }

    /// tx 2 aborted: C(3) -> D(4), D dropped. Then D was written again by
    /// tx 5 (version 6, back pointer 0: straddles 4) and by tx 7 (version 8,
    /// back to 6). The gap at D(4) has newer versions, but tx 5's page
    /// straddles it: tx 2 stays aborted, and tx 5's page is pinned.
    #[test]
    fn a_straddled_gap_is_an_abort() {
        let pages = [
            page(0, 1, 12, 1, (12, 1), 0),
            page(2, 2, 12, 3, (13, 4), 1),
            page(4, 5, 13, 6, (13, 6), 0),
            page(5, 7, 13, 8, (13, 8), 6),
        ];
        let r = resolve(&pages);
        assert_eq!(r.committed, 3);
        assert_eq!(r.mappings.get(&12), Some(&(0, 1, 1)), "the aborted version 3 is not mapped");
        assert_eq!(r.mappings.get(&13), Some(&(5, 6, 8)));
        assert!(r.dead.contains_key(&2));
        assert_eq!(r.pinned.keys().copied().collect::<Vec<_>>(), vec![4]);
        // Without the straddling page (what BPCC never lets GC erase) the gap looks explained.
        let r = resolve(&[pages[0], pages[1], pages[3]]);
        assert_eq!(r.mappings.get(&12), Some(&(2, 3, 3)));
    }

    #[test]
    fn a_re_update_inside_a_transaction_is_not_a_straddle() {
        // tx 1 writes A twice (1, 2; both back to 0) and B (3): A(1) -> A(2) -> B(3) -> A(1).
        let r = resolve(&[
            page(0, 1, 10, 1, (10, 2), 0),
            page(1, 1, 10, 2, (11, 3), 0),
            page(2, 1, 11, 3, (10, 1), 0),
        ]);
        assert_eq!(r.committed, 1);
        assert_eq!(r.mappings.get(&10), Some(&(1, 2, 2)));
    }
}
