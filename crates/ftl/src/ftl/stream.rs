//! The write streams (host and GC): opening an erased block for one,
//! programming its next page, retiring a block whose program failed, and
//! making room before the host stream takes a new block.

use super::{Ftl, Stream};
use crate::blocks::{AllocFor, BlockState};
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use crate::oob::{Oob, PageKind, SpareBytes};
use txftl_nand::{BlockId, FieldsSpare, NandError, Ppn};

impl<H: Hooks> Ftl<H> {
    /// Erases a block for reuse. Returns false if it wore out (now marked bad).
    pub(crate) fn erase_for_use(&mut self, b: BlockId) -> Result<bool> {
        if self.blocks.clean[b as usize] {
            return Ok(true);
        }
        // A block erased for reuse held data GC (or a protocol's request)
        // reclaimed: its erase is GC's work.
        let now = self.now_ns;
        match self.as_gc(|f| f.nand.erase(b, now)) {
            Ok(_) => {
                self.blocks.erase_count[b as usize] += 1;
                self.blocks.clean[b as usize] = true;
                self.erases_since_wl_check += 1;
                self.hooks.on_erase(b);
                Ok(true)
            }
            Err(NandError::EraseFailed(_)) | Err(NandError::BadBlock(_)) => {
                self.blocks.state[b as usize] = BlockState::Bad;
                self.counters.bad_blocks += 1;
                Ok(false)
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Takes a free block, erases it and opens it. `Ok(None)` if the pool is empty.
    pub(crate) fn open_block(&mut self, unit: u32, purpose: AllocFor) -> Result<Option<BlockId>> {
        while let Some(b) = self.blocks.take_free(unit, purpose) {
            if self.geo.unit_of_block(b) != unit {
                self.counters.blocks_borrowed += 1;
            }
            if self.erase_for_use(b)? {
                self.blocks.state[b as usize] = BlockState::Open;
                self.blocks.write_ptr[b as usize] = 0;
                self.blocks.valid[b as usize] = 0;
                return Ok(Some(b));
            }
        }
        Ok(None)
    }

    /// Programs a page into `stream`: the next page of its open block on the
    /// next unit, with a fresh sequence number, issued at `at_ns` (or once
    /// the block is taken, if taking it moved the clock). A program
    /// that fails its status retires its block (see `retire_pending`) and goes
    /// to another block. Returns the page and when its data crossed the channel.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn program_stream(
        &mut self,
        stream: Stream,
        kind: PageKind,
        lpn: u32,
        data: &[u8],
        bytes: &SpareBytes,
        at_ns: u64,
    ) -> Result<(Ppn, u64)> {
        let (relocated, lost) = match stream {
            Stream::Host => {
                self.check_no_reservations("a host program")?;
                (false, false)
            }
            Stream::Gc { lost } => (true, lost),
        };
        loop {
            let block = match stream {
                Stream::Host => self.host_block()?,
                Stream::Gc { .. } => self.gc_block()?,
            };
            // Taking a block may have moved the clock (GC making room, a
            // checkpoint releasing prefree blocks or sliding the window): the
            // page is issued after that. A checkpoint frees a block only once
            // its superblock is done; a page issued before, into a block it
            // freed that is already erased (an erase on request), can be done
            // first on its idle die, and a power cut between leaves the page
            // recording an erase count the surviving checkpoint does not have.
            let at_ns = at_ns.max(self.now_ns);
            if let Some(done) = self.program_next(block, kind, lpn, data, bytes, (lost, relocated), at_ns)? {
                return Ok(done);
            }
        }
    }

    /// Programs the next page of an open block. `Ok(None)`: the program failed
    /// and the block is now retiring (closed; the caller picks another).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn program_next(
        &mut self,
        block: BlockId,
        kind: PageKind,
        lpn: u32,
        data: &[u8],
        bytes: &SpareBytes,
        (lost, relocated): (bool, bool),
        at_ns: u64,
    ) -> Result<Option<(Ppn, u64)>> {
        let page = self.blocks.write_ptr[block as usize];
        debug_assert!(page < self.geo.pages_per_block, "program into full block {block}");
        let ppn = self.geo.ppn(block, page);
        let seq = self.seq;
        self.seq += 1;
        let mut oob = Oob::new(kind, lpn, seq, self.blocks.erase_count[block as usize], data);
        oob.protocol = bytes.protocol;
        oob.flag_bytes = bytes.flags;
        oob.lost = lost;
        oob.relocated = relocated;
        // A metadata-only array takes the packed fields as they are, and
        // asks for the record's bytes only if it keeps them. Any other
        // array takes the bytes, and a block's summary keeps every record's.
        let packed = self.nand.packed_widths().and_then(|(p, f)| Some((oob.packed(p, f)?, p, f)));
        if packed.is_none() || self.hooks.summary_pages() {
            oob.encode(&mut self.oob_buf);
        }
        let programmed = match packed {
            Some((fields, p, f)) => {
                let spare = FieldsSpare {
                    fields,
                    protocol: &oob.protocol[..p],
                    flags: &oob.flag_bytes[..f],
                    encode: &|b| oob.encode(b),
                };
                self.nand.program_fields(ppn, at_ns, data, &spare)
            }
            None => self.nand.program(ppn, at_ns, data, &self.oob_buf),
        };
        let t = match programmed {
            Ok(t) => t,
            Err(NandError::ProgramFailed { done_ns, .. }) => {
                self.now_ns = self.now_ns.max(done_ns);
                self.start_retiring(block);
                return Ok(None);
            }
            Err(NandError::BadBlock(_)) => {
                self.start_retiring(block);
                return Ok(None);
            }
            Err(e) => return Err(self.fail(e)),
        };
        if kind == PageKind::Data {
            self.hooks.on_program(ppn, &oob, t.done_ns);
        }
        self.page_programmed(block, page, seq);
        self.summary_after_program(block, page, at_ns)?;
        Ok(Some((ppn, t.transferred_ns)))
    }

    /// Page `page` of open block `block` was programmed with sequence
    /// number `seq`: the block's write pointer moves past it (a full block
    /// leaves its stream), and the page counts towards the next checkpoint.
    /// Returns the page.
    #[inline]
    pub(crate) fn page_programmed(&mut self, block: BlockId, page: u32, seq: u64) -> Ppn {
        let b = block as usize;
        assert_eq!(self.blocks.write_ptr[b], page, "block {block}: page {page} programmed out of order");
        let ppn = self.geo.ppn(block, page);
        self.intact.set(ppn, true);
        self.note_programmed(ppn);
        self.blocks.write_ptr[b] = page + 1;
        self.blocks.last_seq[b] = seq;
        self.blocks.clean[b] = false;
        if page + 1 == self.geo.pages_per_block {
            self.blocks.set_full(block);
            self.close_stream_slot(block);
        }
        self.programs_since_ckpt += 1;
        ppn
    }

    pub(crate) fn close_stream_slot(&mut self, block: BlockId) {
        if let Some(slot) = self
            .host_open
            .iter_mut()
            .chain(self.gc_open.iter_mut())
            .find(|s| **s == Some(block))
        {
            *slot = None;
        }
    }

    /// A program into `block` failed: no more programs go there (it counts as
    /// full, its failed page as used), and it is queued to be emptied and
    /// marked bad. Its live pages stay readable meanwhile.
    pub(crate) fn start_retiring(&mut self, block: BlockId) {
        let b = block as usize;
        self.blocks.write_ptr[b] = self.geo.pages_per_block;
        self.blocks.clean[b] = false;
        self.blocks.set_full(block);
        self.programs_since_ckpt += 1;
        self.close_stream_slot(block);
        self.retiring.insert(block);
    }

    /// Empties the blocks whose program failed (their live pages go to the GC
    /// stream) and marks them bad (`relocate_block` does, for a retiring
    /// block). Called after host operations, outside any GC in progress. A
    /// power cut before the next checkpoint forgets the retirement: the block
    /// is then an ordinary used block, GC'd and erased like any other.
    pub(crate) fn retire_pending(&mut self) -> Result<()> {
        while let Some(&b) = self.retiring.iter().next() {
            if self.blocks.state[b as usize] != BlockState::Full {
                self.retiring.remove(&b);
                continue;
            }
            self.relocate_block(b)?;
        }
        Ok(())
    }

    /// An open host block with room, on the next unit of the stripe.
    pub(crate) fn host_block(&mut self) -> Result<BlockId> {
        let units = self.geo.unit_count();
        let mut unit = self.host_cursor;
        self.host_cursor = (unit + 1) % units;
        if let Some(b) = self.host_open[unit as usize] {
            return Ok(b);
        }
        self.make_room_for_host()?;
        if self.blocks.unit_window_spent(unit) {
            self.checkpoint()?;
        }
        // A unit out of free blocks hands its turn on, so that no die
        // carries two of the stripe's slots (see `host_stand_in`).
        if let Some(u) = self.host_stand_in(unit) {
            self.host_cursor = (u + 1) % units;
            if let Some(b) = self.host_open[u as usize] {
                return Ok(b);
            }
            unit = u;
        }
        let mut opened = self.open_block(unit, AllocFor::Host)?;
        // Its ready blocks all went bad at their erase: slide the window once.
        if opened.is_none() && self.blocks.window_spent() {
            self.checkpoint()?;
            opened = self.open_block(unit, AllocFor::Host)?;
        }
        match opened {
            Some(b) => {
                self.host_open[unit as usize] = Some(b);
                Ok(b)
            }
            None => Err(self.no_space()),
        }
    }

    /// The unit that takes `unit`'s turn in the host stripe when `unit` has
    /// no free block of its own: the next one with an open host block or a
    /// free block. A block borrowed from another unit instead would put two
    /// of the stripe's slots on one die, which then takes two programs per
    /// turn of the stripe while the others take one: that die sets the pace
    /// of every write until the block fills (1,024 pages on `femu`). `None`:
    /// `unit` has a free block, or no unit can stand in (after
    /// `make_room_for_host` one always can; `open_block` still borrows when
    /// every free block of the unit it opens fails its erase). The GC stream
    /// keeps borrowing: its slots are what a nearly full or worn-out
    /// device's GC still has room in.
    fn host_stand_in(&self, unit: u32) -> Option<u32> {
        if self.blocks.unit_has_free(unit) {
            return None;
        }
        let units = self.geo.unit_count();
        let u = (1..units)
            .map(|i| (unit + i) % units)
            .find(|&u| self.host_open[u as usize].is_some() || self.blocks.unit_has_free(u))?;
        Some(u)
    }

    /// Why no block can be freed: every block holds live pages, or so many went
    /// bad that the rest cannot (a worn-out device, not a full one).
    pub(crate) fn no_space(&self) -> DeviceError {
        let bad_blocks = self.blocks.state.iter().filter(|&&s| s == BlockState::Bad).count() as u32;
        if bad_blocks > self.derived.spares {
            DeviceError::DeviceWornOut {
                bad_blocks,
                spares: self.derived.spares,
            }
        } else {
            DeviceError::NoSpace
        }
    }

    /// Before a host stream takes a new block, or hands a turn of a unit
    /// without a free block to another unit: run GC below the low
    /// watermark, and make sure a block beyond the GC reserve is free.
    pub(crate) fn make_room_for_host(&mut self) -> Result<()> {
        if self.blocks.free_count() + self.blocks.prefree_count() <= self.derived.gc_low {
            self.collect_garbage(self.derived.gc_high)?;
        }
        let mut slid = false;
        loop {
            let windowed = self.blocks.windowed();
            if self.blocks.free_count() > self.derived.reserve && (!windowed || self.blocks.window_count() > 0) {
                return Ok(());
            }
            if self.blocks.prefree_count() > 0 {
                self.checkpoint()?;
                continue;
            }
            // The window is used up but the pool is not: the zones slide (a
            // checkpoint refills the window).
            if self.blocks.window_spent() && self.blocks.free_count() > self.derived.reserve {
                self.checkpoint()?;
                continue;
            }
            if !self.gc_one()? {
                // Every block with dead pages may be one the protocol keeps
                // from GC until the next checkpoint (LightTx's zones): take it
                // and try again, once.
                if H::CAPABILITIES.skips_victims && !slid {
                    slid = true;
                    self.checkpoint()?;
                    continue;
                }
                return Err(self.no_space());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::blocks::{AllocFor, BlockState};
    use crate::test_hooks::tiny_bare;

    /// A unit whose free blocks are all gone hands its turn on: the host
    /// stream programs the other unit's own block and borrows nothing, so no
    /// die carries two of the stripe's slots.
    #[test]
    fn a_unit_out_of_free_blocks_hands_its_turn_on() {
        let mut f = tiny_bare();
        assert_eq!(f.geo.unit_count(), 2);
        // Unit 1's free blocks go bad (as if worn out): it has none left.
        while f.blocks.unit_has_free(1) {
            let b = f.blocks.take_free(1, AllocFor::Host).unwrap();
            assert_eq!(f.geo.unit_of_block(b), 1);
            f.blocks.state[b as usize] = BlockState::Bad;
        }
        let ps = f.page_size() as usize;
        let pages = 2 * f.geo.pages_per_block + 1;
        for lpn in 0..pages {
            f.write_page(lpn, &vec![lpn as u8; ps]).unwrap();
        }
        assert_eq!(f.counters.blocks_borrowed, 0);
        assert_eq!(f.host_open[1], None, "unit 1 took a block");
        let open = f.host_open[0].expect("unit 0 programs every page");
        assert_eq!(f.geo.unit_of_block(open), 0);
    }
}
