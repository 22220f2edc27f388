//! The data a metadata-only array keeps: that of the pages programmed with
//! data (the FTL's metadata pages; host pages carry none in that mode).
//!
//! Most of it is the FTL's checkpoint table pages, and successive versions of
//! one table page differ in a few entries (a checkpoint rewrites a page once
//! some of its mappings changed). So a page programmed with a hint of the
//! page it supersedes (`Nand::program_like`) is kept whole, and the page it
//! supersedes becomes a delta against it: the byte runs where the older
//! version differs from the newer. Versions of a table page thus form a
//! chain, oldest to newest, each a delta against the next, the newest whole
//! (reverse deltas, as version control systems keep files): a new version
//! costs one comparison with the one before, and memory follows what changed
//! between checkpoints, not how many versions the checkpoint ring still
//! holds. Reading a version applies the deltas from the newest back to it
//! (the FTL reads table pages only at recovery and when the ring moves a
//! live one). Removing a page (its block erased) folds it into the pages
//! that were deltas against it: the ring erases its oldest block first, so
//! this is usually a page nothing depends on. A hint naming a page that is
//! itself a delta keeps the new page as a forward delta against it; a delta
//! longer than the page is not made (the page is kept whole).
//!
//! Patch format, run after run, a run being a stretch of 4-byte words that
//! differ (table pages are arrays of u32 entries; between two checkpoints
//! most changed entries are single, so a run is mostly one word):
//!
//! ```text
//! varint  gap: words from the end of the previous run (the page's start
//!         for the first run) to this run's first byte
//! varint  length of the run in bytes: a multiple of 4, except for a run
//!         that ends at the page's end (a page size need not be one)
//! [u8]    that many bytes, which replace the base's from there on
//! ```
//!
//! Varints are LEB128 (7 bits a byte, low first, high bit set on all but the
//! last byte). Runs are sorted and do not overlap. A single changed entry
//! costs 6 bytes (it took 16 with a u32 offset and u32 length over 8-byte
//! words: at 512 GiB the deltas between two checkpoints of a GC-active
//! device held 54 MB, 2 million runs of one word).

mod whole;

use crate::geometry::{div, Ppn};
use std::collections::BTreeMap;
use whole::{WholePage, PACK_FROM_PAGES};

/// The unit runs are made of, and gaps counted in.
const WORD: usize = 4;

#[derive(Clone)]
enum Repr {
    Whole(WholePage),
    /// Applied to the data of page `base`, `patch` gives this page's data.
    Delta {
        base: Ppn,
        patch: Box<[u8]>,
    },
}

#[derive(Clone)]
struct Node {
    repr: Repr,
    /// The pages kept as deltas against this one.
    dependents: Vec<Ppn>,
}

#[derive(Clone)]
pub(crate) struct KeptPages {
    pages: BTreeMap<Ppn, Node>,
    /// The patch being made (reused: its capacity stays).
    scratch: Vec<u8>,
    /// A packed whole page unpacked.
    page: Vec<u8>,
    /// Whole pages are packed once this many pages are kept.
    pack_from_pages: usize,
    /// Pages per block of the array (the unit of `blocks`).
    pages_per_block: u32,
    /// Bit b set: block b holds a kept page. GC asks whether each page it
    /// copies holds data (`Nand::holds_data`); host pages never do, and
    /// their blocks hold no kept page, so the bit answers without a search
    /// of `pages` (which took 4% of a random-write run's instructions).
    /// Grown to the highest block kept: memory follows what is kept.
    blocks: Vec<u64>,
}

/// For the tests: an array's own takes its pages per block (`KeptPages::new`).
#[cfg(test)]
impl Default for KeptPages {
    fn default() -> Self {
        KeptPages::new(64)
    }
}

impl KeptPages {
    pub fn new(pages_per_block: u32) -> KeptPages {
        assert!(pages_per_block > 0, "a block holds pages");
        KeptPages {
            pages: BTreeMap::new(),
            scratch: Vec::new(),
            page: Vec::new(),
            pack_from_pages: PACK_FROM_PAGES,
            pages_per_block,
            blocks: Vec::new(),
        }
    }

