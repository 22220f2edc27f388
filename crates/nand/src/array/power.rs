//! Power: arming a cut, cutting and restoring power, and what a cut leaves
//! of the program or erase it tears.

use super::{Data, DataMode, Nand};
use crate::fault::{tear_program, Area, PowerCut, Torn};
use crate::geometry::{BlockId, Ppn};
use rand::Rng;

impl Nand {
    /// Arms a power cut at operation index `cut.at_op` (see [`PowerCut`]).
    pub fn arm_power_cut(&mut self, cut: PowerCut) {
        self.cut_at = cut.at_op;
        self.cut = Some(cut);
    }
    pub fn disarm_power_cut(&mut self) {
        self.cut_at = u64::MAX;
        self.cut = None;
        self.in_flight = None;
        self.undo_at = u64::MAX;
        self.instant_ns = u64::MAX;
    }

    /// Power comes back: operations work again, the clocks restart at 0, and the
    /// operation counter restarts so a new cut can be armed relative to this boot.
    pub fn power_on(&mut self) {
        self.powered = true;
        self.disarm_power_cut();
        self.clocks.reset();
        self.op_count = 0;
    }

    /// Cuts power now, between operations. Nothing is torn, unless an instant
    /// cut is armed ([`Nand::arm_instant_cut`]): then every operation it names
    /// ends as it says, as at its stop operation.
    pub fn power_off(&mut self) {
        self.powered = false;
        self.resolve_in_flight();
    }

    /// Leaves what a torn program of `target_data`/`target_oob` leaves.
    pub(super) fn tear_page(&mut self, ppn: Ppn, cut: PowerCut, target_data: &[u8], target_oob: &[u8]) {
        let g = self.cfg.geometry;
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        let mut rng = cut.rng();
        let mut spare = vec![0u8; os];
        self.spare.read(ppn, &mut spare);
        tear_program(&mut rng, cut.torn, Area::Oob, &mut spare, target_oob);
        self.spare.write(ppn, &spare);
        match &mut self.data {
            Data::Full(d) => {
                let target: Vec<u8> = if target_data.is_empty() {
                    vec![0u8; ps]
                } else {
                    target_data.to_vec()
                };
                // The page was erased: its stored bytes are stale, start from 0xFF.
                let region = d.page_mut(ppn);
                region.fill(0xFF);
                tear_program(&mut rng, cut.torn, Area::Data, region, &target);
            }
            Data::Meta(m) => {
                if !target_data.is_empty() {
                    let mut buf = vec![0xFF; ps];
                    m.read(ppn, &mut buf);
                    tear_program(&mut rng, cut.torn, Area::Data, &mut buf, target_data);
                    m.insert(ppn, &buf, None);
                }
            }
        }
    }

    /// A torn erase: wear is spent, a random subset of pages is erased, the rest
    /// keep their contents (`Partial`) or hold random bytes (`Garbage`).
    pub(super) fn tear_erase(&mut self, block: BlockId, cut: PowerCut) {
        let g = self.cfg.geometry;
        let mut rng = cut.rng();
        if cut.torn != Torn::None {
            self.erase_counts[block as usize] += 1;
            let first = g.ppn(block, 0);
            for ppn in first..first + g.pages_per_block {
                if rng.gen_bool(0.5) {
                    self.erase_page(ppn);
                } else if cut.torn == Torn::Garbage {
                    let os = g.oob_size as usize;
                    self.programs.set(ppn, self.programs.get(ppn).max(1));
                    let mut spare = vec![0u8; os];
                    rng.fill(&mut spare[..]);
                    self.spare.write(ppn, &spare);
                    let mut junk = vec![0u8; g.page_size as usize];
                    rng.fill(&mut junk[..]);
                    if self.cfg.data_mode == DataMode::Full {
                        self.store_data(ppn, &junk, None);
                    }
                }
            }
            self.next_page[block as usize] = (0..g.pages_per_block)
                .rposition(|i| self.programs.get(first + i) > 0)
                .map_or(0, |i| i as u32 + 1);
        }
        // A failed write-through after a power cut has nowhere to be reported; the
        // image then simply lacks the torn state, which is also a possible outcome.
        let _ = self.write_through_block(block);
    }
}
