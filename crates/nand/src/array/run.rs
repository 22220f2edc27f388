//! Programs that extend a block's run: the plain host writes without data
//! of a metadata-only array with nothing armed, whose spare areas follow
//! their block's pattern (`spare.rs`, `Run`). A fill of a device
//! (`Device::write_run` of the FTL) programs most of its pages this way,
//! a block's pages of a stripe's turns at once and then each program's
//! time in issue order: the same operations, cells, spare areas, times and
//! counts as [`Nand::program_fields`] of each page with the run's fields,
//! without the checks, logs and stores a page of a run does not need.

use super::{DataMode, FlashOp, Nand};
use crate::geometry::BlockId;
use crate::spare::PackedSpare;
use crate::timing::OpTime;

impl Nand {
    /// Can pages `index..index + count` of `block` be programmed by
    /// [`Nand::program_run_pages`], page `index`'s spare area holding
    /// `fields` (no protocol bytes, erased flag bytes) and each next one's
    /// advancing by `lpn_step` and `seq_step`? The array stores no data and
    /// has nothing armed (no power cut, no operation or redo log, no trace,
    /// no fault model, no image file); the block is good, page `index` is
    /// its next and erased; the fields extend the block's run.
    pub fn continues_run(&self, block: BlockId, index: u32, count: u32, fields: &PackedSpare, lpn_step: u32, seq_step: u32) -> bool {
        let g = &self.cfg.geometry;
        self.cfg.data_mode == DataMode::MetaOnly
            && self.nothing_armed()
            && block < g.block_count()
            && index + count <= g.pages_per_block
            && !self.bad[block as usize]
            && self.next_page[block as usize] == index
            && self.programs.get(g.ppn(block, index)) == 0
            && self.spare.continues_run(block, index, count, fields, lpn_step, seq_step)
    }

    /// Programs pages `first..first + count` of `block`, without data, as
    /// the next pages of the block's run that [`Nand::continues_run`]
    /// accepted from page `first` on: their cells and spare areas as
    /// `count` programs leave them. Each program is then issued by
    /// [`Nand::issue_run_program`], in the order the caller issues them,
    /// before anything else is done to the array.
    pub fn program_run_pages(&mut self, block: BlockId, first: u32, count: u32) {
        let g = self.cfg.geometry;
        debug_assert!(self.nothing_armed(), "a run's programs with something armed");
        let pages = g.ppn(block, 0) as usize..g.ppn(block, g.pages_per_block) as usize;
        assert!(
            count > 0
                && first + count <= g.pages_per_block
                && self.next_page[block as usize] == first
                && self.programs.programmed_end(pages) <= first as usize,
            "pages {first}..{} of block {block} are not its next erased pages",
            first + count
        );
        for ppn in g.ppn(block, first)..g.ppn(block, first + count) {
            self.programs.set_programmed(ppn);
        }
        self.next_page[block as usize] = first + count;
        self.spare.append_to_run(block, first, count);
        self.factory_fresh = false;
    }

    /// Issues at `at_ns` the program of page `index` of `block`, which
    /// [`Nand::program_run_pages`] stored: the operation counted, its time
    /// taken on its die and channel.
    #[inline]
    pub fn issue_run_program(&mut self, block: BlockId, index: u32, at_ns: u64) -> OpTime {
        debug_assert!(
            index < self.next_page[block as usize] && self.programs.get(self.cfg.geometry.ppn(block, index)) == 1,
            "page {index} of block {block} was not stored by program_run_pages"
        );
        let cut = self.begin_op(FlashOp::Program, self.cfg.geometry.ppn(block, index), at_ns);
        debug_assert!(matches!(cut, Ok(None)), "nothing armed, yet the program was cut");
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
