//! Per-page byte areas of a block's pages in one chunk, each chunk shared
//! between the array and its snapshots until one of them writes it (copy on
//! write): the data areas of a full-data array, and every spare area stored
//! as bytes.
//!
//! Why: the crash harness snapshots the array for every recovery cut
//! ([`crate::Nand::snapshot`]) and the recovery that follows writes a few
//! blocks at most. Copying every data byte per snapshot was 40% of a crash
//! set's time (LightTx on `tiny-slc`); sharing the chunks makes a snapshot
//! cost one reference count per block, and a write copies only its own
//! block, once per snapshot. A chunk never written is not allocated: it
//! reads as the store's fill byte, so the memory follows the blocks
//! programmed, not the capacity.
//!
//! A store may also remember, per page, the CRC-32 of the page's first
//! `memo` bytes once asked ([`PageData::page_crc`]): a data store the whole
//! page's (the invariant check after every recovery asks it for every mapped
//! page), a spare store the FTL's OOB record's (every mount decodes the
//! record of every page it scans, checks and reads back). A chunk's bytes
//! do not change while shared, so a snapshot's answer holds for every array
//! sharing the chunk. A write forgets its page's.

use crate::error::MemoryError;
use crate::geometry::div;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A memo entry that holds a CRC: this bit set, the CRC in the low 32 bits.
const KNOWN: u64 = 1 << 32;

struct Chunk {
    bytes: Box<[u8]>,
    /// Per page, the CRC-32 of its first `memo` bytes once computed
    /// (`KNOWN | crc`), else 0; empty in a chunk made without memos.
    crc: Box<[AtomicU64]>,
}

impl Clone for Chunk {
    fn clone(&self) -> Chunk {
        Chunk {
            bytes: self.bytes.clone(),
            crc: self.crc.iter().map(|c| AtomicU64::new(c.load(Ordering::Relaxed))).collect(),
        }
    }
}

#[derive(Clone)]
pub(crate) struct PageData {
    page_size: usize,
    pages_per_chunk: usize,
    /// What a page of a chunk never written reads as (every byte).
    fill: u8,
    /// How many leading bytes of a page the remembered CRC covers (0: no
    /// memo); chunks allocated while it is 0 remember nothing.
    memo: usize,
    /// Per chunk (block): its bytes, or `None` if never written.
    chunks: Vec<Option<Arc<Chunk>>>,
    /// The CRC-32 of a page of 0xFF bytes: what an erased page reads as
    /// (`Nand::copy_data_out`), whatever its chunk holds.
    erased_crc: u32,
}

impl PageData {
    /// `pages` pages of `page_size` bytes, each byte `fill`, in chunks of
    /// `pages_per_chunk` pages, remembering the CRC of each page's first
    /// `memo` bytes (0: none); `need` names the whole array's memory if the
    /// chunk table cannot be allocated.
    pub fn new(pages: usize, page_size: usize, pages_per_chunk: usize, fill: u8, memo: usize, need: u64) -> Result<PageData, MemoryError> {
        assert!(pages_per_chunk > 0 && page_size > 0 && memo <= page_size);
        assert!(u32::try_from(pages_per_chunk).is_ok(), "a chunk's pages are counted in u32");
        let n = pages.div_ceil(pages_per_chunk);
        let mut chunks = Vec::new();
        chunks.try_reserve_exact(n).map_err(|_| MemoryError::AllocationFailed {
            failed: (n * std::mem::size_of::<Option<Arc<Chunk>>>()) as u64,
            needed: need,
        })?;
        chunks.resize(n, None);
        Ok(PageData {
            page_size,
            pages_per_chunk,
            fill,
            memo,
            chunks,
            erased_crc: crc32fast::hash(&vec![0xFF; page_size]),
        })
    }

    /// The CRC-32 of an erased page's bytes (all 0xFF): recovery's scans
    /// read the erased pages past each block's last program.
    pub fn erased_crc(&self) -> u32 {
        self.erased_crc
    }

