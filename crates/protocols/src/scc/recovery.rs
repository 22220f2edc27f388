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
//! on flash, no newer version of any logical page it wrote exists but its
//! own, and the last page it programmed links to a page that never reached
//! the flash. Its own newer version (a page it wrote twice) is issued only
//! once every earlier page of it is done (`crate::cycle`), so it explains a
//! gap GC left, never one a power cut left in flight.
//!
//! Memory: a whole-device scan finds millions of pages (7.5 million on the
//! 32 GiB device of LightTx's Fig. 8), so recovery keeps 48 bytes of each
//! (`Scanned`: the fields below and its block's erase count) in one `Vec`,
//! sorted by (TxID, logical page, version) to group and search it, plus a
//! sorted `Vec` of each logical page's newest version; no ordered map per
//! page.

use super::format::PageLink;
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
    pub link: PageLink,
}

/// What recovery keeps of a scanned page: the page and the erase count its
/// OOB records (a dead transaction's pages are gone once their block's count
/// moves on).
#[derive(Clone, Copy, Debug)]
struct Scanned {
    found: Found,
    erase_count: u32,
}

impl Scanned {
    /// (TxID, logical page, version): one page of a transaction, whichever copy.
    fn key(&self) -> (u32, Lpn, u64) {
        (self.found.link.tx_id, self.found.lpn, self.found.link.version)
    }
}

/// An uncommitted transaction with pages still on flash: what it wrote or
/// linked to (the lpns no newer version may be written of while it is there)
/// and where its pages are.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeadTx {
    pub lpns: BTreeSet<Lpn>,
    /// Every copy of its pages found -> the erase count its OOB records.
    pub ppns: BTreeMap<Ppn, u32>,
}

#[derive(Clone, Debug, Default)]
pub struct Resolved {
    /// Logical page -> (its newest committed version's page, that page's sequence number).
    pub mappings: SortedMap<Lpn, (Ppn, u64)>,
    /// Uncommitted transactions with pages found, by TxID.
    pub dead: BTreeMap<u32, DeadTx>,
    pub committed: u32,
    pub max_tx_id: u32,
    /// Largest version found or linked to.
    pub max_version: u64,
}

/// Resolves the pages of a recovery scan, keeping only SCC's pages (TxID not
/// 0) and of each only what `resolve` needs, as they are read.
pub fn resolve_scanned(pages: ScannedPages<'_>) -> Result<Resolved> {
    let mut kept = Vec::new();
    pages.for_each(|p| {
        let link = PageLink::of(&p.oob);
        if link.tx_id != 0 {
            kept.push(Scanned {
                found: Found {
                    ppn: p.ppn,
                    seq: p.oob.seq,
                    lpn: p.oob.lpn,
                    link,
                },
                erase_count: p.oob.erase_count,
            });
        }
    })?;
    Ok(resolve_kept(kept))
}

/// The pages found, in the order the scan found them (that order breaks a
/// tie between two copies of one page with the same sequence number: the
/// first found wins). Erase counts are taken as 0.
pub fn resolve(pages: &[Found]) -> Resolved {
    resolve_kept(pages.iter().map(|&found| Scanned { found, erase_count: 0 }).collect())
}

