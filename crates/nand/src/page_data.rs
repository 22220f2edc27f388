//! The data areas of a full-data array, a block's pages to a chunk, each
//! chunk shared between the array and its snapshots until one of them
//! writes it (copy on write).
//!
//! Why: the crash harness snapshots the array for every recovery cut
//! ([`crate::Nand::snapshot`]) and the recovery that follows writes a few
//! blocks at most. Copying every data byte per snapshot was 40% of a crash
//! set's time (LightTx on `tiny-slc`); sharing the chunks makes a snapshot
//! cost one reference count per block, and a write copies only its own
//! block, once per snapshot. A chunk never written is not allocated: it
//! reads as zeros, so the memory follows the blocks programmed, not the
//! capacity.

use crate::error::MemoryError;
use std::sync::Arc;

#[derive(Clone)]
pub(crate) struct PageData {
    page_size: usize,
    pages_per_chunk: usize,
    /// Per chunk (block): its bytes, or `None` if never written (zeros).
    chunks: Vec<Option<Arc<[u8]>>>,
}

impl PageData {
    /// `pages` pages of `page_size` bytes, zero, in chunks of
    /// `pages_per_chunk` pages; `need` names the whole array's memory if the
    /// chunk table cannot be allocated.
    pub fn new(pages: usize, page_size: usize, pages_per_chunk: usize, need: u64) -> Result<PageData, MemoryError> {
        assert!(pages_per_chunk > 0 && page_size > 0);
        let n = pages.div_ceil(pages_per_chunk);
        let mut chunks = Vec::new();
        chunks.try_reserve_exact(n).map_err(|_| MemoryError::AllocationFailed {
            failed: (n * std::mem::size_of::<Option<Arc<[u8]>>>()) as u64,
            needed: need,
        })?;
        chunks.resize(n, None);
        Ok(PageData {
            page_size,
            pages_per_chunk,
            chunks,
        })
    }

    /// The pages of `bytes` (an image's data area, `page_size` bytes a page).
    pub fn from_bytes(bytes: &[u8], page_size: usize, pages_per_chunk: usize) -> PageData {
        assert_eq!(bytes.len() % page_size, 0, "whole pages");
        let chunk = page_size * pages_per_chunk;
        let chunks = bytes
            .chunks(chunk)
            .map(|c| {
                let mut full = vec![0u8; chunk];
                full[..c.len()].copy_from_slice(c);
                Some(Arc::from(full))
            })
            .collect();
        PageData {
            page_size,
            pages_per_chunk,
            chunks,
        }
    }

    #[inline]
    fn place(&self, ppn: u32) -> (usize, usize) {
        let p = ppn as usize;
        (p / self.pages_per_chunk, (p % self.pages_per_chunk) * self.page_size)
    }

    /// The bytes of `ppn` (`None`: its chunk was never written, all zero).
    #[inline]
    pub fn page(&self, ppn: u32) -> Option<&[u8]> {
        let (c, at) = self.place(ppn);
        self.chunks[c].as_deref().map(|b| &b[at..at + self.page_size])
    }

    /// Copies the bytes of `ppn` into `out`.
    #[inline]
    pub fn read(&self, ppn: u32, out: &mut [u8]) {
        match self.page(ppn) {
            Some(b) => out.copy_from_slice(b),
            None => out.fill(0),
        }
    }

    /// The bytes of `ppn` to write: its chunk is allocated (zero) if it
    /// never was, and copied first if a snapshot shares it.
    #[inline]
    pub fn page_mut(&mut self, ppn: u32) -> &mut [u8] {
        let (c, at) = self.place(ppn);
        let chunk = self.chunks[c].get_or_insert_with(|| Arc::from(vec![0u8; self.pages_per_chunk * self.page_size]));
        let bytes = Arc::make_mut(chunk);
        &mut bytes[at..at + self.page_size]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_keeps_its_bytes_while_the_array_writes() {
        let mut d = PageData::new(16, 4, 4, 0).unwrap();
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
    fn pages_from_bytes_read_back() {
        let bytes: Vec<u8> = (0..40u8).collect();
        let d = PageData::from_bytes(&bytes, 4, 3);
        for p in 0..10u32 {
            let want: Vec<u8> = (p as u8 * 4..p as u8 * 4 + 4).collect();
            assert_eq!(d.page(p).unwrap(), &want[..], "page {p}");
        }
    }
}
