//! Block erases: wear, and the block that goes bad at its endurance or a
//! random erase failure.

use super::{FlashOp, Nand};
use crate::bit_errors::SALT_ERASE;
use crate::error::{NandError, Violation};
use crate::geometry::BlockId;
use crate::redo::Mutation;
use crate::timing::OpTime;

impl Nand {
    /// Erases a block. At its endurance the erase fails and the block goes bad.
    pub fn erase(&mut self, block: BlockId, at_ns: u64) -> Result<OpTime, NandError> {
        self.log_mutation(at_ns, || Mutation::Erase { block });
        let g = self.cfg.geometry;
        if block >= g.block_count() {
            return Err(self.violation(Violation::BlockOutOfRange {
                block,
                block_count: g.block_count(),
            }));
        }
        if self.bad[block as usize] {
            return Err(self.bad_block_op(block, FlashOp::Erase, at_ns));
        }
        let cut = self.begin_op(FlashOp::Erase, block, at_ns)?;
        let unit = g.unit_of_block(block);
        let t = self.cfg.timing;
        if let Some(cut) = cut {
            self.tear_erase(block, cut);
            return Err(NandError::PowerLoss);
        }
        let time = self.clocks.erase(unit, at_ns, t.erase_ns);
        self.stats.busy_ns += t.erase_ns;
        let ec = self.erase_counts[block as usize];
        let random_failure = self
            .faults
            .is_some_and(|m| m.uniform(&[SALT_ERASE, block as u64, ec as u64]) < m.erase_fail_p(ec, self.cfg.endurance));
        if ec >= self.cfg.endurance || random_failure {
            self.bad[block as usize] = true;
            self.stats.erase_failures += 1;
            if let Some(img) = &mut self.image {
                img.write_block(block, self.erase_counts[block as usize], true)?;
            }
            self.image_op_done()?;
            return Err(NandError::EraseFailed(block));
        }
        self.erase_counts[block as usize] += 1;
        self.stats.erases += 1;
        // The spare store first forgets the block's run, so that erasing
        // its pages need not touch them.
        self.spare.block_erased(block);
        self.erase_block_pages(block);
        self.next_page[block as usize] = 0;
        self.write_through_block(block)?;
        self.image_op_done()?;
        self.trace_times(time.done_ns - t.erase_ns, time.done_ns);
        Ok(time)
    }
}
