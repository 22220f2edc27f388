//! Planning a GC victim before it is released (`GcHooks::plan_victim`), for
//! a protocol whose recovery reads pages GC does not copy: Flag Commit's
//! reclaimed pages hold commit flags and links that must move to other pages
//! first.
//!
//! The framework reads the spare area of every programmed page of the
//! victim by an OOB-only read, charged on the device clock (a live page's
//! copy then reads it whole, as without planning). The protocol
//! fills a [`VictimPlan`]; the framework issues its flag programs (a spent
//! page is copied instead), waits for them (the host's GC is foreground),
//! and the copies carry the bytes the plan gave them. The victim is marked
//! prefree after the copies: the checkpoint that releases it starts once
//! every flash operation is done, so every flag the plan moved is durable
//! before the victim stops counting for recovery.

use crate::blocks::{BlockState, BlockTable};
use crate::ecc;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::{Hooks, SpareProbe, VictimPage, VictimPlan};
use crate::oob::{Oob, OobState, PageKind, SpareBytes};
use std::collections::BTreeMap;
use txftl_nand::{BlockId, Geometry, Nand, NandError, Ppn};

/// The spare-area reads a plan makes outside its victim.
struct Probe<'a> {
    nand: &'a mut Nand,
    blocks: &'a BlockTable,
    geo: Geometry,
    /// Reads are issued here; `done` is when the last one finished.
    at_ns: u64,
    done: u64,
    buf: Vec<u8>,
    failed: Option<NandError>,
    /// Spare reads the probe issued.
    reads: u64,
}

impl Probe<'_> {
    fn state(&self, ppn: Ppn) -> Option<BlockState> {
        let b = self.geo.block_of(ppn) as usize;
        self.blocks.state.get(b).copied()
    }
}

impl SpareProbe for Probe<'_> {
    fn read(&mut self, ppn: Ppn) -> Option<Oob> {
        if ppn >= self.geo.page_count() || self.failed.is_some() {
            return None;
        }
        let b = self.geo.block_of(ppn) as usize;
        let in_use = match self.state(ppn)? {
            BlockState::Open | BlockState::Full => true,
            BlockState::Prefree => !self.blocks.clean[b],
            _ => false,
        };
        if !in_use || self.geo.page_index_of(ppn) >= self.blocks.write_ptr[b] {
            return None;
        }
        self.reads += 1;
        match ecc::read_retrying(self.nand, ppn, self.at_ns, None, &mut self.buf) {
            Ok(Ok(done)) => {
                self.done = self.done.max(done);
                valid_data(&self.buf)
            }
            Ok(Err(u)) => {
                self.done = self.done.max(u.done_ns);
                None
            }
            Err(e) => {
                self.failed = Some(e);
                None
            }
        }
    }

    fn outlives_victim(&self, ppn: Ppn) -> bool {
        ppn < self.geo.page_count() && matches!(self.state(ppn), Some(BlockState::Open | BlockState::Full))
    }
}

/// A data page's record, or None.
fn valid_data(spare: &[u8]) -> Option<Oob> {
    match Oob::decode(spare) {
        OobState::Valid(o) if o.kind == PageKind::Data => Some(o),
        _ => None,
    }
}

