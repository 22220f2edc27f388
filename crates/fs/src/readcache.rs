//! The host's clean-page cache: file pages as the device last held them
//! committed, kept in host DRAM as an OS's page cache keeps pages it read or
//! wrote (Linux under ext4), so that a page read again is not read from the
//! device again. Off unless asked for ([`crate::Fs::set_read_cache`]): a
//! bound in pages, least recently used first out.
//!
//! What it holds is always what a read without a transaction would get from
//! the device: a page read without a transaction, or written without one
//! (a write-back or write-through of the file's data). A transaction's own
//! writes wait beside it, per transaction, and replace the committed page at
//! its commit (dropped at its abort): until then, readers outside it keep
//! reading the committed page from here, and the transaction reads its own.
//! Any other device write of a page (metadata, a remap that gives a database
//! page a WAL page's contents) forgets it here. A power cut or a process's
//! death loses it with the rest of the host's DRAM; nothing durable is here.

use std::collections::BTreeMap;
use txftl_ftl::{Lpn, Tid};

#[derive(Default)]
pub(crate) struct ReadCache {
    /// Pages at most (0: off).
    bound: usize,
    pages: BTreeMap<Lpn, (u64, Box<[u8]>)>,
    /// Last use -> page, for eviction.
    by_use: BTreeMap<u64, Lpn>,
    clock: u64,
    /// Open transactions' own pages, which replace the committed ones at commit.
    tx: BTreeMap<Tid, BTreeMap<Lpn, Box<[u8]>>>,
}

impl ReadCache {
    pub fn set_bound(&mut self, pages: usize) {
        self.bound = pages;
        while self.pages.len() > self.bound {
            self.evict();
        }
        if pages == 0 {
            self.tx.clear();
        }
    }

    pub fn bound(&self) -> usize {
        self.bound
    }

    /// The page as `tx` (or no transaction) would read it from the device.
    pub fn get(&mut self, tx: Option<Tid>, lpn: Lpn, buf: &mut [u8]) -> bool {
        if self.bound == 0 {
            return false;
        }
        if let Some(d) = tx.and_then(|t| self.tx.get(&t)).and_then(|m| m.get(&lpn)) {
            buf.copy_from_slice(d);
            return true;
        }
        let Some((used, d)) = self.pages.get_mut(&lpn) else { return false };
        buf.copy_from_slice(d);
        self.clock += 1;
        self.by_use.remove(used);
        *used = self.clock;
        self.by_use.insert(self.clock, lpn);
        true
    }

    /// `tx` read `data` from the device: kept if it is the committed page
    /// (read without a transaction, or a page `tx` has not written).
    pub fn read(&mut self, tx: Option<Tid>, lpn: Lpn, data: &[u8]) {
        if self.bound == 0 || tx.is_some_and(|t| self.tx.get(&t).is_some_and(|m| m.contains_key(&lpn))) {
            return;
        }
        self.put(lpn, data);
    }

    /// `data` went to the device as `lpn`, in `tx` or none.
    pub fn wrote(&mut self, tx: Option<Tid>, lpn: Lpn, data: &[u8]) {
        if self.bound == 0 {
            return;
        }
        match tx {
            None => self.put(lpn, data),
            Some(t) => {
                self.tx.entry(t).or_default().insert(lpn, data.into());
            }
        }
    }

    /// The device now holds something else at `lpn`, not through a file
    /// page write (metadata, a remap).
    pub fn forget(&mut self, lpn: Lpn) {
        if let Some((used, _)) = self.pages.remove(&lpn) {
            self.by_use.remove(&used);
        }
        for m in self.tx.values_mut() {
            m.remove(&lpn);
        }
    }

    /// The device moved `src`'s page to `dst` (a remap): `dst` now reads
    /// as `src` did, and `src` reads nothing.
    pub fn moved(&mut self, src: Lpn, dst: Lpn) {
        let data = self.pages.get(&src).map(|(_, d)| d.clone());
        self.forget(src);
        self.forget(dst);
        if let Some(d) = data {
            self.put(dst, &d);
        }
    }

    pub fn committed(&mut self, tid: Tid) {
        for (lpn, d) in self.tx.remove(&tid).unwrap_or_default() {
            self.put(lpn, &d);
        }
    }

    /// `tid` aborted, or its commit failed (the device may hold its pages
    /// or not): its pages are forgotten, the next read goes to the device.
    pub fn dropped(&mut self, tid: Tid) {
        for lpn in self.tx.remove(&tid).unwrap_or_default().into_keys() {
            if let Some((used, _)) = self.pages.remove(&lpn) {
                self.by_use.remove(&used);
            }
        }
    }

    fn put(&mut self, lpn: Lpn, data: &[u8]) {
        self.clock += 1;
        if let Some((used, _)) = self.pages.insert(lpn, (self.clock, data.into())) {
            self.by_use.remove(&used);
        }
        self.by_use.insert(self.clock, lpn);
        while self.pages.len() > self.bound {
            self.evict();
        }
    }

    fn evict(&mut self) {
        if let Some((_, lpn)) = self.by_use.pop_first() {
            self.pages.remove(&lpn);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_transactions_pages_replace_the_committed_ones_at_commit_only() {
        let mut c = ReadCache::default();
        c.set_bound(2);
        let mut b = [0u8; 1];
        c.read(None, 7, &[1]);
        c.wrote(Some(3), 7, &[2]);
        assert!(c.get(None, 7, &mut b) && b == [1], "others read the committed page");
        assert!(c.get(Some(3), 7, &mut b) && b == [2], "the transaction reads its own");
        c.committed(3);
        assert!(c.get(None, 7, &mut b) && b == [2]);
        c.wrote(Some(4), 7, &[9]);
        c.dropped(4);
        assert!(!c.get(None, 7, &mut b), "an abort (or a failed commit) leaves the device to say");
        c.read(None, 7, &[2]);
        c.read(None, 8, &[8]);
        c.read(None, 9, &[9]);
        assert!(!c.get(None, 7, &mut b), "the least recently used page went at the bound");
        c.moved(9, 5);
        assert!(
            !c.get(None, 9, &mut b) && c.get(None, 5, &mut b) && b == [9],
            "a remap moves the page"
        );
        c.forget(5);
        assert!(!c.get(None, 5, &mut b));
        c.set_bound(0);
        assert!(!c.get(None, 8, &mut b), "off");
    }
}
