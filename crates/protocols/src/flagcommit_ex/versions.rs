//! Each logical page's versions a reader still needs (§4.3, "the committed
//! records of a logical page may scatter over multiple physical pages"):
//! from the newest down to the newest *self-sufficient* one (every entry
//! committed), plus any older one holding an entry of a transaction still
//! open or in doubt. Older versions are garbage: the newest self-sufficient
//! version only ever moves up (a committed entry stays committed), so a
//! version dropped is never needed again. The newest version is the one
//! the L2P maps; the others are kept live by `GcHooks::extra_live`.
//!
//! This is the paper's reclaim rule made exact: a version is reclaimable
//! when all its pending records aborted or every committed record in it is
//! committed again in a higher version, and (what the paper leaves out) no
//! newer version still needs it for a record a newer pending record hides.

use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::Lpn;
use txftl_nand::Ppn;

/// One version of a logical page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ver {
    pub ppn: Ppn,
    pub version: u32,
    /// Its entries' transactions, in entry order.
    pub xids: Vec<u32>,
    /// Self-contained: the host's layout holds what a reader needs of it
    /// (`format::CONTAINED_BIT`), so no older version is needed.
    pub contained: bool,
    /// Whole-page (`format::WHOLE_BIT`): its one entry's record is the page.
    pub whole: bool,
}

/// What a transaction is, as the pruning reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decided {
    Committed,
    Aborted,
    /// Open or in doubt.
    Undecided,
}

#[derive(Clone, Debug)]
pub struct Versions {
    /// Oldest first.
    by_lpn: BTreeMap<Lpn, Vec<Ver>>,
    at: BTreeMap<Ppn, Lpn>,
    /// The listed pages other than newest versions: what GC's victim count
    /// asks for every candidate block, kept apart so that count reads only
    /// them, not every listed page of the block.
    extras: BTreeSet<Ppn>,
    /// Pages per block, and `extras` counted by block.
    pages_per_block: u32,
    extras_by_block: Vec<u32>,
}

impl Versions {
    pub fn new(pages_per_block: u32, blocks: u32) -> Versions {
        assert!(pages_per_block > 0);
        Versions {
            by_lpn: BTreeMap::new(),
            at: BTreeMap::new(),
            extras: BTreeSet::new(),
            pages_per_block,
            extras_by_block: vec![0; blocks as usize],
        }
    }

    /// Marks `ppn` as an extra version, or not.
    fn set_extra(&mut self, ppn: Ppn, extra: bool) {
        let block = (ppn / self.pages_per_block) as usize;
        if extra && self.extras.insert(ppn) {
            self.extras_by_block[block] += 1;
        } else if !extra && self.extras.remove(&ppn) {
            self.extras_by_block[block] -= 1;
        }
    }

    /// `ver` is `lpn`'s newest version.
    pub fn push(&mut self, lpn: Lpn, ver: Ver) {
        let list = self.by_lpn.entry(lpn).or_default();
        assert!(
            list.last().is_none_or(|v| v.version < ver.version),
            "lpn {lpn}: version {} after {:?}",
            ver.version,
            list.last().map(|v| v.version)
        );
        let before = self.at.insert(ver.ppn, lpn);
        assert!(before.is_none(), "page {} listed twice", ver.ppn);
        let prev = list.last().map(|v| v.ppn);
        list.push(ver);
        if let Some(prev) = prev {
            self.set_extra(prev, true);
        }
        self.debug_check(lpn);
    }

    /// A recovery's versions of `lpn`, any order (one copy each).
    pub fn restore(&mut self, lpn: Lpn, mut vers: Vec<Ver>) {
        vers.sort_by_key(|v| v.version);
        for v in vers {
            self.push(lpn, v);
        }
    }

    /// GC copied listed page `old` to `new`.
    pub fn relocated(&mut self, old: Ppn, new: Ppn) {
        let Some(lpn) = self.at.remove(&old) else { return };
        let v = self.by_lpn.get_mut(&lpn).and_then(|l| l.iter_mut().find(|v| v.ppn == old));
        v.expect("a listed page is in its list").ppn = new;
        self.at.insert(new, lpn);
        if self.extras.contains(&old) {
            self.set_extra(old, false);
            self.set_extra(new, true);
        }
        self.debug_check(lpn);
    }

