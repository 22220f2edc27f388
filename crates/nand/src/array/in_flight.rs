//! Cuts at an instant of the device clock (`fault.rs`, [`InstantCut`]): the
//! operation trace that tells which operations are in flight at an instant,
//! and the undo records that let the array tear them after later operations
//! on other dies completed.
//!
//! Nothing here costs anything unless asked for: the trace is off by
//! default, and without an armed instant cut `undo_at` is `u64::MAX`, so an
//! operation pays one comparison.

use super::{Data, FlashOp, Nand};
use crate::fault::{tear_partial_program, Area, InstantCut, PowerCut, Torn};
use crate::geometry::{BlockId, Ppn};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// One operation as issued, with its times on the device clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct OpTrace {
    pub kind: FlashOp,
    /// The page read or programmed; the block erased (or refused as bad).
    pub target: u32,
    /// When it was issued.
    pub at_ns: u64,
    /// When the die began changing cells: a program once its data is in the
    /// die's register, an erase once the die is free. A read: its end.
    pub start_ns: u64,
    /// When the die finished. An operation that failed or was refused: `at_ns`
    /// (it is never in flight).
    pub done_ns: u64,
}

impl OpTrace {
    /// Issued at or before `t_ns` and not done then.
    pub fn in_flight_at(&self, t_ns: u64) -> bool {
        self.at_ns <= t_ns && t_ns < self.done_ns
    }
    /// Changing cells at `t_ns` (or done): a cut then may tear it. One in
    /// flight but not started can only be lost.
    pub fn started_by(&self, t_ns: u64) -> bool {
        self.start_ns <= t_ns
    }
}

/// A page as it was: enough to put it back.
#[derive(Clone)]
struct Saved {
    ppn: Ppn,
    programs: u8,
    spare: Vec<u8>,
    /// `None`: no data stored (erased, or metadata-only without data).
    data: Option<Vec<u8>>,
}

/// What one named operation found, and (once power goes) what it left.
#[derive(Clone)]
struct Undo {
    index: u64,
    kind: FlashOp,
    torn: Torn,
    block: BlockId,
    erase_count: u32,
    next_page: u32,
    before: Vec<Saved>,
    after: Vec<Saved>,
}

/// The armed instant cut: the operations it names not issued yet, and the
/// undo records of those issued.
#[derive(Clone)]
pub(super) struct InFlight {
    seed: u64,
    pending: Vec<(u64, Torn)>,
    next: usize,
    undo: Vec<Undo>,
}

/// How operation `index` in flight at a cut armed by time ends: a draw of
/// ChaCha8 seeded with the cut's seed and the index.
pub(crate) fn torn_draw(seed: u64, index: u64) -> Torn {
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ index.rotate_left(23));
    Torn::ALL[rng.gen_range(0..Torn::ALL.len())]
}

impl Nand {
    /// Starts (or stops) recording every operation's issue and completion
    /// times ([`OpTrace`]), by index as [`Nand::op_log`] does.
    pub fn set_op_trace(&mut self, on: bool) {
        self.op_trace = on.then(Vec::new);
    }

    /// The operations issued since the trace was switched on, by index.
    pub fn op_trace(&self) -> &[OpTrace] {
        self.op_trace.as_deref().unwrap_or(&[])
    }

    /// Arms a power cut at an instant (see [`InstantCut`]): the operations it
    /// names keep what they find, and when power goes (its stop operation
    /// is issued, or [`Nand::power_off`] is called) each ends as named, on
    /// top of every operation issued before the stop that it does not name.
    /// The caller names operations that a run to the same point had in
    /// flight ([`Nand::op_trace`]), at most one started per die.
    pub fn arm_instant_cut(&mut self, cut: InstantCut) {
        assert!(
            cut.in_flight.windows(2).all(|w| w[0].0 < w[1].0) && cut.in_flight.iter().all(|&(i, _)| i < cut.stop_at_op),
            "an instant cut names operations before its stop, in order"
        );
        self.arm_power_cut(PowerCut {
            at_op: cut.stop_at_op,
            torn: Torn::None,
            seed: cut.seed,
        });
        self.undo_at = cut.in_flight.first().map_or(u64::MAX, |&(i, _)| i);
        self.in_flight = Some(Box::new(InFlight {
            seed: cut.seed,
            pending: cut.in_flight,
            next: 0,
            undo: Vec::new(),
        }));
    }