impl<H: Hooks> Ftl<H> {
    /// Reads `victim`'s pages, asks the protocol for its plan, and issues the
    /// plan's flag programs at `issue`. Returns the copies' bytes and when
    /// the reads and flag programs are done.
    pub(crate) fn plan_victim(&mut self, victim: BlockId, issue: u64) -> Result<(BTreeMap<Ppn, SpareBytes>, u64)> {
        let first = self.geo.ppn(victim, 0);
        let written = self.blocks.write_ptr[victim as usize];
        let mut done = issue;
        let mut pages = Vec::with_capacity(written as usize);
        let mut spare = vec![0u8; self.oob_buf.len()];
        let reads = self.hooks.plan_reads_spares();
        for ppn in first..first + written {
            let live = self.mapped.get(ppn) || (H::CAPABILITIES.extra_live && self.hooks.extra_live(ppn));
            if !reads {
                pages.push(VictimPage { ppn, oob: None, live });
                continue;
            }
            let oob = match ecc::read_retrying(&mut self.nand, ppn, issue, None, &mut spare) {
                Ok(Ok(t)) => {
                    done = done.max(t);
                    valid_data(&spare)
                }
                Ok(Err(u)) => {
                    done = done.max(u.done_ns);
                    None
                }
                Err(e) => return Err(self.fail(e)),
            };
            pages.push(VictimPage { ppn, oob, live });
        }
        let mut plan = VictimPlan::default();
        let mut probe = Probe {
            nand: &mut self.nand,
            blocks: &self.blocks,
            geo: self.geo,
            at_ns: issue,
            done,
            buf: spare,
            failed: None,
            reads: 0,
        };
        self.hooks.plan_victim(victim, &pages, &mut probe, &mut plan);
        let (probed, failed) = (probe.done, probe.failed);
        self.counters.gc_plan_reads += reads as u64 * written as u64 + probe.reads;
        if let Some(e) = failed {
            return Err(self.fail(e));
        }
        done = done.max(probed);
        for (ppn, clear) in plan.flag_programs {
            if self.geo.block_of(ppn) == victim {
                return Err(DeviceError::CallOrder(format!(
                    "{}: GC planned a flag program on page {ppn}, inside its own victim {victim}",
                    self.hooks.name()
                )));
            }
            done = done.max(self.program_flags_or_copy(ppn, clear, issue)?.done_ns());
            self.counters.gc_flag_programs += 1;
        }
        for ppn in plan.copies.keys() {
            debug_assert_eq!(
                self.geo.block_of(*ppn),
                victim,
                "a planned copy of page {ppn} outside victim {victim}"
            );
        }
        Ok((plan.copies, done))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FtlConfig;
    use crate::device::Device;
    use crate::hooks::{Capabilities, EventHooks, GcHooks, PersistHooks, RecoveryHooks};
    use crate::mapping::Dense;
    use crate::oob::FLAG_BYTES;
    use txftl_nand::{CellType, DataMode, ViolationPolicy};

    /// Plans every victim: each live page's copy clears flag bit 0; each
    /// dead page moves "its flag" (bit 1) to the page its first protocol
    /// byte names, outside the victim; it records what it saw.
    #[derive(Clone, Default)]
    struct Planner {
        seen: Vec<VictimPage>,
        outside: Vec<(Ppn, Option<Oob>, bool)>,
    }

    impl Hooks for Planner {
        type Mapping = Dense;
        const CAPABILITIES: Capabilities = Capabilities {
            plans_victims: true,
            ..Capabilities::NONE
        };
        fn name(&self) -> &'static str {
            "planner"
        }
    }
    impl GcHooks for Planner {
        fn plan_victim(&mut self, victim: BlockId, pages: &[VictimPage], probe: &mut dyn SpareProbe, plan: &mut VictimPlan) {
            self.seen.extend_from_slice(pages);
            for p in pages {
                let Some(oob) = p.oob else { continue };
                if p.live {
                    let mut b = SpareBytes::of(&oob);
                    b.flags[0] &= !0x01;
                    plan.copies.insert(p.ppn, b);
                } else {
                    let target = u32::from_le_bytes(oob.protocol[..4].try_into().unwrap());
                    let _ = victim;
                    self.outside.push((target, probe.read(target), probe.outlives_victim(target)));
                    plan.flag_programs.push((target, [0x02, 0, 0, 0]));
                }
            }
        }
    }
    impl PersistHooks for Planner {
        fn flag_bytes(&self) -> usize {
            1
        }
    }
    impl RecoveryHooks for Planner {}
    impl EventHooks for Planner {}

    fn flags(f: &Ftl<Planner>, ppn: Ppn) -> [u8; FLAG_BYTES] {
        match Oob::decode(&f.nand().inspect_oob(ppn)) {
            OobState::Valid(o) => o.flag_bytes,
            other => panic!("page {ppn}: {other}"),
        }
    }

