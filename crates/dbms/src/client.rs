//! A client and the transaction it runs: where it stands in its plan, and
//! what its current attempt has done (a deadlock victim restarts the same
//! plan as a new attempt, under a new transaction id); and the steps of a
//! client's life both engines share (blocked, woken, chosen as a deadlock
//! victim, released at its end).

use crate::locks::LockTable;
use crate::sim::{youngest, Sim};
use crate::tpcc::TxPlan;
use std::collections::{BTreeSet, VecDeque};
use txftl_ftl::Tid;

/// What a client does at its next event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// No transaction: it takes the next plan, if any is left.
    Idle,
    /// At its transaction's next access, or its end.
    Run,
    /// Waiting for a lock: a release (or a victim's cancel) wakes it.
    Blocked,
    /// A miss: the evicted page's write is issued, the read is next
    /// (`read_issued` false), or the read is issued and done at the event.
    /// `rollback`: the page is for a rollback's undo (of a deadlock
    /// victim: `Some(true)`; the record-level engine's).
    Loading {
        frame: usize,
        read_issued: bool,
        rollback: Option<bool>,
    },
    /// Writing its dirty pages (force), then its commit (the page-level engine).
    Committing { since_ns: u64 },
    /// Its rollback is next or under way (`restart`: a deadlock victim,
    /// else injected).
    Aborting { restart: bool },
    /// Its commit or abort is issued; it ends at the event.
    Ending { commit: bool, restart: bool, since_ns: u64 },
    /// A victim's back-off: it restarts at the event.
    Backoff,
}

/// One attempt of a plan.
#[derive(Clone, Debug)]
pub struct Tx {
    pub plan: TxPlan,
    pub tid: Tid,
    /// The next access.
    pub step: usize,
    /// It has begun on the device (its first page write did it).
    pub begun: bool,
    /// DB pages this attempt wrote.
    pub written: BTreeSet<u32>,
    /// The pages it dirtied last, pinned in the buffer (at most the
    /// configured count, the newest last).
    pub pinned: VecDeque<u32>,
    /// The plan's first attempt started (execution time counts from here).
    pub first_start_ns: u64,
    /// The plan's number: the larger, the younger (a restart keeps it).
    pub order: u64,
    pub restarts: u32,
}

impl Tx {
    pub fn new(plan: TxPlan, tid: Tid, now_ns: u64, order: u64) -> Tx {
        Tx {
            plan,
            tid,
            step: 0,
            begun: false,
            written: BTreeSet::new(),
            pinned: VecDeque::new(),
            first_start_ns: now_ns,
            order,
            restarts: 0,
        }
    }

    /// The same plan again, as attempt `tid`.
    pub fn restart(&mut self, tid: Tid) {
        debug_assert!(self.pinned.is_empty(), "a restarted attempt keeps pins");
        self.tid = tid;
        self.step = 0;
        self.begun = false;
        self.written.clear();
        self.restarts += 1;
    }

    /// `page` is now the newest page it dirtied: returns the page that
    /// leaves the pinned window, if one does (`pins` pages are kept).
    pub fn dirtied(&mut self, page: u32, pins: u32) -> (bool, Option<u32>) {
        if pins == 0 {
            return (false, None);
        }
        if let Some(i) = self.pinned.iter().position(|&p| p == page) {
            self.pinned.remove(i);
            self.pinned.push_back(page);
            return (false, None);
        }
        self.pinned.push_back(page);
        let out = (self.pinned.len() > pins as usize).then(|| self.pinned.pop_front()).flatten();
        (true, out)
    }
}

/// A client and its transaction (each engine's own kind of attempt).
pub struct Client<T> {
    pub state: State,
    pub tx: Option<T>,
}

impl<T> Client<T> {
    pub fn idle() -> Client<T> {
        Client {
            state: State::Idle,
            tx: None,
        }
    }

    pub fn tx(&self) -> &T {
        self.tx.as_ref().expect("a client in a transaction state has one")
    }

    pub fn tx_mut(&mut self) -> &mut T {
        self.tx.as_mut().expect("a client in a transaction state has one")
    }
}

/// A phase's end: every client idle, no lock held (a lost wake-up otherwise).
pub fn assert_quiet<T>(clients: &[Client<T>], locks: &LockTable) {
    assert!(
        clients.iter().all(|c| c.state == State::Idle && c.tx.is_none()),
        "the phase ended with a client not idle (a lost wake-up)"
    );
    assert!(locks.is_idle(), "the phase ended with locks held");
}

/// Blocked client `c` may go on: it asks again at `t`.
pub fn wake<T>(clients: &mut [Client<T>], sim: &mut Sim, c: usize, t: u64) {
    debug_assert_eq!(clients[c].state, State::Blocked, "client {c} woken while not blocked");
    clients[c].state = State::Run;
    sim.schedule(c, t);
}

/// `c` just blocked: if that closed a cycle, the youngest transaction of it
/// ([`youngest`], by `order`) stops waiting and rolls back at `t`, and the
/// waiters its cancel frees ask again.
pub fn on_block<T>(clients: &mut [Client<T>], locks: &mut LockTable, sim: &mut Sim, c: usize, t: u64, order: impl Fn(&T) -> u64) {
    let Some(cycle) = locks.find_cycle(c) else {
        return;
    };
    sim.tally.deadlocks += 1;
    let victim = youngest(&cycle, |v| {
        order(clients[v].tx.as_ref().expect("a blocked client has a transaction"))
    });
    debug_assert_eq!(clients[victim].state, State::Blocked);
    for w in locks.cancel_wait(victim) {
        wake(clients, sim, w, t);
    }
    clients[victim].state = State::Aborting { restart: true };
    sim.schedule(victim, t);
}

/// `c`'s transaction ended at `t`: its locks released (waiters ask again
/// now); a deadlock victim (`restart`) backs off and true is returned, else
/// the caller starts its next plan.
pub fn release<T>(clients: &mut [Client<T>], locks: &mut LockTable, sim: &mut Sim, c: usize, t: u64, restart: bool) -> bool {
    for w in locks.release_all(c) {
        wake(clients, sim, w, t);
    }
    if restart {
        let at = sim.restart_at(t);
        clients[c].state = State::Backoff;
        sim.schedule(c, at);
        return true;
    }
    clients[c].tx = None;
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tpcc::Profile;

    fn tx() -> Tx {
        let plan = TxPlan {
            profile: Profile::Payment,
            accesses: Vec::new(),
            records: Vec::new(),
            abort: false,
            truncated: 0,
        };
        Tx::new(plan, 1, 0, 1)
    }

    #[test]
    fn the_window_keeps_the_newest_dirtied_pages() {
        let mut t = tx();
        assert_eq!(t.dirtied(5, 0), (false, None), "no pins asked");
        assert_eq!(t.dirtied(5, 1), (true, None));
        assert_eq!(t.dirtied(5, 1), (false, None), "already the newest");
        assert_eq!(t.dirtied(6, 1), (true, Some(5)));
        assert_eq!(t.pinned, VecDeque::from([6]));
    }
}
