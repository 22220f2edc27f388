//! Programs and SLC partial programs: the programming rules they are
//! checked against, program failures of the fault model, and their time.

use super::{DataMode, FlashOp, Nand};
use crate::bit_errors::{SALT_GARBAGE, SALT_PROGRAM};
use crate::error::{NandError, Violation};
use crate::fault::{tear_partial_program, Area, PowerCut, Torn};
use crate::geometry::{BlockId, Ppn};
use crate::redo::Mutation;
use crate::spare::FieldsSpare;
use crate::timing::OpTime;
use std::borrow::Cow;

impl Nand {
    /// Programs an erased page. `data` is a full page, or empty in `MetaOnly` mode
    /// (the data is then not stored).
    pub fn program(&mut self, ppn: Ppn, at_ns: u64, data: &[u8], oob: &[u8]) -> Result<OpTime, NandError> {
        self.program_hinted(ppn, at_ns, data, SpareIn::Bytes(oob), None)
    }

    /// [`Nand::program`] of a spare area whose packed form the caller knows
    /// (`spare`; the bytes `spare.encode` writes pack to its fields by the
    /// installed codec). A metadata-only array stores the fields without
    /// the bytes being written, packed again or checked (a CRC and a pass
    /// over every byte a program); they are written where the array needs
    /// them (whole spare areas, tears, the redo log). Debug builds check the
    /// bytes pack to the fields. Same operation, time, counts and stored
    /// bytes as `program` of those bytes.
    pub fn program_fields(&mut self, ppn: Ppn, at_ns: u64, data: &[u8], spare: &FieldsSpare) -> Result<OpTime, NandError> {
        self.program_hinted(ppn, at_ns, data, SpareIn::Fields(spare), None)
    }

    /// [`Nand::program`], with a hint for a metadata-only array: `data` is
    /// likely to differ little from that of page `like` (the earlier version
    /// of an FTL table page). The array may then keep it as a patch (`kept.rs`);
    /// reads return the bytes programmed all the same, whatever `like` holds
    /// or later becomes. Same operation, time and counts as `program`.
    pub fn program_like(&mut self, ppn: Ppn, at_ns: u64, data: &[u8], oob: &[u8], like: Ppn) -> Result<OpTime, NandError> {
        self.program_hinted(ppn, at_ns, data, SpareIn::Bytes(oob), Some(like))
    }

