//! Demand paging of a cached mapping table (`Mapping::CACHED`, DFTL's):
//! before a host read, write or trim looks an entry up, its table page must
//! be in the device's DRAM. On a miss the framework makes room (a victim
//! that changed since it was last written is written out first: alone, by
//! DFTL's write-back in `writeback.rs`, or by a checkpoint; or, with
//! `Eviction::Resident`, leaves unwritten with its changed entries kept),
//! reads the page's flash copy (the newest, as the directory in DRAM names
//! it) and takes the page's entries from it.
//!
//! A changed page's entries in DRAM are the newest: it is never a victim
//! without being written first, or its changed entries stay resident (and
//! recovery's sealing checkpoint writes every page it changed). So a changed
//! page's copy is read only for the entries that did not change (resident
//! mode), never taken. A page that did not change holds what its flash copy
//! holds; reading the copy checks that, and a difference is reported as
//! corruption rather than taken silently.
//!
//! Only the host's plain calls are charged: GC's moves and a protocol's
//! commit mappings change entries without a lookup cost in this model (a
//! changed page is written before it leaves the cache all the same, or by
//! the next checkpoint).

use crate::checkpoint::{decode_map_page, UNMAPPED};
use crate::config::Canary;
use crate::device::Lpn;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::mapping::{Evicted, Eviction, Fetch, Mapping};
use crate::oob::{Oob, OobState, PageKind};

impl<H: Hooks> Ftl<H> {
    /// Makes sure the table page of `lpn` is in the device's DRAM (nothing
    /// to do for a table kept whole in DRAM).
    #[inline]
    pub(crate) fn fetch_mapping(&mut self, lpn: Lpn) -> Result<()> {
        if !<H::Mapping as Mapping>::CACHED {
            return Ok(());
        }
        let page = self.tables.layout.map_page_of(lpn);
        match self.l2p.fetch(page) {
            Fetch::Hit => Ok(()),
            Fetch::Miss { victim } => self.page_in(page, victim),
        }
    }

    fn page_in(&mut self, page: u32, victim: Option<u32>) -> Result<()> {
        if let Some(v) = victim {
            // A read-only mount writes nothing: a page recovery changed stays
            // as DRAM holds it (it is never read back while changed).
            let changed = self.tables.map_page_dirty(v) && !self.cfg.read_only;
            let how = if !changed {
                Evicted::Clean
            } else if self.cfg.canary == Some(Canary::DropChangedTablePage) {
                // The canary's bug: the victim leaves without being
                // written, its changes with it.
                self.load_table_page(v, false)?;
                self.tables.clear_map_dirty(v);
                Evicted::Clean
            } else {
                match self.l2p.eviction() {
                    Eviction::Resident => Evicted::Resident,
                    Eviction::WriteBack if self.write_back_table_page(v)? => Evicted::WrittenBack,
                    // By choice, or the ring's room for write-backs is used up.
                    Eviction::WriteBack | Eviction::Checkpoint => {
                        self.checkpoint()?;
                        Evicted::Checkpointed
                    }
                }
            };
            // A victim leaves clean, its changes on flash, unless they stay
            // resident in DRAM (or a read-only mount keeps them there).
            debug_assert!(
                how == Evicted::Resident || !self.tables.map_page_dirty(v) || self.cfg.read_only,
                "table page {v} left the cache changed ({how:?})"
            );
            self.l2p.evicted(v, how);
        }
        if !self.tables.map_page_dirty(page) {
            self.load_table_page(page, true)?;
        } else if self.l2p.eviction() == Eviction::Resident {
            // Its entries changed since the checkpoint are resident in DRAM;
            // the others come from the flash copy: read it, keep DRAM's.
            if let Some(buf) = self.read_table_page(page)? {
                self.meta_buf = buf;
            }
        }
        Ok(())
    }

    /// Reads table page `page`'s newest flash copy (a write-back's, or the
    /// current checkpoint's, as the next directory names it) on the device
    /// clock and takes its entries; a page never written is all unmapped.
    /// `check`: the entries in DRAM must equal it (a page that did not
    /// change since it was written).
    fn load_table_page(&mut self, page: u32, check: bool) -> Result<()> {
        let lpns = self.tables.layout.lpns_of(page);
        let mut entries = vec![UNMAPPED; lpns.len()];
        if let Some(buf) = self.read_table_page(page)? {
            decode_map_page(&buf, &mut entries);
            self.meta_buf = buf;
        }
        let dram = self.l2p.entries_mut();
        if check && !dram.range(lpns.clone()).eq(entries.iter().copied()) {
            return Err(DeviceError::Corrupted(format!(
                "table page {page} unchanged since the checkpoint differs from its flash copy"
            )));
        }
        for (lpn, ppn) in lpns.zip(entries) {
            dram.set(lpn, ppn);
        }
        Ok(())
    }

