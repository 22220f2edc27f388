//! Garbage collection and static wear leveling.
//!
//! GC copies the live pages of a victim into the GC stream (which takes the
//! most-worn free blocks: data GC moves is cold), then marks the victim prefree.
//! A page is live if the L2P points to it or the protocol says so (`extra_live`).

use crate::blocks::{AllocFor, BlockState};
use crate::checkpoint::UNMAPPED;
use crate::config::{Canary, GcPolicy};
use crate::error::{DeviceError, Result};
use crate::ftl::{Ftl, Stream};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::{Oob, OobState, PageKind, SpareBytes};
use txftl_nand::{BlockId, NandError, Ppn};

/// What a GC copy's record carries besides its page's own fields.
#[derive(Clone, Copy, Debug)]
pub(crate) enum CopyBytes {
    /// The protocol's `relocated_protocol_bytes`, the flags as they read.
    Default,
    /// What the protocol planned for it (`GcHooks::plan_victim`).
    Planned(SpareBytes),
    /// A flag program found the page spent: the protocol's
    /// `flagged_copy_bytes` of the record the copy's read returns.
    FlagsCleared([u8; crate::oob::FLAG_BYTES]),
}

/// Static wear leveling moves at most this many blocks per check.
const WEAR_MOVES_PER_CHECK_MAX: u32 = 4;

impl<H: Hooks> Ftl<H> {
    /// Runs GC until free + prefree blocks reach `target`, or no victim gains space.
    pub(crate) fn collect_garbage(&mut self, target: u32) -> Result<()> {
        while self.blocks.free_count() + self.blocks.prefree_count() < target {
            if !self.gc_one()? {
                break;
            }
        }
        Ok(())
    }

    /// Reclaims one victim. Returns false if no block would gain space.
    pub(crate) fn gc_one(&mut self) -> Result<bool> {
        let Some(victim) = self.select_victim() else { return Ok(false) };
        self.relocate_block(victim)?;
        self.counters.gc_runs += 1;
        Ok(true)
    }

    fn is_candidate(&self, b: BlockId) -> bool {
        self.blocks.state[b as usize] == BlockState::Full && !self.hooks.skip_victim(b)
    }

    /// Greedy or cost-benefit choice among full blocks with at least one dead
    /// page. Greedy asks the block table's index of full blocks by valid
    /// count instead of scanning every block: same victim (debug builds check
    /// it against the scan), without a cost that grows with the device.
    pub(crate) fn select_victim(&mut self) -> Option<BlockId> {
        if self.cfg.gc_policy != GcPolicy::Greedy {
            return self.scan_for_victim();
        }
        let ppb = self.geo.pages_per_block;
        let extra = H::CAPABILITIES.extra_live && self.hooks.keeps_extra_pages();
        let v = if !extra && !H::CAPABILITIES.skips_victims {
            self.blocks.greedy_victim(ppb)
        } else {
            // Protocol pages and skipped blocks: the index still orders the
            // candidates by valid pages, a lower bound of their live pages.
            let (hooks, geo) = (&self.hooks, self.geo);
            // The fewest live pages of a block the protocol kept back: what
            // greedy would have copied without the skip.
            let mut skipped_best: Option<u32> = None;
            let v = self.blocks.greedy_victim_by(ppb, |b, valid, written| {
                let live = valid
                    + if extra {
                        let first = geo.ppn(b, 0);
                        hooks.extra_live_count(first, first + written)
                    } else {
                        0
                    };
                if H::CAPABILITIES.skips_victims && hooks.skip_victim(b) {
                    if live < ppb {
                        skipped_best = Some(skipped_best.map_or(live, |s| s.min(live)));
                    }
                    return None;
                }
                Some(live)
            });
            self.count_skips(v, skipped_best);
            v
        };
        debug_assert_eq!(v, self.scan_for_victim(), "the victim index disagrees with a scan");
        v
    }