    /// Sets the times of the operation just traced.
    #[inline(always)]
    pub(super) fn trace_times(&mut self, start_ns: u64, done_ns: u64) {
        if let Some(r) = self.op_trace.as_mut().and_then(|t| t.last_mut()) {
            r.start_ns = start_ns;
            r.done_ns = done_ns;
        }
        if self.instant_ns != u64::MAX {
            self.settle_instant(start_ns, done_ns);
        }
    }

    /// Operation `index`, named by the armed instant cut, is starting: keep
    /// what it may change (its page; an erase's whole block).
    pub(super) fn save_undo(&mut self, index: u64, kind: FlashOp, target: u32) {
        let Some(st) = self.in_flight.as_mut() else { return };
        let torn = st.pending[st.next].1;
        st.next += 1;
        self.undo_at = st.pending.get(st.next).map_or(u64::MAX, |&(i, _)| i);
        if kind.mutates() {
            self.push_undo(index, kind, target, torn);
        }
    }

    /// Keeps what operation `index` may change, to end it as `torn` if power goes while it runs.
    fn push_undo(&mut self, index: u64, kind: FlashOp, target: u32, torn: Torn) {
        let g = self.cfg.geometry;
        let (block, pages) = match kind {
            FlashOp::Erase => (target, g.ppn(target, 0)..g.ppn(target, 0) + g.pages_per_block),
            _ => (g.block_of(target), target..target + 1),
        };
        let before = pages.map(|p| self.save_page(p)).collect();
        let undo = Undo {
            index,
            kind,
            torn,
            block,
            erase_count: self.erase_counts[block as usize],
            next_page: self.next_page[block as usize],
            before,
            after: Vec::new(),
        };
        self.in_flight.as_mut().expect("an instant cut is armed").undo.push(undo);
    }

    /// Arms a power cut at instant `t_ns` of the device clock, before the
    /// operations it catches are known (a server's schedule, where no run
    /// to the same point exists to name them, as [`Nand::arm_instant_cut`]
    /// needs): every program, partial program and erase issued at or
    /// before `t_ns` is kept undoable until it is done by then; the first
    /// operation issued after `t_ns` finds power gone (as does
    /// [`Nand::power_off`] called later), and each operation still running
    /// at `t_ns` ends torn as a draw of ChaCha8 (`seed`, its index) among
    /// [`Torn::ALL`] says, or lost if it had not begun changing cells.
    pub fn arm_cut_at_ns(&mut self, t_ns: u64, seed: u64) {
        self.disarm_power_cut();
        self.instant_ns = t_ns;
        self.in_flight = Some(Box::new(InFlight {
            seed,
            pending: Vec::new(),
            next: 0,
            undo: Vec::new(),
        }));
    }

    /// A mutating operation issued by the instant of a cut armed by time.
    pub(super) fn save_undo_until_instant(&mut self, index: u64, kind: FlashOp, target: u32) {
        let Some(st) = self.in_flight.as_ref() else { return };
        let torn = torn_draw(st.seed, index);
        self.push_undo(index, kind, target, torn);
    }

    /// The operation just issued reports its times: under a cut armed by
    /// time, one done by the instant is not in flight (its undo record
    /// goes), and one that had not begun changing cells by then is lost.
    fn settle_instant(&mut self, start_ns: u64, done_ns: u64) {
        let (t, index) = (self.instant_ns, self.op_count - 1);
        let Some(st) = self.in_flight.as_mut() else { return };
        match st.undo.last_mut() {
            Some(u) if u.index == index && done_ns <= t => {
                st.undo.pop();
            }
            Some(u) if u.index == index && start_ns > t => u.torn = Torn::None,
            _ => {}
        }
    }

    /// Power is gone: every operation the armed instant cut names ends as it
    /// says. No-op without one.
    pub(super) fn resolve_in_flight(&mut self) {
        let Some(mut st) = self.in_flight.take() else { return };
        self.undo_at = u64::MAX;
        // Newest first, so each operation finds the array as it left it: note
        // that (its target), then put back what it found.
        for u in st.undo.iter_mut().rev() {
            u.after = u.before.iter().map(|s| self.save_page(s.ppn)).collect();
            for s in &u.before {
                self.restore_page(s);
            }
            self.erase_counts[u.block as usize] = u.erase_count;
            self.next_page[u.block as usize] = u.next_page;
        }
        // Oldest first, each torn on top of what the earlier ones left.
        for u in &st.undo {
            if u.torn != Torn::None {
                self.tear_again(u, st.seed);
            }
            // After a power cut a failed write-through has nowhere to be
            // reported (as in `tear_erase`).
            let _ = self.write_through_block(u.block);
        }
    }