    /// The plan sees every programmed page of the victim, dead ones read
    /// (charged), reads a page outside it through the probe, and its flag
    /// programs and copies' bytes reach the flash before the victim is
    /// released.
    #[test]
    fn a_plan_sees_dead_pages_moves_flags_outside_and_sets_copies_bytes() {
        let mut p = txftl_nand::preset("tiny").unwrap();
        p.geometry.cell = CellType::Slc;
        p.geometry.nop = 4;
        let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let mut f = Ftl::format(nand, FtlConfig::default(), Planner::default()).unwrap();
        let page = vec![3u8; f.page_size() as usize];
        // A page outside the victim the dead pages point to.
        f.write_page(0, &page).unwrap();
        let target = f.mapping(0).unwrap();
        let mut proto = [0u8; crate::oob::PROTOCOL_BYTES];
        proto[..4].copy_from_slice(&target.to_le_bytes());
        // Fill pages until a block other than the target's holds both dead and live pages.
        let ppb = f.geo.pages_per_block;
        for i in 0..4 * ppb {
            f.write_page_with(1 + i % 6, &page, &proto).unwrap();
        }
        let victim = (0..f.geo.block_count())
            .find(|&b| {
                f.blocks.state[b as usize] == BlockState::Full
                    && b != f.geo.block_of(target)
                    && f.blocks.valid[b as usize] > 0
                    && f.blocks.valid[b as usize] < ppb
            })
            .expect("a full block with live and dead pages");
        let first = f.geo.ppn(victim, 0);
        let live: Vec<Ppn> = (first..first + ppb).filter(|&q| f.mapped.get(q)).collect();
        let dead = ppb as usize - live.len();
        f.reset_stats();
        let before = f.nand().stats();
        assert!(f.reclaim_block(victim).unwrap());
        let h = f.hooks();
        assert_eq!(h.seen.len(), ppb as usize, "every programmed page, dead ones too");
        assert_eq!(h.seen.iter().filter(|p| !p.live).count(), dead);
        assert!(h.seen.iter().all(|p| p.oob.is_some()));
        // Every page's spare area and the probe's reads are charged; live
        // pages are read whole by their copies.
        let after = f.nand().stats();
        assert_eq!(
            after.oob_reads - before.oob_reads,
            (ppb as usize + h.outside.len()) as u64,
            "spare-area reads"
        );
        assert_eq!(f.stats().gc_plan_reads, after.oob_reads - before.oob_reads, "counted as planning's");
        // NOP 4: the target takes three flag programs; each later one finds
        // it spent and copies it (reading it), the copy carrying the flag.
        let spent = f.device_stats().flag_nop_spent;
        assert_eq!(spent, dead.saturating_sub(3) as u64);
        assert_eq!(after.reads - before.reads, live.len() as u64 + spent, "page reads");
        assert!(spent > 0, "the victim has {dead} dead pages: the spent path is not exercised");
        {
            let moved = f.mapping(0).unwrap();
            assert_ne!(moved, target, "the spent target was copied and remapped");
            assert_eq!(flags(&f, moved)[0], 0xFD);
        }
        assert!(h
            .outside
            .iter()
            .all(|&(t, oob, outlives)| t == target && oob.is_some_and(|o| o.lpn == 0) && outlives));
        assert_eq!(flags(&f, target)[0], 0xFD, "the moved flag is on the target");
        assert_eq!(f.device_stats().gc_flag_programs, dead as u64);
        for lpn in 1..7 {
            let ppn = f.mapping(lpn).unwrap();
            if f.geo.block_of(ppn) != victim && live.iter().any(|&l| Oob::decode(&f.nand().inspect_oob(l)) != OobState::Erased) {
                // Copies made from the victim carry the planned flags.
                let copied = matches!(Oob::decode(&f.nand().inspect_oob(ppn)), OobState::Valid(o) if o.relocated);
                if copied {
                    assert_eq!(flags(&f, ppn)[0], 0xFE, "lpn {lpn}'s copy");
                }
            }
        }
    }
}
