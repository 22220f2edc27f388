//! A client and the transaction it runs: where it stands in its plan, and
//! what its current attempt has done (a deadlock victim restarts the same
//! plan as a new attempt, under a new transaction id).

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
    Loading { frame: usize, read_issued: bool },
    /// Writing its dirty pages (force), then its commit.
    Committing { since_ns: u64 },
    /// Its rollback is next (`restart`: a deadlock victim, else injected).
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

pub struct Client {
    pub state: State,
    pub tx: Option<Tx>,
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