    /// A greedy choice the protocol's skips changed: the victim taken has
    /// more live pages than a block it kept back (NoLgn's locked blocks,
    /// LightTx's zones), and GC copies the difference more. Counted only where
    /// the skipped block was better; a skip that cost nothing is not one.
    fn count_skips(&mut self, victim: Option<BlockId>, skipped_best: Option<u32>) {
        let Some(skipped) = skipped_best else { return };
        let chosen = victim.map(|b| self.live_pages(b));
        if chosen.is_none_or(|c| c > skipped) {
            self.counters.gc_victims_skipped += 1;
            if let Some(c) = chosen {
                self.counters.gc_skip_extra_copies += (c - skipped) as u64;
            }
        }
    }

    /// `select_victim` by looking at every block.
    fn scan_for_victim(&self) -> Option<BlockId> {
        let ppb = self.geo.pages_per_block;
        let mut best: Option<(BlockId, f64, u32)> = None;
        for b in 0..self.geo.block_count() {
            if !self.is_candidate(b) {
                continue;
            }
            let live = self.live_pages(b);
            if live >= ppb {
                continue; // erasing it would gain nothing
            }
            let score = match self.cfg.gc_policy {
                // Fewer live pages is better: negate so "larger is better" everywhere.
                GcPolicy::Greedy => -(live as f64),
                GcPolicy::CostBenefit => {
                    let u = live as f64 / ppb as f64;
                    let age = (self.seq - self.blocks.last_seq[b as usize]) as f64;
                    if u == 0.0 {
                        f64::INFINITY
                    } else {
                        (1.0 - u) * age / (2.0 * u)
                    }
                }
            };
            // Ties go to the less-worn block (ties are common under greedy, and a
            // fixed tie-break by block id would wear the first die faster), then
            // to the lowest block id: deterministic.
            let ec = self.blocks.erase_count[b as usize];
            if best.is_none_or(|(_, s, e)| score > s || (score == s && ec < e)) {
                best = Some((b, score, ec));
            }
        }
        best.map(|(b, _, _)| b)
    }

    /// Live pages of a block: mapped ones, plus those the protocol keeps.
    pub(crate) fn live_pages(&self, b: BlockId) -> u32 {
        // Pages the protocol keeps are not mapped (the L2P does not point to
        // them), but for NoLgn's old version while its transaction's page is
        // held back in DRAM: counted twice, in a locked block never a victim.
        let extra = if H::CAPABILITIES.extra_live {
            let first = self.geo.ppn(b, 0);
            self.hooks.extra_live_count(first, first + self.blocks.write_ptr[b as usize])
        } else {
            0
        };
        self.blocks.valid[b as usize] + extra
    }

    /// An open GC block with room on the next unit of the GC stripe, opening
    /// one from the pool if needed; with the pool down to its last block, an
    /// open GC block of another unit instead (see the comment inside).
    pub(crate) fn gc_block(&mut self) -> Result<BlockId> {
        let units = self.geo.unit_count();
        let unit = self.gc_cursor;
        self.gc_cursor = (unit + 1) % units;
        if let Some(b) = self.gc_open[unit as usize] {
            return Ok(b);
        }
        // The stripe (a GC block per unit) is only for parallelism, and it
        // costs a free block per unit. A mount closes every open block (their
        // erased tails are never programmed), so a power cut or a killed host
        // process just after the stream took new blocks leaves the next mount
        // a pool of a block or two and no GC block. Opening a block per unit
        // then spends each block GC frees on the next unit's block (no net
        // gain) and fails with `NoSpace` mid-victim although the stream's
        // blocks have room; a cut there leaves no free block and a live page
        // in every block: no write can ever succeed again. So until the stripe
        // is whole again after a mount, with one free block or none, copies go
        // to a GC block already open on another unit, and the last free block
        // is kept for when none has room. A device that has not lost its
        // stripe keeps opening a block per unit, as it always did.
        if self.gc_stripe_lost && self.blocks.free_count() <= 1 {
            if let Some(b) = (1..units).find_map(|i| self.gc_open[((unit + i) % units) as usize]) {
                return Ok(b);
            }
        }
        if self.blocks.unit_window_spent(unit) {
            self.checkpoint()?;
        }
        loop {
            if let Some(b) = self.open_block(unit, AllocFor::Gc)? {
                self.gc_open[unit as usize] = Some(b);
                if self.gc_open.iter().all(Option::is_some) {
                    self.gc_stripe_lost = false;
                }
                return Ok(b);
            }
            // A checkpoint releases prefree blocks, and slides a spent
            // allocation window (which the GC stream allocates from too).
            if self.blocks.prefree_count() > 0 || self.blocks.window_spent() {
                self.checkpoint()?;
                continue;
            }
            return Err(self.no_space());
        }
    }

