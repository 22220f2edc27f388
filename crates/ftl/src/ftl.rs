//! The page-mapping FTL core: L2P in DRAM, write streams striped over the
//! parallel units, and the plain block-device operations. GC lives in `gc.rs`,
//! checkpoints and the superblock in `persist.rs`, mount in `recovery.rs`.
//!
//! Durability rules the whole design rests on:
//! - every program gets a fresh sequence number, recorded in its OOB;
//! - a checkpoint has a sequence number larger than every page programmed
//!   before it, and is durable once the superblock naming it is programmed;
//! - a block GC reclaims is *prefree* until the next checkpoint, so the pages the
//!   last checkpoint's L2P names are never erased, and pages written after a
//!   checkpoint only land in blocks that were free or open at that checkpoint:
//!   the only blocks recovery has to scan;
//! - blocks are erased when allocated, so a torn erase never matters; a block
//!   this mount knows to be erased and not programmed since (`clean`: erased
//!   by this mount, or shipped erased on an array formatted fresh) is not
//!   erased again. A mount trusts no block to be clean: a torn program can
//!   leave a page that reads erased, so every block is erased before reuse.

use crate::area::{Extent, LogArea};
use crate::bits::Bits;
use crate::blocks::{AllocFor, BlockState, BlockTable};
use crate::checkpoint::{TableLayout, UNMAPPED};
use crate::config::FtlConfig;
use crate::device::{Device, DeviceInfo, DeviceStats, Lpn, RecoveryReport};
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::oob::{Oob, OobState, PageKind, PROTOCOL_BYTES};
use crate::tables::Tables;
use txftl_nand::{BlockId, DataMode, Geometry, Nand, NandError, NandStats, Ppn};

/// Static wear leveling looks at the erase-count spread after this many erases.
const WEAR_CHECK_EVERY_ERASES: u32 = 8;

/// Sizes derived from the geometry and the configuration.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Derived {
    pub logical_pages: u32,
    pub gc_low: u32,
    pub gc_high: u32,
    pub checkpoint_every: u64,
    /// Free blocks only GC may take: one per unit, for the GC stream.
    pub reserve: u32,
    /// Blocks of the pool set aside for grown bad blocks.
    pub spares: u32,
}

/// A record in a metadata ring (the checkpoint, or a protocol's record), as the
/// superblock names it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RecordLoc {
    pub seq: u64,
    pub extent: Extent,
    pub bytes: u32,
    pub crc: u32,
}

/// Cloning copies the NAND as a RAM snapshot (no image file behind the copy).
#[derive(Clone)]
pub struct Ftl<H: Hooks> {
    pub(crate) nand: Nand,
    pub(crate) geo: Geometry,
    pub(crate) cfg: FtlConfig,
    pub(crate) derived: Derived,
    pub(crate) l2p: H::Mapping,
    /// The L2P and block table as checkpoints persist them: dirty pages,
    /// directories, the checkpoint ring's contents (`tables.rs`).
    pub(crate) tables: Tables,
    /// Physical pages the L2P points to, one bit each. Which logical page a
    /// mapped page holds is in its OOB (no reverse map is kept: GC reads the
    /// OOB of each page it copies anyway).
    pub(crate) mapped: Bits,
    pub(crate) blocks: BlockTable,
    pub(crate) host_open: Vec<Option<BlockId>>,
    pub(crate) host_cursor: u32,
    /// Open GC block per unit: GC copies are striped like host writes.
    pub(crate) gc_open: Vec<Option<BlockId>>,
    pub(crate) gc_cursor: u32,
    /// Set by a mount (which closes every open block), cleared once the GC
    /// stream has a block open on every unit again: while set, GC short of
    /// free blocks borrows another unit's GC block (`gc.rs`, `gc_block`).
    pub(crate) gc_stripe_lost: bool,
    pub(crate) seq: u64,
    pub(crate) now_ns: u64,
    pub(crate) sb_area: LogArea,
    pub(crate) sb_seq: u64,
    pub(crate) ckpt_area: LogArea,
    pub(crate) ckpt: RecordLoc,
    /// The checkpoint before `ckpt` (still intact), named in every superblock
    /// so recovery can fall back to it if `ckpt` is corrupted.
    pub(crate) prev_ckpt: RecordLoc,
    /// Protocol log rings.
    pub(crate) proto_rings: Vec<LogArea>,
    /// Worn ring blocks swapped for fresh ones so far (a change of ring block
    /// lists, which the next superblock records).
    pub(crate) ring_swaps: u64,
    /// Erase counts as recorded in the durable checkpoint: recovery never goes below them.
    pub(crate) ckpt_erase_counts: Vec<u32>,
    pub(crate) programs_since_ckpt: u64,
    pub(crate) trims_pending: bool,
    pub(crate) erases_since_wl_check: u32,
    /// FTL-level counters; the flash fields stay zero here (the NAND counts its
    /// own operations, merged in by `device_stats`).
    pub(crate) counters: DeviceStats,
    pub(crate) nand_base: NandStats,
    pub(crate) time_base_ns: u64,
    pub(crate) failed: bool,
    pub(crate) hooks: H,
    pub(crate) recovery: Option<RecoveryReport>,
    pub(crate) page_buf: Vec<u8>,
    pub(crate) oob_buf: Vec<u8>,
    /// Page buffer for metadata records (checkpoints, superblocks, protocol records).
    pub(crate) meta_buf: Vec<u8>,
    /// Data pages whose contents this mount knows to match their OOB CRC: it
    /// programmed them, or already verified them. Their reads skip the second CRC
    /// pass. Sound with the fault model too: bit errors are corrected by ECC in
    /// the read (or the read fails), never handed up as data.
    pub(crate) intact: Bits,
    /// Blocks whose program failed: closed for writing, to be emptied by
    /// `retire_pending` and then marked bad (never erased again).
    pub(crate) retiring: std::collections::BTreeSet<BlockId>,
    /// Host pages reserved and not programmed yet, oldest first (`reserve.rs`).
    pub(crate) reserved: std::collections::VecDeque<Ppn>,
    /// The open data blocks' OOB records, for their summary pages (`summary.rs`).
    pub(crate) summary: crate::summary::Pending,
}

