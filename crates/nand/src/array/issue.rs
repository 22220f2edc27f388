//! What every operation goes through before it touches the cells: the power
//! check, its operation index (where an armed cut lands), the logs, and the
//! rule checks that refuse it.

use super::{FlashOp, Nand, OpTrace, ViolationPolicy};
use crate::error::{NandError, Violation};
use crate::fault::PowerCut;
use crate::geometry::{BlockId, Ppn};

impl Nand {
    /// An operation on a bad block still costs an operation index (a cut can land on it).
    pub(super) fn bad_block_op(&mut self, block: BlockId, kind: FlashOp, at_ns: u64) -> NandError {
        match self.begin_op(kind, block, at_ns) {
            Ok(None) => NandError::BadBlock(block),
            Ok(Some(_)) | Err(_) => NandError::PowerLoss,
        }
    }

    pub(super) fn violation(&self, v: Violation) -> NandError {
        match self.cfg.violation_policy {
            ViolationPolicy::Panic => panic!("NAND rule violated: {v}"),
            ViolationPolicy::Error => NandError::Violation(v),
        }
    }

    /// Starts an operation on `target` (a page; a block for an erase or an
    /// operation refused on a bad block) issued at `at_ns`: fails if power is
    /// off; returns the cut if this is the one it tears.
    ///
    /// Nearly every operation has nothing to log, trace, cut or save: that
    /// case (what [`Nand::begin_op_in_full`] does when none applies) is
    /// inlined into every operation, the rest is not. A crash set issues
    /// millions of reads, a replay millions of programs.
    #[inline(always)]
    pub(super) fn begin_op(&mut self, kind: FlashOp, target: u32, at_ns: u64) -> Result<Option<PowerCut>, NandError> {
        let index = self.op_count;
        let plain = self.powered
            && self.op_log.is_none()
            && self.op_trace.is_none()
            && at_ns <= self.instant_ns
            && index != self.cut_at
            && index != self.undo_at
            && (self.instant_ns == u64::MAX || !kind.mutates());
        if !plain {
            return self.begin_op_in_full(kind, target, at_ns);
        }
        if kind.mutates() {
            self.factory_fresh = false;
        }
        self.op_count += 1;
        Ok(None)
    }

    /// [`Nand::begin_op`] with everything it may have to do.
    #[inline(never)]
    fn begin_op_in_full(&mut self, kind: FlashOp, target: u32, at_ns: u64) -> Result<Option<PowerCut>, NandError> {
        if !self.powered {
            return Err(NandError::PowerLoss);
        }
        if let Some(log) = &mut self.op_log {
            log.push(kind);
        }
        if let Some(trace) = &mut self.op_trace {
            // Done at issue until the operation reports its times: an
            // operation that fails or is refused is never in flight.
            trace.push(OpTrace {
                kind,
                target,
                at_ns,
                start_ns: at_ns,
                done_ns: at_ns,
            });
        }
        if kind.mutates() {
            self.factory_fresh = false;
        }
        let index = self.op_count;
        self.op_count += 1;
        if at_ns > self.instant_ns {
            // Issued after the instant of a cut armed by time: power is gone.
            self.cut_at = index;
            self.cut = Some(PowerCut {
                at_op: index,
                torn: crate::fault::Torn::None,
                seed: 0,
            });
        }
        if index == self.cut_at {
            self.powered = false;
            self.resolve_in_flight();
            return Ok(self.cut);
        }
        if index == self.undo_at {
            self.save_undo(index, kind, target);
        } else if self.instant_ns != u64::MAX && kind.mutates() {
            self.save_undo_until_instant(index, kind, target);
        }
        Ok(None)
    }

    #[inline]
    pub(super) fn check_ppn(&self, ppn: Ppn) -> Result<(), NandError> {
        let page_count = self.cfg.geometry.page_count();
        if ppn >= page_count {
            return Err(self.violation(Violation::PageOutOfRange { ppn, page_count }));
        }
        Ok(())
    }

    pub(super) fn check_len(&self, what: &'static str, got: usize, want: usize) -> Result<(), NandError> {
        if got != want {
            return Err(self.violation(Violation::BufferSize { what, got, want }));
        }
        Ok(())
    }

    #[inline]
    pub(super) fn unit_channel(&self, ppn: Ppn) -> (u32, u32) {
        self.unit_channel_of_block(self.cfg.geometry.block_of(ppn))
    }

    /// [`Nand::unit_channel`] of a page of `block`.
    #[inline]
    pub(super) fn unit_channel_of_block(&self, block: BlockId) -> (u32, u32) {
        let g = &self.cfg.geometry;
        let unit = g.unit_of_block(block);
        (unit, g.channel_of_unit(unit))
    }
}
