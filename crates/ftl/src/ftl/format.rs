//! Making an FTL: the empty one a format or a mount starts from, the sizes
//! derived from the geometry and configuration, the layout of the metadata
//! rings, the format itself, and the memory a device needs.

use super::{superblock_blocks, Derived, Ftl, RecordLoc};
use crate::area::LogArea;
use crate::bits::Bits;
use crate::blocks::{BlockState, BlockTable};
use crate::checkpoint::TableLayout;
use crate::config::FtlConfig;
use crate::device::{Device, DeviceStats};
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use crate::tables::Tables;
use txftl_nand::{BlockId, DataMode, Geometry, Nand};

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
        if let Err(e) = nand.set_spare_codec(Some(crate::oob::spare_codec(hooks.packed_protocol_bytes(), hooks.flag_bytes()))) {
            return Err((DeviceError::Memory(e), Box::new(nand)));
        }
        let geo = *nand.geometry();
        let units = geo.unit_count() as usize;
        let ppb = geo.pages_per_block;
        let mut blocks = BlockTable::new(&geo);
        blocks.set_windowed(cfg.alloc_window_blocks > 0);
        Ok(Ftl {
            l2p: H::Mapping::unmapped(0).map_err(|e| (e, Box::new(nand.clone())))?,
            tables: Tables::new(TableLayout::new(0, geo.block_count(), geo.page_size), &geo, 0, 1, 1, false),
            mapped: Bits::new(geo.page_count() as usize),
            blocks,
            host_open: vec![None; units],
            host_cursor: 0,
            gc_open: vec![None; units],
            gc_cursor: 0,
            gc_stripe_lost: false,
            seq: 1,
            now_ns: 0,
            sb_area: LogArea::new(superblock_blocks(&geo).to_vec(), 1, ppb),
            sb_seq: 0,
            ckpt_area: LogArea::new(vec![0], 1, ppb),
            ckpt: RecordLoc::default(),
            prev_ckpt: RecordLoc::default(),
            proto_rings: Vec::new(),
            ring_swaps: 0,
            programs_since_ckpt: 0,
            trims_pending: false,
            erases_since_wl_check: 0,
            gc_busy_from: None,
            counters: DeviceStats::default(),
            open_txs: Default::default(),
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
            flag_programs: super::flags::counts_for(&geo),
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
        let (mut rings, stripe, derived) = Self::layout(&geo, &cfg, &hooks)?;
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
            stripe,
            <H::Mapping as Mapping>::CACHED,
        );
        ftl.ckpt_area = LogArea::new(ckpt_ring, stripe, geo.pages_per_block);
        ftl.proto_rings = rings.into_iter().map(|r| LogArea::new(r, 1, geo.pages_per_block)).collect();
        for b in 0..geo.block_count() {
            ftl.blocks.state[b as usize] = BlockState::Meta;
            ftl.blocks.clean[b as usize] = shipped_erased;
        }
        ftl.blocks.set_free_all((0..geo.block_count()).filter(|&b| !meta[b as usize]));
        ftl.hooks.on_format(derived.logical_pages);
        ftl.checkpoint()?;
        ftl.reset_stats();
        Ok(ftl)
    }

    /// The metadata rings a format lays out (the checkpoint ring first, then
    /// each protocol ring), the checkpoint ring's stripe, and the sizes
    /// derived from what is left.
    fn layout(geo: &Geometry, cfg: &FtlConfig, hooks: &H) -> Result<(Vec<Vec<BlockId>>, u32, Derived)> {
        // The checkpoint ring is sized for the largest tables this geometry
        // can have (see `Tables::ring_stripes`); a log ring what its protocol
        // asks for, plus one block for the erase granularity.
        let sizing = TableLayout::new(geo.page_count(), geo.block_count(), geo.page_size);
        let cached = <H::Mapping as Mapping>::CACHED;
        let ckpt_blocks = |d: u32| d * Tables::ring_stripes(&sizing, geo, d, hooks.checkpoint_section_max(), cached).max(3);
        let stripe = match cfg.checkpoint_stripe {
            0 => {
                // Wider stripes overlap more programs but grow the ring
                // (its zone counts stripes): the widest that stays small.
                let mut d = geo.unit_count().min(8);
                while d > 1 && ckpt_blocks(d) > geo.block_count() / 32 {
                    d /= 2;
                }
                d
            }
            d if d > geo.unit_count() => {
                return Err(DeviceError::Config(format!(
                    "a checkpoint stripe of {d} blocks needs {d} dies; the array has {}",
                    geo.unit_count()
                )))
            }
            d => d,
        };
        let mut sizes = vec![ckpt_blocks(stripe)];
        sizes.extend(hooks.protocol_rings(geo).iter().map(|&blocks| blocks.max(3)));
        let rings = reserve_rings(geo, &sizes);
        let ring_blocks: u32 = rings.iter().map(|r| r.len() as u32).sum();
        if rings.iter().zip(&sizes).any(|(r, &n)| r.len() < n as usize) || ring_blocks + 2 >= geo.block_count() {
            return Err(DeviceError::Config(format!(
                "the geometry has too few blocks for the metadata rings ({ring_blocks} blocks)"
            )));
        }
        // A stripe's blocks overlap only if they sit on different dies.
        for s in rings[0].chunks(stripe as usize) {
            let units: std::collections::BTreeSet<u32> = s.iter().map(|&b| geo.unit_of_block(b)).collect();
            assert_eq!(units.len(), s.len(), "checkpoint ring stripe {s:?} shares a die");
        }
        let proto_ring_lens: Vec<usize> = rings[1..].iter().map(|r| r.len()).collect();
        let sb_len = crate::superblock::Superblock::encoded_len(rings[0].len(), hooks.root_len_max(), &proto_ring_lens);
        // A copy spans pages but stays in one superblock block (`superblock.rs`).
        let sb_pages = crate::superblock::Superblock::pages(sb_len, geo.page_size as usize);
        if sb_pages > geo.pages_per_block as usize {
            return Err(DeviceError::Config(format!(
                "superblock of {sb_len} bytes takes {sb_pages} pages; a superblock block holds {}",
                geo.pages_per_block
            )));
        }
        let pool_blocks = geo.block_count() - 2 - ring_blocks;
        let mut derived = Self::derive(geo, cfg, pool_blocks, None)?;
        if hooks.summary_pages() {
            crate::summary::check_fits(geo, crate::summary::Widths::of(hooks))?;
            derived.logical_pages = crate::summary::shrink_logical_pages(derived.logical_pages, geo);
        }
        Ok((rings, stripe, derived))
    }

    /// Memory the FTL needs for a device of this geometry, configuration and
    /// data mode (see `memory.rs`): its DRAM tables, and the metadata pages a
    /// metadata-only array keeps in memory for it. Refuses a geometry the
    /// FTL cannot lay out, as `format` would.
    pub fn memory_needed(geo: &Geometry, cfg: &FtlConfig, data_mode: DataMode, hooks: &H) -> Result<crate::memory::FtlMemory> {
        geo.validate()?;
        let (rings, _, derived) = Self::layout(geo, cfg, hooks)?;
        let ring_pages: Vec<u64> = rings.iter().map(|r| r.len() as u64 * geo.pages_per_block as u64).collect();
        Ok(crate::memory::FtlMemory::estimate(
            geo,
            derived.logical_pages,
            data_mode,
            &ring_pages,
            hooks.checkpoint_section_max(),
            crate::memory::PackedBytes::of(hooks),
        ))
    }
}