/// Which write stream a page goes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stream {
    Host,
    /// A GC copy (marked relocated in its OOB); `lost`: of a page whose data
    /// ECC could not correct (marked lost too).
    Gc {
        lost: bool,
    },
}

/// Fixed superblock locations: the first block of units 0 and 1 (or blocks 0
/// and 1 on a single-unit array). Recovery finds them from the geometry alone.
pub(crate) fn superblock_blocks(geo: &Geometry) -> [BlockId; 2] {
    if geo.unit_count() > 1 {
        [0, geo.blocks_per_unit()]
    } else {
        [0, 1]
    }
}

/// Metadata rings (the checkpoint ring, then each protocol ring) of the given
/// sizes in blocks, taken position-major across units after the superblock
/// blocks (so a ring's blocks sit on different dies).
fn reserve_rings(geo: &Geometry, ring_blocks: &[u32]) -> Vec<Vec<BlockId>> {
    let sb = superblock_blocks(geo);
    let mut candidates = (0..geo.blocks_per_unit())
        .flat_map(|pos| (0..geo.unit_count()).map(move |unit| unit * geo.blocks_per_unit() + pos))
        .filter(|b| !sb.contains(b));
    ring_blocks
        .iter()
        .map(|&n| candidates.by_ref().take(n as usize).collect())
        .collect()
}

impl<H: Hooks> Ftl<H> {
    /// The FTL over `nand`, before format or recovery. Metadata-only arrays
    /// store this FTL's OOB records packed, with the protocol's bytes: the
    /// table of those is allocated here, so this may be refused.
    pub(crate) fn empty(mut nand: Nand, cfg: FtlConfig, hooks: H) -> std::result::Result<Ftl<H>, (DeviceError, Box<Nand>)> {
        if !<H::Mapping as Mapping>::PERSISTED && !H::CAPABILITIES.scans_pages {
            let e = format!(
                "protocol `{}` persists no L2P but rebuilds none from the scan (`Capabilities::scans_pages`)",
                hooks.name()
            );
            return Err((DeviceError::Config(e), Box::new(nand)));
        }
        if let Err(e) = nand.set_spare_codec(Some(crate::oob::spare_codec(hooks.packed_protocol_bytes()))) {
            return Err((DeviceError::Memory(e), Box::new(nand)));
        }
        let geo = *nand.geometry();
        let units = geo.unit_count() as usize;
        let ppb = geo.pages_per_block;
        let mut blocks = BlockTable::new(&geo);
        blocks.set_windowed(cfg.alloc_window_blocks > 0);
        Ok(Ftl {
            l2p: H::Mapping::unmapped(0).map_err(|e| (e, Box::new(nand.clone())))?,
            tables: Tables::new(TableLayout::new(0, geo.block_count(), geo.page_size), &geo, 0, 1, false),
            mapped: Bits::new(geo.page_count() as usize),
            blocks,
            host_open: vec![None; units],
            host_cursor: 0,
            gc_open: vec![None; units],
            gc_cursor: 0,
            gc_stripe_lost: false,
            seq: 1,
            now_ns: 0,
            sb_area: LogArea::new(superblock_blocks(&geo).to_vec(), ppb),
            sb_seq: 0,
            ckpt_area: LogArea::new(vec![0], ppb),
            ckpt: RecordLoc::default(),
            prev_ckpt: RecordLoc::default(),
            proto_rings: Vec::new(),
            ring_swaps: 0,
            ckpt_erase_counts: Vec::new(),
            programs_since_ckpt: 0,
            trims_pending: false,
            erases_since_wl_check: 0,
            counters: DeviceStats::default(),
            nand_base: nand.stats(),
            time_base_ns: 0,
            failed: false,
            derived: Derived {
                logical_pages: 0,
                gc_low: 0,
                gc_high: 0,
                checkpoint_every: 0,
                reserve: units as u32,
                spares: 0,
            },
            recovery: None,
            page_buf: vec![0; geo.page_size as usize],
            oob_buf: vec![0; geo.oob_size as usize],
            meta_buf: vec![0; geo.page_size as usize],
            intact: Bits::new(geo.page_count() as usize),
            retiring: Default::default(),
            reserved: Default::default(),
            summary: Default::default(),
            hooks,
            cfg,
            geo,
            nand,
        })
    }

