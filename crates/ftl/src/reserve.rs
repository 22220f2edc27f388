//! Host pages reserved before they are programmed: a protocol that must name
//! a page's physical address before writing it (Möbius's atom inode lists
//! the physical pages of its transaction's data and is written first; a
//! dynamic transaction's page points to the next one in its spare area)
//! reserves them, then programs each where it was reserved.
//!
//! A reservation takes the host stream's next pages in the order the
//! stream would program them, striped over the units as host writes are,
//! opening blocks as needed (GC and the allocation window's slides run
//! then, as for any host write). NAND pages of a block are programmed in
//! order, so the contract is:
//! - reserved pages are programmed in the order they were reserved
//!   ([`Ftl::program_reserved`] refuses any other), and
//! - no other host program (a plain write, `program_unmapped`) comes while
//!   pages are reserved (refused with a typed error: it would take a
//!   reserved page); GC, checkpoints and log appends go to blocks of their
//!   own, so they may.
//!
//! A block whose reservations run out of pages leaves the host stream at
//! once (the stream opens the next block for the next page), but stays open
//! until its last page is programmed; GC never takes an open block. A
//! program that fails retires its block as usual: its other reservations
//! are void ([`Ftl::program_reserved`] says so), and the protocol reserves
//! again. [`Ftl::void_reserved`] gives back what a protocol will not program
//! (an aborted dynamic transaction's next page): their blocks are closed,
//! their pages left erased, as a mount closes a partly written block.
//! Nothing of a reservation is persistent: after a power cut the pages are
//! erased, and recovery reads them as such. (Not with summary pages, which
//! take each block's last page after the one before it: refused.)

use crate::blocks::BlockState;
use crate::device::Lpn;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::oob::{PageKind, SpareBytes, PROTOCOL_BYTES};
use txftl_nand::{BlockId, Ppn};

