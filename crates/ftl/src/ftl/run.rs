//! A host's run of plain writes without data ([`Device::write_run`] of the
//! FTL itself): whole turns of the host stripe go to the array as the next
//! pages of their blocks' runs ([`Nand::program_run_pages`]) while nothing
//! but those programs can happen between two writes (no block fills, no
//! checkpoint falls due, nothing is armed on the array, the protocol
//! watches no program); every other write of the run goes through
//! [`Ftl::write_page`]. The device, its flash, clocks and counters end as
//! the writes one by one leave them (`ftl/run.rs` tests,
//! `crates/host/tests/fill.rs`).
//!
//! [`Device::write_run`]: crate::Device::write_run
//! [`Nand::program_run_pages`]: txftl_nand::Nand::program_run_pages

use super::write::WEAR_CHECK_EVERY_ERASES;
use super::Ftl;
use crate::checkpoint::UNMAPPED;
use crate::device::{Device, Lpn};
use crate::error::{DeviceError, Result};
use crate::hooks::{EventHooks, Hooks};
use crate::mapping::Mapping;
use crate::oob::{Oob, PageKind};
use std::ops::Range;
use txftl_nand::{BlockId, PackedSpare};

impl<H: Hooks> Ftl<H> {
    /// [`Device::write_run`](crate::Device::write_run): the plain writes
    /// without data of `lpns`, the first issued at `first_at_ns`, each next
    /// one when `next_at` says given the one before's completion. Returns
    /// how many went to the array as whole turns of the stripe.
    pub(crate) fn write_run_plain(
        &mut self,
        lpns: Range<Lpn>,
        first_at_ns: u64,
        next_at: &mut dyn FnMut(u64) -> u64,
    ) -> std::result::Result<u64, (Lpn, DeviceError)> {
        let units = self.geo.unit_count();
        let mut turned = 0;
        let mut at = first_at_ns;
        let mut lpn = lpns.start;
        while lpn < lpns.end {
            let turns = self.stripe_turns(lpn, lpns.end).map_err(|e| (lpn, e))?;
            if turns == 0 {
                self.set_clock(at);
                self.write_page(lpn, &[]).map_err(|e| (lpn, e))?;
                at = next_at(self.now_ns.max(at));
                lpn += 1;
                continue;
            }
            self.program_turns(lpn, turns, &mut at, next_at);
            lpn += turns * units;
            turned += (turns * units) as u64;
        }
        Ok(turned)
    }

    /// How many whole turns of the host stripe, from logical page `lpn` on
    /// (below `end`), [`Ftl::program_turns`] may write: every unit has an
    /// open host block, each write is the next page of its block's run
    /// (lpn and sequence number advancing by the stripe's width), and none
    /// fills its block, makes a checkpoint due or leaves housekeeping to
    /// do. 0: the next write goes through `write_page`. Answers the
    /// protocol's erase requests first, as a write does.
    fn stripe_turns(&mut self, lpn: Lpn, end: Lpn) -> Result<u32> {
        let units = self.geo.unit_count();
        let before_checkpoint = (self.derived.checkpoint_every - 1).saturating_sub(self.programs_since_ckpt);
        let turns = (end - lpn) / units;
        let watched = <H as EventHooks>::SEES_PROGRAMS || <H::Mapping as Mapping>::CACHED || self.hooks.summary_pages();
        if watched || turns == 0 || before_checkpoint < units as u64 || end > self.derived.logical_pages {
            return Ok(0);
        }
        self.check_writable("write")?;
        self.answer_erase_requests()?;
        if !self.reserved.is_empty() || !self.retiring.is_empty() || self.erases_since_wl_check >= WEAR_CHECK_EVERY_ERASES {
            return Ok(0);
        }
        let Some((protocol_bytes, flag_bytes)) = self.nand.packed_widths() else {
            return Ok(0);
        };
        let mut turns = turns.min((before_checkpoint / units as u64) as u32);
        for j in 0..units {
            let Some(block) = self.stripe_slot(j) else {
                return Ok(0);
            };
            // The block's last page closes it: that write goes through `write_page`.
            turns = turns.min((self.geo.pages_per_block - 1).saturating_sub(self.blocks.write_ptr[block as usize]));
        }
        if turns == 0 {
            return Ok(0);
        }
        for j in 0..units {
            let block = self.stripe_slot(j).expect("checked above");
            let page = self.blocks.write_ptr[block as usize];
            let fields = self.host_page_fields(block, lpn + j, self.seq + j as u64, protocol_bytes, flag_bytes);
            if !fields.is_some_and(|f| self.nand.continues_run(block, page, turns, &f, units, units)) {
                return Ok(0);
            }
        }
        Ok(turns)
    }

