//! The data a metadata-only array keeps: that of the pages programmed with
//! data (the FTL's metadata pages; host pages carry none in that mode).
//!
//! Most of it is the FTL's checkpoint table pages, and successive versions of
//! one table page differ in a few entries (a checkpoint rewrites a page once
//! some of its mappings changed). So a page programmed with a hint of the
//! page it supersedes (`Nand::program_like`) is kept whole, and the page it
//! supersedes, and the older versions patched against that one, are kept
//! from then on as patches against it (reverse patches: the newest version
//! whole, the older ones as the byte runs where they differ from it).
//! [`Kept::Patched`] holds a shared reference to the whole page and its
//! runs; the base is always a whole page, never a patched one, so reading
//! costs one copy and the runs. The bytes of a whole page live as long as a
//! page is patched against it: erasing or forgetting the page it came from
//! does not change what the others read. A patch longer than
//! [`PATCH_LIMIT_DIV`]'s share of the page is not made (the page stays as
//! it is, whole or patched against its old base). A hint naming a page that
//! is itself patched (not the newest version) keeps the new page as a
//! forward patch against that page's base.
//!
//! So the FTL's three live versions of a table page (the current checkpoint's,
//! the previous one's, the one being written) take about one page and two
//! small patches instead of three pages. Reads return exactly the bytes
//! programmed either way; the hint only decides how much memory they take.
//!
//! Patch format, run after run: offset (u32 LE), length (u32 LE), then that
//! many bytes, which replace the base's from the offset on.

use crate::geometry::Ppn;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A patch longer than a page's size divided by this is not made.
pub(crate) const PATCH_LIMIT_DIV: usize = 1;
const RUN_HEADER: usize = 8;

#[derive(Clone)]
enum Kept {
    /// `patched`: pages that were patched against this one (some may have
    /// been removed or replaced since: checked when used).
    Whole {
        data: Arc<[u8]>,
        patched: Vec<Ppn>,
    },
    Patched {
        base: Arc<[u8]>,
        patch: Box<[u8]>,
    },
}

#[derive(Clone, Default)]
pub(crate) struct KeptPages {
    pages: BTreeMap<Ppn, Kept>,
}

impl KeptPages {
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Copies the data of `ppn` into `out` (a whole page); false if none is kept.
    pub fn read(&self, ppn: Ppn, out: &mut [u8]) -> bool {
        match self.pages.get(&ppn) {
            None => false,
            Some(Kept::Whole { data, .. }) => {
                out.copy_from_slice(data);
                true
            }
            Some(Kept::Patched { base, patch }) => {
                out.copy_from_slice(base);
                apply(patch, out);
                true
            }
        }
    }

    /// Keeps `data` as the data of `ppn`. With a hint `like` naming a kept
    /// whole page, `data` is kept whole and `like` (with the pages patched
    /// against it) is patched against it; naming a patched page, `data` is
    /// patched against that page's base. Either only where the patch is small.
    pub fn insert(&mut self, ppn: Ppn, data: &[u8], like: Option<Ppn>) {
        let limit = data.len() / PATCH_LIMIT_DIV;
        self.pages.remove(&ppn);
        let Some(like) = like.filter(|l| self.pages.contains_key(l)) else {
            self.pages.insert(ppn, whole(data));
            return;
        };
        if let Some(Kept::Patched { base, .. }) = self.pages.get(&like) {
            let base = base.clone();
            let kept = match diff(&base, data, limit) {
                Some(patch) => Kept::Patched {
                    base,
                    patch: patch.into_boxed_slice(),
                },
                None => whole(data),
            };
            self.pages.insert(ppn, kept);
            return;
        }
        let Some(Kept::Whole { data: mut old, patched }) = self.pages.remove(&like) else {
            unreachable!("a kept page is whole or patched")
        };
        // The old version, then the pages patched against it, as patches
        // against the new one (computed while the old bytes are at hand).
        let mut rebased: Vec<(Ppn, Box<[u8]>)> = Vec::new();
        let mut still_on_old = Vec::new();
        let like_patch = diff(data, &old, limit);
        let mut page = vec![0u8; data.len()];
        for p in patched {
            let Some(Kept::Patched { base, patch }) = self.pages.get(&p) else {
                continue;
            };
            if !Arc::ptr_eq(base, &old) {
                continue;
            }
            page.copy_from_slice(&old);
            apply(patch, &mut page);
            match diff(data, &page, limit) {
                Some(p2) => rebased.push((p, p2.into_boxed_slice())),
                None => still_on_old.push(p),
            }
        }
        for (p, _) in &rebased {
            self.pages.remove(p);
        }
        let new: Arc<[u8]> = match (&like_patch, Arc::get_mut(&mut old)) {
            // Nothing refers to the old bytes any more: the new version takes
            // their place (no allocation, so no churn of whole pages in the
            // allocator, which fragments the heap).
            (Some(_), Some(bytes)) => {
                bytes.copy_from_slice(data);
                old.clone()
            }
            _ => data.into(),
        };
        let mut now_patched = Vec::with_capacity(rebased.len() + 1);
        match like_patch {
            Some(patch) => {
                now_patched.push(like);
                self.pages.insert(
                    like,
                    Kept::Patched {
                        base: new.clone(),
                        patch: patch.into_boxed_slice(),
                    },
                );
            }
            None => {
                self.pages.insert(
                    like,
                    Kept::Whole {
                        data: old,
                        patched: still_on_old,
                    },
                );
            }
        }
        for (p, patch) in rebased {
            now_patched.push(p);
            self.pages.insert(p, Kept::Patched { base: new.clone(), patch });
        }
        self.pages.insert(
            ppn,
            Kept::Whole {
                data: new,
                patched: now_patched,
            },
        );
    }