    /// Does the block of `ppn` hold a kept page?
    fn block_kept(&self, ppn: Ppn) -> bool {
        let b = div(ppn, self.pages_per_block) as usize;
        self.blocks.get(b / 64).is_some_and(|w| w >> (b % 64) & 1 == 1)
    }

    /// Sets or clears the bit of the block of `ppn`: set while a page of it
    /// is kept (`kept`, when the caller knows one is), clear once none is.
    fn note_block(&mut self, ppn: Ppn, kept: bool) {
        let block = div(ppn, self.pages_per_block);
        let any = kept || {
            let first = block * self.pages_per_block;
            self.pages.range(first..first.saturating_add(self.pages_per_block)).next().is_some()
        };
        let b = block as usize;
        if any && self.blocks.len() <= b / 64 {
            self.blocks.resize(b / 64 + 1, 0);
        }
        if let Some(w) = self.blocks.get_mut(b / 64) {
            match any {
                true => *w |= 1 << (b % 64),
                false => *w &= !(1 << (b % 64)),
            }
        }
    }

    pub fn len(&self) -> usize {
        self.pages.len()
    }

    /// Whether the data of `ppn` is kept.
    pub fn contains(&self, ppn: Ppn) -> bool {
        self.block_kept(ppn) && self.pages.contains_key(&ppn)
    }

    /// Copies the data of `ppn` into `out` (a whole page); false if none is kept.
    pub fn read(&self, ppn: Ppn, out: &mut [u8]) -> bool {
        let mut chain: Vec<&[u8]> = Vec::new();
        let mut at = ppn;
        loop {
            match self.pages.get(&at).map(|n| &n.repr) {
                None if at == ppn => return false,
                None => unreachable!("a delta's base is kept"),
                Some(Repr::Whole(data)) => {
                    data.read(out);
                    break;
                }
                Some(Repr::Delta { base, patch }) => {
                    chain.push(patch);
                    at = *base;
                }
            }
        }
        for patch in chain.iter().rev() {
            apply(patch, out);
        }
        true
    }

    /// Keeps `data` as the data of `ppn`. With a hint `like` naming a kept
    /// whole page, `data` is kept whole and `like` becomes a delta against
    /// it; naming a delta, `data` is kept as a delta against `like`. Either
    /// only where the delta is smaller than the page.
    pub fn insert(&mut self, ppn: Ppn, data: &[u8], like: Option<Ppn>) {
        self.insert_page(ppn, data, like);
        // `ppn` is kept now: no search of its block's pages.
        self.note_block(ppn, true);
        debug_assert!(self.contains(ppn));
    }

    fn insert_page(&mut self, ppn: Ppn, data: &[u8], like: Option<Ppn>) {
        let limit = data.len();
        self.remove(ppn);
        let pack_it = self.pages.len() >= self.pack_from_pages;
        let Some(like) = like.filter(|l| self.pages.contains_key(l)) else {
            self.pages.insert(ppn, whole(data, pack_it));
            return;
        };
        let node = self.pages.get_mut(&like).expect("checked above");
        match &mut node.repr {
            Repr::Whole(old) => match diff_into(data, old.bytes(&mut self.page), limit, &mut self.scratch) {
                true => {
                    let patch: Box<[u8]> = self.scratch.as_slice().into();
                    let bytes = WholePage::new(data, std::mem::take(old), pack_it);
                    node.repr = Repr::Delta { base: ppn, patch };
                    self.pages.insert(
                        ppn,
                        Node {
                            repr: Repr::Whole(bytes),
                            dependents: vec![like],
                        },
                    );
                }
                false => {
                    self.pages.insert(ppn, whole_hinted(data, pack_it));
                }
            },
            Repr::Delta { .. } => {
                let mut old = vec![0u8; data.len()];
                self.read(like, &mut old);
                let kept = match diff_into(&old, data, limit, &mut self.scratch) {
                    true => {
                        self.pages.get_mut(&like).expect("checked above").dependents.push(ppn);
                        Node {
                            repr: Repr::Delta {
                                base: like,
                                patch: self.scratch.as_slice().into(),
                            },
                            dependents: Vec::new(),
                        }
                    }
                    false => whole_hinted(data, pack_it),
                };
                self.pages.insert(ppn, kept);
            }
        }
    }