    pub(super) fn program_hinted(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        data: &[u8],
        oob: SpareIn,
        like: Option<Ppn>,
    ) -> Result<OpTime, NandError> {
        let g = self.cfg.geometry;
        let os = g.oob_size as usize;
        self.log_mutation(at_ns, || Mutation::Program {
            ppn,
            data: data.to_vec(),
            oob: oob.bytes(os).into_owned(),
            like,
        });
        self.check_ppn(ppn)?;
        if let SpareIn::Bytes(b) = oob {
            self.check_len("program oob", b.len(), os)?;
        }
        let data_ok = data.len() == g.page_size as usize || (data.is_empty() && self.cfg.data_mode == DataMode::MetaOnly);
        if !data_ok {
            return Err(self.violation(Violation::BufferSize {
                what: "program data",
                got: data.len(),
                want: g.page_size as usize,
            }));
        }
        let block = g.block_of(ppn);
        let index = g.page_index_of(ppn);
        if self.bad[block as usize] {
            return Err(self.bad_block_op(block, FlashOp::Program, at_ns));
        }
        let programs = self.programs.get(ppn);
        if programs != 0 {
            return Err(self.violation(Violation::ProgramNotErased { ppn, programs }));
        }
        if g.cell.in_order_programming() && index != self.next_page[block as usize] {
            return Err(self.violation(Violation::OutOfOrder {
                ppn,
                expected: self.next_page[block as usize],
            }));
        }
        let cut = self.begin_op(FlashOp::Program, ppn, at_ns)?;
        if matches!(cut, Some(PowerCut { torn: Torn::None, .. })) {
            return Err(NandError::PowerLoss);
        }
        self.programs.set_programmed(ppn);
        let np = &mut self.next_page[block as usize];
        *np = (*np).max(index + 1);
        let ps = g.page_size as usize;
        if let (None, Some(model)) = (cut, self.faults) {
            let key = self.page_key(ppn);
            let p = model.program_fail_p(key.erase_count, self.cfg.endurance);
            if model.uniform(&[SALT_PROGRAM, ppn as u64, key.erase_count as u64]) < p {
                // Status fail: the cells hold garbage (a torn program's worth).
                let garbage = PowerCut {
                    at_op: 0,
                    torn: Torn::Garbage,
                    seed: model.seed ^ crate::bit_errors::splitmix64(SALT_GARBAGE ^ ((ppn as u64) << 8)),
                };
                self.tear_page(ppn, garbage, data, &oob.bytes(os));
                self.write_through_page(ppn)?;
                self.image_op_done()?;
                self.stats.program_failures += 1;
                let (unit, channel) = self.unit_channel(ppn);
                let t = self.cfg.timing;
                let time = self
                    .clocks
                    .program(unit, channel, at_ns, t.transfer_ns((ps + os) as u32), t.program_ns);
                return Err(NandError::ProgramFailed {
                    ppn,
                    done_ns: time.done_ns,
                });
            }
        }
        match cut {
            None => {
                match oob {
                    SpareIn::Fields(f) => self.spare.write_fields(ppn, f),
                    SpareIn::Bytes(b) => self.spare.write(ppn, b),
                }
                self.store_data(ppn, data, like);
            }
            Some(cut) => {
                self.tear_page(ppn, cut, data, &oob.bytes(os));
                self.write_through_page(ppn)?;
                return Err(NandError::PowerLoss);
            }
        }
        self.write_through_page(ppn)?;
        self.image_op_done()?;
        Ok(self.program_time(block, at_ns))
    }

    /// A program of a page of `block` issued at `at_ns` is done: counted,
    /// and its time taken on its die and channel.
    #[inline]
    pub(super) fn program_time(&mut self, block: BlockId, at_ns: u64) -> OpTime {
        let g = self.cfg.geometry;
        self.stats.programs += 1;
        self.stats.page_reached(1);
        let (unit, channel) = self.unit_channel_of_block(block);
        let t = self.cfg.timing;
        // A page without stored data still crosses the channel whole.
        let xfer = t.transfer_ns(g.page_size + g.oob_size);
        let time = self.clocks.program(unit, channel, at_ns, xfer, t.program_ns);
        self.stats.busy_ns += xfer + t.program_ns;
        // The cells change once the data is in the die's register.
        self.trace_times(time.transferred_ns, time.done_ns);
        time
    }

    /// SLC partial program of the spare area by mask: the bits set in `clear`
    /// are cleared, every other bit is left as it is (a chip takes a 1 as
    /// "leave this cell": program inhibit), so the caller need not read the
    /// page first. The spare it leaves is what [`Nand::partial_program`] of
    /// that image leaves, with the same checks, time and tears.
    pub fn partial_program_clear(&mut self, ppn: Ppn, at_ns: u64, clear: &[u8]) -> Result<OpTime, NandError> {
        self.check_ppn(ppn)?;
        let os = self.cfg.geometry.oob_size as usize;
        self.check_len("partial program mask", clear.len(), os)?;
        let mut spare = vec![0u8; os];
        self.spare.read(ppn, &mut spare);
        for (s, c) in spare.iter_mut().zip(clear) {
            *s &= !c;
        }
        self.partial_program(ppn, at_ns, None, Some(&spare))
    }