    /// Does `ppn` hold all 0xFF bytes? A page whose remembered CRC differs
    /// from an erased page's cannot (equal bytes, equal CRCs), so only a
    /// page with an erased page's CRC has its bytes scanned: recovery asks
    /// this of every page it scans, without copying the page out.
    pub fn reads_erased(&self, ppn: u32) -> bool {
        match self.page(ppn) {
            None => self.fill == 0xFF,
            Some(b) => (self.memo < self.page_size || self.page_crc(ppn) == self.erased_crc) && crate::is_erased(b),
        }
    }

    /// The pages of `bytes` (an image's areas, `page_size` bytes a page).
    pub fn from_bytes(bytes: &[u8], page_size: usize, pages_per_chunk: usize, fill: u8, memo: usize) -> PageData {
        assert_eq!(bytes.len() % page_size, 0, "whole pages");
        let mut d =
            PageData::new(bytes.len() / page_size, page_size, pages_per_chunk, fill, memo, 0).expect("the image is in memory already");
        for (ppn, page) in bytes.chunks(page_size).enumerate() {
            d.page_mut(ppn as u32).copy_from_slice(page);
        }
        d
    }

    #[inline]
    fn place(&self, ppn: u32) -> (usize, usize) {
        // A shift where chunks hold a power of two of pages (every preset's
        // block): every read and CRC lookup asks this.
        let per = self.pages_per_chunk as u32;
        let c = div(ppn, per);
        (c as usize, (ppn - c * per) as usize)
    }

    /// The bytes of `ppn` (`None`: its chunk was never written, every byte
    /// the fill byte).
    #[inline]
    pub fn page(&self, ppn: u32) -> Option<&[u8]> {
        let (c, i) = self.place(ppn);
        let at = i * self.page_size;
        self.chunks[c].as_deref().map(|k| &k.bytes[at..at + self.page_size])
    }

    /// Copies the bytes of `ppn` into `out`.
    #[inline]
    pub fn read(&self, ppn: u32, out: &mut [u8]) {
        match self.page(ppn) {
            Some(b) => out.copy_from_slice(b),
            None => out.fill(self.fill),
        }
    }

    /// The bytes of `ppn` to write: its chunk is allocated (filled) if it
    /// never was, and copied first if a snapshot shares it; the page's
    /// remembered CRC is forgotten.
    #[inline]
    pub fn page_mut(&mut self, ppn: u32) -> &mut [u8] {
        let (c, i) = self.place(ppn);
        let (ps, ppc, fill, memo) = (self.page_size, self.pages_per_chunk, self.fill, self.memo);
        let chunk = self.chunks[c].get_or_insert_with(|| {
            Arc::new(Chunk {
                bytes: vec![fill; ppc * ps].into(),
                crc: (0..if memo > 0 { ppc } else { 0 }).map(|_| AtomicU64::new(0)).collect(),
            })
        });
        let k = Arc::make_mut(chunk);
        if let Some(m) = k.crc.get(i) {
            m.store(0, Ordering::Relaxed);
        }
        &mut k.bytes[i * ps..(i + 1) * ps]
    }

    /// The bytes the remembered CRCs cover (0: none).
    pub fn memo(&self) -> usize {
        self.memo
    }

    /// Starts remembering the CRC of each page's first `memo` bytes, in
    /// chunks allocated from now on (a store whose memo covered other bytes
    /// would hand up wrong CRCs: refused).
    pub fn set_memo(&mut self, memo: usize) {
        assert!(memo <= self.page_size);
        assert!(self.memo == 0 || self.memo == memo, "memo of {} bytes changed to {memo}", self.memo);
        self.memo = memo;
    }

    /// The CRC-32 (IEEE, as `crc32fast` computes it) of the first `memo`
    /// bytes of `ppn`, remembered in a chunk with memos (one allocated
    /// before the store had them hashes every time). Every mount asks it of
    /// each page it reads, scans or checks (45 million times in LightTx's
    /// crash set), nearly always of a page whose CRC is known: that answer
    /// is inlined into the caller, and the hash is out of line.
    #[inline]
    pub fn page_crc(&self, ppn: u32) -> u32 {
        assert!(self.memo > 0, "a store that remembers no CRC is not asked for one");
        let (c, i) = self.place(ppn);
        let known = self.chunks[c]
            .as_deref()
            .and_then(|k| k.crc.get(i))
            .map(|m| m.load(Ordering::Relaxed))
            .filter(|v| v & KNOWN != 0);
        match known {
            Some(v) => v as u32,
            None => self.page_crc_hashed(ppn),
        }
    }