    /// Reads table page `page`'s newest flash copy on the device clock
    /// (`map_reads`); its data, or None if the page was never written.
    /// A copy that is not intact is corruption.
    fn read_table_page(&mut self, page: u32) -> Result<Option<Vec<u8>>> {
        let dir = self.tables.dir_next[page as usize];
        if dir.ppn == UNMAPPED {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.meta_buf);
        let read = crate::ecc::read_retrying(&mut self.nand, dir.ppn, self.now_ns, Some(&mut buf), &mut self.oob_buf);
        let intact = match read {
            Ok(Ok(done)) => {
                self.now_ns = self.now_ns.max(done);
                matches!(Oob::decode(&self.oob_buf), OobState::Valid(o) if o.kind == PageKind::Map && o.lpn == page)
                    && crc32fast::hash(&buf) == dir.crc
            }
            Ok(Err(unreadable)) => {
                self.now_ns = self.now_ns.max(unreadable.done_ns);
                false
            }
            Err(e) => {
                self.meta_buf = buf;
                return Err(self.fail(e));
            }
        };
        self.counters.map_reads += 1;
        if !intact {
            self.meta_buf = buf;
            return Err(DeviceError::Corrupted(format!(
                "table page {page} at physical page {} is not intact",
                dir.ppn
            )));
        }
        Ok(Some(buf))
    }
}

#[cfg(test)]
mod tests {
    use crate::config::{Canary, FtlConfig};
    use crate::device::Device;
    use crate::hooks::{Capabilities, EventHooks, GcHooks, Hooks, PersistHooks, RecoveryHooks};
    use crate::mapping::{Cached, Eviction, Mapping};
    use crate::Ftl;
    use txftl_nand::{DataMode, Nand, ViolationPolicy};