    /// Forgets the data of `ppn`. The pages that were deltas against it are
    /// kept against its base instead (the two deltas laid one over the
    /// other), or whole when it was whole.
    pub fn remove(&mut self, ppn: Ppn) {
        // Every erase forgets each page of its block, and most blocks (the
        // data pages') hold no kept page: the block's bit answers without a
        // search of `pages`.
        if !self.block_kept(ppn) {
            debug_assert!(!self.pages.contains_key(&ppn), "page {ppn} kept in a block whose bit is clear");
            return;
        }
        if self.remove_page(ppn) {
            self.note_block(ppn, false);
        }
    }

    /// [`KeptPages::remove`] of each page of `pages`, one block's, in order:
    /// a block holding no kept page (a data block) is answered at once.
    pub fn remove_block(&mut self, pages: std::ops::Range<Ppn>) {
        if pages.is_empty() || !self.block_kept(pages.start) {
            return;
        }
        debug_assert_eq!(pages.start / self.pages_per_block, (pages.end - 1) / self.pages_per_block);
        for ppn in pages {
            self.remove(ppn);
        }
    }

    /// [`KeptPages::remove`] but for the block bit; false if `ppn` was not kept.
    fn remove_page(&mut self, ppn: Ppn) -> bool {
        let Some(node) = self.pages.remove(&ppn) else { return false };
        match node.repr {
            Repr::Whole(data) => {
                // Each dependent becomes whole.
                let whole = data.bytes(&mut self.page).to_vec();
                let pack_it = self.pages.len() >= self.pack_from_pages;
                for d in node.dependents {
                    let mut bytes = whole.clone();
                    let dep = self.pages.get_mut(&d).expect("a dependent is kept");
                    let Repr::Delta { patch, .. } = &dep.repr else {
                        unreachable!("a dependent is a delta")
                    };
                    apply(patch, &mut bytes);
                    dep.repr = Repr::Whole(WholePage::new(&bytes, WholePage::default(), pack_it));
                }
            }
            Repr::Delta { base, patch: under } => {
                let base_node = self.pages.get_mut(&base).expect("a delta's base is kept");
                base_node.dependents.retain(|&d| d != ppn);
                for d in node.dependents {
                    let dep = self.pages.get_mut(&d).expect("a dependent is kept");
                    let Repr::Delta { patch, .. } = &dep.repr else {
                        unreachable!("a dependent is a delta")
                    };
                    // Limit-free: the page's bytes must stay readable.
                    let both = overlay(&under, patch, usize::MAX).expect("no limit");
                    dep.repr = Repr::Delta {
                        base,
                        patch: both.into_boxed_slice(),
                    };
                    self.pages.get_mut(&base).expect("kept").dependents.push(d);
                }
            }
        }
        true
    }

    /// Bytes the kept data takes (whole pages and deltas, not the map's own
    /// nodes): what the tests and the memory report look at.
    pub fn bytes(&self) -> u64 {
        self.pages
            .values()
            .map(|n| match &n.repr {
                Repr::Whole(d) => d.stored_len() as u64,
                Repr::Delta { patch, .. } => patch.len() as u64,
            })
            .sum()
    }
}

/// A page kept whole that came with a hint it differs too much from (a
/// table page rewritten in most of its entries): not tried with LZ4.
fn whole_hinted(data: &[u8], pack_it: bool) -> Node {
    Node {
        repr: Repr::Whole(WholePage::new(data, WholePage::default(), pack_it)),
        dependents: Vec::new(),
    }
}

