//! Making an array: erased in RAM, backed by a new image file or opened
//! from one, assembled from its cell state, or copied as a RAM snapshot.

use super::{Data, DataMode, Nand, NandConfig, NandStats, State, ViolationPolicy};
use crate::error::{ImageError, MemoryError, NandError};
use crate::geometry::GeometryError;
use crate::image::ImageFile;
use crate::kept::KeptPages;
use crate::memory;
use crate::page_data::PageData;
use crate::programs::Programs;
use crate::spare::Spare;
use crate::timing::Clocks;
use std::path::Path;

impl Nand {
    /// A fresh, fully erased array in RAM.
    ///
    /// For a device sized from user input use [`Nand::try_new`]: this one
    /// panics (with the size needed) if the machine refuses the memory.
    pub fn new(cfg: NandConfig) -> Result<Nand, GeometryError> {
        cfg.geometry.validate()?;
        match Nand::allocate(cfg) {
            Ok(nand) => Ok(nand),
            Err(e) => panic!("{e}"),
        }
    }

    /// Like [`Nand::new`], but a device larger than the memory the machine has
    /// available (or whose allocation fails) is a typed error.
    pub fn try_new(cfg: NandConfig) -> Result<Nand, NandError> {
        cfg.geometry.validate()?;
        memory::check(Nand::memory_needed(&cfg))?;
        Ok(Nand::allocate(cfg)?)
    }

    /// Bytes of memory the array of `cfg` needs (see `memory::needed`).
    pub fn memory_needed(cfg: &NandConfig) -> u64 {
        memory::needed(cfg)
    }

    /// The erased arrays of a valid geometry, each allocation fallible.
    fn allocate(cfg: NandConfig) -> Result<Nand, MemoryError> {
        let g = &cfg.geometry;
        let need = memory::needed(&cfg);
        let pages = g.page_count() as usize;
        let blocks = g.block_count() as usize;
        let os = g.oob_size as usize;
        let (data, spare) = match cfg.data_mode {
            DataMode::Full => (
                // A block's chunk is allocated when first written, and a
                // page is read from it only once programmed (`programs`).
                Data::Full(PageData::new(
                    pages,
                    g.page_size as usize,
                    g.pages_per_block as usize,
                    0,
                    g.page_size as usize,
                    need,
                )?),
                Spare::bytes(pages, os, g.pages_per_block, need)?,
            ),
            DataMode::MetaOnly => (
                Data::Meta(KeptPages::new(g.pages_per_block)),
                Spare::packed(pages, blocks, g.pages_per_block, os, need)?,
            ),
        };
        let state = State {
            programs: match cfg.data_mode {
                DataMode::Full => Programs::Bytes(memory::filled(pages, 0, need)?),
                DataMode::MetaOnly => Programs::bits(pages, need)?,
            },
            erase_counts: memory::filled(blocks, 0, need)?,
            bad: memory::filled(blocks, false, need)?,
            spare,
            data,
        };
        let mut nand = Nand::from_state(cfg, state, None);
        nand.factory_fresh = true;
        Ok(nand)
    }

    /// A fresh, erased array backed by a new image file (always full data).
    /// Refuses an existing file, and a device too large for memory before the
    /// file is created. The image stays locked while the array lives.
    pub fn create_image(path: &Path, mut cfg: NandConfig) -> Result<Nand, ImageError> {
        cfg.geometry.validate()?;
        cfg.data_mode = DataMode::Full;
        memory::check(memory::needed(&cfg))?;
        let mut nand = Nand::allocate(cfg)?;
        let image = ImageFile::create(path, &cfg.geometry, &cfg.timing, cfg.endurance)?;
        nand.image = Some(image);
        Ok(nand)
    }

    /// Opens an existing image file: the array comes back exactly as the file
    /// holds it. The image stays locked while the array lives: a second open
    /// (from this or another process) is refused with [`ImageError::InUse`].
    pub fn open_image(path: &Path, violation_policy: ViolationPolicy) -> Result<Nand, ImageError> {
        let (image, l) = ImageFile::open(path)?;
        let cfg = NandConfig {
            geometry: l.geometry,
            timing: l.timing,
            endurance: l.endurance,
            data_mode: DataMode::Full,
            violation_policy,
        };
        let (g, ppb) = (cfg.geometry, cfg.geometry.pages_per_block as usize);
        let state = State {
            programs: Programs::Bytes(l.programs),
            erase_counts: l.erase_counts,
            bad: l.bad,
            spare: Spare::Bytes(PageData::from_bytes(&l.oob, g.oob_size as usize, ppb, 0xFF, 0)),
            data: Data::Full(PageData::from_bytes(&l.data, g.page_size as usize, ppb, 0, g.page_size as usize)),
        };
        Ok(Nand::from_state(cfg, state, Some(image)))
    }

    /// Assembles an array from its cell state; the MLC write pointers are derived
    /// from which pages are programmed.
    fn from_state(cfg: NandConfig, st: State, image: Option<ImageFile>) -> Nand {
        let g = cfg.geometry;
        let ppb = g.pages_per_block as usize;
        let next_page = (0..g.block_count() as usize)
            .map(|b| st.programs.programmed_end(b * ppb..(b + 1) * ppb) as u32)
            .collect();
        Nand {
            programs: st.programs,
            next_page,
            erase_counts: st.erase_counts,
            bad: st.bad,
            spare: st.spare,
            data: st.data,
            image,
            clocks: Clocks::new(g.unit_count(), g.channels),
            stats: NandStats::default(),
            op_count: 0,
            cut_at: u64::MAX,
            cut: None,
            powered: true,
            op_log: None,
            op_trace: None,
            in_flight: None,
            undo_at: u64::MAX,
            instant_ns: u64::MAX,
            redo_log: None,
            faults: None,
            factory_fresh: false,
            cfg,
        }
    }

    /// A copy of the array in RAM (no image file behind it), with the same
    /// contents, wear, power state and armed cut; counters and clocks included.
    pub fn snapshot(&self) -> Nand {
        Nand {
            cfg: self.cfg,
            programs: self.programs.clone(),
            next_page: self.next_page.clone(),
            erase_counts: self.erase_counts.clone(),
            bad: self.bad.clone(),
            spare: self.spare.clone(),
            data: self.data.clone(),
            image: None,
            clocks: self.clocks.clone(),
            stats: self.stats,
            op_count: self.op_count,
            cut_at: self.cut_at,
            cut: self.cut,
            powered: self.powered,
            op_log: self.op_log.clone(),
            op_trace: self.op_trace.clone(),
            in_flight: self.in_flight.clone(),
            undo_at: self.undo_at,
            instant_ns: self.instant_ns,
            redo_log: self.redo_log.clone(),
            faults: self.faults,
            factory_fresh: self.factory_fresh,
        }
    }
}

/// A clone is a RAM snapshot: same contents, wear, power state, armed cut,
/// counters and clocks, with no image file behind it (see [`Nand::snapshot`]).
impl Clone for Nand {
    fn clone(&self) -> Nand {
        self.snapshot()
    }
}
