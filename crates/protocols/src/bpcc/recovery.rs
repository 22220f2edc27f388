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
//! committed one replaced it). A transaction's own newer version (a page it
//! wrote twice) is issued only once every earlier page of it is done
//! (`crate::cycle`), so it explains a gap GC left, never one a power cut
//! left in flight.
//!
//! That is sound because of what the device keeps (`mod.rs`): an aborted
//! transaction's last page never reaches the flash (its link is a gap); if
//! a newer version of that logical page exists, it was written after the
//! abort and straddles the gap (until a newer version commits, every write
//! points back past it; the first that commits does too), and a page that
//! straddles a version of an aborted transaction is never erased while that
//! version is *guarded*: a copy of its page, or of the page of the same
//! transaction linking to it, is on flash. Whichever of an aborted
//! transaction's pages GC left, following their links in write order from
//! any of them reaches a missing version (at the latest the last, never
//! programmed) whose linking page is one of those left: that version is
//! guarded, so it is either unexplained (no newer version) or straddled by
//! a page still on flash. A committed version is
//! never straddled by another transaction's page: no other transaction
//! writes a page while one that wrote it is open (no-page-conflict), and
//! every later write points back to it or past it.

use super::format::PageRecord;
use crate::sorted_map::SortedMap;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{Lpn, Ppn, Result, ScannedPages};

/// One intact page the scan found.
#[derive(Clone, Copy, Debug)]
pub struct Found {
    pub ppn: Ppn,
    pub seq: u64,
    pub lpn: Lpn,
    pub rec: PageRecord,
}

impl Found {
    /// (TxID, logical page, version): one page of a transaction, whichever copy.
    fn key(&self) -> (u32, Lpn, u64) {
        (self.rec.tx_id, self.lpn, self.rec.version)
    }
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
    /// Whether version `v` is guarded (`guarded`).
    pub fn guarded(&self, v: (Lpn, u64)) -> bool {
        guarded(&self.versions, v)
    }
}

/// What the guard rule reads of a dead version: the copies of its page on
/// flash and the version whose page links to it.
pub(super) trait GuardedVersion {
    fn copies(&self) -> &BTreeSet<Ppn>;
    fn pred(&self) -> Option<(Lpn, u64)>;
}

impl GuardedVersion for FoundVersion {
    fn copies(&self) -> &BTreeSet<Ppn> {
        &self.copies
    }
    fn pred(&self) -> Option<(Lpn, u64)> {
        self.pred
    }
}

/// The guard rule, one piece for the device (`mod.rs`) and for recovery:
/// a dead version is guarded, and its straddlers stay pinned, while a copy
/// of its page, or of the page of the same transaction linking to it, is on
/// flash.
pub(super) fn guarded<G: GuardedVersion>(versions: &BTreeMap<(Lpn, u64), G>, v: (Lpn, u64)) -> bool {
    let has_copies = |v: Option<(Lpn, u64)>| v.and_then(|v| versions.get(&v)).is_some_and(|d| !d.copies().is_empty());
    versions.get(&v).is_some_and(|d| !d.copies().is_empty() || has_copies(d.pred()))
}

#[derive(Clone, Debug, Default)]
pub struct Resolved {
    /// Logical page -> (its newest committed version's page, that page's sequence number, the version).
    pub mappings: SortedMap<Lpn, (Ppn, u64, u64)>,
    /// Uncommitted transactions with pages found, by TxID.
    pub dead: BTreeMap<u32, DeadTx>,
    /// Pages (the newest copy of each) whose back pointer straddles a
    /// guarded version of a dead transaction: the versions each straddles.
    pub pinned: BTreeMap<Ppn, BTreeSet<(Lpn, u64)>>,
    /// Each pinned page's logical page and version.
    pub pinned_at: BTreeMap<Ppn, (Lpn, u64)>,
    pub committed: u32,
    pub max_tx_id: u32,
    /// Largest version found or linked to.
    pub max_version: u64,
}

/// Every version found (its present copy), by logical page: indices into
/// the pages (sorted by transaction), 4 bytes a version.
struct Versions<'a> {
    pages: &'a [Found],
    by_lpn: Vec<u32>,
}