/// A page kept whole because it came with no usable hint: a host's data,
/// or a table page's first version (`WholePage::new_unhinted`).
fn whole(data: &[u8], pack_it: bool) -> Node {
    Node {
        repr: Repr::Whole(WholePage::new_unhinted(data, pack_it)),
        dependents: Vec::new(),
    }
}

/// The runs that turn `base` into `new`, or `None` if they take more than
/// `limit` bytes. Runs are found a word (4 bytes) at a time: a run covers
/// whole words (the page's last bytes, if its size is not a multiple of 4,
/// are a run of their own when they differ). A checkpoint rewrites every
/// table page whose entries changed, and after GC moved pages the changes
/// are all over it, so this loop is kept free of branches per word: the
/// words of a block of 64 are compared into a bit mask (which the compiler
/// vectorises), and runs are read off the mask's bits.
#[cfg(test)]
fn diff(base: &[u8], new: &[u8], limit: usize) -> Option<Vec<u8>> {
    let mut patch = Vec::new();
    diff_into(base, new, limit, &mut patch).then_some(patch)
}

/// [`diff`] into `patch` (cleared first; a buffer kept between calls, so
/// no allocation per run): false, and `patch` unusable, past `limit`.
fn diff_into(base: &[u8], new: &[u8], limit: usize, patch: &mut Vec<u8>) -> bool {
    debug_assert_eq!(base.len(), new.len());
    patch.clear();
    let n = base.len() / WORD;
    // Byte where the last run written ends.
    let mut prev_end = 0usize;
    let mut open: Option<usize> = None;
    for lo in (0..n).step_by(64) {
        let width = (n - lo).min(64);
        let (a, b) = (&base[lo * WORD..(lo + width) * WORD], &new[lo * WORD..(lo + width) * WORD]);
        let mask = match (<&[u8; 64 * WORD]>::try_from(a), <&[u8; 64 * WORD]>::try_from(b)) {
            (Ok(a), Ok(b)) => block_mask(a, b),
            _ => (0..width).fold(0u64, |m, k| {
                m | ((a[k * WORD..(k + 1) * WORD] != b[k * WORD..(k + 1) * WORD]) as u64) << k
            }),
        };
        let mut bit = 0;
        while bit < width {
            match open {
                None => {
                    let rest = mask >> bit;
                    if rest == 0 {
                        break;
                    }
                    bit += rest.trailing_zeros() as usize;
                    open = Some(lo + bit);
                }
                Some(start) => {
                    // Bits past `width` are 0 in the mask, so 1 here: the run
                    // then goes on into the next block.
                    bit += (!mask >> bit).trailing_zeros() as usize;
                    if bit < width {
                        let end = lo + bit;
                        prev_end = push_run(patch, prev_end, start * WORD, &new[start * WORD..end * WORD]);
                        if patch.len() > limit {
                            return false;
                        }
                        open = None;
                    }
                }
            }
        }
    }
    // The ragged tail: its own run, or the end of the run reaching it.
    let tail = n * WORD;
    let tail_differs = base[tail..] != new[tail..];
    let last_end = if tail_differs { new.len() } else { tail };
    match open {
        Some(start) => {
            push_run(patch, prev_end, start * WORD, &new[start * WORD..last_end]);
        }
        None if tail_differs => {
            push_run(patch, prev_end, tail, &new[tail..]);
        }
        None => {}
    }
    patch.len() <= limit
}

/// Bit k set where word k of `a` and `b` differ. Fixed sizes, so no bounds
/// checks and a loop the compiler vectorises (the blocks of a page but its
/// last).
#[inline]
fn block_mask(a: &[u8; 64 * WORD], b: &[u8; 64 * WORD]) -> u64 {
    let word = |s: &[u8; 64 * WORD], k: usize| u32::from_ne_bytes([s[k * 4], s[k * 4 + 1], s[k * 4 + 2], s[k * 4 + 3]]);
    let mut mask = 0u64;
    for k in 0..64 {
        mask |= ((word(a, k) != word(b, k)) as u64) << k;
    }
    mask
}