    /// Sizes for this geometry, configuration and metadata layout.
    pub(crate) fn derive(geo: &Geometry, cfg: &FtlConfig, pool_blocks: u32, logical_override: Option<u32>) -> Result<Derived> {
        let ppb = geo.pages_per_block;
        let units = geo.unit_count();
        let op_pct = cfg.overprovision_pct.unwrap_or(crate::config::DEFAULT_OVERPROVISION_PCT);
        if op_pct >= 100 {
            return Err(DeviceError::Config(format!("over-provisioning {op_pct}% must be below 100")));
        }
        let bad_block_spares = (pool_blocks * 2 / 100).max(1);
        let overhead_blocks = 3 * units + 1 + bad_block_spares;
        if pool_blocks <= overhead_blocks + 1 {
            return Err(DeviceError::Config(format!(
                "{pool_blocks} data blocks leave no room for data: the geometry is too small for {units} parallel units"
            )));
        }
        let by_op = (pool_blocks as u64 * ppb as u64 * (100 - op_pct) as u64 / 100) as u32;
        let by_room = (pool_blocks - overhead_blocks) * ppb;
        // An over-provisioning asked for below what GC needs is refused, not
        // silently raised; the default is raised to it.
        if logical_override.is_none() && cfg.overprovision_pct.is_some() && by_op > by_room {
            let pool_pages = pool_blocks as u64 * ppb as u64;
            let min_pct = 100 - (by_room as u64 * 100 / pool_pages);
            return Err(DeviceError::Config(format!(
                "over-provisioning {op_pct}% is below the minimum {min_pct}% this geometry needs ({overhead_blocks} of its {pool_blocks} data blocks must stay free for open blocks, GC and bad-block spares)"
            )));
        }
        let logical_pages = logical_override.unwrap_or(by_op.min(by_room));
        let gc_low = if cfg.gc_low_blocks > 0 {
            cfg.gc_low_blocks
        } else {
            (pool_blocks * 5 / 100).max(3)
        };
        let gc_high = if cfg.gc_high_blocks > 0 {
            cfg.gc_high_blocks
        } else {
            gc_low + (pool_blocks * 2 / 100).max(2)
        };
        if gc_high < gc_low {
            return Err(DeviceError::Config(format!(
                "GC high watermark {gc_high} is below the low one {gc_low}"
            )));
        }
        let checkpoint_every = if cfg.checkpoint_every_pages > 0 {
            cfg.checkpoint_every_pages
        } else {
            // 8 blocks per parallel unit bounds the roll-forward scan. A
            // checkpoint writes the table pages that changed, and uniformly
            // random writes change nearly all of them between two
            // checkpoints: at least 8 programs per table page keeps map
            // writes under about 1/8 of the programs whatever the capacity
            // (only devices of more than about 16 GiB at 8 KiB pages reach it).
            let table_pages = crate::checkpoint::TableLayout::new(logical_pages, geo.block_count(), geo.page_size).table_pages();
            (8 * ppb as u64 * units as u64).max(8 * table_pages as u64)
        };
        let gc_low = gc_low.max(units + 1);
        let gc_high = gc_high.max(gc_low);
        Ok(Derived {
            logical_pages,
            gc_low,
            gc_high,
            checkpoint_every,
            reserve: units,
            spares: bad_block_spares,
        })
    }

    /// Formats the array: lays out the metadata areas, writes an empty checkpoint
    /// and the first superblock. Every other block joins the free pool (and is
    /// erased when first allocated).
    pub fn format(nand: Nand, cfg: FtlConfig, hooks: H) -> Result<Ftl<H>> {
        let geo = *nand.geometry();
        geo.validate()?;
        if cfg.read_only {
            return Err(DeviceError::Config("a read-only device cannot be formatted".into()));
        }
        // An array as shipped is erased: its blocks need no erase before their
        // first program (the NAND's contract). Anything else is erased on use.
        let shipped_erased = nand.is_factory_fresh();
        if (geo.oob_size as usize) < crate::oob::OOB_RECORD_SIZE {
            return Err(DeviceError::Config(format!(
                "OOB of {} bytes cannot hold the 64-byte OOB record",
                geo.oob_size
            )));
        }
        let (mut rings, derived) = Self::layout(&geo, &cfg, &hooks)?;
        crate::memory::check(Self::memory_needed(&geo, &cfg, nand.config().data_mode, &hooks)?.total())?;
        let mut ftl = Ftl::empty(nand, cfg, hooks).map_err(|(e, _)| e)?;
        ftl.derived = derived;
        let per_page = TableLayout::new(derived.logical_pages, geo.block_count(), geo.page_size).entries_per_page;
        ftl.l2p = ftl.hooks.mapping_table(derived.logical_pages, per_page)?;
        let mut meta = vec![false; geo.block_count() as usize];
        for b in rings.iter().flatten().copied().chain(superblock_blocks(&geo)) {
            meta[b as usize] = true;
        }
        let ckpt_ring = rings.remove(0);
        let layout = TableLayout::new(derived.logical_pages, geo.block_count(), geo.page_size);
        ftl.tables = Tables::new(
            layout,
            &geo,
            ftl.hooks.checkpoint_section_max(),
            ckpt_ring.len(),
            <H::Mapping as Mapping>::CACHED,
        );
        ftl.ckpt_area = LogArea::new(ckpt_ring, geo.pages_per_block);
        ftl.proto_rings = rings.into_iter().map(|r| LogArea::new(r, geo.pages_per_block)).collect();
        for b in 0..geo.block_count() {
            ftl.blocks.state[b as usize] = BlockState::Meta;
            ftl.blocks.clean[b as usize] = shipped_erased;
        }
        for b in 0..geo.block_count() {
            if !meta[b as usize] {
                ftl.blocks.set_free(b);
            }
        }
        ftl.hooks.on_format(derived.logical_pages);
        ftl.checkpoint()?;
        ftl.reset_stats();
        Ok(ftl)
    }