    /// Runs `work` as GC: the die time of the flash operations it issues
    /// counts in `gc_busy_ns`, once however deeply GC work nests (an erase
    /// for a GC block inside a relocation).
    pub(crate) fn as_gc<T>(&mut self, work: impl FnOnce(&mut Self) -> T) -> T {
        if self.gc_busy_from.is_some() {
            return work(self);
        }
        self.gc_busy_from = Some(self.nand.stats().busy_ns);
        let out = work(self);
        let from = self.gc_busy_from.take().expect("set above, taken only here");
        let now = self.nand.stats().busy_ns;
        debug_assert!(now >= from, "the NAND's die time went back");
        self.counters.gc_busy_ns += now - from;
        out
    }

    /// [`Ftl::relocate_victim`], counted as GC time.
    pub(crate) fn relocate_block(&mut self, victim: BlockId) -> Result<()> {
        self.as_gc(|f| f.relocate_victim(victim))
    }

    /// Copies every live page of `victim` to the GC stream and retires it.
    ///
    /// Timing: the controller pipelines the copies. Every read is issued at once
    /// (the victim's die serialises them), each copy's program is issued when its
    /// read is done (on the unit the GC stripe picks), and the host waits until
    /// the last copy's data has crossed the channel (foreground GC).
    fn relocate_victim(&mut self, victim: BlockId) -> Result<()> {
        let first = self.geo.ppn(victim, 0);
        let written = self.blocks.write_ptr[victim as usize];
        let issue = self.now_ns;
        let mut done = issue;
        // Before the page buffer is taken: a flag program that finds its
        // page spent copies that page.
        let copies = if H::CAPABILITIES.plans_victims {
            let (copies, planned) = self.plan_victim(victim, issue)?;
            done = done.max(planned);
            copies
        } else {
            Default::default()
        };
        let mut buf = std::mem::take(&mut self.page_buf);
        let store_data = self.nand.config().data_mode == txftl_nand::DataMode::Full;
        let result: Result<()> = (|| {
            for ppn in first..first + written {
                let mapped = self.mapped.get(ppn);
                let kept = H::CAPABILITIES.extra_live && self.hooks.extra_live(ppn);
                if !mapped && !kept {
                    continue;
                }
                let bytes = copies.get(&ppn).map(|&b| CopyBytes::Planned(b)).unwrap_or(CopyBytes::Default);
                done = done.max(self.copy_page(ppn, mapped, &mut buf, store_data, issue, bytes)?.1);
            }
            Ok(())
        })();
        self.page_buf = buf;
        result?;
        self.now_ns = self.now_ns.max(done);
        debug_assert_eq!(self.blocks.valid[victim as usize], 0, "victim {victim} still has valid pages");
        self.blocks.valid[victim as usize] = 0;
        if self.retiring.remove(&victim) {
            // Its program failed: it is never erased or written again.
            self.blocks.state[victim as usize] = BlockState::Bad;
            self.counters.retired_blocks += 1;
            self.counters.bad_blocks += 1;
        } else if self.cfg.canary == Some(Canary::ReuseBeforeCheckpoint) {
            self.blocks.set_free(victim);
        } else {
            self.blocks.set_prefree(victim);
        }
        Ok(())
    }