    /// [`PageData::page_crc`] of a page whose CRC is not remembered yet:
    /// hashed, and remembered where its chunk has memos.
    #[cold]
    #[inline(never)]
    fn page_crc_hashed(&self, ppn: u32) -> u32 {
        let (c, i) = self.place(ppn);
        let covers = self.memo;
        let Some(k) = self.chunks[c].as_deref() else {
            return crc32fast::hash(&vec![self.fill; covers]);
        };
        let at = i * self.page_size;
        let bytes = &k.bytes[at..at + covers];
        let crc = crc32fast::hash(bytes);
        if let Some(m) = k.crc.get(i) {
            m.store(KNOWN | crc as u64, Ordering::Relaxed);
        }
        crc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_keeps_its_bytes_while_the_array_writes() {
        let mut d = PageData::new(16, 4, 4, 0, 0, 0).unwrap();
        assert_eq!(d.page(5), None);
        d.page_mut(5).copy_from_slice(&[1, 2, 3, 4]);
        let snap = d.clone();
        d.page_mut(5).copy_from_slice(&[9, 9, 9, 9]);
        d.page_mut(6).copy_from_slice(&[7, 7, 7, 7]);
        d.page_mut(12).copy_from_slice(&[5, 5, 5, 5]);
        assert_eq!(snap.page(5), Some(&[1, 2, 3, 4][..]));
        assert_eq!(snap.page(6), Some(&[0, 0, 0, 0][..]));
        assert_eq!(snap.page(12), None);
        assert_eq!(d.page(5), Some(&[9, 9, 9, 9][..]));
        assert_eq!(d.page(6), Some(&[7, 7, 7, 7][..]));
        let mut out = [0xAA; 4];
        d.read(13, &mut out);
        assert_eq!(out, [0; 4]);
        // Chunks no one wrote since the snapshot are still shared.
        assert!(Arc::ptr_eq(d.chunks[3].as_ref().unwrap(), d.clone().chunks[3].as_ref().unwrap()));
    }

    #[test]
    fn a_fill_byte_and_pages_from_bytes_read_back() {
        let bytes: Vec<u8> = (0..40u8).collect();
        let d = PageData::from_bytes(&bytes, 4, 3, 0xFF, 0);
        for p in 0..10u32 {
            let want: Vec<u8> = (p as u8 * 4..p as u8 * 4 + 4).collect();
            assert_eq!(d.page(p).unwrap(), &want[..], "page {p}");
        }
        let mut e = PageData::new(8, 4, 4, 0xFF, 0, 0).unwrap();
        let mut out = [0; 4];
        e.read(2, &mut out);
        assert_eq!(out, [0xFF; 4]);
        e.page_mut(1)[0] = 0;
        e.read(2, &mut out);
        assert_eq!(out, [0xFF; 4], "a new chunk starts filled");
    }

    /// Remembered CRCs are those of the bytes as they are, in the array and
    /// in a snapshot sharing or no longer sharing the chunk.
    #[test]
    fn remembered_crcs_follow_every_write() {
        let mut d = PageData::new(8, 16, 4, 0, 16, 0).unwrap();
        assert_eq!(d.page_crc(3), crc32fast::hash(&[0; 16]));
        d.page_mut(1).copy_from_slice(&[1; 16]);
        assert_eq!(d.page_crc(1), crc32fast::hash(&[1; 16]));
        let snap = d.clone();
        assert_eq!(snap.page_crc(1), crc32fast::hash(&[1; 16]), "remembered, shared");
        d.page_mut(1)[5] = 9;
        let mut want = [1u8; 16];
        want[5] = 9;
        assert_eq!(d.page_crc(1), crc32fast::hash(&want));
        assert_eq!(snap.page_crc(1), crc32fast::hash(&[1; 16]));
        assert_eq!(d.page_crc(2), crc32fast::hash(&[0; 16]));
    }
}