    /// SLC partial program: after it the page reads `data`/`oob` where given.
    /// Each may only clear bits of what the page holds. `None` leaves that area alone.
    pub fn partial_program(&mut self, ppn: Ppn, at_ns: u64, data: Option<&[u8]>, oob: Option<&[u8]>) -> Result<OpTime, NandError> {
        self.log_mutation(at_ns, || Mutation::PartialProgram {
            ppn,
            data: data.map(<[u8]>::to_vec),
            oob: oob.map(<[u8]>::to_vec),
        });
        self.check_ppn(ppn)?;
        let g = self.cfg.geometry;
        if g.cell.in_order_programming() {
            return Err(self.violation(Violation::PartialOnMultiLevel { ppn }));
        }
        let block = g.block_of(ppn);
        if self.bad[block as usize] {
            return Err(self.bad_block_op(block, FlashOp::PartialProgram, at_ns));
        }
        let programs = self.programs.get(ppn);
        if programs >= g.nop {
            return Err(self.violation(Violation::NopExceeded { ppn, nop: g.nop }));
        }
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        let mut spare = vec![0u8; os];
        self.spare.read(ppn, &mut spare);
        if let Some(new) = oob {
            self.check_len("partial program oob", new.len(), os)?;
            if let Some(byte) = first_bit_set(&spare, new) {
                return Err(self.violation(Violation::BitSet { ppn, byte }));
            }
        }
        let mut current = vec![0u8; ps];
        if let Some(new) = data {
            self.check_len("partial program data", new.len(), ps)?;
            self.copy_data_out(ppn, &mut current);
            if let Some(byte) = first_bit_set(&current, new) {
                return Err(self.violation(Violation::BitSet { ppn, byte: os + byte }));
            }
        }
        let cut = self.begin_op(FlashOp::PartialProgram, ppn, at_ns)?;
        if matches!(cut, Some(PowerCut { torn: Torn::None, .. })) {
            return Err(NandError::PowerLoss);
        }
        self.programs.set(ppn, programs + 1);
        let np = &mut self.next_page[block as usize];
        *np = (*np).max(g.page_index_of(ppn) + 1);
        if let Some(cut) = cut {
            let mut rng = cut.rng();
            if let Some(new) = oob {
                tear_partial_program(&mut rng, cut.torn, Area::Oob, &mut spare, new);
                self.spare.write(ppn, &spare);
            }
            if let Some(new) = data {
                tear_partial_program(&mut rng, cut.torn, Area::Data, &mut current, new);
                self.store_data(ppn, &current, None);
            }
            self.write_through_page(ppn)?;
            return Err(NandError::PowerLoss);
        }
        if let Some(new) = oob {
            self.spare.write(ppn, new);
        }
        if let Some(new) = data {
            self.store_data(ppn, new, None);
        }
        self.write_through_page(ppn)?;
        self.image_op_done()?;
        self.stats.partial_programs += 1;
        self.stats.page_reached(programs + 1);
        let (unit, channel) = self.unit_channel(ppn);
        let t = self.cfg.timing;
        let bytes = data.map_or(0, |d| d.len()) + oob.map_or(0, |o| o.len());
        let xfer = t.transfer_ns(bytes as u32);
        let time = self.clocks.program(unit, channel, at_ns, xfer, t.partial_program_ns);
        self.stats.busy_ns += xfer + t.partial_program_ns;
        self.trace_times(time.transferred_ns, time.done_ns);
        Ok(time)
    }
}

/// The spare area a program writes: its bytes, or fields whose bytes are
/// written only where the array needs them.
#[derive(Clone, Copy)]
pub(super) enum SpareIn<'a> {
    Bytes(&'a [u8]),
    Fields(&'a FieldsSpare<'a>),
}

impl SpareIn<'_> {
    /// The spare area's bytes (`len` of them: the geometry's spare size).
    fn bytes(&self, len: usize) -> Cow<'_, [u8]> {
        match *self {
            SpareIn::Bytes(b) => Cow::Borrowed(b),
            SpareIn::Fields(f) => Cow::Owned(f.bytes(len)),
        }
    }
}

/// First byte where `new` has a 1 bit over a 0 bit of `old`.
fn first_bit_set(old: &[u8], new: &[u8]) -> Option<usize> {
    old.iter().zip(new).position(|(o, n)| n & !o != 0)
}