    /// Tears operation `u` as a cut at it alone would, its bytes drawn from
    /// the seed and its own index.
    fn tear_again(&mut self, u: &Undo, seed: u64) {
        let g = self.cfg.geometry;
        let cut = PowerCut {
            at_op: u.index,
            torn: u.torn,
            seed,
        };
        if u.kind == FlashOp::Erase {
            self.tear_erase(u.block, cut);
            return;
        }
        let (before, after) = (&u.before[0], &u.after[0]);
        let ppn = before.ppn;
        self.programs.set(ppn, before.programs + 1);
        let np = &mut self.next_page[u.block as usize];
        *np = (*np).max(g.page_index_of(ppn) + 1);
        if u.kind == FlashOp::Program {
            self.tear_page(ppn, cut, after.data.as_deref().unwrap_or(&[]), &after.spare);
            return;
        }
        // A partial program tears only the areas it was given, which are
        // those it changed (the others it left as they were).
        let mut rng = cut.rng();
        if after.spare != before.spare {
            let mut spare = before.spare.clone();
            tear_partial_program(&mut rng, u.torn, Area::Oob, &mut spare, &after.spare);
            self.spare.write(ppn, &spare);
        }
        if let (true, Some(target)) = (after.data != before.data, &after.data) {
            let mut current = before.data.clone().unwrap_or_else(|| vec![0xFF; target.len()]);
            tear_partial_program(&mut rng, u.torn, Area::Data, &mut current, target);
            self.store_data(ppn, &current, None);
        }
    }

    fn save_page(&self, ppn: Ppn) -> Saved {
        let g = self.cfg.geometry;
        let programs = self.programs.get(ppn);
        let mut spare = vec![0u8; g.oob_size as usize];
        self.spare.read(ppn, &mut spare);
        let mut buf = vec![0u8; g.page_size as usize];
        let data = match &self.data {
            Data::Full(_) if programs == 0 => None,
            Data::Full(_) => {
                self.copy_data_out(ppn, &mut buf);
                Some(buf)
            }
            Data::Meta(m) => m.read(ppn, &mut buf).then_some(buf),
        };
        Saved {
            ppn,
            programs,
            spare,
            data,
        }
    }

