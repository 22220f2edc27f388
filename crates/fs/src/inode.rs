//! An inode in memory, its 256-byte encoding and its extent overflow pages
//! (the byte layouts are in [`crate::layout`]).

use crate::layout::{EXTENTS_INLINE, INODE_BYTES, NAME_MAX, OVERFLOW_HEADER, OVERFLOW_MAGIC};
use crate::{FsError, Ino, Result};
use txftl_ftl::Lpn;

/// What an inode is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Kind {
    #[default]
    Free = 0,
    File = 1,
    Dir = 2,
}

/// A file's extents, (first device page, page count) in file order, with the
/// file page each one ends at, so that finding a page is a binary search.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Extents {
    list: Vec<(u32, u32)>,
    /// `ends[i]`: file pages in extents `0..=i`.
    ends: Vec<u32>,
}

impl Extents {
    pub fn from_list(list: Vec<(u32, u32)>) -> Extents {
        let mut ends = Vec::with_capacity(list.len());
        let mut total = 0u32;
        for &(_, len) in &list {
            total += len;
            ends.push(total);
        }
        Extents { list, ends }
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }

    pub fn as_slice(&self) -> &[(u32, u32)] {
        &self.list
    }

    pub fn last(&self) -> Option<(u32, u32)> {
        self.list.last().copied()
    }

    /// Pages of the file.
    pub fn pages(&self) -> u32 {
        self.ends.last().copied().unwrap_or(0)
    }

    /// Device page of file page `index`.
    pub fn page(&self, index: u32) -> Option<Lpn> {
        let i = self.ends.partition_point(|&end| end <= index);
        let &(start, len) = self.list.get(i)?;
        Some(start + index - (self.ends[i] - len))
    }

    /// The last extent grows by one page.
    pub fn grow_last(&mut self) {
        self.list.last_mut().expect("an extent to grow").1 += 1;
        *self.ends.last_mut().expect("an extent to grow") += 1;
    }

    pub fn push(&mut self, start: u32) {
        self.list.push((start, 1));
        self.ends.push(self.pages() + 1);
    }