    /// The open host block of the `j`-th unit of the stripe's turn from the
    /// host cursor on (the unit the `j`-th next host write goes to).
    fn stripe_slot(&self, j: u32) -> Option<BlockId> {
        self.host_open[((self.host_cursor + j) % self.geo.unit_count()) as usize]
    }

    /// The packed spare fields of a plain host write of `lpn` into `block`
    /// with sequence number `seq`, as `program_next` records it.
    fn host_page_fields(&self, block: BlockId, lpn: Lpn, seq: u64, protocol_bytes: usize, flag_bytes: usize) -> Option<PackedSpare> {
        let ec = self.blocks.erase_count[block as usize];
        Oob::new(PageKind::Data, lpn, seq, ec, &[]).packed(protocol_bytes, flag_bytes)
    }

    /// Writes `turns` whole turns of the host stripe from logical page
    /// `first` on, as [`Ftl::stripe_turns`] allowed: each block's pages at
    /// once on the array (`program_run_pages`), then each write as
    /// `set_clock` and `write_page` do it (the program issued on the array,
    /// the L2P pointed at it, the clock moved), then each block's
    /// bookkeeping as after its pages' programs and mappings.
    fn program_turns(&mut self, first: Lpn, turns: u32, at: &mut u64, next_at: &mut dyn FnMut(u64) -> u64) {
        let units = self.geo.unit_count();
        // The stripe's blocks in issue order, from the host cursor on (whole
        // turns bring the cursor back), with the page each starts at.
        let stripe: Vec<(BlockId, u32)> = (0..units)
            .map(|j| {
                let block = self.stripe_slot(j).expect("stripe_turns found every unit's block open");
                (block, self.blocks.write_ptr[block as usize])
            })
            .collect();
        for &(block, page) in &stripe {
            self.nand.program_run_pages(block, page, turns);
        }
        let first_seq = self.seq;
        let mut lpn = first;
        for turn in 0..turns {
            for &(block, page) in &stripe {
                self.set_clock(*at);
                let t = self.nand.issue_run_program(block, page + turn, self.now_ns);
                // `map`, its other half below: the old page (of an earlier
                // write) unmapped, the new one named.
                if self.l2p.get(lpn) != UNMAPPED {
                    self.unmap(lpn);
                }
                self.l2p.set(lpn, self.geo.ppn(block, page + turn));
                self.now_ns = self.now_ns.max(t.transferred_ns);
                *at = next_at(self.now_ns.max(*at));
                lpn += 1;
            }
        }
        for (j, &(block, page)) in stripe.iter().enumerate() {
            for turn in 0..turns {
                let ppn = self.page_programmed(block, page + turn, first_seq + (turn * units) as u64 + j as u64);
                assert!(!self.mapped.get(ppn), "page {ppn}, just programmed, is mapped");
                self.mapped.set(ppn, true);
            }
            self.blocks.valid_add(block, turns);
        }
        let count = turns * units;
        self.seq += count as u64;
        self.tables.mark_lpns(first..first + count);
        self.counters.host_writes += count as u64;
        debug_assert!(
            self.programs_since_ckpt < self.derived.checkpoint_every,
            "a run's writes made a checkpoint due"
        );
    }
}