    /// Answers the protocol's erase requests ([`GcHooks::erase_request`])
    /// before a host program, in the order the protocol gives them.
    pub(crate) fn answer_erase_requests(&mut self) -> Result<()> {
        while let Some(block) = self.hooks.erase_request() {
            let (erased, moved) = self.as_gc(|f| f.erase_on_request(block))?;
            self.hooks.erased_on_request(block, erased, moved);
        }
        Ok(())
    }

    /// GC of one chosen block, now: [`Ftl::erase_on_request`]'s work, for
    /// tests and tools that need a given block erased (a GC victim of their
    /// choosing). Returns whether an erase was done.
    pub fn reclaim_block(&mut self, block: BlockId) -> Result<bool> {
        self.as_gc(|f| f.erase_on_request(block)).map(|(erased, _)| erased)
    }

    /// Erases `block` now: its live pages (mapped, or kept by the protocol)
    /// are first copied to the GC stream as GC does, then the block is erased
    /// and waits, prefree, for the next checkpoint like any GC victim
    /// (allocation skips the second erase). An open block is closed first
    /// (its unwritten tail is wasted). A block already free is left alone:
    /// recovery reads nothing older than the checkpoint that freed it.
    /// Returns whether an erase was done (metadata, bad and free blocks: no)
    /// and how many pages were moved out first. A block whose erase fails is
    /// refused (`WornOut`): its pages are still there, and the protocol asked
    /// for them to be gone.
    fn erase_on_request(&mut self, block: BlockId) -> Result<(bool, u64)> {
        self.check_writable("erase")?;
        let b = block as usize;
        if b >= self.geo.block_count() as usize {
            return Err(DeviceError::Corrupted(format!("erase request for block {block}, beyond the array")));
        }
        match self.blocks.state[b] {
            BlockState::Free | BlockState::Bad | BlockState::Meta => return Ok((false, 0)),
            BlockState::Open => {
                self.blocks.write_ptr[b] = self.geo.pages_per_block;
                self.blocks.set_full(block);
                self.close_stream_slot(block);
                self.programs_since_ckpt += 1;
            }
            BlockState::Full | BlockState::Prefree => {}
        }
        let mut moved = 0;
        if self.blocks.state[b] == BlockState::Full {
            let before = self.counters.gc_copies;
            self.relocate_block(block)?;
            moved = self.counters.gc_copies - before;
            if self.blocks.state[b] == BlockState::Bad {
                // Retired after a failed program: never erased again.
                return Ok((false, moved));
            }
        }
        // The copies must be done before the erase starts: on another die
        // they may still be programming, and a power cut then would tear the
        // copies and the originals at once (a real controller also needs
        // their program status first).
        if moved > 0 {
            self.wait_idle();
        }
        // Erased and written again since the last checkpoint: an erase torn
        // by a power cut could leave pages recording an erase count above the
        // checkpoint's, in a block recovery takes for free (it stops at the
        // first erased page). A checkpoint first records the count they carry.
        if self.tables.persisted_erase_count(b) != Some(self.blocks.erase_count[b]) {
            self.checkpoint()?;
        }
        // The checkpoint may have released it to the free pool, which is
        // ordered by erase count: out while the count changes.
        let in_pool = self.blocks.state[b] == BlockState::Free;
        let was_ready = self.blocks.is_ready(block);
        if in_pool {
            self.blocks.take_block(block);
        }
        match self.nand.erase(block, self.now_ns) {
            Ok(t) => {
                self.now_ns = self.now_ns.max(t.done_ns);
                self.blocks.erase_count[b] += 1;
                self.blocks.clean[b] = true;
                self.erases_since_wl_check += 1;
                self.hooks.on_erase(block);
                if in_pool {
                    self.blocks.set_free(block);
                    if was_ready {
                        self.blocks.set_ready(block);
                    }
                }
            }
            // What it holds is still there: the caller cannot go on safely.
            Err(NandError::EraseFailed(_)) | Err(NandError::BadBlock(_)) => {
                return Err(DeviceError::WornOut(format!(
                    "erase of block {block}, requested by the protocol, failed"
                )))
            }
            Err(e) => return Err(self.fail(e)),
        }
        Ok((true, moved))
    }