    /// Keeps the first `keep` file pages; returns the device ranges dropped.
    pub fn truncate_pages(&mut self, keep: u32) -> Vec<(u32, u32)> {
        let mut dropped = Vec::new();
        let first = self.ends.partition_point(|&end| end <= keep);
        for i in (first..self.list.len()).rev() {
            let (start, len) = self.list[i];
            let before = self.ends[i] - len;
            let keep_here = keep.saturating_sub(before).min(len);
            dropped.push((start + keep_here, len - keep_here));
            if keep_here > 0 {
                self.list[i].1 = keep_here;
                self.ends[i] = before + keep_here;
            } else {
                self.list.pop();
                self.ends.pop();
            }
        }
        dropped
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Inode {
    pub kind: Kind,
    pub class: u8,
    /// The directory holding it (the root: itself).
    pub parent: Ino,
    /// One path component.
    pub name: String,
    pub size: u64,
    pub extents: Extents,
    /// The extent overflow pages, in chain order.
    pub overflow: Vec<Lpn>,
}

/// What an inode record names beyond itself: its overflow chain.
pub(crate) struct Chain {
    pub first: Lpn,
    pub pages: u32,
    pub extents: usize,
}

impl Inode {
    pub fn used(&self) -> bool {
        self.kind != Kind::Free
    }

    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }

    pub fn pages(&self) -> u32 {
        self.extents.pages()
    }

    /// Device page of file page `index`.
    pub fn page(&self, index: u32) -> Option<Lpn> {
        self.extents.page(index)
    }

    /// Overflow pages the inode's extents need.
    pub fn overflow_needed(extents: usize, per_page: usize) -> usize {
        extents.saturating_sub(EXTENTS_INLINE).div_ceil(per_page)
    }

    pub fn encode(&self, out: &mut [u8]) {
        out.fill(0);
        if !self.used() {
            return;
        }
        out[0] = self.kind as u8;
        out[1] = self.class;
        out[2..4].copy_from_slice(&(self.name.len() as u16).to_le_bytes());
        out[4..4 + self.name.len()].copy_from_slice(self.name.as_bytes());
        out[64..72].copy_from_slice(&self.size.to_le_bytes());
        out[72..76].copy_from_slice(&(self.extents.len() as u32).to_le_bytes());
        out[76..80].copy_from_slice(&self.parent.to_le_bytes());
        for (i, (start, len)) in self.extents.as_slice().iter().take(EXTENTS_INLINE).enumerate() {
            out[80 + 8 * i..84 + 8 * i].copy_from_slice(&start.to_le_bytes());
            out[84 + 8 * i..88 + 8 * i].copy_from_slice(&len.to_le_bytes());
        }
        let first = self.overflow.first().copied().unwrap_or(0);
        out[208..212].copy_from_slice(&first.to_le_bytes());
        out[212..216].copy_from_slice(&(self.overflow.len() as u32).to_le_bytes());
        let crc = crc32fast::hash(&out[..INODE_BYTES - 4]);
        out[INODE_BYTES - 4..INODE_BYTES].copy_from_slice(&crc.to_le_bytes());
    }

    /// Decodes inode `ino`'s record: the inode with its inline extents, and
    /// its overflow chain still to read.
    pub fn decode(ino: Ino, b: &[u8], per_page: usize) -> Result<(Inode, Chain)> {
        let none = Chain {
            first: 0,
            pages: 0,
            extents: 0,
        };
        if b[0] == 0 {
            return Ok((Inode::default(), none));
        }
        let bad = |why: &str| Err(FsError::Format(format!("inode {ino} is corrupted: {why}")));
        let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        if crc32fast::hash(&b[..INODE_BYTES - 4]) != u(INODE_BYTES - 4) {
            return bad("checksum mismatch");
        }
        let kind = match b[0] {
            1 => Kind::File,
            2 => Kind::Dir,
            k => return bad(&format!("kind {k}")),
        };
        let name_len = u16::from_le_bytes([b[2], b[3]]) as usize;
        let n = u(72) as usize;
        if name_len > NAME_MAX {
            return bad("name too long");
        }
        let Ok(name) = String::from_utf8(b[4..4 + name_len].to_vec()) else {
            return bad("name not UTF-8");
        };
        let (first, pages) = (u(208), u(212));
        if pages as usize != Inode::overflow_needed(n, per_page) || (first == 0) != (pages == 0) {
            return bad(&format!("{n} extents in {pages} overflow pages from page {first}"));
        }
        let inline = n.min(EXTENTS_INLINE);
        let inode = Inode {
            kind,
            class: b[1],
            parent: u(76),
            name,
            size: u64::from_le_bytes(b[64..72].try_into().expect("8 bytes")),
            extents: Extents::from_list((0..inline).map(|i| (u(80 + 8 * i), u(84 + 8 * i))).collect()),
            overflow: Vec::new(),
        };
        Ok((
            inode,
            Chain {
                first,
                pages,
                extents: n - inline,
            },
        ))
    }

    /// The bytes of overflow page `k` of inode `ino`'s chain.
    pub fn encode_overflow(&self, ino: Ino, k: usize, per_page: usize, out: &mut [u8]) {
        out.fill(0);
        let from = (EXTENTS_INLINE + k * per_page).min(self.extents.len());
        let to = (from + per_page).min(self.extents.len());
        let next = self.overflow.get(k + 1).copied().unwrap_or(0);
        out[0..8].copy_from_slice(OVERFLOW_MAGIC);
        out[8..12].copy_from_slice(&ino.to_le_bytes());
        out[12..16].copy_from_slice(&(k as u32).to_le_bytes());
        out[16..20].copy_from_slice(&((to - from) as u32).to_le_bytes());
        out[20..24].copy_from_slice(&next.to_le_bytes());
        for (i, (start, len)) in self.extents.as_slice()[from..to].iter().enumerate() {
            let at = OVERFLOW_HEADER + 8 * i;
            out[at..at + 4].copy_from_slice(&start.to_le_bytes());
            out[at + 4..at + 8].copy_from_slice(&len.to_le_bytes());
        }
        let end = out.len() - 4;
        let crc = crc32fast::hash(&out[..end]);
        out[end..].copy_from_slice(&crc.to_le_bytes());
    }

    /// Checks overflow page `k` of inode `ino` and returns its extents and the next page.
    pub fn decode_overflow(ino: Ino, k: usize, lpn: Lpn, b: &[u8], per_page: usize) -> Result<(Vec<(u32, u32)>, Lpn)> {
        let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let end = b.len() - 4;
        let m = u(16) as usize;
        if &b[0..8] != OVERFLOW_MAGIC
            || crc32fast::hash(&b[..end]) != u(end)
            || u(8) != ino
            || u(12) as usize != k
            || m == 0
            || m > per_page
        {
            return Err(FsError::Format(format!(
                "page {lpn} is not overflow page {k} of inode {ino}'s extents"
            )));
        }
        let extents = (0..m)
            .map(|i| (u(OVERFLOW_HEADER + 8 * i), u(OVERFLOW_HEADER + 8 * i + 4)))
            .collect();
        Ok((extents, u(20)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extents_find_grow_and_truncate() {
        let mut e = Extents::default();
        assert_eq!(e.page(0), None);
        e.push(100);
        e.grow_last();
        e.push(200);
        e.push(300);
        e.grow_last();
        e.grow_last();
        assert_eq!(e.as_slice(), &[(100, 2), (200, 1), (300, 3)]);
        let pages: Vec<_> = (0..7).map(|i| e.page(i)).collect();
        assert_eq!(pages, [Some(100), Some(101), Some(200), Some(300), Some(301), Some(302), None]);
        assert_eq!(e.truncate_pages(4), vec![(301, 2)]);
        assert_eq!(e.as_slice(), &[(100, 2), (200, 1), (300, 1)]);
        assert_eq!(e.truncate_pages(1), vec![(300, 1), (200, 1), (101, 1)]);
        assert_eq!((e.pages(), e.page(0), e.page(1)), (1, Some(100), None));
        assert_eq!(e.truncate_pages(5), vec![]);
        assert_eq!(e, Extents::from_list(vec![(100, 1)]));
    }

    #[test]
    fn inode_and_overflow_round_trip() {
        let per_page = (512 - OVERFLOW_HEADER - 4) / 8;
        let list: Vec<(u32, u32)> = (0..100).map(|i| (1000 + 3 * i, 1 + i % 2)).collect();
        let inode = Inode {
            kind: Kind::File,
            class: 1,
            parent: 7,
            name: "x.db".into(),
            size: 12345,
            extents: Extents::from_list(list.clone()),
            overflow: vec![500, 600],
        };
        let mut rec = [0u8; INODE_BYTES];
        inode.encode(&mut rec);
        let (mut back, chain) = Inode::decode(3, &rec, per_page).unwrap();
        assert_eq!((chain.first, chain.pages, chain.extents), (500, 2, 84));
        let mut page = vec![0u8; 512];
        let mut all = back.extents.as_slice().to_vec();
        let mut next = chain.first;
        for k in 0..2 {
            inode.encode_overflow(3, k, per_page, &mut page);
            let (more, n) = Inode::decode_overflow(3, k, next, &page, per_page).unwrap();
            all.extend(more);
            back.overflow.push(next);
            next = n;
        }
        assert_eq!(next, 0);
        back.extents = Extents::from_list(all);
        assert_eq!(back, inode);
        assert!(Inode::decode_overflow(4, 1, 600, &page, per_page).is_err(), "another owner");
        rec[100] ^= 1;
        assert!(Inode::decode(3, &rec, per_page).is_err(), "the checksum");
    }
}