    fn restore_page(&mut self, s: &Saved) {
        self.programs.set(s.ppn, s.programs);
        if s.programs == 0 {
            self.spare.erase_page(s.ppn);
        } else {
            self.spare.write(s.ppn, &s.spare);
        }
        match &s.data {
            Some(d) => self.store_data(s.ppn, d, None),
            None => {
                // Full data: `programs == 0` makes the stale bytes read as erased.
                if let Data::Meta(m) = &mut self.data {
                    m.remove(s.ppn);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DataMode, NandError, ViolationPolicy};

    fn tiny() -> Nand {
        let cfg = crate::preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Panic);
        let mut n = Nand::new(cfg).unwrap();
        n.set_op_trace(true);
        n
    }

    fn page(fill: u8) -> (Vec<u8>, Vec<u8>) {
        (vec![fill; 512], vec![fill; 64])
    }

    /// Die 0 erases block 1 (1.5 ms); die 1 programs block 16 at once; die 0
    /// must then program block 0 after its erase. At 0.3 ms the erase is
    /// running, the program on die 1 (issued after it) is done, the one
    /// behind the erase has not started.
    fn three_ops(n: &mut Nand) {
        let (d, o) = page(0x11);
        n.erase(1, 0).unwrap();
        let (d2, o2) = page(0x22);
        n.program(n.geometry().ppn(16, 0), 0, &d2, &o2).unwrap();
        n.program(0, 0, &d, &o).unwrap();
    }

    #[test]
    fn the_trace_shows_an_operation_in_flight_after_a_later_one_is_done() {
        let mut n = tiny();
        three_ops(&mut n);
        let t = n.op_trace().to_vec();
        let at = 300_000;
        assert!(t[0].in_flight_at(at) && t[0].started_by(at));
        assert!(!t[1].in_flight_at(at), "{:?}", t[1]);
        assert!(t[2].in_flight_at(at) && !t[2].started_by(at));
    }

    #[test]
    fn an_instant_cut_tears_and_loses_the_operations_in_flight_and_keeps_the_rest() {
        let mut n = tiny();
        let (d, o) = page(0x11);
        n.program(n.geometry().ppn(1, 0), 0, &d, &o).unwrap();
        n.reset_op_count();
        n.arm_instant_cut(InstantCut {
            stop_at_op: 3,
            in_flight: vec![(0, Torn::Partial), (2, Torn::None)],
            seed: 7,
        });
        three_ops(&mut n);
        let (d2, o2) = page(0x22);
        let p16 = n.geometry().ppn(16, 0);
        let mut oob = vec![0u8; 64];
        assert!(matches!(n.read(0, 0, None, &mut oob), Err(NandError::PowerLoss)));
        // Die 1's program is done; die 0's queued program never happened.
        assert_eq!((n.inspect_data(p16), n.inspect_oob(p16)), (d2, o2));
        assert_eq!(n.inspect_programs(0), 0);
        // The erase is torn: wear spent, its page erased or left as it was.
        assert_eq!(n.inspect_erase_count(1), 1);
        let p = n.geometry().ppn(1, 0);
        assert!(n.inspect_programs(p) == 0 || n.inspect_data(p) == d);
    }

    #[test]
    fn power_off_resolves_the_cut_and_a_torn_program_starts_from_an_erased_page() {
        let mut n = tiny();
        n.arm_instant_cut(InstantCut {
            stop_at_op: 10,
            in_flight: vec![(0, Torn::Garbage)],
            seed: 3,
        });
        let (d, o) = page(0x00);
        n.program(0, 0, &d, &o).unwrap();
        n.program(1, 0, &d, &o).unwrap();
        n.power_off();
        assert_eq!(n.inspect_programs(0), 1);
        assert_ne!(n.inspect_data(0), d, "garbage, not the page");
        assert_eq!(n.inspect_data(1), d);
        // Deterministic: the same cut tears the same way.
        let mut m = tiny();
        m.arm_instant_cut(InstantCut {
            stop_at_op: 10,
            in_flight: vec![(0, Torn::Garbage)],
            seed: 3,
        });
        m.program(0, 0, &d, &o).unwrap();
        m.power_off();
        assert_eq!((m.inspect_data(0), m.inspect_oob(0)), (n.inspect_data(0), n.inspect_oob(0)));
    }

    /// A cut armed by time ends the operations in flight at its instant as
    /// an instant cut naming them (with the same draws) does: die 1's
    /// program, done by then, stays; die 0's queued program is lost; the
    /// erase running then ends as drawn.
    #[test]
    fn a_cut_armed_by_time_matches_the_instant_cut_naming_its_operations() {
        for seed in 0..8 {
            let mut by_time = tiny();
            by_time.arm_cut_at_ns(300_000, seed);
            three_ops(&mut by_time);
            let mut oob = vec![0u8; 64];
            assert!(matches!(by_time.read(0, 400_000, None, &mut oob), Err(NandError::PowerLoss)));
            let mut named = tiny();
            named.arm_instant_cut(InstantCut {
                stop_at_op: 3,
                in_flight: vec![(0, torn_draw(seed, 0)), (2, Torn::None)],
                seed,
            });
            three_ops(&mut named);
            named.power_off();
            for ppn in 0..named.geometry().ppn(17, 0) {
                assert_eq!(by_time.inspect_programs(ppn), named.inspect_programs(ppn), "seed {seed} ppn {ppn}");
                assert_eq!(by_time.inspect_oob(ppn), named.inspect_oob(ppn), "seed {seed} ppn {ppn}");
            }
            assert_eq!(by_time.inspect_erase_count(1), named.inspect_erase_count(1));
            assert_eq!(by_time.inspect_programs(0), 0, "queued behind the erase: lost");
        }
    }

    /// Operations done by the instant keep no undo record (the cut's
    /// memory follows what is in flight, not what was written).
    #[test]
    fn a_cut_armed_by_time_keeps_only_the_operations_still_running() {
        let mut n = tiny();
        n.arm_cut_at_ns(u64::MAX - 1, 1);
        let (d, o) = page(0x33);
        let mut at = 0;
        for p in 0..32 {
            at = n.program(p, at, &d, &o).unwrap().done_ns;
        }
        assert!(n.in_flight.as_ref().unwrap().undo.is_empty());
        n.power_off();
        assert_eq!(n.inspect_data(31), d, "done before the cut: kept");
    }
}
