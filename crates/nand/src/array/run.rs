//! Programs that extend a block's run: the plain host writes without data
//! of a metadata-only array with nothing armed, whose spare areas follow
//! their block's pattern (`spare.rs`, `Run`). A fill of a device
//! (`Device::write_run` of the FTL) programs most of its pages this way:
//! the same operation, cells, spare areas, time and counts as
//! [`Nand::program_fields`] of the page with the run's fields, without the
//! checks, logs and stores a page of a run does not need.

use super::{DataMode, FlashOp, Nand};
use crate::geometry::BlockId;
use crate::spare::PackedSpare;
use crate::timing::OpTime;

impl Nand {
    /// Can page `index` of `block` and the next pages of the block be
    /// programmed by [`Nand::program_run_page`], the page's spare area
    /// holding `fields` (no protocol bytes, erased flag bytes) and each next
    /// one's advancing by `lpn_step` and `seq_step`? The array stores no
    /// data and has nothing armed (no power cut, no operation or redo log,
    /// no trace, no fault model, no image file); the block is good, the
    /// page is its next and erased; the fields extend the block's run.
    pub fn continues_run(&self, block: BlockId, index: u32, fields: &PackedSpare, lpn_step: u32, seq_step: u32) -> bool {
        let g = &self.cfg.geometry;
        self.cfg.data_mode == DataMode::MetaOnly
            && self.nothing_armed()
            && block < g.block_count()
            && index < g.pages_per_block
            && !self.bad[block as usize]
            && self.next_page[block as usize] == index
            && self.programs.get(g.ppn(block, index)) == 0
            && self.spare.continues_run(block, index, fields, lpn_step, seq_step)
    }

    /// Programs page `index` of `block`, without data, issued at `at_ns`:
    /// the next page of a run that [`Nand::continues_run`] accepted from
    /// one of its pages on, with nothing done to the array since but such
    /// programs. Its spare area reads as the run says.
    pub fn program_run_page(&mut self, block: BlockId, index: u32, at_ns: u64) -> OpTime {
        let ppn = self.cfg.geometry.ppn(block, index);
        debug_assert!(self.nothing_armed(), "a run's program with something armed");
        assert!(
            self.next_page[block as usize] == index && self.programs.get(ppn) == 0,
            "page {index} of block {block} is not the next erased page of its run"
        );
        let cut = self.begin_op(FlashOp::Program, ppn, at_ns);
        debug_assert!(matches!(cut, Ok(None)), "nothing armed, yet the program was cut");
        self.programs.set_programmed(ppn);
        self.next_page[block as usize] = index + 1;
        self.spare.append_to_run(block, index);
        self.program_time(block, at_ns)
    }

    /// Nothing is at work on the array beyond its cells and counters: no
    /// power cut armed (at an operation or an instant), no operation log,
    /// trace or redo log, no fault model, no image file.
    fn nothing_armed(&self) -> bool {
        self.powered
            && self.cut_at == u64::MAX
            && self.undo_at == u64::MAX
            && self.instant_ns == u64::MAX
            && self.in_flight.is_none()
            && self.op_log.is_none()
            && self.op_trace.is_none()
            && self.redo_log.is_none()
            && self.faults.is_none()
            && self.image.is_none()
    }
}
