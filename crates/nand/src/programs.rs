//! How many times each page was programmed since its last erase.
//!
//! Full-data mode (and image files, whose page-state table is these bytes)
//! keep one byte a page ([`Programs::Bytes`]). Metadata-only mode keeps one
//! bit a page, set once the page is programmed ([`Programs::Bits`]); the
//! counts above 1, which only SLC partial programs reach, are kept in a side
//! map, and a second bit a page (allocated at the first such count) says
//! which pages the map holds, so most reads need no map lookup. At 512 GiB
//! raw with 8 KiB pages that is 8 MiB (16 MiB with partial programs)
//! instead of 64 MiB.

use crate::error::MemoryError;
use crate::geometry::Ppn;
use crate::memory;
use std::collections::HashMap;

#[derive(Clone)]
pub(crate) enum Programs {
    Bytes(Vec<u8>),
    Bits {
        /// Bit `ppn % 64` of word `ppn / 64`: programmed at least once.
        bits: Vec<u64>,
        /// Bit `ppn % 64` of word `ppn / 64`: the count is above 1 (in
        /// `more`). Empty until the first such count.
        multi: Vec<u64>,
        /// Counts above 1 (SLC partial programs).
        more: HashMap<Ppn, u8>,
    },
}

impl Programs {
    /// Every page erased, one bit a page.
    pub fn bits(pages: usize, need: u64) -> Result<Programs, MemoryError> {
        Ok(Programs::Bits {
            bits: memory::filled(pages.div_ceil(64), 0u64, need)?,
            multi: Vec::new(),
            more: HashMap::new(),
        })
    }

    /// Every read, program and scan asks this, several times an operation:
    /// always inlined.
    #[inline(always)]
    pub fn get(&self, ppn: Ppn) -> u8 {
        match self {
            Programs::Bytes(b) => b[ppn as usize],
            Programs::Bits { bits, multi, more } => {
                let (w, bit) = (ppn as usize / 64, 1u64 << (ppn % 64));
                if bits[w] & bit == 0 {
                    0
                } else if multi.get(w).is_none_or(|m| m & bit == 0) {
                    1
                } else {
                    more[&ppn]
                }
            }
        }
    }

    /// One past the last programmed page of `pages`, relative to its start
    /// (0: none programmed): an MLC block's write pointer. Skips whole
    /// words of erased pages, so an erased array is read at 64 pages a step.
    pub fn programmed_end(&self, pages: std::ops::Range<usize>) -> usize {
        let start = pages.start;
        let mut end = pages.end;
        while end > start {
            let i = end - 1;
            match self {
                Programs::Bytes(b) => return b[start..end].iter().rposition(|&n| n > 0).map_or(0, |i| i + 1),
                Programs::Bits { bits, .. } => {
                    // The bits of word `i / 64` at or below `i`, not below `start`.
                    let mut word = bits[i / 64] & (u64::MAX >> (63 - i % 64));
                    let low = (i / 64) * 64;
                    if low < start {
                        word &= u64::MAX << (start - low);
                    }
                    if word != 0 {
                        return low + 64 - word.leading_zeros() as usize - start;
                    }
                    end = low.max(start);
                }
            }
        }
        0
    }

    /// `set(ppn, 1)` of a page the caller knows is erased (a program's
    /// check): its bit alone changes (an erased page's count is 0, so its
    /// "above 1" bit is clear). Inlined into every program.
    #[inline(always)]
    pub fn set_programmed(&mut self, ppn: Ppn) {
        debug_assert_eq!(self.get(ppn), 0, "page {ppn} is programmed once, from erased");
        match self {
            Programs::Bytes(b) => b[ppn as usize] = 1,
            Programs::Bits { bits, .. } => bits[ppn as usize / 64] |= 1u64 << (ppn % 64),
        }
    }

    #[inline]
    pub fn set(&mut self, ppn: Ppn, n: u8) {
        let (w, bit) = (ppn as usize / 64, 1u64 << (ppn % 64));
        match self {
            Programs::Bytes(b) => b[ppn as usize] = n,
            Programs::Bits { bits, multi, more } => {
                if n == 0 {
                    bits[w] &= !bit;
                } else {
                    bits[w] |= bit;
                }
                if n > 1 {
                    if multi.is_empty() {
                        *multi = vec![0; bits.len()];
                    }
                    multi[w] |= bit;
                    more.insert(ppn, n);
                } else if multi.get(w).is_some_and(|m| m & bit != 0) {
                    multi[w] &= !bit;
                    more.remove(&ppn);
                }
                debug_assert_eq!(self.get(ppn), n, "page {ppn} keeps its count");
            }
        }
    }

    /// `set(ppn, 0)` of every page of `pages` (a block's, at its erase).
    pub fn clear(&mut self, pages: std::ops::Range<Ppn>) {
        match self {
            Programs::Bytes(b) => b[pages.start as usize..pages.end as usize].fill(0),
            Programs::Bits { bits, multi, more } => {
                for ppn in pages {
                    let (w, bit) = (ppn as usize / 64, 1u64 << (ppn % 64));
                    bits[w] &= !bit;
                    if multi.get(w).is_some_and(|m| m & bit != 0) {
                        multi[w] &= !bit;
                        more.remove(&ppn);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_hold_the_same_counts_as_bytes() {
        let n = 200;
        let mut a = Programs::Bytes(vec![0; n]);
        let mut b = Programs::bits(n, 0).unwrap();
        let steps: [(Ppn, u8); 8] = [(0, 1), (63, 1), (64, 2), (64, 3), (199, 1), (64, 1), (63, 0), (130, 4)];
        for (ppn, count) in steps {
            a.set(ppn, count);
            b.set(ppn, count);
            for p in 0..n as Ppn {
                assert_eq!(a.get(p), b.get(p), "page {p} after setting {ppn} to {count}");
            }
        }
        assert_eq!(b.get(130), 4);
        // A block's erase clears its range, counts above 1 included, and
        // nothing outside it.
        for pages in [128..192, 40..100] {
            a.clear(pages.clone());
            b.clear(pages.clone());
            for p in 0..n as Ppn {
                assert_eq!(a.get(p), b.get(p), "page {p} after clearing {pages:?}");
            }
            assert!(pages.clone().all(|p| b.get(p) == 0));
        }
        assert_eq!((a.get(0), a.get(199), b.get(199)), (1, 1, 1));
    }

    #[test]
    fn the_programmed_end_is_the_same_from_bits_and_bytes() {
        let n = 300;
        let mut a = Programs::Bytes(vec![0; n]);
        let mut b = Programs::bits(n, 0).unwrap();
        let ranges = [0..n, 0..64, 10..70, 64..128, 63..65, 100..299, 130..131, 200..264, 5..5];
        for ppn in [0, 63, 64, 65, 127, 130, 199, 250, 299] {
            a.set(ppn, 1);
            b.set(ppn, 1);
            for r in ranges.clone() {
                let slow = r.clone().rposition(|p| a.get(p as Ppn) > 0).map_or(0, |i| i + 1);
                assert_eq!(a.programmed_end(r.clone()), slow, "bytes {r:?} after {ppn}");
                assert_eq!(b.programmed_end(r.clone()), slow, "bits {r:?} after {ppn}");
            }
        }
    }
}