    /// The metadata rings a format lays out (the checkpoint ring first, then
    /// each protocol ring) and the sizes derived from what is left.
    fn layout(geo: &Geometry, cfg: &FtlConfig, hooks: &H) -> Result<(Vec<Vec<BlockId>>, Derived)> {
        // The checkpoint ring is sized for the largest tables this geometry
        // can have (see `Tables::ring_blocks`); a log ring what its protocol
        // asks for, plus one block for the erase granularity.
        let sizing = TableLayout::new(geo.page_count(), geo.block_count(), geo.page_size);
        let cached = <H::Mapping as Mapping>::CACHED;
        let mut sizes = vec![Tables::ring_blocks(&sizing, geo, hooks.checkpoint_section_max(), cached).max(3)];
        sizes.extend(hooks.protocol_rings(geo).iter().map(|&blocks| blocks.max(3)));
        let rings = reserve_rings(geo, &sizes);
        let ring_blocks: u32 = rings.iter().map(|r| r.len() as u32).sum();
        if rings.iter().any(|r| r.len() < 3) || ring_blocks + 2 >= geo.block_count() {
            return Err(DeviceError::Config(format!(
                "the geometry has too few blocks for the metadata rings ({ring_blocks} blocks)"
            )));
        }
        let proto_ring_lens: Vec<usize> = rings[1..].iter().map(|r| r.len()).collect();
        let sb_len = crate::superblock::Superblock::encoded_len(rings[0].len(), hooks.root_len_max(), &proto_ring_lens);
        if sb_len > geo.page_size as usize {
            return Err(DeviceError::Config(format!(
                "superblock of {sb_len} bytes does not fit a {}-byte page",
                geo.page_size
            )));
        }
        let pool_blocks = geo.block_count() - 2 - ring_blocks;
        let mut derived = Self::derive(geo, cfg, pool_blocks, None)?;
        if hooks.summary_pages() {
            crate::summary::check_fits(geo)?;
            derived.logical_pages = crate::summary::shrink_logical_pages(derived.logical_pages, geo);
        }
        Ok((rings, derived))
    }

    /// Memory the FTL needs for a device of this geometry, configuration and
    /// data mode (see `memory.rs`): its DRAM tables, and the metadata pages a
    /// metadata-only array keeps in memory for it. Refuses a geometry the
    /// FTL cannot lay out, as `format` would.
    pub fn memory_needed(geo: &Geometry, cfg: &FtlConfig, data_mode: DataMode, hooks: &H) -> Result<crate::memory::FtlMemory> {
        geo.validate()?;
        let (rings, derived) = Self::layout(geo, cfg, hooks)?;
        let ring_pages: Vec<u64> = rings.iter().map(|r| r.len() as u64 * geo.pages_per_block as u64).collect();
        Ok(crate::memory::FtlMemory::estimate(
            geo,
            derived.logical_pages,
            data_mode,
            &ring_pages,
            hooks.checkpoint_section_max(),
            hooks.packed_protocol_bytes(),
        ))
    }

    // ---- accessors -------------------------------------------------------------

    pub fn nand(&self) -> &Nand {
        &self.nand
    }
    /// An independent copy of the whole device, DRAM state and NAND (in RAM).
    /// For benchmarks that replay one segment from the same state many times.
    pub fn duplicate(&self) -> Ftl<H>
    where
        H: Clone,
    {
        self.clone()
    }