/// Bytes a run of `len` bytes takes, `gap` words after the previous one.
fn run_cost(gap: usize, len: usize) -> usize {
    varint_len(gap) + varint_len(len) + len
}

fn varint_len(v: usize) -> usize {
    (usize::BITS - (v | 1).leading_zeros()).div_ceil(7) as usize
}

#[inline]
fn push_varint(patch: &mut Vec<u8>, mut v: usize) {
    while v >= 0x80 {
        patch.push(v as u8 | 0x80);
        v >>= 7;
    }
    patch.push(v as u8);
}

fn read_varint(patch: &mut &[u8]) -> usize {
    let mut v = 0usize;
    let mut shift = 0;
    loop {
        let b = patch[0];
        *patch = &patch[1..];
        v |= ((b & 0x7F) as usize) << shift;
        if b < 0x80 {
            return v;
        }
        shift += 7;
    }
}

#[inline]
/// Appends the run of `bytes` at byte `at` to a patch whose last run ended
/// at byte `prev_end`; returns where this one ends.
fn push_run(patch: &mut Vec<u8>, prev_end: usize, at: usize, bytes: &[u8]) -> usize {
    debug_assert!(
        at >= prev_end && (at - prev_end).is_multiple_of(WORD),
        "run at {at} after {prev_end}"
    );
    push_varint(patch, (at - prev_end) / WORD);
    push_varint(patch, bytes.len());
    match <&[u8; WORD]>::try_from(bytes) {
        // The common run, one entry: a fixed-size copy, no call.
        Ok(one) => patch.extend_from_slice(one),
        Err(_) => patch.extend_from_slice(bytes),
    }
    at + bytes.len()
}

/// The runs of a patch: (offset, bytes), in the order written (by offset).
fn runs(mut patch: &[u8]) -> impl Iterator<Item = (usize, &[u8])> {
    let mut end = 0usize;
    std::iter::from_fn(move || {
        if patch.is_empty() {
            return None;
        }
        let at = end + read_varint(&mut patch) * WORD;
        let len = read_varint(&mut patch);
        let (bytes, rest) = patch.split_at(len);
        patch = rest;
        end = at + len;
        Some((at, bytes))
    })
}

/// One patch doing what applying `under` and then `over` does: `over`'s
/// runs, and `under`'s bytes where `over` has none. `None` if it takes more
/// than `limit` bytes. Both patches' runs are sorted and disjoint (as
/// [`diff`] and this function make them), and so are the result's; their
/// ends are whole words (or the page's end), so the pieces' are too.
fn overlay(under: &[u8], over: &[u8], limit: usize) -> Option<Vec<u8>> {
    let over_runs: Vec<(usize, &[u8])> = runs(over).collect();
    let mut pieces: Vec<(usize, &[u8])> = Vec::with_capacity(over_runs.len() * 2 + 1);
    // The first run of `over` that may still meet a run of `under`.
    let mut first = 0;
    for (start, bytes) in runs(under) {
        let end = start + bytes.len();
        while first < over_runs.len() && over_runs[first].0 + over_runs[first].1.len() <= start {
            first += 1;
        }
        let mut at = start;
        let mut k = first;
        while at < end {
            match over_runs.get(k) {
                Some(&(o_start, o_bytes)) if o_start < end => {
                    if o_start > at {
                        pieces.push((at, &bytes[at - start..o_start - start]));
                    }
                    at = at.max(o_start + o_bytes.len());
                    k += 1;
                }
                _ => {
                    pieces.push((at, &bytes[at - start..]));
                    at = end;
                }
            }
        }
    }
    pieces.extend_from_slice(&over_runs);
    pieces.sort_unstable_by_key(|&(at, _)| at);
    let mut cost = 0;
    let mut prev_end = 0;
    for &(at, bytes) in &pieces {
        cost += run_cost((at - prev_end) / WORD, bytes.len());
        prev_end = at + bytes.len();
    }
    if cost > limit {
        return None;
    }
    let mut patch = Vec::with_capacity(cost);
    let mut prev_end = 0;
    for (at, bytes) in pieces {
        prev_end = push_run(&mut patch, prev_end, at, bytes);
    }
    Some(patch)
}

