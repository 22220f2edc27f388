//! The LRU buffer pool of DB pages: steal (a page an open transaction
//! dirtied may be evicted, and is then written under its transaction),
//! force (the caller writes a transaction's dirty pages before its commit).
//!
//! A frame is *loading* from the moment a miss claims it until its read
//! completes on the device clock; a loading frame is never evicted, and
//! another reader of its page waits for it. Pinned pages (the protocol's:
//! the last pages open transactions dirtied) are never evicted either.

use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// One frame: the page it holds and the version of it (the id of the
/// transaction that wrote it last, 0 for the loaded database).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame {
    pub page: u32,
    pub version: u64,
    /// The client whose open transaction dirtied it.
    pub dirty_by: Option<usize>,
    /// When its data is in memory: None while its read is not yet issued.
    pub ready_ns: Option<u64>,
    /// While its read is not issued: when it will be (a reader waiting for
    /// the page asks again then).
    pub read_at_ns: u64,
    tick: u64,
}

impl Frame {
    pub fn ready_at(&self, now_ns: u64) -> bool {
        self.ready_ns.is_some_and(|r| r <= now_ns)
    }
}

/// Hits and misses of page requests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BufferCounts {
    pub hits: u64,
    pub misses: u64,
    /// Dirty pages evicted before their transaction ended (steal).
    pub steal_writes: u64,
    /// Dirty pages written at commit (force).
    pub force_writes: u64,
}

pub struct BufferPool {
    capacity: usize,
    frames: Vec<Frame>,
    free: Vec<usize>,
    by_page: BTreeMap<u32, usize>,
    /// Frames by last use (the oldest first).
    lru: BTreeMap<u64, usize>,
    tick: u64,
    pins: BTreeMap<u32, u32>,
    /// Each client's dirty pages.
    dirty: Vec<BTreeSet<u32>>,
    pub counts: BufferCounts,
}

impl BufferPool {
    pub fn new(capacity: u32, clients: usize) -> BufferPool {
        BufferPool {
            capacity: capacity as usize,
            frames: Vec::with_capacity(capacity as usize),
            free: Vec::new(),
            by_page: BTreeMap::new(),
            lru: BTreeMap::new(),
            tick: 0,
            pins: BTreeMap::new(),
            dirty: vec![BTreeSet::new(); clients],
            counts: BufferCounts::default(),
        }
    }

    /// The frame holding `page`, if resident (loading or not).
    pub fn resident(&self, page: u32) -> Option<usize> {
        self.by_page.get(&page).copied()
    }

    pub fn frame(&self, i: usize) -> &Frame {
        &self.frames[i]
    }

    /// Marks frame `i` used now (a hit, or a completed load).
    pub fn touch(&mut self, i: usize) {
        let f = &mut self.frames[i];
        self.lru.remove(&f.tick);
        self.tick += 1;
        f.tick = self.tick;
        self.lru.insert(self.tick, i);
    }

    /// Takes a frame for `page` (not resident), loading: a free one, or
    /// the least recently used one that is neither loading nor pinned,
    /// which is returned as it was (the caller writes it if dirty).
    /// None: every frame is loading or pinned (the configuration's checks
    /// leave room, so the caller treats it as a broken invariant).
    pub fn claim(&mut self, page: u32, version: u64, now_ns: u64) -> Option<(usize, Option<Frame>)> {
        assert!(!self.by_page.contains_key(&page), "page {page} claimed while resident");
        let fresh = Frame {
            page,
            version,
            dirty_by: None,
            ready_ns: None,
            read_at_ns: now_ns,
            tick: 0,
        };
        let (i, evicted) = if let Some(i) = self.free.pop() {
            self.frames[i] = fresh;
            (i, None)
        } else if self.frames.len() < self.capacity {
            self.frames.push(fresh);
            (self.frames.len() - 1, None)
        } else {
            let i = self.victim(now_ns)?;
            let old = std::mem::replace(&mut self.frames[i], fresh);
            self.lru.remove(&old.tick);
            self.by_page.remove(&old.page);
            if let Some(c) = old.dirty_by {
                let was = self.dirty[c].remove(&old.page);
                debug_assert!(was, "dirty page {} not listed for client {c}", old.page);
                self.counts.steal_writes += 1;
            }
            (i, Some(old))
        };
        self.by_page.insert(page, i);
        self.touch(i);
        self.counts.misses += 1;
        Some((i, evicted))
    }

    /// The frame a claim at `now_ns` would evict: none while a frame is
    /// free; the least recently used one neither loading nor pinned.
    pub fn victim(&self, now_ns: u64) -> Option<usize> {
        if !self.free.is_empty() || self.frames.len() < self.capacity {
            return None;
        }
        self.lru
            .values()
            .copied()
            .find(|&i| self.frames[i].ready_at(now_ns) && !self.pins.contains_key(&self.frames[i].page))
    }