    /// The framework with a cached table of `.0` translation pages, whose
    /// changed victims leave by `.1`.
    #[derive(Clone, Copy)]
    struct CachedPlain(u32, Eviction);
    impl Hooks for CachedPlain {
        type Mapping = Cached;
        const CAPABILITIES: Capabilities = Capabilities::NONE;
        fn name(&self) -> &'static str {
            "cached-test"
        }
        fn mapping_table(&self, logical_pages: u32, per_page: u32) -> crate::Result<Cached> {
            Ok(Cached::new(logical_pages, per_page, self.0)?.with_eviction(self.1))
        }
    }
    impl GcHooks for CachedPlain {}
    impl PersistHooks for CachedPlain {}
    impl RecoveryHooks for CachedPlain {}
    impl EventHooks for CachedPlain {}

    const WRITE_BACK: CachedPlain = CachedPlain(1, Eviction::WriteBack);

    /// `tiny` with 32 blocks a plane: a table of a few translation pages.
    fn nand() -> Nand {
        let mut p = txftl_nand::preset("tiny").unwrap();
        p.geometry.blocks_per_plane = 32;
        Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap()
    }

    fn page(ftl: &Ftl<CachedPlain>, v: u8) -> Vec<u8> {
        vec![v; ftl.page_size() as usize]
    }

    /// Writes every logical page with `v`, in an order that leaves and
    /// re-enters the 1-page cache at every table page.
    fn write_all(f: &mut Ftl<CachedPlain>, v: u8) {
        let n = f.logical_pages();
        let per = 128; // 512-byte pages: 128 entries a table page
        for lpn in (0..n).step_by(per).chain((0..n).filter(|l| l % per as u32 != 0)) {
            f.write(lpn, &page(f, v)).unwrap();
        }
    }

    /// Every logical page reads `v`.
    fn assert_all(f: &mut Ftl<CachedPlain>, v: u8) {
        let mut buf = page(f, 0);
        for lpn in 0..f.logical_pages() {
            f.read(lpn, &mut buf).unwrap();
            assert!(buf.iter().all(|&b| b == v), "lpn {lpn}");
        }
    }

    /// DFTL's write-back: a changed page that must leave is written alone
    /// (no checkpoint), misses read the written-back copies, and after a
    /// power cut (the write-backs since the last checkpoint are not named by
    /// any durable record) recovery rebuilds the newest table all the same.
    #[test]
    fn changed_victims_are_written_back_alone_and_misses_read_them_back() {
        let mut f = Ftl::format(nand(), FtlConfig::default(), WRITE_BACK).unwrap();
        write_all(&mut f, 1);
        f.flush().unwrap();
        write_all(&mut f, 2);
        f.check_invariants().unwrap();
        let s = f.stats();
        let c = f.mapping_table().cache_counts();
        assert!(c.misses > 2 && c.written_back > 2, "{c:?} ({} logical pages)", f.logical_pages());
        assert_eq!(c.checkpointed, 0, "the ring had room for every write-back: {c:?}");
        assert!(s.map_reads > 0 && s.map_l2p_writes >= c.written_back, "{s:?}");
        assert_all(&mut f, 2);
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), WRITE_BACK).unwrap();
        assert_all(&mut f, 2);
        f.check_invariants().unwrap();
    }

    /// Write-backs enter at most B ring blocks between two checkpoints (the
    /// ring's rule counts on it): past that, an eviction takes a checkpoint,
    /// and the ring never has to enter a block a checkpoint still needs.
    /// (Two pages of two table pages written in turn through a 1-page
    /// cache, on a device too empty for GC, whose checkpoints would reset
    /// the count: every write evicts a changed page.)
    #[test]
    fn write_backs_past_the_rings_room_take_a_checkpoint() {
        let mut f = Ftl::format(nand(), FtlConfig::default(), WRITE_BACK).unwrap();
        let b = f.tables.writeback_blocks;
        assert!(b >= 1, "a cached table's ring has room for write-backs: {b}");
        let ckpts = f.stats().checkpoints;
        for i in 0..200u32 {
            let lpn = (i % 2) * 128;
            f.write(lpn, &page(&f, i as u8)).unwrap();
            assert!(f.tables.writeback_entered <= b, "write {i}");
            f.check_invariants().unwrap();
        }
        let (c, s) = (f.mapping_table().cache_counts(), f.stats());
        assert!(c.checkpointed > 0 && c.written_back > c.checkpointed, "{c:?}");
        assert_eq!(s.gc_runs, 0, "{s:?}");
        assert_eq!(s.checkpoints - ckpts, c.checkpointed, "{s:?}");
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), WRITE_BACK).unwrap();
        let mut buf = page(&f, 0);
        for (lpn, v) in [(0, 198u8), (128, 199)] {
            f.read(lpn, &mut buf).unwrap();
            assert!(buf.iter().all(|&x| x == v), "lpn {lpn}");
        }
        f.check_invariants().unwrap();
    }

    /// `Eviction::Resident` (Möbius's): a changed page leaves unwritten, its
    /// changed entries resident; a miss on it reads its flash copy for the
    /// others; checkpoints write it. A power cut loses nothing (here the
    /// roll-forward holds the changes; for Möbius, its ALA too).
    #[test]
    fn resident_victims_leave_unwritten_and_keep_their_changed_entries() {
        let resident = CachedPlain(1, Eviction::Resident);
        let mut f = Ftl::format(nand(), FtlConfig::default(), resident).unwrap();
        write_all(&mut f, 1);
        f.flush().unwrap();
        let before = f.stats();
        write_all(&mut f, 2);
        f.check_invariants().unwrap();
        let (c, s) = (f.mapping_table().cache_counts(), f.stats());
        assert!(c.resident > 2 && c.written_back == 0 && c.checkpointed == 0, "{c:?}");
        assert!(s.map_reads > before.map_reads, "misses read copies: {s:?}");
        let per_checkpoint = f.tables.layout.map_pages() as u64;
        assert!(
            s.map_l2p_writes - before.map_l2p_writes <= per_checkpoint * (s.checkpoints - before.checkpoints),
            "translation pages are written by checkpoints only: {s:?}"
        );
        assert_all(&mut f, 2);
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), resident).unwrap();
        assert_all(&mut f, 2);
        f.check_invariants().unwrap();
    }

    /// `Eviction::Checkpoint`: a changed page that must leave is written by a
    /// checkpoint first; the data survives a power cut and the table's pages
    /// are read back consistently after it.
    #[test]
    fn by_checkpoint_misses_read_translation_pages_and_changed_ones_are_written_before_they_leave() {
        let by_ckpt = CachedPlain(1, Eviction::Checkpoint);
        let mut f = Ftl::format(nand(), FtlConfig::default(), by_ckpt).unwrap();
        let ckpts = f.stats().checkpoints;
        write_all(&mut f, 1);
        f.flush().unwrap();
        write_all(&mut f, 2);
        let s = f.stats();
        let c = f.mapping_table().cache_counts();
        assert!(c.misses > 2 && c.checkpointed > 0 && c.written_back == 0, "{c:?}");
        assert!(s.checkpoints > ckpts, "a changed victim forces a checkpoint: {s:?}");
        assert!(s.map_reads > 0, "a miss of a page a checkpoint wrote reads it: {s:?}");
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), by_ckpt).unwrap();
        assert_all(&mut f, 2);
        f.check_invariants().unwrap();
    }

    /// The canary drops a changed page: the next miss reads its stale flash
    /// copy, which the table no longer agrees with.
    #[test]
    fn the_canary_loses_a_changed_page() {
        let cfg = FtlConfig {
            canary: Some(Canary::DropChangedTablePage),
            ..FtlConfig::default()
        };
        let mut f = Ftl::format(nand(), cfg, WRITE_BACK).unwrap();
        write_all(&mut f, 1);
        f.flush().unwrap();
        let n = f.logical_pages();
        let mut bad = 0;
        let mut buf = page(&f, 0);
        for lpn in 0..n {
            bad += (f.read(lpn, &mut buf).is_err() || buf.iter().any(|&b| b != 1)) as u32;
        }
        assert!(bad > 0 || f.check_invariants().is_err(), "the canary changed nothing");
    }
}