impl<H: Hooks> Ftl<H> {
    /// Reserves the host stream's next `n` pages; returns them in the order
    /// they must be programmed.
    pub fn reserve_host_pages(&mut self, n: u32) -> Result<Vec<Ppn>> {
        self.check_writable("reserve")?;
        if self.hooks.summary_pages() {
            // A block's last page is its summary's, written after the one
            // before it: it cannot be reserved for host data.
            return Err(DeviceError::CallOrder(
                "host pages cannot be reserved on a device with summary pages".into(),
            ));
        }
        self.answer_erase_requests()?;
        let ppb = self.geo.pages_per_block;
        let mut out = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let block = match self.host_block() {
                Ok(b) => b,
                Err(e) => {
                    // All or nothing: a caller that hears no may write
                    // other ways next, which reservations left would refuse.
                    self.give_back(&out);
                    return Err(e);
                }
            };
            let page = self.next_unreserved_page(block);
            debug_assert!(page < ppb, "host block {block} has no page left to reserve");
            if page + 1 == ppb {
                // The block's last page: the stream moves on to a new block,
                // this one stays open until it is programmed.
                self.close_stream_slot(block);
            }
            let ppn = self.geo.ppn(block, page);
            self.reserved.push_back(ppn);
            out.push(ppn);
        }
        Ok(out)
    }

    /// The first page of open block `block` neither programmed nor reserved.
    fn next_unreserved_page(&self, block: BlockId) -> u32 {
        let in_block = self.reserved.iter().filter(|&&p| self.geo.block_of(p) == block).count() as u32;
        self.blocks.write_ptr[block as usize] + in_block
    }

    /// Programs reserved page `ppn` (the oldest reservation) with host data
    /// of `lpn`, not mapped (the protocol maps it, as after
    /// `program_unmapped_deferred`; housekeeping is the caller's too).
    /// Returns when its data crossed the channel, or `None` if the
    /// reservation is void: its block retired after a failed program (this
    /// one or an earlier one), and every reservation left in that block
    /// with it.
    pub fn program_reserved(&mut self, ppn: Ppn, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<Option<u64>> {
        self.check_writable("write")?;
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())?;
        if self.reserved.front() != Some(&ppn) {
            return Err(DeviceError::CallOrder(format!(
                "physical page {ppn} is not the next reserved page (next: {:?}): reserved pages are programmed in order",
                self.reserved.front()
            )));
        }
        self.reserved.pop_front();
        let block = self.geo.block_of(ppn);
        let page = self.geo.page_index_of(ppn);
        if self.blocks.state[block as usize] != BlockState::Open || self.blocks.write_ptr[block as usize] != page {
            self.reserved.retain(|&p| self.geo.block_of(p) != block);
            return Ok(None);
        }
        let done = self.program_next(
            block,
            PageKind::Data,
            lpn,
            data,
            &SpareBytes::unflagged(*protocol),
            (false, false),
            self.now_ns,
        )?;
        match done {
            Some((_, transferred)) => {
                self.counters.host_writes += 1;
                self.now_ns = self.now_ns.max(transferred);
                Ok(Some(transferred))
            }
            None => {
                self.reserved.retain(|&p| self.geo.block_of(p) != block);
                Ok(None)
            }
        }
    }

    /// Pages reserved and not programmed yet, oldest first.
    pub fn reserved_pages(&self) -> impl Iterator<Item = Ppn> + '_ {
        self.reserved.iter().copied()
    }

    /// Gives back every page still reserved: each block holding one is closed
    /// (full, its pages from the first reserved one on left erased).
    pub fn void_reserved(&mut self) {
        let ppb = self.geo.pages_per_block;
        while let Some(ppn) = self.reserved.pop_front() {
            let block = self.geo.block_of(ppn);
            self.reserved.retain(|&p| self.geo.block_of(p) != block);
            if self.blocks.state[block as usize] == BlockState::Open {
                self.blocks.write_ptr[block as usize] = ppb;
                self.blocks.set_full(block);
                self.close_stream_slot(block);
            }
        }
    }

    /// Gives back `ppns`, the newest reservations: their blocks are closed
    /// as [`Ftl::void_reserved`] closes them, unless an older reservation
    /// is in the same block (its pages after it are then reserved again).
    fn give_back(&mut self, ppns: &[Ppn]) {
        let ppb = self.geo.pages_per_block;
        let kept = self.reserved.len() - ppns.len();
        debug_assert!(self.reserved.iter().skip(kept).eq(ppns.iter()), "the newest reservations");
        self.reserved.truncate(kept);
        for &ppn in ppns {
            let block = self.geo.block_of(ppn);
            let shared = self.reserved.iter().any(|&p| self.geo.block_of(p) == block);
            if !shared && self.blocks.state[block as usize] == BlockState::Open {
                self.blocks.write_ptr[block as usize] = ppb;
                self.blocks.set_full(block);
                self.close_stream_slot(block);
            }
        }
    }

    /// Refuses a host program that does not go through the reservations
    /// while some are outstanding (it would take a reserved page).
    pub(crate) fn check_no_reservations(&self, what: &'static str) -> Result<()> {
        match self.reserved.front() {
            None => Ok(()),
            Some(ppn) => Err(DeviceError::CallOrder(format!(
                "{what} while host pages are reserved (physical page {ppn} first): program the reservations first"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::config::FtlConfig;
    use crate::device::Device;
    use crate::error::DeviceError;
    use crate::oob::PROTOCOL_BYTES;
    use crate::test_hooks::Bare;
    use crate::Ftl;
    use txftl_nand::{DataMode, FaultModel, Nand, ViolationPolicy};

    const NO_TAG: [u8; PROTOCOL_BYTES] = [0; PROTOCOL_BYTES];

    fn ftl(faults: Option<FaultModel>) -> Ftl<Bare> {
        let mut p = txftl_nand::preset("tiny").unwrap();
        p.geometry.blocks_per_plane = 32;
        let mut nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        nand.set_fault_model(faults).unwrap();
        Ftl::format(nand, FtlConfig::default(), Bare).unwrap()
    }

    fn page(f: &Ftl<Bare>, v: u8) -> Vec<u8> {
        vec![v; f.page_size() as usize]
    }

    fn assert_reads(f: &mut Ftl<Bare>, lpn: u32, v: u8) {
        let mut buf = page(f, 0);
        f.read(lpn, &mut buf).unwrap();
        assert!(buf.iter().all(|&b| b == v), "lpn {lpn}");
    }

    /// Reserved pages are the stream's next ones, striped over the units and
    /// across blocks; programmed in order and mapped, they read back, and a
    /// power cut after they are mapped and flushed keeps them. (`tiny`'s
    /// array panics on an out-of-order program, so the order is checked too.)
    #[test]
    fn reserved_pages_are_programmed_where_reserved() {
        let mut f = ftl(None);
        f.write(0, &page(&f, 9)).unwrap();
        let ppns = f.reserve_host_pages(20).unwrap();
        let geo = *f.nand().geometry();
        let mut distinct = ppns.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), 20);
        let units: std::collections::BTreeSet<u32> = ppns.iter().map(|&p| geo.unit_of_block(geo.block_of(p))).collect();
        assert_eq!(units.len() as u32, geo.unit_count(), "striped over every unit");
        for (i, &ppn) in ppns.iter().enumerate() {
            let lpn = 10 + i as u32;
            assert!(f.program_reserved(ppn, lpn, &page(&f, i as u8), &NO_TAG).unwrap().is_some());
            f.map_page(lpn, ppn).unwrap();
        }
        assert_eq!(f.reserved_pages().count(), 0);
        f.housekeeping().unwrap();
        f.write(1, &page(&f, 7)).unwrap();
        f.flush().unwrap();
        f.check_invariants().unwrap();
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), Bare).unwrap();
        for i in 0..20u32 {
            assert_reads(&mut f, 10 + i, i as u8);
        }
        assert_reads(&mut f, 0, 9);
        assert_reads(&mut f, 1, 7);
        f.check_invariants().unwrap();
    }

    /// Out of order, and a plain write while pages are reserved: typed
    /// refusals, nothing programmed.
    #[test]
    fn programs_out_of_reservation_order_are_refused() {
        let mut f = ftl(None);
        let ppns = f.reserve_host_pages(3).unwrap();
        let data = page(&f, 1);
        assert!(matches!(
            f.program_reserved(ppns[1], 0, &data, &NO_TAG),
            Err(DeviceError::CallOrder(_))
        ));
        assert!(matches!(f.write(0, &data), Err(DeviceError::CallOrder(_))));
        let programs = f.nand().stats().programs;
        assert!(f.program_reserved(ppns[0], 0, &data, &NO_TAG).unwrap().is_some());
        assert_eq!(f.nand().stats().programs, programs + 1);
    }

    /// Voided reservations close their blocks (pages left erased): later
    /// writes go elsewhere, and a mount reads the device back whole; a power
    /// cut with pages still reserved (never programmed) loses nothing.
    #[test]
    fn void_reservations_and_power_cuts_leave_the_device_consistent() {
        let mut f = ftl(None);
        let ppns = f.reserve_host_pages(3).unwrap();
        assert!(f.program_reserved(ppns[0], 5, &page(&f, 5), &NO_TAG).unwrap().is_some());
        f.map_page(5, ppns[0]).unwrap();
        f.void_reserved();
        assert_eq!(f.reserved_pages().count(), 0);
        for lpn in 0..5 {
            f.write(lpn, &page(&f, lpn as u8 + 1)).unwrap();
        }
        f.flush().unwrap();
        f.check_invariants().unwrap();
        let ppns = f.reserve_host_pages(4).unwrap();
        assert!(f.program_reserved(ppns[0], 6, &page(&f, 6), &NO_TAG).unwrap().is_some());
        // The power cut: one reserved page programmed, unmapped, three not.
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), Bare).unwrap();
        f.check_invariants().unwrap();
        assert_reads(&mut f, 5, 5);
        for lpn in 0..5 {
            assert_reads(&mut f, lpn, lpn as u8 + 1);
        }
        // The programmed one is rolled forward as any intact page programmed
        // after the checkpoint (this toy protocol's recovery is the
        // framework's; a protocol's hooks decide what such pages mean).
        assert_reads(&mut f, 6, 6);
    }

    /// A failed program retires its block: that reservation and the block's
    /// later ones are void, and reserving again gets pages elsewhere.
    #[test]
    fn a_failed_program_voids_the_blocks_reservations() {
        let mut faults = FaultModel::profile("typical", 3).unwrap();
        faults.program_fail_fresh = 0.2;
        faults.program_fail_worn = 0.2;
        let mut f = ftl(Some(faults));
        let mut voided = 0;
        let mut written = 0u32;
        while written < 40 {
            let ppns = f.reserve_host_pages(5).unwrap();
            for ppn in ppns {
                if f.reserved_pages().next() != Some(ppn) {
                    continue; // voided with its block
                }
                let lpn = written;
                match f.program_reserved(ppn, lpn, &page(&f, lpn as u8), &NO_TAG).unwrap() {
                    Some(_) => {
                        f.map_page(lpn, ppn).unwrap();
                        written += 1;
                    }
                    None => voided += 1,
                }
            }
            f.housekeeping().unwrap();
        }
        assert!(voided > 0 && f.stats().program_failures > 0, "{voided} voided: {:?}", f.stats());
        f.check_invariants().unwrap();
        for lpn in 0..40 {
            assert_reads(&mut f, lpn, lpn as u8);
        }
    }
}
