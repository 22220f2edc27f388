//! Strict two-phase locking on lock keys (a page at page granularity, a
//! record at record granularity: [`record_key`]): shared and exclusive
//! locks held to the transaction's end, a FIFO queue of waiters per key, and the
//! wait-for graph those queues imply, searched for a cycle on every block.
//!
//! Clients stand for their transactions: a client runs one at a time, and
//! its locks are released when it ends. A request is granted when it is
//! compatible with every other holder and no conflicting request waits
//! ahead of it (so a stream of readers does not starve a writer); an
//! upgrade (shared to exclusive) goes to the head of the queue, as it must
//! wait for the other readers only.

use std::collections::{BTreeMap, BTreeSet};

/// The lock key of record `slot` of DB page `page`.
pub fn record_key(page: u32, slot: u32) -> u64 {
    (page as u64) << 32 | slot as u64
}

/// The lock key of DB page `page`'s update slots ([`Mode::Slots`]): a
/// namespace of its own (record keys leave the top bit clear).
pub fn page_slots_key(page: u32) -> u64 {
    1 << 63 | page as u64
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Shared,
    Exclusive,
    /// One of `n` slots of a key: granted while fewer than `n` others hold
    /// one (Flag Commit's max_c, Algorithm 1: at most max_c transactions
    /// with pending updates on a page). A waiter waits for every holder
    /// (any one's release frees a slot), so a deadlock search may name a
    /// cycle one release elsewhere would have broken.
    Slots(u32),
}

fn conflicts(a: Mode, b: Mode) -> bool {
    a == Mode::Exclusive || b == Mode::Exclusive || matches!((a, b), (Mode::Slots(_), _) | (_, Mode::Slots(_)))
}