/// A transaction's page is *present* when a copy of it was found; its
/// present copy is the one with the largest sequence number (the first
/// found of those).
fn resolve_kept(mut pages: Vec<Scanned>) -> Resolved {
    let mut r = Resolved::default();
    pages.retain(|p| p.found.link.tx_id != 0); // not an SCC page
    pages.shrink_to_fit();
    for p in &pages {
        r.max_tx_id = r.max_tx_id.max(p.found.link.tx_id);
        r.max_version = r.max_version.max(p.found.link.version).max(p.found.link.next_version);
    }
    // Grouped by transaction, then by page; a page's copies newest first, the
    // first found first among equal sequence numbers (a stable sort). Before
    // `newest` exists: the sort's scratch space and it are not held at once.
    pages.sort_by(|a, b| a.key().cmp(&b.key()).then(b.found.seq.cmp(&a.found.seq)));
    // Each logical page's newest version found, sorted by logical page.
    let mut newest: Vec<(Lpn, u64)> = pages.iter().map(|p| (p.found.lpn, p.found.link.version)).collect();
    newest.sort_unstable();
    // Ascending: the last of each logical page is its newest.
    newest.dedup_by(|later, kept| {
        let same = later.0 == kept.0;
        if same {
            kept.1 = later.1;
        }
        same
    });
    newest.shrink_to_fit();
    let newest_of = |lpn: Lpn| newest.binary_search_by_key(&lpn, |&(l, _)| l).ok().map(|i| newest[i].1);
    let mut committed_txs: Vec<u32> = Vec::new();
    for tx_pages in pages.chunk_by(|a, b| a.found.link.tx_id == b.found.link.tx_id) {
        let tx = tx_pages[0].found.link.tx_id;
        let is_present = |lpn: Lpn, version: u64| {
            tx_pages
                .binary_search_by(|p| (p.found.lpn, p.found.link.version).cmp(&(lpn, version)))
                .is_ok()
        };
        let present = || tx_pages.chunk_by(|a, b| a.key() == b.key()).map(|copies| copies[0].found);
        let complete = present().all(|p| {
            let l = p.link;
            is_present(l.next_lpn, l.next_version) || newest_of(l.next_lpn).is_some_and(|v| v > l.next_version)
        });
        if complete {
            r.committed += 1;
            committed_txs.push(tx);
        } else {
            let d = r.dead.entry(tx).or_default();
            for p in present() {
                d.lpns.insert(p.lpn);
                d.lpns.insert(p.link.next_lpn);
            }
            d.ppns = tx_pages.iter().map(|p| (p.found.ppn, p.erase_count)).collect();
        }
    }
    drop(newest);
    // The newest committed version of each logical page (the smallest TxID
    // among equal versions): the present copies of committed transactions,
    // by logical page, newest version first.
    pages.dedup_by_key(|p| p.key());
    pages.retain(|p| committed_txs.binary_search(&p.found.link.tx_id).is_ok());
    pages.sort_unstable_by_key(|p| (p.found.lpn, Reverse(p.found.link.version), p.found.link.tx_id));
    pages.dedup_by_key(|p| p.found.lpn);
    // In place: the entries reuse the pages' memory.
    let mut mappings: Vec<(Lpn, (Ppn, u64))> = pages.into_iter().map(|p| (p.found.lpn, (p.found.ppn, p.found.seq))).collect();
    mappings.shrink_to_fit();
    r.mappings = SortedMap::from_sorted(mappings);
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

    /// The map-based `resolve` this module had before it kept compact sorted
    /// `Vec`s (verbatim but for its result type): the reference the
    /// equivalence test compares against.
    #[allow(clippy::type_complexity)]
    fn reference(
        pages: &[(Found, u32)],
    ) -> (
        BTreeMap<Lpn, (Ppn, u64)>,
        BTreeMap<u32, (BTreeSet<Lpn>, BTreeMap<Ppn, u32>)>,
        u32,
        u32,
        u64,
    ) {
        let (mut committed, mut max_tx_id, mut max_version) = (0, 0, 0);
        let mut dead: BTreeMap<u32, (BTreeSet<Lpn>, BTreeMap<Ppn, u32>)> = BTreeMap::new();
        let erase_count: BTreeMap<Ppn, u32> = pages.iter().map(|&(p, e)| (p.ppn, e)).collect();
        let mut present: BTreeMap<(u32, Lpn, u64), (u64, Ppn, PageLink)> = BTreeMap::new();
        let mut newest: BTreeMap<Lpn, u64> = BTreeMap::new();
        for (p, _) in pages {
            if p.link.tx_id == 0 {
                continue;
            }
            max_tx_id = max_tx_id.max(p.link.tx_id);
            max_version = max_version.max(p.link.version).max(p.link.next_version);
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
        let mut by_tx: BTreeMap<u32, Vec<(Lpn, u64, u64, Ppn, PageLink)>> = BTreeMap::new();
        for (&(tx, lpn, ver), &(seq, ppn, link)) in &present {
            by_tx.entry(tx).or_default().push((lpn, ver, seq, ppn, link));
        }
        let mut copies: BTreeMap<u32, BTreeSet<Ppn>> = BTreeMap::new();
        for (p, _) in pages.iter().filter(|(p, _)| p.link.tx_id != 0) {
            copies.entry(p.link.tx_id).or_default().insert(p.ppn);
        }
        let mut best: BTreeMap<Lpn, (u64, Ppn, u64)> = BTreeMap::new();
        for (tx, tx_pages) in by_tx {
            let complete = tx_pages.iter().all(|&(_, _, _, _, l)| {
                present.contains_key(&(tx, l.next_lpn, l.next_version)) || newest.get(&l.next_lpn).is_some_and(|&v| v > l.next_version)
            });
            if complete {
                committed += 1;
                for (lpn, ver, seq, ppn, _) in tx_pages {
                    if best.get(&lpn).is_none_or(|&(v, _, _)| ver > v) {
                        best.insert(lpn, (ver, ppn, seq));
                    }
                }
            } else {
                let d = dead.entry(tx).or_default();
                for &(lpn, _, _, _, l) in &tx_pages {
                    d.0.insert(lpn);
                    d.0.insert(l.next_lpn);
                }
                d.1 = copies
                    .remove(&tx)
                    .unwrap_or_default()
                    .into_iter()
                    .map(|p| (p, erase_count[&p]))
                    .collect();
            }
        }
        let mappings = best.into_iter().map(|(lpn, (_, ppn, seq))| (lpn, (ppn, seq))).collect();
        (mappings, dead, committed, max_tx_id, max_version)
    }

    /// Random scans over few transactions, pages and versions (so copies,
    /// equal sequence numbers, gaps and versions shared by two transactions
    /// all occur): the sorted-`Vec` resolve decides exactly as the map-based
    /// one did.
    #[test]
    fn matches_the_map_based_reference_on_random_scans() {
        use rand::{Rng, SeedableRng};
        let mut both = 0;
        for seed in 0..2000u64 {
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            let n = rng.gen_range(0..40);
            let pages: Vec<(Found, u32)> = (0..n)
                .map(|i| {
                    let found = Found {
                        ppn: i,
                        seq: rng.gen_range(1..30),
                        lpn: rng.gen_range(0..6),
                        link: PageLink {
                            tx_id: rng.gen_range(0..7),
                            version: rng.gen_range(1..12),
                            next_lpn: rng.gen_range(0..6),
                            next_version: rng.gen_range(1..12),
                        },
                    };
                    (found, rng.gen_range(0..4))
                })
                .collect();
            let r = resolve_kept(pages.iter().map(|&(found, erase_count)| Scanned { found, erase_count }).collect());
            let (mappings, dead, committed, max_tx_id, max_version) = reference(&pages);
            assert_eq!(
                r.mappings.iter().map(|(&k, &v)| (k, v)).collect::<BTreeMap<_, _>>(),
                mappings,
                "seed {seed}"
            );
            let got: BTreeMap<u32, (BTreeSet<Lpn>, BTreeMap<Ppn, u32>)> = r.dead.into_iter().map(|(t, d)| (t, (d.lpns, d.ppns))).collect();
            assert_eq!(got, dead, "seed {seed}");
            assert_eq!(
                (r.committed, r.max_tx_id, r.max_version),
                (committed, max_tx_id, max_version),
                "seed {seed}"
            );
            both += usize::from(!mappings.is_empty() && !got.is_empty());
        }
        // The scans exercised both outcomes at once, not only trivial ones.
        assert!(both > 100, "{both} scans had both committed and dead transactions");
    }
}