    /// The NAND, for fault injection (arming a power cut on a live device).
    pub fn nand_mut(&mut self) -> &mut Nand {
        &mut self.nand
    }
    /// Hands the NAND back, dropping every piece of DRAM state: what a power cut does.
    pub fn into_nand(self) -> Nand {
        self.nand
    }
    /// The mapping table, for its protocol's report (a cached table's counts).
    pub fn mapping_table(&self) -> &H::Mapping {
        &self.l2p
    }
    pub fn mapping_table_mut(&mut self) -> &mut H::Mapping {
        &mut self.l2p
    }
    pub fn hooks(&self) -> &H {
        &self.hooks
    }
    pub fn hooks_mut(&mut self) -> &mut H {
        &mut self.hooks
    }
    pub fn config(&self) -> &FtlConfig {
        &self.cfg
    }
    pub fn logical_pages(&self) -> u32 {
        self.derived.logical_pages
    }
    pub fn page_size(&self) -> u32 {
        self.geo.page_size
    }
    /// What the last mount's recovery did (None after `format`).
    pub fn recovery_report(&self) -> Option<RecoveryReport> {
        self.recovery
    }
    /// Current mapping of a logical page (for checkers and reports).
    pub fn mapping(&self, lpn: Lpn) -> Option<Ppn> {
        Some(lpn)
            .filter(|&l| l < self.l2p.len())
            .map(|l| self.l2p.get(l))
            .filter(|&p| p != UNMAPPED)
    }
    /// Erase counts as the FTL knows them.
    pub fn erase_counts(&self) -> &[u32] {
        &self.blocks.erase_count
    }
    /// Erase counts recorded in the last durable checkpoint.
    pub fn checkpoint_erase_counts(&self) -> &[u32] {
        &self.ckpt_erase_counts
    }
    /// (min, max) erase count over data blocks.
    pub fn wear_spread(&self) -> (u32, u32) {
        self.blocks.wear_spread()
    }
    pub fn free_blocks(&self) -> u32 {
        self.blocks.free_count()
    }