/// Whether `mode` fits beside the holders other than `c`.
fn fits(holders: &BTreeMap<usize, Mode>, c: usize, mode: Mode) -> bool {
    let mut others = holders.iter().filter(|&(&h, _)| h != c).map(|(_, &m)| m);
    match mode {
        Mode::Slots(n) => {
            let others: Vec<Mode> = others.collect();
            others.iter().all(|m| matches!(m, Mode::Slots(_))) && (others.len() as u32) < n
        }
        _ => others.all(|m| !conflicts(m, mode)),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grant {
    Granted,
    Blocked,
}

#[derive(Debug, Default)]
struct Entry {
    holders: BTreeMap<usize, Mode>,
    /// Waiters in arrival order (upgrades first).
    queue: Vec<(usize, Mode)>,
}

/// The lock table of `clients` clients.
#[derive(Debug)]
pub struct LockTable {
    entries: BTreeMap<u64, Entry>,
    held: Vec<BTreeSet<u64>>,
    /// The page and mode each blocked client waits for.
    waiting: Vec<Option<(u64, Mode)>>,
}

impl LockTable {
    pub fn new(clients: usize) -> LockTable {
        LockTable {
            entries: BTreeMap::new(),
            held: vec![BTreeSet::new(); clients],
            waiting: vec![None; clients],
        }
    }

    /// The mode `c` holds `page` in.
    pub fn held(&self, c: usize, page: u64) -> Option<Mode> {
        self.entries.get(&page).and_then(|e| e.holders.get(&c).copied())
    }

    /// Asks for `page` in `mode` for client `c`. Blocked: `c` is queued (or
    /// keeps its place) and waits until a release wakes it to ask again.
    pub fn request(&mut self, c: usize, page: u64, mode: Mode) -> Grant {
        let e = self.entries.entry(page).or_default();
        let mine = e.holders.get(&c).copied();
        if mine == Some(Mode::Exclusive) || (mine.is_some() && mode == Mode::Shared) {
            return Grant::Granted;
        }
        let upgrade = mine.is_some();
        let holders_ok = fits(&e.holders, c, mode);
        let place = e.queue.iter().position(|&(q, _)| q == c);
        let ahead = &e.queue[..place.unwrap_or(e.queue.len())];
        let queue_ok = upgrade || ahead.iter().all(|&(_, m)| !conflicts(m, mode));
        if holders_ok && queue_ok {
            if let Some(i) = place {
                e.queue.remove(i);
            }
            e.holders.insert(c, mode);
            debug_assert!(
                e.holders.len() == 1
                    || e.holders.values().all(|&m| m == Mode::Shared)
                    || e.holders
                        .values()
                        .all(|&m| matches!(m, Mode::Slots(n) if e.holders.len() as u32 <= n)),
                "key {page}: an exclusive lock shared, or slots over their count: {:?}",
                e.holders
            );
            self.held[c].insert(page);
            self.waiting[c] = None;
            return Grant::Granted;
        }
        match place {
            Some(i) => e.queue[i].1 = mode,
            None if upgrade => e.queue.insert(0, (c, mode)),
            None => e.queue.push((c, mode)),
        }
        debug_assert!(self.waiting[c].is_none_or(|(p, _)| p == page), "client {c} waits on two pages");
        self.waiting[c] = Some((page, mode));
        Grant::Blocked
    }

    /// The clients `c` waits for: the conflicting holders of its page, and
    /// the conflicting waiters queued ahead of it.
    pub fn waits_for(&self, c: usize) -> Vec<usize> {
        let Some((page, mode)) = self.waiting[c] else {
            return Vec::new();
        };
        let e = &self.entries[&page];
        let place = e.queue.iter().position(|&(q, _)| q == c).unwrap_or(e.queue.len());
        let holders = e.holders.iter().filter(|&(&h, &m)| h != c && conflicts(m, mode)).map(|(&h, _)| h);
        let ahead = e.queue[..place].iter().filter(|&&(_, m)| conflicts(m, mode)).map(|&(q, _)| q);
        holders.chain(ahead).collect()
    }

    /// A cycle of the wait-for graph through `from`, if there is one (in
    /// path order, `from` first). Every new cycle goes through the client
    /// that just blocked (a running client waits for nobody), so checking
    /// from it on every block finds every deadlock.
    pub fn find_cycle(&self, from: usize) -> Option<Vec<usize>> {
        let mut path = vec![from];
        let mut seen = BTreeSet::from([from]);
        let mut stack = vec![self.waits_for(from)];
        while let Some(next) = stack.last_mut() {
            let Some(n) = next.pop() else {
                stack.pop();
                path.pop();
                continue;
            };
            if n == from {
                return Some(path);
            }
            if seen.insert(n) {
                path.push(n);
                stack.push(self.waits_for(n));
            }
        }
        None
    }

    /// `c` stops waiting (it was chosen as a deadlock victim). Returns the
    /// other waiters of its page, dequeued: they ask again (a waiter behind
    /// it may now be granted).
    pub fn cancel_wait(&mut self, c: usize) -> Vec<usize> {
        let Some((page, _)) = self.waiting[c].take() else {
            return Vec::new();
        };
        let e = self.entries.get_mut(&page).expect("a waited-for page has an entry");
        e.queue.retain(|&(q, _)| q != c);
        let woken: Vec<usize> = e.queue.drain(..).map(|(q, _)| q).collect();
        woken.iter().for_each(|&q| self.waiting[q] = None);
        if e.holders.is_empty() {
            self.entries.remove(&page);
        }
        woken
    }

    /// Releases every lock of `c` (its transaction ended). Returns the
    /// waiters of those pages in queue order, dequeued: they ask again, in
    /// that order, at the release's instant. A woken client waits for
    /// nobody until it asks, so it is never part of a cycle meanwhile.
    pub fn release_all(&mut self, c: usize) -> Vec<usize> {
        debug_assert!(self.waiting[c].is_none(), "client {c} ends while waiting");
        let mut woken = Vec::new();
        for page in std::mem::take(&mut self.held[c]) {
            let e = self.entries.get_mut(&page).expect("a held page has an entry");
            let had = e.holders.remove(&c);
            debug_assert!(had.is_some(), "client {c} released page {page} it did not hold");
            for (q, _) in e.queue.drain(..) {
                self.waiting[q] = None;
                woken.push(q);
            }
            if e.holders.is_empty() {
                self.entries.remove(&page);
            }
        }
        woken
    }

    /// Nothing held and nobody waiting (the end of a run).
    pub fn is_idle(&self) -> bool {
        self.entries.is_empty() && self.waiting.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Mode::*;

    /// A page's slots: `n` holders at once, the next waits for all of them
    /// and gets the slot the first release frees; waits feed the deadlock search.
    #[test]
    fn slots_admit_n_holders_and_the_next_waits() {
        let key = page_slots_key(4);
        assert_ne!(key, record_key(4, 0));
        let mut t = LockTable::new(4);
        assert_eq!(t.request(0, key, Slots(2)), Grant::Granted);
        assert_eq!(t.request(1, key, Slots(2)), Grant::Granted);
        assert_eq!(t.request(0, key, Slots(2)), Grant::Granted, "a holder asking again holds already");
        assert_eq!(t.request(2, key, Slots(2)), Grant::Blocked);
        assert_eq!(t.waits_for(2), vec![0, 1]);
        // A slot waiter in a cycle through a record lock.
        let mut u = LockTable::new(3);
        assert_eq!(u.request(2, record_key(9, 1), Exclusive), Grant::Granted);
        assert_eq!(u.request(0, key, Slots(1)), Grant::Granted);
        assert_eq!(u.request(2, key, Slots(1)), Grant::Blocked);
        assert_eq!(u.request(0, record_key(9, 1), Exclusive), Grant::Blocked);
        assert!(u.find_cycle(0).is_some());
        assert_eq!(t.release_all(1), vec![2]);
        assert_eq!(t.request(2, key, Slots(2)), Grant::Granted);
    }

    #[test]
    fn readers_share_and_a_writer_waits_for_them() {
        let mut t = LockTable::new(3);
        assert_eq!(t.request(0, 7, Shared), Grant::Granted);
        assert_eq!(t.request(1, 7, Shared), Grant::Granted);
        assert_eq!(t.request(2, 7, Exclusive), Grant::Blocked);
        assert_eq!(t.waits_for(2), vec![0, 1]);
        assert_eq!(t.release_all(0), vec![2]);
        assert_eq!(t.waits_for(2), Vec::<usize>::new(), "woken: it waits for nobody until it asks");
        assert_eq!(t.request(2, 7, Exclusive), Grant::Blocked);
        assert_eq!(t.release_all(1), vec![2]);
        assert_eq!(t.request(2, 7, Exclusive), Grant::Granted);
        assert_eq!(t.held(2, 7), Some(Exclusive));
    }

    #[test]
    fn a_reader_does_not_overtake_a_queued_writer() {
        let mut t = LockTable::new(3);
        t.request(0, 1, Shared);
        assert_eq!(t.request(1, 1, Exclusive), Grant::Blocked);
        assert_eq!(t.request(2, 1, Shared), Grant::Blocked);
        assert_eq!(t.waits_for(2), vec![1]);
    }

    #[test]
    fn two_upgrades_of_one_page_are_a_deadlock() {
        let mut t = LockTable::new(2);
        t.request(0, 1, Shared);
        t.request(1, 1, Shared);
        assert_eq!(t.request(0, 1, Exclusive), Grant::Blocked);
        assert_eq!(t.find_cycle(0), None);
        assert_eq!(t.request(1, 1, Exclusive), Grant::Blocked);
        let cycle = t.find_cycle(1).unwrap();
        assert_eq!(cycle.iter().copied().collect::<BTreeSet<_>>(), BTreeSet::from([0, 1]));
    }

    #[test]
    fn a_three_way_cycle_is_found_and_a_chain_is_not() {
        let mut t = LockTable::new(4);
        for c in 0..3 {
            t.request(c, c as u64, Exclusive);
        }
        assert_eq!(t.request(0, 1, Exclusive), Grant::Blocked);
        assert_eq!(t.request(1, 2, Exclusive), Grant::Blocked);
        assert_eq!(t.find_cycle(1), None, "a chain");
        assert_eq!(t.request(2, 0, Exclusive), Grant::Blocked);
        assert_eq!(t.find_cycle(2), Some(vec![2, 0, 1]));
        // The victim stops waiting; the others' waits stay.
        assert_eq!(t.cancel_wait(0), Vec::<usize>::new());
        assert_eq!(t.find_cycle(2), None);
        assert_eq!(t.release_all(0), vec![2]);
        assert_eq!(t.request(2, 0, Exclusive), Grant::Granted);
        assert_eq!(t.release_all(2), vec![1]);
        assert_eq!(t.release_all(1), Vec::<usize>::new());
        assert!(t.is_idle());
    }
}