fn apply(patch: &[u8], out: &mut [u8]) {
    for (at, bytes) in runs(patch) {
        out[at..at + bytes.len()].copy_from_slice(bytes);
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
        // Three versions kept in a whole page and two small patches (at
        // most three changed words each: 2 varint bytes and 4 bytes a word).
        assert!(k.bytes() <= 512 + 2 * 3 * 6, "{} bytes", k.bytes());
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
        for pack_from_pages in [PACK_FROM_PAGES, 0] {
            any_history(pack_from_pages);
        }
    }

    /// Whole pages packed from `pack_from_pages` kept pages on (0: always).
    fn any_history(pack_from_pages: usize) {
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        // Blocks of 4 pages: the 64 pages fill and empty 16 blocks' bits.
        let mut k = KeptPages {
            pack_from_pages,
            ..KeptPages::new(4)
        };
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
                    if rng.gen_bool(0.3) {
                        // A host's page that LZ4 halves (kept compressed
                        // when it comes without a hint).
                        for i in 50..page.len() {
                            page[i] = page[i % 50];
                        }
                    } else if rng.gen_bool(0.5) {
                        // Words of at most 26 bits, or unmapped: packable.
                        for w in page.chunks_exact_mut(4) {
                            w[3] = if w[3] < 16 { 0xFF } else { w[3] & 3 };
                            if w[3] == 0xFF {
                                w.fill(0xFF);
                            }
                        }
                    }
                }
                let like = rng.gen_bool(0.8).then(|| rng.gen_range(0..64));
                k.insert(ppn, &page, like);
                model.insert(ppn, page.clone());
            }
            assert_eq!(k.len(), model.len());
            for p in 0..68 {
                assert_eq!(k.contains(p), model.contains_key(&p), "page {p} at step {step}");
            }
            for (p, data) in &model {
                assert_eq!(&read(&k, *p), data, "page {p} at step {step}");
            }
        }
    }

    #[test]
    fn a_page_unlike_its_hint_or_with_a_missing_hint_is_kept_whole() {
        let mut k = KeptPages::default();
        // Words of 32 significant bits: kept raw, not packed.
        let a = vec![0xF1u8; 512];
        let b = vec![0xF2u8; 512];
        k.insert(10, &a, None);
        k.insert(11, &b, Some(10)); // every byte differs
        k.insert(12, &a, Some(99)); // no such page
        let mut c = a.clone();
        c[0] = 0;
        c[511] = 0;
        k.insert(13, &c, Some(12)); // two runs: patched
                                    // Each run a word: a gap and a length of one byte each, 4 bytes.
        assert_eq!(k.bytes(), 3 * 512 + 2 * (2 + 4));
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
        new[5] = 1; // the next word: one run of two words
        new[100] = 1;
        new[255] = 9;
        let patch = diff(&base, &new, usize::MAX).unwrap();
        assert_eq!(patch.len(), (2 + 8) + 2 * (2 + 4));
        let mut out = base.clone();
        apply(&patch, &mut out);
        assert_eq!(out, new);
        assert!(diff(&base, &new, 10).is_none());
        assert_eq!(diff(&base, &base, 0).unwrap().len(), 0);
    }

    /// A patch laid over another does what applying both in turn does,
    /// whatever the runs' overlaps; and it respects its limit.
    #[test]
    fn an_overlay_applies_like_its_two_patches_in_turn() {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        for _ in 0..2_000 {
            let a: Vec<u8> = (0..256).map(|_| rng.gen()).collect();
            let change = |rng: &mut ChaCha8Rng, from: &[u8]| {
                let mut to = from.to_vec();
                for _ in 0..rng.gen_range(0..12) {
                    let at = rng.gen_range(0..to.len());
                    let len = rng.gen_range(1..=(to.len() - at).min(40));
                    to[at..at + len].iter_mut().for_each(|b| *b = rng.gen());
                }
                to
            };
            let b = change(&mut rng, &a);
            let c = change(&mut rng, &b);
            // c as a patch against b, b as a patch against a: c against a.
            let under = diff(&a, &b, usize::MAX).unwrap();
            let over = diff(&b, &c, usize::MAX).unwrap();
            let both = overlay(&under, &over, usize::MAX).unwrap();
            let mut out = a.clone();
            apply(&both, &mut out);
            assert_eq!(out, c);
            assert!(overlay(&under, &over, both.len()).is_some());
            if !both.is_empty() {
                assert!(overlay(&under, &over, both.len() - 1).is_none());
            }
        }
    }

    /// The diff's runs are the maximal runs of differing words, as a plain
    /// word-by-word walk finds them, across its blocks of 64 words and at
    /// the page's ragged end.
    #[test]
    fn diffs_find_the_runs_a_word_walk_finds() {
        let mut rng = ChaCha8Rng::seed_from_u64(13);
        for &len in &[3usize, 8, 518, 520, 1024, 8192, 8195, 4096 + 4] {
            for _ in 0..200 {
                let a: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                let mut b = a.clone();
                let density = rng.gen_range(0.0..1.0f64);
                for w in 0..len.div_ceil(8) {
                    if rng.gen_bool(density * 0.3) {
                        let at = (w * 8 + rng.gen_range(0..8)).min(len - 1);
                        b[at] ^= 1 + rng.gen::<u8>() % 255;
                    }
                }
                let patch = diff(&a, &b, usize::MAX).unwrap();
                let mut out = a.clone();
                apply(&patch, &mut out);
                assert_eq!(out, b);
                // The reference: walk the words one by one; differing tail
                // bytes join a run that reaches them, or make their own.
                let mut expect: Vec<(usize, usize)> = Vec::new();
                let words = len / WORD;
                let differ = |w: usize| a[w * WORD..(w + 1) * WORD] != b[w * WORD..(w + 1) * WORD];
                let mut w = 0;
                while w < words {
                    if !differ(w) {
                        w += 1;
                        continue;
                    }
                    let start = w;
                    while w < words && differ(w) {
                        w += 1;
                    }
                    expect.push((start * WORD, (w - start) * WORD));
                }
                if a[words * WORD..] != b[words * WORD..] {
                    match expect.last_mut() {
                        Some((at, n)) if *at + *n == words * WORD => *n = len - *at,
                        _ => expect.push((words * WORD, len - words * WORD)),
                    }
                }
                let got: Vec<(usize, usize)> = runs(&patch).map(|(at, bytes)| (at, bytes.len())).collect();
                assert_eq!(got, expect, "page of {len} bytes");
            }
        }
    }

    /// A table page of `entries` (also `whole.rs`'s tests').
    pub(super) fn table_page(entries: &[u32]) -> Vec<u8> {
        entries.iter().flat_map(|e| e.to_le_bytes()).collect()
    }

    /// Table pages of 8 KiB (2,048 u32 entries of a 26-bit physical page
    /// space), version after version as a checkpoint writes them: a few
    /// random entries changed, a stretch remapped to consecutive pages (GC
    /// moving a block whole), a page of new random entries, part of the page
    /// unmapped. Every kept version reads back byte for byte while older
    /// ones are removed; a delta of scattered single entries costs 6 bytes
    /// an entry (a one-byte gap where entries are under 128 words apart).
    #[test]
    fn table_page_versions_of_random_and_run_shaped_entries_read_back_exactly() {
        let mut rng = ChaCha8Rng::seed_from_u64(15);
        let mut k = KeptPages::default();
        let mut entries: Vec<u32> = (0..2048).map(|_| rng.gen_range(0..1 << 26)).collect();
        let mut expect: Vec<(Ppn, Vec<u8>)> = Vec::new();
        k.insert(0, &table_page(&entries), None);
        expect.push((0, table_page(&entries)));
        for v in 1..120u32 {
            let before = entries.clone();
            match v % 4 {
                0 => {
                    // One entry in every 64: scattered single changes.
                    for e in entries.iter_mut().step_by(64) {
                        *e = rng.gen_range(0..1 << 26);
                    }
                }
                1 => {
                    let at = rng.gen_range(0..2048 - 256);
                    let first = rng.gen_range(0..1 << 26);
                    for (i, e) in entries[at..at + 256].iter_mut().enumerate() {
                        *e = first + i as u32;
                    }
                }
                2 => entries.iter_mut().for_each(|e| *e = rng.gen_range(0..1 << 26)),
                _ => {
                    let at = rng.gen_range(0..2048);
                    entries[at..].fill(u32::MAX);
                }
            }
            let page = table_page(&entries);
            let bytes_before = k.bytes();
            k.insert(v, &page, Some(v - 1));
            if v % 4 == 0 {
                // The previous version became a patch of 32 one-word runs.
                assert_eq!(k.bytes() - bytes_before, 32 * 6, "version {v}");
                let patch = diff(&page, &table_page(&before), usize::MAX).unwrap();
                assert_eq!(patch.len(), 32 * 6);
            }
            expect.push((v, page));
            if v >= 3 {
                k.remove(v - 3);
                expect.retain(|(p, _)| *p != v - 3);
            }
            let mut out = vec![0u8; 8192];
            for (p, data) in &expect {
                assert!(k.read(*p, &mut out));
                assert_eq!(&out, data, "version {p} after version {v}");
            }
        }
    }

    #[test]
    fn varints_round_trip_at_their_byte_boundaries() {
        for v in [0usize, 1, 127, 128, 2047, 16_383, 16_384, u32::MAX as usize] {
            let mut buf = Vec::new();
            push_varint(&mut buf, v);
            assert_eq!(buf.len(), varint_len(v), "{v}");
            let mut rest = &buf[..];
            assert_eq!(read_varint(&mut rest), v);
            assert!(rest.is_empty());
        }
    }

    /// Kept whole pages read back exactly in every form: raw while the array
    /// keeps few pages; once it keeps many, strided (a table page of a
    /// sequential fill), packed (random entries of 13 bits) or raw (words of
    /// 32 bits).
    #[test]
    fn kept_whole_pages_read_back_exactly_in_every_form() {
        let mut rng = ChaCha8Rng::seed_from_u64(17);
        let mut k = KeptPages::default();
        let small = table_page(&(0..2048).map(|_| rng.gen_range(0..1 << 13)).collect::<Vec<u32>>());
        let striped = table_page(&(0..2048).map(|i| ((i % 8) << 20) | (i / 8)).collect::<Vec<u32>>());
        let wide: Vec<u8> = (0..8192).map(|_| rng.gen()).collect();
        k.insert(1, &small, None);
        k.insert(4, &striped, None);
        assert_eq!(k.bytes(), 2 * 8192);
        // Alternating words, a stride of 2 words: 17 bytes each once packed.
        let filler = table_page(&(0..2048).map(|i| i % 2).collect::<Vec<u32>>());
        for p in 10..10 + PACK_FROM_PAGES as u32 {
            k.insert(p, &filler, None);
        }
        let before = k.bytes();
        k.insert(2, &small, None);
        k.insert(3, &wide, None);
        k.insert(5, &striped, None);
        let packed_13_bits = 5 + 2048 * 13 / 8 + 8;
        // The stride of 8 words, no exception: a 9-byte header and 8 words.
        let strided = 9 + 8 * 4;
        assert_eq!(k.bytes() - before, (packed_13_bits + 8192 + strided) as u64);
        let mut out = vec![0u8; 8192];
        for (p, data) in [(1, &small), (2, &small), (3, &wide), (4, &striped), (5, &striped), (10, &filler)] {
            assert!(k.read(p, &mut out));
            assert_eq!(&out, data, "page {p}");
        }
    }
}