    /// `lpn`'s versions but the newest are in `extras`, the newest is not.
    fn debug_check(&self, lpn: Lpn) {
        if cfg!(debug_assertions) {
            let list = &self.by_lpn[&lpn];
            for (i, v) in list.iter().enumerate() {
                let newest = i + 1 == list.len();
                debug_assert_eq!(self.extras.contains(&v.ppn), !newest, "lpn {lpn}: page {} as extra", v.ppn);
            }
        }
    }

    /// The logical page listed page `ppn` is a version of.
    pub fn lpn_at(&self, ppn: Ppn) -> Option<Lpn> {
        self.at.get(&ppn).copied()
    }

    /// Whether `ppn` is a needed version of its page other than the newest
    /// (the newest is the one the L2P maps).
    pub fn extra(&self, ppn: Ppn) -> bool {
        self.extras.contains(&ppn)
    }

    /// The listed pages in `first..end` other than newest versions.
    pub fn extra_in(&self, first: Ppn, end: Ppn) -> usize {
        let ppb = self.pages_per_block;
        if first.is_multiple_of(ppb) && end <= first + ppb {
            // Within one block (what GC asks of every candidate): its count,
            // less any pages past `end` (a block written up to `end`).
            let all = self.extras_by_block[(first / ppb) as usize] as usize;
            let past = if end < first + ppb && all > 0 {
                self.extras.range(end..first + ppb).count()
            } else {
                0
            };
            return all - past;
        }
        self.extras.range(first..end).count()
    }