#[cfg(test)]
mod tests {
    use crate::device::{Device, Lpn};
    use crate::test_hooks::Bare;
    use crate::{Ftl, FtlConfig};
    use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};

    /// 8 units of 24 blocks of 128 pages, metadata only.
    fn device(cfg: FtlConfig) -> Ftl<Bare> {
        let mut p = preset("jasmine").unwrap();
        p.geometry.blocks_per_plane = 24;
        let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
        Ftl::format(nand, cfg, Bare).unwrap()
    }

    /// What `Device::write_run` does by default: each write on its own.
    fn one_by_one(f: &mut Ftl<Bare>, lpns: std::ops::Range<Lpn>, first_at_ns: u64, think_ns: u64) {
        let mut at = first_at_ns;
        for lpn in lpns {
            f.set_clock(at);
            f.write(lpn, &[]).unwrap();
            at = f.now_ns().max(at) + think_ns;
        }
    }

    fn assert_same(a: &Ftl<Bare>, b: &Ftl<Bare>, what: &str) {
        assert_eq!(a.now_ns, b.now_ns, "{what}: clock");
        assert_eq!(a.seq, b.seq, "{what}: sequence number");
        assert_eq!(a.host_cursor, b.host_cursor, "{what}: host stripe");
        assert_eq!(a.stats(), b.stats(), "{what}: counters");
        let (na, nb) = (&a.nand, &b.nand);
        assert_eq!(na.stats(), nb.stats(), "{what}: NAND counters");
        assert_eq!(na.op_count(), nb.op_count(), "{what}: NAND operations");
        assert_eq!(na.all_idle_ns(), nb.all_idle_ns(), "{what}: NAND busy clocks");
        for ppn in 0..a.geo.page_count() {
            assert_eq!(na.inspect_oob(ppn), nb.inspect_oob(ppn), "{what}: spare area of page {ppn}");
        }
        for lpn in 0..a.derived.logical_pages {
            assert_eq!(a.mapping(lpn), b.mapping(lpn), "{what}: mapping of {lpn}");
        }
        assert_eq!(a.blocks.write_ptr, b.blocks.write_ptr, "{what}: write pointers");
        assert_eq!(a.blocks.valid, b.blocks.valid, "{what}: valid counts");
        assert_eq!(
            a.programs_since_ckpt, b.programs_since_ckpt,
            "{what}: programs since the checkpoint"
        );
    }

    /// A run of plain writes leaves the device, its flash and its clocks as
    /// the same writes one by one do, and most of them went as whole turns
    /// of the stripe: a fill crossing checkpoints and blocks filling, then
    /// scattered writes and overwrites from the middle of a stripe, with GC
    /// copying live pages; with and without think
    /// time, at the default checkpoint interval and a short one. Both then
    /// mount from their flash alone to the same mappings.
    #[test]
    fn a_run_leaves_the_device_as_its_writes_one_by_one() {
        // A think time longer than a program: the host, not the dies, sets
        // the pace, and each write starts when it is submitted.
        for (every, think_ns) in [(0, 0), (2_000, 900_000)] {
            let cfg = FtlConfig {
                checkpoint_every_pages: every,
                ..FtlConfig::default()
            };
            let (mut run, mut each) = (device(cfg.clone()), device(cfg.clone()));
            let n = run.derived.logical_pages * 9 / 10;
            let what = format!("checkpoint every {every}, think {think_ns} ns");
            for (i, lpns) in [0..n, 5..n / 2 + 3, 0..n].into_iter().enumerate() {
                let at = run.now_ns + 1_000;
                // Scattered writes first (on both), so that GC finds live
                // pages to copy.
                for k in 0..(i as u32 * 2_000) {
                    for f in [&mut run, &mut each] {
                        f.write(k * 7_919 % n, &[]).unwrap();
                    }
                }
                let at = at.max(run.now_ns);
                let turned = run.write_run_plain(lpns.clone(), at, &mut |done| done + think_ns).unwrap();
                one_by_one(&mut each, lpns.clone(), at, think_ns);
                assert_same(&run, &each, &format!("{what}, run {i} of {lpns:?}"));
                // GC's copies and checkpoints take sequence numbers between
                // a block's host pages: its run ends there, and the rest of
                // the block is written one by one (the overwrites, with GC
                // at every block, go nearly all that way). A fresh fill has
                // no GC, and a checkpoint ends only the runs of the blocks
                // open then.
                assert!(
                    i > 0 || turned * 10 > (lpns.end - lpns.start) as u64 * 8,
                    "{what}, run {i}: only {turned} of {lpns:?} went as turns"
                );
            }
            let s = run.stats();
            assert!(
                s.checkpoints > 3 && s.gc_copies > 0,
                "{what}: {} checkpoints, {} GC copies",
                s.checkpoints,
                s.gc_copies
            );
            let run = Ftl::mount(run.into_nand(), cfg.clone(), Bare).unwrap();
            let each = Ftl::mount(each.into_nand(), cfg, Bare).unwrap();
            for lpn in 0..n {
                assert_eq!(run.mapping(lpn), each.mapping(lpn), "{what}: mapping of {lpn} after a mount");
            }
        }
    }
}