    /// Copies page `ppn` (outside any victim) to the GC stream with the
    /// protocol's `flagged_copy_bytes` for `clear` in its record, issued at
    /// `at_ns`: a mapped page's mapping moves to the copy. Returns the copy
    /// and when its data crossed the channel.
    pub(crate) fn copy_flagged(&mut self, ppn: Ppn, clear: [u8; crate::oob::FLAG_BYTES], at_ns: u64) -> Result<(Ppn, u64)> {
        let mut buf = std::mem::take(&mut self.page_buf);
        let store_data = self.nand.config().data_mode == txftl_nand::DataMode::Full;
        let mapped = self.mapped.get(ppn);
        let copied = self.copy_page(ppn, mapped, &mut buf, store_data, at_ns, CopyBytes::FlagsCleared(clear));
        self.page_buf = buf;
        copied
    }

    /// Copies one page (`mapped`: the L2P points to it; else the protocol
    /// keeps it live), with `bytes` in its record if the protocol planned
    /// them (else its protocol bytes from `relocated_protocol_bytes` and its
    /// flags as they read); returns the copy and when its data has crossed
    /// the channel.
    /// A source ECC cannot correct is copied all the same, marked lost in its
    /// OOB, so the loss is reported at every later read and no older version
    /// of the page can come back at recovery.
    fn copy_page(
        &mut self,
        ppn: Ppn,
        mapped: bool,
        buf: &mut [u8],
        store_data: bool,
        issue_ns: u64,
        bytes: CopyBytes,
    ) -> Result<(Ppn, u64)> {
        // Metadata-only mode reads the data area too: a page programmed with
        // data (its record has a data CRC: the FTL's own pages, a host page
        // sent with its bytes) keeps them in its copy; a page programmed
        // without would read as zeros and is copied without (below), so it
        // is read into an empty buffer (the same read, nothing handed up).
        let keep = store_data || self.nand.holds_data(ppn);
        let data = Some(if keep { &mut buf[..] } else { &mut buf[..0] });
        let mut fields = None;
        let (done, unreadable) =
            match crate::ecc::read_retrying_fields(&mut self.nand, ppn, issue_ns, data, (&mut self.oob_buf, &mut fields)) {
                Ok(Ok(done)) => (done, None),
                Ok(Err(u)) => {
                    self.counters.uncorrectable_reads += 1;
                    (u.done_ns, Some(u))
                }
                Err(e) => return Err(self.fail(e)),
            };
        // Whose page it is: its OOB says (and the L2P must agree); if bit
        // errors took the spare area, the L2P alone can tell. A packed spare
        // area comes up as its fields, whose record needs no decoding.
        let decoded = match &fields {
            Some(f) => OobState::Valid(Oob::from_read_fields(f)),
            None => Oob::decode(&self.oob_buf),
        };
        let lpn = match (mapped, unreadable.is_some_and(|u| u.oob), decoded) {
            (false, _, _) => UNMAPPED,
            (true, true, _) => self.lpn_mapped_to(ppn)?,
            (true, false, OobState::Valid(o)) if o.kind == PageKind::Data && o.lpn < self.l2p.len() && self.l2p.get(o.lpn) == ppn => o.lpn,
            // Remapped (SW-WAL): mapped as the alias its spare area names.
            (true, false, OobState::Valid(o))
                if o.kind == PageKind::Data
                    && self
                        .hooks
                        .alias_lpn(&o)
                        .is_some_and(|a| a < self.l2p.len() && self.l2p.get(a) == ppn) =>
            {
                self.hooks.alias_lpn(&o).unwrap_or(o.lpn)
            }
            (true, false, other) => {
                return Err(DeviceError::Corrupted(format!(
                    "GC source page {ppn} is mapped, but its OOB is {other}"
                )))
            }
        };
        let mut oob = match (unreadable, decoded) {
            (Some(u), _) if u.oob => {
                if lpn == UNMAPPED {
                    return Err(DeviceError::Corrupted(format!(
                        "GC source page {ppn}, a page the protocol keeps live, lost its spare area to bit errors"
                    )));
                }
                // The spare area is gone but the L2P says whose page it is.
                Oob::new(PageKind::Data, lpn, 0, 0, &[])
            }
            (Some(_), OobState::Valid(o)) => o,
            (None, OobState::Valid(o)) if o.data_matches(buf) => o,
            (_, other) => return Err(DeviceError::Corrupted(format!("GC source page {ppn} is unreadable: found {other}"))),
        };
        let unreadable = unreadable.filter(|_| self.cfg.canary != Some(Canary::IgnoreUncorrectable));
        let lost = oob.lost || unreadable.is_some();
        if unreadable.is_some() {
            self.counters.lost_page_copies += 1;
        }
        oob.lost = lost;
        let data: &[u8] = if store_data || oob.data_crc.is_some() { buf } else { &[] };
        let bytes = match bytes {
            CopyBytes::Planned(b) => b,
            CopyBytes::FlagsCleared(clear) => self.hooks.flagged_copy_bytes(ppn, &oob, clear),
            CopyBytes::Default => SpareBytes {
                protocol: self.hooks.relocated_protocol_bytes(lpn != UNMAPPED, &oob),
                flags: oob.flag_bytes,
            },
        };
        // A mapped page's copy is the L2P's page: it names the logical page
        // the L2P maps it as (a remapped page's alias, from now on its own).
        let copy_lpn = if lpn != UNMAPPED { lpn } else { oob.lpn };
        let (new, transferred) = self.program_stream(Stream::Gc { lost }, oob.kind, copy_lpn, data, &bytes, done)?;
        if lpn != UNMAPPED {
            self.map(lpn, new);
        }
        let new_erase_count = self.blocks.erase_count[self.geo.block_of(new) as usize];
        self.hooks.on_relocate(ppn, new, &oob, new_erase_count);
        self.counters.gc_copies += 1;
        if lpn == UNMAPPED {
            self.counters.gc_protocol_copies += 1;
        }
        Ok((new, transferred))
    }