    pub fn remove(&mut self, ppn: Ppn) {
        self.pages.remove(&ppn);
    }

    /// Bytes the kept data takes (each whole page counted once, patches, not
    /// the map's own nodes): what the tests and the memory report look at.
    pub fn bytes(&self) -> u64 {
        let mut bases = std::collections::HashSet::new();
        let mut total = 0u64;
        for k in self.pages.values() {
            let (base, patch) = match k {
                Kept::Whole { data, .. } => (data, 0),
                Kept::Patched { base, patch } => (base, patch.len()),
            };
            if bases.insert(Arc::as_ptr(base) as *const u8 as usize) {
                total += base.len() as u64;
            }
            total += patch as u64;
        }
        total
    }
}

fn whole(data: &[u8]) -> Kept {
    Kept::Whole {
        data: data.into(),
        patched: Vec::new(),
    }
}

/// The runs that turn `base` into `new`, or `None` if they take more than
/// `limit` bytes. Runs are found a word (8 bytes) at a time: a run covers
/// whole words (the page's last bytes, if its size is not a multiple of 8,
/// are a run of their own when they differ). A checkpoint rewrites a table
/// page with entries changed all over it, so this loop is kept tight.
fn diff(base: &[u8], new: &[u8], limit: usize) -> Option<Vec<u8>> {
    debug_assert_eq!(base.len(), new.len());
    const WORD: usize = 8;
    let word = |s: &[u8]| u64::from_ne_bytes(s.try_into().expect("a word"));
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut cost = 0usize;
    let mut open: Option<usize> = None;
    let words = base.chunks_exact(WORD).zip(new.chunks_exact(WORD));
    let n = words.len();
    for (i, (x, y)) in words.enumerate() {
        let differs = word(x) != word(y);
        match (differs, open) {
            (true, None) => open = Some(i),
            (false, Some(start)) => {
                runs.push((start * WORD, i * WORD));
                cost += RUN_HEADER + (i - start) * WORD;
                if cost > limit {
                    return None;
                }
                open = None;
            }
            _ => {}
        }
    }
    if let Some(start) = open {
        runs.push((start * WORD, n * WORD));
        cost += RUN_HEADER + (n - start) * WORD;
    }
    let tail = n * WORD;
    if base[tail..] != new[tail..] {
        runs.push((tail, new.len()));
        cost += RUN_HEADER + new.len() - tail;
    }
    if cost > limit {
        return None;
    }
    let mut patch = Vec::with_capacity(cost);
    for (start, end) in runs {
        patch.extend_from_slice(&(start as u32).to_le_bytes());
        patch.extend_from_slice(&((end - start) as u32).to_le_bytes());
        patch.extend_from_slice(&new[start..end]);
    }
    Some(patch)
}