    // ---- shared machinery -------------------------------------------------------

    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.failed || !self.nand.is_powered() {
            return Err(if self.nand.is_powered() {
                DeviceError::Failed
            } else {
                DeviceError::PowerLoss
            });
        }
        Ok(())
    }

    /// `check_alive`, and the device is not mounted read-only.
    pub(crate) fn check_writable(&self, what: &'static str) -> Result<()> {
        self.check_alive()?;
        if self.cfg.read_only {
            return Err(DeviceError::ReadOnly(what));
        }
        Ok(())
    }

    /// A NAND error that leaves DRAM state unusable: refuse everything from now on.
    pub(crate) fn fail(&mut self, e: NandError) -> DeviceError {
        self.failed = true;
        e.into()
    }

    /// Refuses a logical page past the device's capacity.
    pub fn check_lpn(&self, lpn: Lpn) -> Result<()> {
        if lpn >= self.derived.logical_pages {
            return Err(DeviceError::OutOfRange {
                lpn: lpn as u64,
                logical_pages: self.derived.logical_pages,
            });
        }
        Ok(())
    }

    /// Refuses a buffer that is not a page (an empty one is a page of a
    /// metadata-only array).
    pub fn check_data_len(&self, len: usize) -> Result<()> {
        let want = self.geo.page_size as usize;
        if len == want || (len == 0 && self.nand.config().data_mode == DataMode::MetaOnly) {
            Ok(())
        } else {
            Err(DeviceError::BufferSize { got: len, want })
        }
    }

    /// Refuses a host page write's logical page or buffer (`check_lpn`,
    /// `check_data_len`): for a protocol's own write paths.
    pub fn check_page(&self, lpn: Lpn, data: &[u8]) -> Result<()> {
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())
    }

    /// Erases a block for reuse. Returns false if it wore out (now marked bad).
    pub(crate) fn erase_for_use(&mut self, b: BlockId) -> Result<bool> {
        if self.blocks.clean[b as usize] {
            return Ok(true);
        }
        match self.nand.erase(b, self.now_ns) {
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
    /// next unit, with a fresh sequence number, issued at `at_ns`. A program
    /// that fails its status retires its block (see `retire_pending`) and goes
    /// to another block. Returns the page and when its data crossed the channel.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn program_stream(
        &mut self,
        stream: Stream,
        kind: PageKind,
        lpn: u32,
        data: &[u8],
        protocol: &[u8; PROTOCOL_BYTES],
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
            if let Some(done) = self.program_next(block, kind, lpn, data, protocol, (lost, relocated), at_ns)? {
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
        protocol: &[u8; PROTOCOL_BYTES],
        (lost, relocated): (bool, bool),
        at_ns: u64,
    ) -> Result<Option<(Ppn, u64)>> {
        let page = self.blocks.write_ptr[block as usize];
        debug_assert!(page < self.geo.pages_per_block, "program into full block {block}");
        let ppn = self.geo.ppn(block, page);
        let seq = self.seq;
        self.seq += 1;
        let mut oob = Oob::new(kind, lpn, seq, self.blocks.erase_count[block as usize], data);
        oob.protocol = *protocol;
        oob.lost = lost;
        oob.relocated = relocated;
        oob.encode(&mut self.oob_buf);
        let t = match self.nand.program(ppn, at_ns, data, &self.oob_buf) {
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
        let b = block as usize;
        if kind == PageKind::Data {
            self.hooks.on_program(ppn, &oob, t.done_ns);
        }
        self.intact.set(ppn, true);
        self.blocks.write_ptr[b] = page + 1;
        self.blocks.last_seq[b] = seq;
        self.blocks.clean[b] = false;
        if page + 1 == self.geo.pages_per_block {
            self.blocks.set_full(block);
            self.close_stream_slot(block);
        }
        self.programs_since_ckpt += 1;
        self.summary_after_program(block, page, at_ns)?;
        Ok(Some((ppn, t.transferred_ns)))
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

    /// Points `lpn` at `ppn`, invalidating its previous page.
    pub(crate) fn map(&mut self, lpn: Lpn, ppn: Ppn) {
        self.unmap(lpn);
        self.l2p.set(lpn, ppn);
        self.tables.mark_lpn(lpn);
        self.mapped.set(ppn, true);
        self.blocks.valid_inc(self.geo.block_of(ppn));
    }

    pub(crate) fn unmap(&mut self, lpn: Lpn) {
        let old = self.l2p.get(lpn);
        if old != UNMAPPED {
            self.mapped.set(old, false);
            self.blocks.valid_dec(self.geo.block_of(old));
            self.l2p.set(lpn, UNMAPPED);
            self.tables.mark_lpn(lpn);
        }
    }

    /// An open host block with room, on the next unit of the stripe.
    pub(crate) fn host_block(&mut self) -> Result<BlockId> {
        let units = self.geo.unit_count();
        let unit = self.host_cursor;
        self.host_cursor = (unit + 1) % units;
        if let Some(b) = self.host_open[unit as usize] {
            return Ok(b);
        }
        self.make_room_for_host()?;
        if self.blocks.unit_window_spent(unit) {
            self.checkpoint()?;
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

    /// Before a host stream takes a new block: run GC below the low watermark,
    /// and make sure a block beyond the GC reserve is free.
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

    // ---- the interface protocols build on ---------------------------------------

    /// Programs a host page that the L2P does not point to yet (a transactional
    /// page: the protocol keeps it live through `Hooks::extra_live` and maps it
    /// at commit). Returns the page and the write's latency.
    pub fn program_unmapped(&mut self, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<(Ppn, u64)> {
        let start = self.now_ns;
        let (ppn, _) = self.program_unmapped_deferred(lpn, data, protocol)?;
        self.after_program()?;
        Ok((ppn, self.now_ns - start))
    }

    /// [`Ftl::program_unmapped`] without the housekeeping that follows a host
    /// program (interval checkpoints, wear leveling, retiring failed blocks):
    /// the caller finishes what the page belongs to, then calls
    /// [`Ftl::housekeeping`]. LightTx programs a commit page this way and maps
    /// the transaction's pages before any checkpoint: a checkpoint in between
    /// would record neither the commit (older than it) nor the mappings.
    pub fn program_unmapped_deferred(&mut self, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<(Ppn, u64)> {
        self.check_writable("write")?;
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())?;
        self.answer_erase_requests()?;
        let start = self.now_ns;
        let (ppn, transferred) = self.program_stream(Stream::Host, PageKind::Data, lpn, data, protocol, self.now_ns)?;
        self.counters.host_writes += 1;
        self.now_ns = self.now_ns.max(transferred);
        Ok((ppn, self.now_ns - start))
    }

    /// The housekeeping deferred by [`Ftl::program_unmapped_deferred`].
    pub fn housekeeping(&mut self) -> Result<()> {
        self.after_program()
    }

    /// Points `lpn` at `ppn`, a data page of `lpn` programmed earlier (by
    /// `program_unmapped`): a protocol folding a committed page into the L2P.
    pub fn map_page(&mut self, lpn: Lpn, ppn: Ppn) -> Result<()> {
        self.check_lpn(lpn)?;
        if ppn >= self.geo.page_count() || self.mapped.get(ppn) {
            return Err(DeviceError::Corrupted(format!(
                "cannot map lpn {lpn} to page {ppn}: out of range or already mapped"
            )));
        }
        self.map(lpn, ppn);
        Ok(())
    }

    /// Does a data page with record `o` hold logical page `lpn`: its OOB names
    /// it, or the protocol's alias does (`Hooks::alias_lpn`)?
    pub(crate) fn holds(&self, o: &Oob, lpn: Lpn) -> bool {
        o.kind == PageKind::Data && (o.lpn == lpn || self.hooks.alias_lpn(o) == Some(lpn))
    }

    /// `to` takes the physical page `from` maps, without a copy; `from` is
    /// unmapped and `to`'s old page becomes garbage (SW-WAL's remap). The
    /// page's spare area still names `from`, so the protocol must name `to`
    /// as its alias (`Hooks::alias_lpn`) or reads of `to` are refused as
    /// corrupted. Durable at the next flush, as a trim: through the next
    /// checkpoint's L2P (a page's OOB alone cannot say a remap happened).
    pub fn remap_page(&mut self, from: Lpn, to: Lpn) -> Result<()> {
        self.check_writable("remap")?;
        self.check_lpn(from)?;
        self.check_lpn(to)?;
        if !<H::Mapping as Mapping>::PERSISTED || <H::Mapping as Mapping>::CACHED {
            return Err(DeviceError::Unsupported {
                protocol: self.hooks.name(),
                what: "remap (it needs the whole mapping table in DRAM, persisted by checkpoints)",
            });
        }
        self.fetch_mapping(from)?;
        self.fetch_mapping(to)?;
        let ppn = self.l2p.get(from);
        if from == to || ppn == UNMAPPED {
            return Err(DeviceError::CallOrder(format!(
                "remap of logical page {from} onto {to}: {}",
                if from == to { "the same page" } else { "it maps no page" }
            )));
        }
        self.unmap(to);
        // One page, one owner: its mapped bit and its block's valid count stay.
        self.l2p.set(from, UNMAPPED);
        self.tables.mark_lpn(from);
        self.l2p.set(to, ppn);
        self.tables.mark_lpn(to);
        self.trims_pending = true;
        Ok(())
    }

    /// Takes `lpn` back to unmapped, its page becoming garbage (NoLgn's
    /// abort of a transaction that wrote a page no one had written before).
    /// Durable as a trim is: through the next checkpoint's L2P, or, after a
    /// power cut, through what the protocol's recovery decides.
    pub fn unmap_page(&mut self, lpn: Lpn) -> Result<()> {
        self.check_lpn(lpn)?;
        self.fetch_mapping(lpn)?;
        self.unmap(lpn);
        Ok(())
    }

    /// Reads physical page `ppn`, which must hold logical page `lpn` (a
    /// protocol reading a transaction's own uncommitted copy).
    pub fn read_physical(&mut self, lpn: Lpn, ppn: Ppn, buf: &mut [u8]) -> Result<u64> {
        self.check_alive()?;
        self.check_lpn(lpn)?;
        self.check_data_len(buf.len())?;
        let start = self.now_ns;
        self.counters.host_reads += 1;
        self.read_mapped(lpn, ppn, buf)?;
        Ok(self.now_ns - start)
    }

    /// Waits until every die and channel is idle (every program issued is done).
    pub fn wait_idle(&mut self) -> u64 {
        let start = self.now_ns;
        self.now_ns = self.now_ns.max(self.nand.all_idle_ns());
        self.now_ns - start
    }

    /// Waits until `t_ns` on the device clock (a protocol waiting for the
    /// programs of one transaction, not for every die).
    pub fn wait_until(&mut self, t_ns: u64) -> u64 {
        let start = self.now_ns;
        self.now_ns = self.now_ns.max(t_ns);
        self.now_ns - start
    }

    /// The device counters, for a protocol to count its own events (commits, aborts).
    pub fn counters_mut(&mut self) -> &mut DeviceStats {
        &mut self.counters
    }

    /// The device clock, ns.
    pub fn now(&self) -> u64 {
        self.now_ns
    }

    /// Host write of one page (plain, non-transactional).
    pub fn write_page(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.write_page_with(lpn, data, &[0; PROTOCOL_BYTES])
    }

    /// Host write with protocol bytes in the OOB (for protocols built on the framework).
    pub fn write_page_with(&mut self, lpn: Lpn, data: &[u8], protocol: &[u8; PROTOCOL_BYTES]) -> Result<u64> {
        self.check_writable("write")?;
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())?;
        self.answer_erase_requests()?;
        let start = self.now_ns;
        self.fetch_mapping(lpn)?;
        let (ppn, transferred) = self.program_stream(Stream::Host, PageKind::Data, lpn, data, protocol, self.now_ns)?;
        self.map(lpn, ppn);
        self.counters.host_writes += 1;
        self.now_ns = self.now_ns.max(transferred);
        self.after_program()?;
        Ok(self.now_ns - start)
    }

    /// Housekeeping after host programs: interval checkpoints and static wear leveling.
    pub(crate) fn after_program(&mut self) -> Result<()> {
        if !self.retiring.is_empty() {
            self.retire_pending()?;
        }
        if self.programs_since_ckpt >= self.derived.checkpoint_every {
            self.checkpoint()?;
        }
        if self.erases_since_wl_check >= WEAR_CHECK_EVERY_ERASES {
            self.erases_since_wl_check = 0;
            self.wear_level()?;
        }
        Ok(())
    }

    /// Reads the page `ppn` expecting logical page `lpn`; checks OOB and data
    /// CRCs. A page ECC cannot correct after every read retry, or one GC had
    /// to copy without its data, is `DataLost` (the device stays usable).
    pub(crate) fn read_mapped(&mut self, lpn: Lpn, ppn: Ppn, buf: &mut [u8]) -> Result<()> {
        // An empty buffer (metadata-only mode) still reads the data area: same
        // time and bit errors as a full read, nothing handed up.
        let data = Some(&mut buf[..]);
        match crate::ecc::read_retrying(&mut self.nand, ppn, self.now_ns, data, &mut self.oob_buf) {
            Ok(Ok(done)) => self.now_ns = self.now_ns.max(done),
            Ok(Err(unreadable)) => {
                self.now_ns = self.now_ns.max(unreadable.done_ns);
                self.counters.uncorrectable_reads += 1;
                self.counters.lost_page_reads += 1;
                return Err(DeviceError::DataLost { lpn, ppn });
            }
            Err(e) => return Err(self.fail(e)),
        }
        let known = self.intact.get(ppn);
        match Oob::decode(&self.oob_buf) {
            OobState::Valid(o) if self.holds(&o, lpn) && o.lost => {
                self.counters.lost_page_reads += 1;
                Err(DeviceError::DataLost { lpn, ppn })
            }
            OobState::Valid(o) if self.holds(&o, lpn) && (buf.is_empty() || known || o.data_matches(buf)) => {
                self.intact.set(ppn, true);
                Ok(())
            }
            OobState::Valid(o) if self.holds(&o, lpn) => Err(DeviceError::Corrupted(format!(
                "logical page {lpn} at physical page {ppn}: the data does not match its checksum"
            ))),
            other => Err(DeviceError::Corrupted(format!(
                "logical page {lpn} at physical page {ppn}: expected its data page, found {other}"
            ))),
        }
    }

    pub fn read_page(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.check_alive()?;
        self.check_lpn(lpn)?;
        self.check_data_len(buf.len())?;
        let start = self.now_ns;
        self.counters.host_reads += 1;
        self.fetch_mapping(lpn)?;
        match self.mapping(lpn) {
            None => buf.fill(0),
            Some(ppn) => self.read_mapped(lpn, ppn, buf)?,
        }
        Ok(self.now_ns - start)
    }

    /// Trim: forget a logical page. Durable at the next flush (through a
    /// checkpoint's L2P): refused when checkpoints persist none
    /// (`Mapping::PERSISTED`), since recovery would find the page again.
    pub fn trim_page(&mut self, lpn: Lpn) -> Result<u64> {
        self.check_writable("trim")?;
        self.check_lpn(lpn)?;
        if !<H::Mapping as Mapping>::PERSISTED {
            return Err(DeviceError::Unsupported {
                protocol: self.hooks.name(),
                what: "trim (no persistent mapping table to record it in)",
            });
        }
        self.counters.host_trims += 1;
        self.fetch_mapping(lpn)?;
        if self.l2p.get(lpn) != UNMAPPED {
            self.unmap(lpn);
            self.trims_pending = true;
        }
        Ok(0)
    }

    /// Waits for every program in flight; makes pending trims durable.
    pub fn flush_all(&mut self) -> Result<u64> {
        self.check_alive()?;
        let start = self.now_ns;
        self.counters.host_flushes += 1;
        self.now_ns = self.now_ns.max(self.nand.all_idle_ns());
        if self.trims_pending || (self.cfg.checkpoint_at_flush && self.programs_since_ckpt > 0) {
            self.checkpoint()?;
        }
        // With an image synced at flushes (`--sync flush`), a flush that returns
        // is on the host's disk too.
        self.nand.flush_image()?;
        Ok(self.now_ns - start)
    }

    /// Clean shutdown: flush, then checkpoint so the next mount rolls nothing
    /// forward, if anything was programmed or trimmed since the last checkpoint.
    /// A device that changed nothing (a read-only mount, or one that only read)
    /// writes nothing: looking at a device must not wear it.
    pub fn close(mut self) -> Result<Nand> {
        if self.cfg.read_only {
            self.check_alive()?;
            return Ok(self.nand);
        }
        self.flush_all()?;
        if self.programs_since_ckpt > 0 || self.trims_pending {
            self.checkpoint()?;
        }
        self.nand.sync_image()?;
        Ok(self.nand)
    }

    pub fn device_stats(&self) -> DeviceStats {
        let n = self.nand.stats();
        let b = self.nand_base;
        DeviceStats {
            flash_reads: (n.reads + n.oob_reads) - (b.reads + b.oob_reads),
            flash_programs: n.programs - b.programs,
            flash_partial_programs: n.partial_programs - b.partial_programs,
            flash_erases: n.erases - b.erases,
            corrected_bits: n.corrected_bits - b.corrected_bits,
            read_retries: n.read_retries - b.read_retries,
            program_failures: n.program_failures - b.program_failures,
            sim_time_ns: self.now_ns.max(self.nand.all_idle_ns()) - self.time_base_ns,
            ..self.counters
        }
    }

    pub fn reset_device_stats(&mut self) {
        self.counters = DeviceStats::default();
        self.nand_base = self.nand.stats();
        self.now_ns = self.now_ns.max(self.nand.all_idle_ns());
        self.time_base_ns = self.now_ns;
    }
}

impl<H: Hooks> Device for Ftl<H> {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            protocol: self.hooks.name(),
            logical_pages: self.derived.logical_pages,
            page_size: self.geo.page_size,
        }
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.read_page(lpn, buf)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.write_page(lpn, data)
    }
    fn flush(&mut self) -> Result<u64> {
        self.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.trim_page(lpn)
    }
    fn stats(&self) -> DeviceStats {
        self.device_stats()
    }
    fn reset_stats(&mut self) {
        self.reset_device_stats()
    }
    fn now_ns(&self) -> u64 {
        self.now_ns
    }
    fn set_clock(&mut self, at_ns: u64) {
        self.now_ns = at_ns.max(self.time_base_ns);
    }
}