    /// The logical page mapped to `ppn`, by searching the L2P (for a page
    /// whose spare area is lost: no reverse map is kept).
    fn lpn_mapped_to(&self, ppn: Ppn) -> Result<u32> {
        self.l2p
            .entries()
            .iter()
            .position(|p| p == ppn)
            .map(|lpn| lpn as u32)
            .ok_or_else(|| DeviceError::Corrupted(format!("page {ppn} is marked mapped but no logical page maps to it")))
    }

    /// Static wear leveling: when the erase-count spread is too wide, move the data
    /// of the least-worn full block (cold data that keeps it from being erased)
    /// into the GC stream, which takes the most-worn free blocks.
    pub(crate) fn wear_level(&mut self) -> Result<()> {
        // A bounded number of moves per check: each copies a whole block.
        for _ in 0..WEAR_MOVES_PER_CHECK_MAX {
            let (lo, hi) = self.blocks.wear_spread();
            if hi - lo <= self.cfg.wear_spread_max {
                return Ok(());
            }
            // Copying a whole block needs a block beyond the reserve.
            if self.blocks.free_count() <= self.derived.reserve + 1 {
                return Ok(());
            }
            let coldest = (0..self.geo.block_count())
                .filter(|&b| self.is_candidate(b) && self.blocks.write_ptr[b as usize] == self.geo.pages_per_block)
                .min_by_key(|&b| (self.blocks.erase_count[b as usize], b));
            match coldest {
                Some(b) if self.blocks.erase_count[b as usize] + self.cfg.wear_spread_max < hi => {
                    self.relocate_block(b)?;
                    self.counters.gc_runs += 1;
                    self.counters.wear_level_runs += 1;
                }
                _ => return Ok(()),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::FtlConfig;
    use crate::device::Device;
    use crate::test_hooks::{tiny_bare, Bare};
    use crate::Ftl;
    use txftl_nand::{DataMode, Nand, ViolationPolicy};

    /// GC time is the die time of GC's operations: none before GC runs; then
    /// at least its copies' reads and programs and an erase per victim
    /// (every victim is erased before its block is written again, and the
    /// run's writes reuse most of them), and less than all the flash's die
    /// time (the host's writes are not GC's, nor are the checkpoint ring's
    /// erases).
    #[test]
    fn gc_time_is_the_die_time_of_gc_s_operations() {
        let mut f = tiny_bare();
        let t = f.nand().config().timing;
        let n = f.logical_pages();
        f.reset_stats();
        for lpn in 0..n {
            f.write(lpn, &[]).unwrap();
        }
        let s = f.stats();
        assert_eq!((s.gc_runs, s.gc_busy_ns), (0, 0), "a first fill of an empty device needs no GC");
        assert!(s.flash_busy_ns >= s.flash_programs * t.program_ns);
        f.reset_stats();
        for i in 0..3 * n {
            f.write((i * 7) % n, &[]).unwrap();
        }
        let s = f.stats();
        assert!(s.gc_runs > 0 && s.flash_erases > 0, "{s:?}");
        assert!(
            s.gc_busy_ns >= s.gc_copies * (t.read_ns + t.program_ns) + s.gc_runs / 2 * t.erase_ns,
            "GC time {} below its copies' programs and its erases",
            s.gc_busy_ns
        );
        let host = s.host_writes * t.program_ns;
        assert!(
            s.gc_busy_ns + host <= s.flash_busy_ns,
            "{} + {host} > {}",
            s.gc_busy_ns,
            s.flash_busy_ns
        );
    }

    /// Metadata-only: pages written with their bytes keep them through GC,
    /// pages written without read as zeros, and the counts are those of the
    /// same run on a full-data array (where the pages without bytes are
    /// written as zeros).
    #[test]
    fn a_metadata_only_array_keeps_the_data_it_was_given_through_gc() {
        let p = txftl_nand::preset("tiny").unwrap();
        let run = |mode: DataMode| {
            let nand = Nand::new(p.config(mode, ViolationPolicy::Panic)).unwrap();
            let mut f = Ftl::format(nand, FtlConfig::default(), Bare).unwrap();
            let n = f.logical_pages();
            let ps = f.page_size() as usize;
            let zeros = vec![0u8; ps];
            let bytes = |lpn: u32| vec![(lpn % 250) as u8 + 1; ps];
            // Every fifth page carries data; the rest is aged without.
            // Every page once, then scattered overwrites (victims hold valid pages).
            let scattered = (0..6 * n as u64).map(|i| ((i * i * 31 + i * 7) % n as u64) as u32);
            for lpn in (0..n).chain(scattered) {
                let data = if lpn % 5 == 0 {
                    bytes(lpn)
                } else if mode == DataMode::Full {
                    zeros.clone()
                } else {
                    Vec::new()
                };
                f.write(lpn, &data).unwrap();
            }
            let mut buf = vec![0u8; ps];
            for lpn in 0..n {
                f.read(lpn, &mut buf).unwrap();
                assert_eq!(buf, if lpn % 5 == 0 { bytes(lpn) } else { zeros.clone() }, "{mode:?} lpn {lpn}");
            }
            let s = f.stats();
            assert!(s.gc_copies > n as u64, "{s:?}");
            (s.flash_programs, s.gc_copies, s.flash_erases, s.sim_time_ns)
        };
        assert_eq!(run(DataMode::MetaOnly), run(DataMode::Full));
    }
}