fn apply(mut patch: &[u8], out: &mut [u8]) {
    while !patch.is_empty() {
        let at = u32::from_le_bytes(patch[0..4].try_into().expect("4 bytes")) as usize;
        let len = u32::from_le_bytes(patch[4..8].try_into().expect("4 bytes")) as usize;
        out[at..at + len].copy_from_slice(&patch[RUN_HEADER..RUN_HEADER + len]);
        patch = &patch[RUN_HEADER + len..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    fn read(k: &KeptPages, ppn: Ppn) -> Vec<u8> {
        let mut out = vec![0u8; 512];
        assert!(k.read(ppn, &mut out), "page {ppn} is kept");
        out
    }

    /// Versions of one page, each a few random entries changed from the one
    /// before, read back exactly while older ones (the bases) are removed, and
    /// kept in far fewer bytes than whole pages.
    #[test]
    fn patched_versions_read_back_exactly_after_their_bases_are_gone() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut k = KeptPages::default();
        let mut page: Vec<u8> = (0..512).map(|_| rng.gen()).collect();
        let mut expect: Vec<(Ppn, Vec<u8>)> = Vec::new();
        k.insert(0, &page, None);
        expect.push((0, page.clone()));
        for v in 1..200u32 {
            for _ in 0..rng.gen_range(0..4) {
                let at = rng.gen_range(0..page.len());
                page[at] = rng.gen();
            }
            k.insert(v, &page, Some(v - 1));
            expect.push((v, page.clone()));
            // Keep the last three versions only, as the FTL does.
            if v >= 3 {
                k.remove(v - 3);
                expect.retain(|(p, _)| *p != v - 3);
            }
            for (p, data) in &expect {
                assert_eq!(&read(&k, *p), data, "version {p} after version {v}");
            }
        }
        assert_eq!(k.len(), 3);
        // Three versions kept in a whole page and two small patches.
        assert!(k.bytes() <= 512 + 2 * 4 * (RUN_HEADER as u64 + 16), "{} bytes", k.bytes());
        // The newest gone, the older ones still read back.
        k.remove(199);
        expect.retain(|(p, _)| *p != 199);
        for (p, data) in &expect {
            assert_eq!(&read(&k, *p), data, "version {p}");
        }
    }

    /// Random pages, hints (right, stale, missing), removals and re-inserts,
    /// against a model that keeps every page whole.
    #[test]
    fn any_history_of_hints_and_removals_reads_back_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let mut k = KeptPages::default();
        let mut model: std::collections::BTreeMap<Ppn, Vec<u8>> = Default::default();
        let mut page: Vec<u8> = (0..512).map(|_| rng.gen()).collect();
        for step in 0..5_000u32 {
            let ppn = rng.gen_range(0..64);
            if rng.gen_bool(0.3) {
                k.remove(ppn);
                model.remove(&ppn);
            } else {
                for _ in 0..rng.gen_range(0..20) {
                    let at = rng.gen_range(0..page.len());
                    page[at] = rng.gen();
                }
                if rng.gen_bool(0.05) {
                    page = (0..512).map(|_| rng.gen()).collect();
                }
                let like = rng.gen_bool(0.9).then(|| rng.gen_range(0..64));
                k.insert(ppn, &page, like);
                model.insert(ppn, page.clone());
            }
            assert_eq!(k.len(), model.len());
            for (p, data) in &model {
                assert_eq!(&read(&k, *p), data, "page {p} at step {step}");
            }
        }
    }

    #[test]
    fn a_page_unlike_its_hint_or_with_a_missing_hint_is_kept_whole() {
        let mut k = KeptPages::default();
        let a = vec![1u8; 512];
        let b = vec![2u8; 512];
        k.insert(10, &a, None);
        k.insert(11, &b, Some(10)); // every byte differs
        k.insert(12, &a, Some(99)); // no such page
        let mut c = a.clone();
        c[0] = 0;
        c[511] = 0;
        k.insert(13, &c, Some(12)); // two runs: patched
        assert_eq!(k.bytes(), 3 * 512 + 2 * (RUN_HEADER as u64 + 8));
        k.remove(12);
        assert_eq!(read(&k, 10), a);
        assert_eq!(read(&k, 11), b);
        assert_eq!(read(&k, 13), c);
        assert!(!k.read(12, &mut [0u8; 512]));
    }

    #[test]
    fn diffs_merge_close_runs_and_apply_back() {
        let base = vec![0u8; 256];
        let mut new = base.clone();
        new[3] = 1;
        new[9] = 1; // the next word: one run of two words
        new[100] = 1;
        new[255] = 9;
        let patch = diff(&base, &new, usize::MAX).unwrap();
        assert_eq!(patch.len(), (RUN_HEADER + 16) + 2 * (RUN_HEADER + 8));
        let mut out = base.clone();
        apply(&patch, &mut out);
        assert_eq!(out, new);
        assert!(diff(&base, &new, 10).is_none());
        assert_eq!(diff(&base, &base, 0).unwrap().len(), 0);
    }
}