    /// `lpn`'s versions a reader needs, newest first, down to the first
    /// complete one (self-sufficient or self-contained).
    pub fn for_reading<'a>(&'a self, lpn: Lpn, decided: &'a dyn Fn(u32) -> Decided) -> impl Iterator<Item = &'a Ver> + 'a {
        let list = self.by_lpn.get(&lpn).map(|l| l.as_slice()).unwrap_or(&[]);
        let mut done = false;
        list.iter().rev().take_while(move |v| {
            if done {
                return false;
            }
            done = complete(v, decided);
            true
        })
    }

    /// The newest self-sufficient version of `lpn` (what a page-level read returns).
    pub fn committed(&self, lpn: Lpn, decided: &dyn Fn(u32) -> Decided) -> Option<&Ver> {
        self.by_lpn.get(&lpn)?.iter().rev().find(|v| self_sufficient(v, decided))
    }

    pub fn newest(&self, lpn: Lpn) -> Option<&Ver> {
        self.by_lpn.get(&lpn)?.last()
    }

    /// Drops `lpn`'s versions older than its newest self-sufficient one
    /// that hold no undecided entry, and those above it but the newest
    /// whose every entry aborted; returns how many.
    pub fn prune(&mut self, lpn: Lpn, decided: &dyn Fn(u32) -> Decided) -> usize {
        let Some(list) = self.by_lpn.get_mut(&lpn) else { return 0 };
        let Some(top) = list.iter().rposition(|v| complete(v, decided)) else {
            return 0;
        };
        let (mut dropped, newest) = (Vec::new(), list.len() - 1);
        let mut i = 0;
        list.retain(|v| {
            // A whole-page version whose entry aborted holds nothing a
            // reader takes (its record is the page). The newest stays: the
            // L2P maps it.
            let void = v.whole && v.xids.iter().all(|&x| decided(x) == Decided::Aborted);
            let keep = (i >= top && (i == newest || !void)) || v.xids.iter().any(|&x| decided(x) == Decided::Undecided);
            i += 1;
            if !keep {
                dropped.push(v.ppn);
            }
            keep
        });
        for &p in &dropped {
            self.at.remove(&p);
            self.set_extra(p, false);
        }
        self.debug_check(lpn);
        dropped.len()
    }

    /// Every listed version, for checks: (lpn, list).
    pub fn all(&self) -> impl Iterator<Item = (Lpn, &[Ver])> {
        self.by_lpn.iter().map(|(&l, v)| (l, v.as_slice()))
    }

    /// Listed pages.
    pub fn len(&self) -> usize {
        self.at.len()
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// Every entry of `v` committed.
pub fn self_sufficient(v: &Ver, decided: &dyn Fn(u32) -> Decided) -> bool {
    v.xids.iter().all(|&x| decided(x) == Decided::Committed)
}

/// A reader needs no version older than `v`.
pub fn complete(v: &Ver, decided: &dyn Fn(u32) -> Decided) -> bool {
    v.contained || self_sufficient(v, decided)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A version is kept down to the newest self-sufficient one; an older
    /// one holding an open entry stays; the rest go, and a read stops at
    /// the self-sufficient version.
    #[test]
    fn prune_keeps_what_readers_need() {
        let mut v = Versions::new(64, 2);
        for (i, xids) in [vec![], vec![1], vec![2], vec![3, 4]].into_iter().enumerate() {
            v.push(
                7,
                Ver {
                    ppn: 10 + i as u32,
                    version: 1 + i as u32,
                    xids,
                    contained: false,
                    whole: false,
                },
            );
        }
        // 1 open, 2 committed, 3 aborted, 4 committed.
        let decided = |x: u32| match x {
            1 => Decided::Undecided,
            3 => Decided::Aborted,
            _ => Decided::Committed,
        };
        let read: Vec<u32> = v.for_reading(7, &decided).map(|x| x.version).collect();
        assert_eq!(read, vec![4, 3]);
        assert_eq!(v.prune(7, &decided), 1, "only the plain version 1 goes");
        assert!(v.extra(11) && v.extra(12) && !v.extra(13), "the newest is the L2P's");
        assert_eq!(v.committed(7, &decided).unwrap().version, 3);
        v.relocated(11, 99);
        assert_eq!(v.lpn_at(99), Some(7));
        assert_eq!(v.extra_in(0, 100), 2);
        // A self-contained version ends a read and lets older ones go.
        v.push(
            7,
            Ver {
                ppn: 20,
                version: 9,
                xids: vec![1],
                contained: true,
                whole: false,
            },
        );
        assert_eq!(v.for_reading(7, &decided).count(), 1);
        assert_eq!(v.prune(7, &decided), 2, "only the version holding open XID 1 stays below it");
        // A whole-page version whose entry aborted goes, but the newest.
        for (ppn, version) in [(30, 10), (31, 11)] {
            v.push(
                7,
                Ver {
                    ppn,
                    version,
                    xids: vec![3],
                    contained: false,
                    whole: true,
                },
            );
        }
        assert_eq!(v.prune(7, &decided), 1);
        assert!(v.lpn_at(30).is_none() && v.lpn_at(31).is_some());
    }

    /// GC asks a block's count of extra versions for every candidate: the
    /// per-block count agrees with counting the block's pages one by one
    /// through pushes, relocations and prunes.
    #[test]
    fn a_block_s_count_of_extra_versions_follows_every_change() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
        let (ppb, blocks) = (8u32, 6u32);
        let mut v = Versions::new(ppb, blocks);
        let mut free: Vec<Ppn> = (0..ppb * blocks).rev().collect();
        let mut version = 0;
        for step in 0..400 {
            let lpn = rng.gen_range(0..10);
            match rng.gen_range(0..3) {
                0 if !free.is_empty() => {
                    version += 1;
                    let xids = vec![rng.gen_range(0..4)];
                    let ppn = free.remove(rng.gen_range(0..free.len()));
                    v.push(
                        lpn,
                        Ver {
                            ppn,
                            version,
                            xids,
                            contained: false,
                            whole: false,
                        },
                    );
                }
                1 if !free.is_empty() => {
                    if let Some(&old) = v.at.keys().nth(rng.gen_range(0..v.len().max(1))) {
                        let new = free.pop().expect("checked");
                        v.relocated(old, new);
                        free.insert(0, old);
                    }
                }
                _ => {
                    // XIDs 0 and 1 committed, 2 aborted, 3 open.
                    let decided = |x: u32| [Decided::Committed, Decided::Committed, Decided::Aborted, Decided::Undecided][x as usize];
                    v.prune(lpn, &decided);
                }
            }
            for b in 0..blocks {
                let first = b * ppb;
                for end in [first + ppb, first + ppb / 2] {
                    let one_by_one = (first..end).filter(|&p| v.extra(p)).count();
                    assert_eq!(v.extra_in(first, end), one_by_one, "step {step}, block {b}, end {end}");
                }
            }
        }
        assert!(!v.extras.is_empty(), "the steps left extra versions to count");
    }
}