    /// The read of frame `i` waits for its victim's write: it is issued at `at_ns`.
    pub fn read_after(&mut self, i: usize, at_ns: u64) {
        debug_assert!(self.frames[i].ready_ns.is_none());
        self.frames[i].read_at_ns = at_ns;
    }

    /// The read of frame `i` is issued: its data is in memory at `ready_ns`.
    pub fn loaded(&mut self, i: usize, version: u64, ready_ns: u64) {
        let f = &mut self.frames[i];
        debug_assert!(f.ready_ns.is_none(), "page {} loaded twice", f.page);
        f.version = version;
        f.ready_ns = Some(ready_ns);
    }

    /// Client `c`'s transaction `version` writes the page of frame `i`.
    pub fn write(&mut self, i: usize, c: usize, version: u64) {
        let f = &mut self.frames[i];
        assert!(
            f.dirty_by.is_none_or(|o| o == c),
            "page {} dirtied by client {c} while client {:?}'s write is unwritten",
            f.page,
            f.dirty_by
        );
        f.dirty_by = Some(c);
        f.version = version;
        self.dirty[c].insert(f.page);
    }

    /// One of `c`'s dirty pages, if any is left, and its version; marked clean
    /// (the caller writes it now).
    pub fn take_dirty(&mut self, c: usize) -> Option<(u32, u64)> {
        let page = self.dirty[c].pop_first()?;
        let f = &mut self.frames[self.by_page[&page]];
        debug_assert_eq!(f.dirty_by, Some(c));
        f.dirty_by = None;
        self.counts.force_writes += 1;
        Some((page, f.version))
    }

    /// Drops `page` from the pool (its transaction aborted: the version it
    /// holds is no one's). The page must be neither pinned nor loading.
    pub fn drop_page(&mut self, page: u32) {
        let Some(i) = self.by_page.remove(&page) else {
            return;
        };
        let f = self.frames[i];
        assert!(!self.pins.contains_key(&page), "pinned page {page} dropped");
        assert!(f.ready_ns.is_some(), "page {page} dropped while loading");
        if let Some(c) = f.dirty_by {
            self.dirty[c].remove(&page);
        }
        self.lru.remove(&f.tick);
        self.free.push(i);
    }

    pub fn pin(&mut self, page: u32) {
        assert!(self.by_page.contains_key(&page), "page {page} pinned while not resident");
        *self.pins.entry(page).or_default() += 1;
    }

    pub fn unpin(&mut self, page: u32) {
        let n = self.pins.get_mut(&page).expect("unpinned page was pinned");
        *n -= 1;
        if *n == 0 {
            self.pins.remove(&page);
        }
    }

    /// No dirty page and no pin left (the end of a run).
    pub fn is_quiet(&self) -> bool {
        self.pins.is_empty() && self.dirty.iter().all(BTreeSet::is_empty)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_least_recently_used_unpinned_ready_frame_goes() {
        let mut b = BufferPool::new(3, 1);
        for p in 0..3 {
            let (i, ev) = b.claim(p, 0, 0).unwrap();
            assert_eq!(ev, None);
            b.loaded(i, 0, 10);
        }
        b.touch(b.resident(0).unwrap());
        // Page 1 is the oldest; pinned, it stays and page 2 goes.
        b.pin(1);
        let (_, ev) = b.claim(9, 0, 10).unwrap();
        assert_eq!(ev.map(|f| f.page), Some(2));
        // Loading (page 9) and pinned (page 1): only page 0 can go.
        let (_, ev) = b.claim(8, 0, 10).unwrap();
        assert_eq!(ev.map(|f| f.page), Some(0));
        assert_eq!(b.claim(7, 0, 10), None, "page 8 and 9 loading, page 1 pinned");
    }

    #[test]
    fn a_dirty_victim_is_returned_and_counted_as_a_steal() {
        let mut b = BufferPool::new(1, 2);
        let (i, _) = b.claim(5, 0, 0).unwrap();
        b.loaded(i, 0, 0);
        b.write(i, 1, 42);
        let (_, ev) = b.claim(6, 0, 0).unwrap();
        let ev = ev.unwrap();
        assert_eq!((ev.page, ev.version, ev.dirty_by), (5, 42, Some(1)));
        assert_eq!(b.counts.steal_writes, 1);
        assert!(b.take_dirty(1).is_none());
    }

    #[test]
    fn force_takes_each_dirty_page_once() {
        let mut b = BufferPool::new(4, 1);
        for p in [3, 1] {
            let (i, _) = b.claim(p, 0, 0).unwrap();
            b.loaded(i, 0, 0);
            b.write(i, 0, 7);
        }
        assert_eq!(b.take_dirty(0), Some((1, 7)));
        assert_eq!(b.take_dirty(0), Some((3, 7)));
        assert_eq!(b.take_dirty(0), None);
        assert!(b.is_quiet());
    }
}