impl<'a> Versions<'a> {
    /// `pages` sorted by (TxID, logical page, version), a page's present copy first.
    fn new(pages: &'a [Found]) -> Versions<'a> {
        let mut by_lpn: Vec<u32> = (0..pages.len())
            .filter(|&i| i == 0 || pages[i - 1].key() != pages[i].key())
            .map(|i| i as u32)
            .collect();
        by_lpn.sort_unstable_by_key(|&i| pages[i as usize].lpn);
        Versions { pages, by_lpn }
    }

    fn of(&self, lpn: Lpn) -> impl Iterator<Item = &'a Found> + '_ {
        let start = self.by_lpn.partition_point(|&i| self.pages[i as usize].lpn < lpn);
        self.by_lpn[start..]
            .iter()
            .map(|&i| &self.pages[i as usize])
            .take_while(move |p| p.lpn == lpn)
    }

    /// Is version `v` of `lpn`, written by `tx`, straddled by another transaction's page?
    fn straddled(&self, tx: u32, lpn: Lpn, v: u64) -> bool {
        self.of(lpn).any(|w| w.rec.tx_id != tx && w.rec.back < v && v < w.rec.version)
    }

    /// The newest version of `lpn` found.
    fn newest(&self, lpn: Lpn) -> Option<u64> {
        self.of(lpn).map(|w| w.rec.version).max()
    }
}

/// Resolves the pages of a recovery scan, keeping only BPCC's pages (TxID
/// not 0) and of each only what `resolve` needs, as they are read.
pub fn resolve_scanned(pages: ScannedPages<'_>) -> Result<Resolved> {
    let mut kept = Vec::new();
    pages.for_each(|p| {
        let rec = PageRecord::of(&p.oob);
        if rec.tx_id != 0 {
            kept.push(Found {
                ppn: p.ppn,
                seq: p.oob.seq,
                lpn: p.oob.lpn,
                rec,
            });
        }
    })?;
    Ok(resolve_owned(kept))
}

/// The pages found, in the order the scan found them (that order breaks a
/// tie between two copies of one page with the same sequence number: the
/// first found wins).
pub fn resolve(pages: &[Found]) -> Resolved {
    resolve_owned(pages.to_vec())
}

/// A transaction's page is *present* when a copy of it was found; its
/// present copy is the one with the largest sequence number (the first
/// found of those).
///
/// Memory: a whole-device scan finds millions of pages (7.5 million on the
/// 32 GiB device of LightTx's Fig. 8), so this keeps 48 bytes of each
/// (`Found`) in one `Vec`, sorted by (TxID, logical page, version) to group
/// and search it, and a 4-byte index of each present page sorted by logical
/// page (`Versions`); no ordered map per page. The stable sort (which keeps
/// the scan order of equal copies) borrows half the pages' size while it runs.
fn resolve_owned(mut pages: Vec<Found>) -> Resolved {
    let mut r = Resolved::default();
    pages.retain(|p| p.rec.tx_id != 0); // not a BPCC page
    pages.shrink_to_fit();
    for p in &pages {
        r.max_tx_id = r.max_tx_id.max(p.rec.tx_id);
        r.max_version = r.max_version.max(p.rec.version).max(p.rec.next_version);
    }
    // Grouped by transaction, then by page; a page's copies newest first, the
    // first found first among equal sequence numbers (a stable sort).
    pages.sort_by(|a, b| a.key().cmp(&b.key()).then(b.seq.cmp(&a.seq)));
    let present_of = |tx_pages: &[Found]| -> Vec<Found> { tx_pages.chunk_by(|a, b| a.key() == b.key()).map(|c| c[0]).collect() };
    let versions = Versions::new(&pages);
    let mut committed_txs: Vec<u32> = Vec::new();
    for tx_pages in pages.chunk_by(|a, b| a.rec.tx_id == b.rec.tx_id) {
        let tx = tx_pages[0].rec.tx_id;
        let is_present = |lpn: Lpn, version: u64| tx_pages.binary_search_by(|p| (p.lpn, p.rec.version).cmp(&(lpn, version))).is_ok();
        let present = present_of(tx_pages);
        let committed = present.iter().all(|p| {
            let (nl, nv) = (p.rec.next_lpn, p.rec.next_version);
            !versions.straddled(tx, p.lpn, p.rec.version)
                && !versions.straddled(tx, nl, nv)
                && (is_present(nl, nv) || versions.newest(nl).is_some_and(|w| w > nv))
        });
        if committed {
            r.committed += 1;
            committed_txs.push(tx);
        } else {
            let d = r.dead.entry(tx).or_default();
            for copies in tx_pages.chunk_by(|a, b| a.key() == b.key()) {
                let p = copies[0];
                let next = (p.rec.next_lpn, p.rec.next_version);
                let v = d.versions.entry((p.lpn, p.rec.version)).or_default();
                v.copies = copies.iter().map(|c| c.ppn).collect();
                v.next = Some(next);
                d.versions.entry(next).or_default().pred = Some((p.lpn, p.rec.version));
            }
        }
    }
    drop(versions);
    pages.dedup_by_key(|p| p.key());
    // Each page found that straddles a guarded version of a dead
    // transaction stays pinned while that version is guarded. The guarded
    // versions, by logical page: (lpn, version, TxID).
    let mut dead_versions: Vec<(Lpn, u64, u32)> = r
        .dead
        .iter()
        .flat_map(|(&t, d)| d.versions.keys().filter(|&&v| d.guarded(v)).map(move |&(lpn, v)| (lpn, v, t)))
        .collect();
    dead_versions.sort_unstable();
    if !dead_versions.is_empty() {
        for p in &pages {
            let start = dead_versions.partition_point(|&(l, _, _)| l < p.lpn);
            let srs: BTreeSet<(Lpn, u64)> = dead_versions[start..]
                .iter()
                .take_while(|&&(l, _, _)| l == p.lpn)
                .filter(|&&(_, v, t)| t != p.rec.tx_id && p.rec.straddles(v))
                .map(|&(l, v, _)| (l, v))
                .collect();
            if !srs.is_empty() {
                r.pinned.insert(p.ppn, srs);
                r.pinned_at.insert(p.ppn, (p.lpn, p.rec.version));
            }
        }
    }
    // The newest committed version of each logical page (the smallest TxID
    // among equal versions): the present copies of committed transactions,
    // by logical page, newest version first.
    pages.retain(|p| committed_txs.binary_search(&p.rec.tx_id).is_ok());
    pages.sort_unstable_by_key(|p| (p.lpn, Reverse(p.rec.version), p.rec.tx_id));
    pages.dedup_by_key(|p| p.lpn);
    // In place: the entries reuse the pages' memory.
    let mut mappings: Vec<(Lpn, (Ppn, u64, u64))> = pages.into_iter().map(|p| (p.lpn, (p.ppn, p.seq, p.rec.version))).collect();
    mappings.shrink_to_fit();
    r.mappings = SortedMap::from_sorted(mappings);
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

    /// Pinned page -> (the versions it straddles, its own logical page and version).
    type Pins = BTreeMap<Ppn, (BTreeSet<(Lpn, u64)>, (Lpn, u64))>;

    /// The map-based `resolve` this module had before it kept compact sorted
    /// `Vec`s (verbatim but for its result type, and the pinned pages'
    /// (logical page, version), which `mod.rs` took from every page found;
    /// pins by guarded version, as `resolve`'s since both were written):
    /// the reference the equivalence test compares against.
    #[allow(clippy::type_complexity)]
    fn reference(pages: &[Found]) -> (BTreeMap<Lpn, (Ppn, u64, u64)>, BTreeMap<u32, DeadTx>, Pins, (u32, u32, u64)) {
        type Version = (u64, u32, u64);
        fn straddled(versions: &BTreeMap<Lpn, Vec<Version>>, tx: u32, lpn: Lpn, v: u64) -> bool {
            versions
                .get(&lpn)
                .is_some_and(|vs| vs.iter().any(|&(w, t, back)| t != tx && back < v && v < w))
        }
        let (mut committed_count, mut max_tx_id, mut max_version) = (0, 0, 0);
        let mut dead: BTreeMap<u32, DeadTx> = BTreeMap::new();
        let mut present: BTreeMap<(u32, Lpn, u64), (u64, Ppn, PageRecord)> = BTreeMap::new();
        for p in pages {
            if p.rec.tx_id == 0 {
                continue;
            }
            max_tx_id = max_tx_id.max(p.rec.tx_id);
            max_version = max_version.max(p.rec.version).max(p.rec.next_version);
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
        let mut by_tx: BTreeMap<u32, Vec<(Lpn, u64, u64, Ppn, PageRecord)>> = BTreeMap::new();
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
                committed_count += 1;
                for (lpn, ver, seq, ppn, _) in tx_pages {
                    if best.get(&lpn).is_none_or(|&(v, _, _)| ver > v) {
                        best.insert(lpn, (ver, ppn, seq));
                    }
                }
            } else {
                let d = dead.entry(tx).or_default();
                for &(lpn, ver, _, _, rec) in &tx_pages {
                    let next = (rec.next_lpn, rec.next_version);
                    let v = d.versions.entry((lpn, ver)).or_default();
                    v.copies = copies.remove(&(tx, lpn, ver)).unwrap_or_default();
                    v.next = Some(next);
                    d.versions.entry(next).or_default().pred = Some((lpn, ver));
                }
            }
        }
        let at: BTreeMap<Ppn, (Lpn, u64)> = pages.iter().map(|f| (f.ppn, (f.lpn, f.rec.version))).collect();
        let mut pinned = BTreeMap::new();
        for (&(tx, lpn, _), &(_, ppn, rec)) in &present {
            let srs: BTreeSet<(Lpn, u64)> = dead
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
                pinned.insert(ppn, (srs, at[&ppn]));
            }
        }
        let mappings = best.into_iter().map(|(lpn, (ver, ppn, seq))| (lpn, (ppn, seq, ver))).collect();
        (mappings, dead, pinned, (committed_count, max_tx_id, max_version))
    }

    /// Random scans over few transactions, pages and versions (so copies,
    /// equal sequence numbers, gaps, straddles and versions shared by two
    /// transactions all occur): the sorted-`Vec` resolve decides exactly as
    /// the map-based one did, pins included.
    #[test]
    fn matches_the_map_based_reference_on_random_scans() {
        use rand::{Rng, SeedableRng};
        let (mut both, mut pins) = (0, 0);
        for seed in 0..2000u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let n = rng.gen_range(0..40);
            let pages: Vec<Found> = (0..n)
                .map(|i| {
                    let version = rng.gen_range(1..12);
                    Found {
                        ppn: i,
                        seq: rng.gen_range(1..30),
                        lpn: rng.gen_range(0..6),
                        rec: PageRecord {
                            tx_id: rng.gen_range(0..7),
                            version,
                            next_lpn: rng.gen_range(0..6),
                            next_version: rng.gen_range(1..12),
                            back: rng.gen_range(0..version),
                        },
                    }
                })
                .collect();
            let r = resolve(&pages);
            let (mappings, dead, pinned, counts) = reference(&pages);
            assert_eq!(
                r.mappings.iter().map(|(&k, &v)| (k, v)).collect::<BTreeMap<_, _>>(),
                mappings,
                "seed {seed}"
            );
            assert_eq!(r.dead, dead, "seed {seed}");
            let got: Pins = r.pinned.iter().map(|(&p, srs)| (p, (srs.clone(), r.pinned_at[&p]))).collect();
            assert_eq!(got, pinned, "seed {seed}");
            assert_eq!(r.pinned_at.len(), r.pinned.len(), "seed {seed}");
            assert_eq!((r.committed, r.max_tx_id, r.max_version), counts, "seed {seed}");
            both += usize::from(!mappings.is_empty() && !dead.is_empty());
            pins += usize::from(!pinned.is_empty());
        }
        // The scans exercised every outcome, not only trivial ones.
        assert!(
            both > 100 && pins > 100,
            "{both} scans had committed and dead transactions, {pins} pinned pages"
        );
    }
}
