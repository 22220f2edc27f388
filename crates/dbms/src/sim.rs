//! What both engines' clients run on: the event queue on the device clock
//! (instant, order scheduled, client: ties go to the first scheduled),
//! the plans a phase hands out, transaction ids, the deadlock victim and
//! its back-off. Each engine holds one [`Sim`] and runs its phases with
//! [`run_phase`].

use crate::error::{DbmsError, Result};
use crate::report::Tally;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use txftl_ftl::Tid;

pub(crate) struct Sim {
    /// (instant, order scheduled, event source).
    events: BinaryHeap<Reverse<(u64, u64, usize)>>,
    seq: u64,
    next_tid: Tid,
    /// Plans handed out (a plan's number orders deadlock victims).
    pub started: u64,
    /// The plan count at which the phase running (warm-up or measured) ends.
    pub phase_end: u64,
    backoff: ChaCha8Rng,
    backoff_ns_max: u64,
    pub tally: Tally,
}

impl Sim {
    pub fn new(seed: u64, backoff_ns_max: u64) -> Sim {
        let mut backoff = ChaCha8Rng::seed_from_u64(seed);
        // Stream 1 is the generator's: the back-off draws never shift the plans.
        backoff.set_stream(2);
        Sim {
            events: BinaryHeap::new(),
            seq: 0,
            next_tid: 1,
            started: 0,
            phase_end: 0,
            backoff,
            backoff_ns_max,
            tally: Tally::default(),
        }
    }

    pub fn schedule(&mut self, c: usize, at_ns: u64) {
        self.seq += 1;
        self.events.push(Reverse((at_ns, self.seq, c)));
    }

    fn pop(&mut self) -> Option<(u64, usize)> {
        self.events.pop().map(|Reverse((t, _, c))| (t, c))
    }

    pub fn new_tid(&mut self) -> Result<Tid> {
        let tid = self.next_tid;
        self.next_tid = tid
            .checked_add(1)
            .ok_or_else(|| DbmsError::Config("transaction ids exhausted (2^32 attempts)".into()))?;
        Ok(tid)
    }

    /// Hands out the phase's next plan number, if any is left.
    pub fn take_plan(&mut self) -> Option<u64> {
        (self.started < self.phase_end).then(|| {
            self.started += 1;
            self.started
        })
    }

    /// When a deadlock victim ending at `t` restarts: after a back-off drawn
    /// uniformly from [0, backoff_ns_max] (the paper: "a random backoff time").
    pub fn restart_at(&mut self, t: u64) -> u64 {
        t + self.backoff.gen_range(0..=self.backoff_ns_max)
    }
}

/// The youngest transaction of a deadlock cycle: the latest plan (a
/// restart keeps its plan's place, so no transaction is chosen forever).
pub(crate) fn youngest(cycle: &[usize], order: impl Fn(usize) -> u64) -> usize {
    *cycle.iter().max_by_key(|&&v| order(v)).expect("a cycle is not empty")
}

/// An engine the phases drive: its simulation state, and one event.
pub(crate) trait Engine {
    fn sim(&mut self) -> &mut Sim;
    fn event(&mut self, c: usize, t: u64) -> Result<()>;
}

/// Runs `transactions` more plans to their end: `clients` event sources
/// start at `start_ns` (the device's clock), and the phase ends when no
/// event is left.
pub(crate) fn run_phase(e: &mut impl Engine, transactions: u64, clients: usize, start_ns: u64) -> Result<()> {
    let sim = e.sim();
    sim.phase_end = sim.started + transactions;
    sim.tally.start_ns = start_ns;
    sim.tally.end_ns = start_ns;
    for c in 0..clients {
        sim.schedule(c, start_ns);
    }
    while let Some((t, c)) = e.sim().pop() {
        e.sim().tally.end_ns = t;
        e.event(c, t)?;
    }
    let sim = e.sim();
    assert_eq!(sim.started, sim.phase_end, "the phase ended before its plans did");
    Ok(())
}
