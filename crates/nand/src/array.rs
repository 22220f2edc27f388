//! The NAND array: the oracle of the physics.
//!
//! Contract of the chip interface (every FTL above must live with it):
//! - `read(ppn)` returns what the cells hold; an erased page reads as all 0xFF.
//! - `program(ppn)` needs an erased page; on MLC/TLC the pages of a block are
//!   programmed in order (page index = the block's next page), each once.
//! - `partial_program(ppn)` (SLC only) may only clear bits (1 -> 0), at most NOP
//!   programs per page between erases.
//! - `erase(block)` resets every page of the block to 0xFF and costs one cycle of
//!   wear; a block at its endurance fails the erase and is bad from then on.
//! - After a power cut every operation fails with `PowerLoss` until `power_on`.
//!   A cut at an instant ([`Nand::arm_instant_cut`]) tears or loses every
//!   operation it names as in flight then, on top of later ones on other dies.
//! - A new array is shipped erased (every datasheet promises it: all pages
//!   read 0xFF, no erase spent): [`Nand::is_factory_fresh`] says so until the
//!   first program or erase, so an FTL formatting it may skip the first erase
//!   of each block. An array opened from an image is never fresh.
//!
//! A broken rule is an FTL bug: it panics (default) or returns
//! [`NandError::Violation`], per [`ViolationPolicy`].

use crate::bit_errors::{FaultModel, PageKey, SALT_ERASE, SALT_GARBAGE, SALT_PROGRAM};
use crate::error::{ImageError, MemoryError, NandError, Violation};
use crate::fault::{tear_program, Area, PowerCut, Torn};
use crate::geometry::{BlockId, Geometry, GeometryError, Ppn};
use crate::image::{ImageFile, ImageSync};
use crate::kept::KeptPages;
use crate::memory;
use crate::programs::Programs;
use crate::redo::{Mutation, MutationRecord};
use crate::spare::{Spare, SpareCodec};
use crate::timing::{Clocks, OpTime, Timing};
use rand::Rng;
use serde::Serialize;
use std::path::Path;

mod in_flight;
use in_flight::InFlight;
pub use in_flight::OpTrace;

/// Whether page data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataMode {
    /// Data and OOB of every page are stored.
    Full,
    /// Only OOB is stored, plus the data of pages programmed with a full buffer
    /// (the FTL's own metadata pages). Programs with an empty data buffer store
    /// no data; reading such a page yields zeros. The OOB is stored packed
    /// when the FTL installs a codec for its record (`spare.rs`, about 6
    /// bytes a page instead of the spare area). For large trace replays.
    MetaOnly,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ViolationPolicy {
    /// Panic at the violating operation (tests, and the default).
    Panic,
    /// Return `NandError::Violation` (the CLI, so a bug is a typed error).
    Error,
}

#[derive(Clone, Copy, Debug)]
pub struct NandConfig {
    pub geometry: Geometry,
    pub timing: Timing,
    pub endurance: u32,
    pub data_mode: DataMode,
    pub violation_policy: ViolationPolicy,
}

/// Operation counters of the array.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct NandStats {
    /// Page reads that moved the data area (and OOB).
    pub reads: u64,
    /// Reads of the OOB area only.
    pub oob_reads: u64,
    pub programs: u64,
    pub partial_programs: u64,
    pub erases: u64,
    pub erase_failures: u64,
    /// Bit errors ECC corrected (fault model on).
    pub corrected_bits: u64,
    /// Reads ECC could not correct (each retry that fails counts too).
    pub uncorrectable_reads: u64,
    /// Reads at a retry level above 0 (each is also counted in `reads`/`oob_reads`).
    pub read_retries: u64,
    /// Programs that failed their status (fault model on).
    pub program_failures: u64,
}

impl NandStats {
    pub fn total_ops(&self) -> u64 {
        self.reads + self.oob_reads + self.programs + self.program_failures + self.partial_programs + self.erases
    }
}

/// A clone is a RAM snapshot: same contents, wear, power state, armed cut,
/// counters and clocks, with no image file behind it (see [`Nand::snapshot`]).
impl Clone for Nand {
    fn clone(&self) -> Nand {
        self.snapshot()
    }
}

/// Kind of one NAND operation, as recorded by the optional operation log.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FlashOp {
    Read,
    OobRead,
    Program,
    PartialProgram,
    Erase,
}

impl FlashOp {
    /// Does the operation change the array (and so have torn variants)?
    pub fn mutates(self) -> bool {
        matches!(self, FlashOp::Program | FlashOp::PartialProgram | FlashOp::Erase)
    }
}

/// The cell contents and wear of an array (what an image file stores).
struct State {
    programs: Programs,
    erase_counts: Vec<u32>,
    bad: Vec<bool>,
    spare: Spare,
    data: Data,
}

#[derive(Clone)]
enum Data {
    Full(Vec<u8>),
    Meta(KeptPages),
}

pub struct Nand {
    cfg: NandConfig,
    /// Programs since the last erase, per page (0 = erased; `programs.rs`).
    programs: Programs,
    /// Next page index each block may program (MLC/TLC order rule).
    next_page: Vec<u32>,
    erase_counts: Vec<u32>,
    bad: Vec<bool>,
    /// The spare area of every page (`spare.rs`).
    spare: Spare,
    data: Data,
    image: Option<ImageFile>,
    clocks: Clocks,
    stats: NandStats,
    op_count: u64,
    /// Index of the operation the armed cut interrupts (u64::MAX: none).
    cut_at: u64,
    cut: Option<PowerCut>,
    powered: bool,
    op_log: Option<Vec<FlashOp>>,
    /// Issue and completion times of every operation (`in_flight.rs`).
    op_trace: Option<Vec<OpTrace>>,
    /// The armed instant cut's undo records (`in_flight.rs`); `None`: none armed.
    in_flight: Option<Box<InFlight>>,
    /// Index of the next operation the armed instant cut names (u64::MAX: none),
    /// so an operation it does not name costs one comparison.
    undo_at: u64,
    /// What every program, partial program and erase wrote (`redo.rs`).
    redo_log: Option<Vec<MutationRecord>>,
    /// Bit errors, ECC and program/erase failures (`bit_errors.rs`); `None`: off.
    faults: Option<FaultModel>,
    /// As shipped: no program or erase was ever issued (not even a torn one).
    factory_fresh: bool,
}

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
                // Never filled: a page is read from these bytes only once
                // programmed (`programs`), so untouched ones take no memory.
                Data::Full(memory::zeroed(pages * g.page_size as usize, need)?),
                Spare::bytes(pages, os, need)?,
            ),
            DataMode::MetaOnly => (
                Data::Meta(KeptPages::default()),
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
        let state = State {
            programs: Programs::Bytes(l.programs),
            erase_counts: l.erase_counts,
            bad: l.bad,
            spare: Spare::Bytes(l.oob),
            data: Data::Full(l.data),
        };
        Ok(Nand::from_state(cfg, state, Some(image)))
    }

    /// Assembles an array from its cell state; the MLC write pointers are derived
    /// from which pages are programmed.
    fn from_state(cfg: NandConfig, st: State, image: Option<ImageFile>) -> Nand {
        let g = cfg.geometry;
        let ppb = g.pages_per_block as usize;
        let next_page = (0..g.block_count())
            .map(|b| {
                let first = b as usize * ppb;
                (0..ppb)
                    .rposition(|i| st.programs.get((first + i) as Ppn) > 0)
                    .map_or(0, |i| i as u32 + 1)
            })
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
            redo_log: None,
            faults: None,
            factory_fresh: false,
            cfg,
        }
    }

    pub fn config(&self) -> &NandConfig {
        &self.cfg
    }
    pub fn geometry(&self) -> &Geometry {
        &self.cfg.geometry
    }
    pub fn timing(&self) -> &Timing {
        &self.cfg.timing
    }
    pub fn stats(&self) -> NandStats {
        self.stats
    }
    pub fn reset_stats(&mut self) {
        self.stats = NandStats::default();
    }
    /// Operations issued since creation or the last `reset_op_count`.
    pub fn op_count(&self) -> u64 {
        self.op_count
    }
    pub fn reset_op_count(&mut self) {
        self.op_count = 0;
    }
    /// The time at which every die and channel is idle.
    pub fn all_idle_ns(&self) -> u64 {
        self.clocks.all_idle_ns()
    }
    pub fn is_powered(&self) -> bool {
        self.powered
    }
    pub fn has_image(&self) -> bool {
        self.image.is_some()
    }
    /// Is the array as shipped, every block erased and never programmed? True
    /// for a new array (in RAM or a new image file) until its first program,
    /// partial program or erase is issued (even one a power cut tears); false
    /// for an array opened from an image. An FTL that formats a fresh array
    /// may treat every block as erased.
    pub fn is_factory_fresh(&self) -> bool {
        self.factory_fresh
    }
    /// Flushes the image file to stable storage (no-op for RAM), whatever the
    /// [`ImageSync`] mode: the FTL calls it at a clean close.
    pub fn sync_image(&self) -> Result<(), NandError> {
        if let Some(img) = &self.image {
            img.sync()?;
        }
        Ok(())
    }

    /// Chooses when the image file reaches the host's disk (no-op for RAM).
    pub fn set_image_sync(&mut self, mode: ImageSync) {
        if let Some(img) = &mut self.image {
            img.set_sync(mode);
        }
    }

    /// The image's sync mode; `None` without an image.
    pub fn image_sync(&self) -> Option<ImageSync> {
        self.image.as_ref().map(|img| img.sync_mode())
    }

    /// A device flush or commit is durable from here on: in [`ImageSync::Flush`]
    /// mode the image is synced to the host's disk; otherwise nothing happens.
    /// The FTL calls this when its `flush` and `commit` complete.
    pub fn flush_image(&self) -> Result<(), NandError> {
        if let Some(img) = &self.image {
            img.flush_point()?;
        }
        Ok(())
    }

    /// Syncs of the image file so far (0 without an image).
    pub fn image_syncs(&self) -> u64 {
        self.image.as_ref().map_or(0, |img| img.syncs())
    }

    /// After a program or erase is written through: in [`ImageSync::Always`]
    /// mode it is synced before the operation returns.
    fn image_op_done(&self) -> Result<(), ImageError> {
        match &self.image {
            Some(img) => img.op_done(),
            None => Ok(()),
        }
    }

    /// Arms a power cut at operation index `cut.at_op` (see [`PowerCut`]).
    pub fn arm_power_cut(&mut self, cut: PowerCut) {
        self.cut_at = cut.at_op;
        self.cut = Some(cut);
    }
    pub fn disarm_power_cut(&mut self) {
        self.cut_at = u64::MAX;
        self.cut = None;
        self.in_flight = None;
        self.undo_at = u64::MAX;
    }

    /// Power comes back: operations work again, the clocks restart at 0, and the
    /// operation counter restarts so a new cut can be armed relative to this boot.
    pub fn power_on(&mut self) {
        self.powered = true;
        self.disarm_power_cut();
        self.clocks.reset();
        self.op_count = 0;
    }

    /// Starts (or stops) recording the kind of every operation issued.
    pub fn set_op_log(&mut self, on: bool) {
        self.op_log = on.then(Vec::new);
    }
    /// Kinds of the operations issued since the log was switched on, by index.
    pub fn op_log(&self) -> &[FlashOp] {
        self.op_log.as_deref().unwrap_or(&[])
    }

    /// Starts (or stops) recording what every operation that changes the
    /// array writes (`redo.rs`): what [`Nand::redo`] needs to do it again.
    pub fn set_redo_log(&mut self, on: bool) {
        self.redo_log = on.then(Vec::new);
    }
    /// The operations that changed the array since the log was switched on.
    pub fn redo_log(&self) -> &[MutationRecord] {
        self.redo_log.as_deref().unwrap_or(&[])
    }

    /// Issues a logged operation again, as operation number `rec.op_index`:
    /// on an array holding what the logged one held before it, the result
    /// is the same, and a cut armed at that index tears it the same way.
    pub fn redo(&mut self, rec: &MutationRecord) -> Result<OpTime, NandError> {
        self.op_count = rec.op_index;
        match &rec.mutation {
            Mutation::Program { ppn, data, oob, like } => self.program_hinted(*ppn, rec.at_ns, data, oob, *like),
            Mutation::PartialProgram { ppn, data, oob } => self.partial_program(*ppn, rec.at_ns, data.as_deref(), oob.as_deref()),
            Mutation::Erase { block } => self.erase(*block, rec.at_ns),
        }
    }

    /// Records an operation about to be issued, as the number it will take.
    /// One refused before it took a number (a rule violation returned as an
    /// error) is replaced by the next operation, which takes that number.
    fn log_mutation(&mut self, at_ns: u64, mutation: impl FnOnce() -> Mutation) {
        let op_index = self.op_count;
        if let Some(log) = &mut self.redo_log {
            if log.last().is_some_and(|r| r.op_index == op_index) {
                log.pop();
            }
            log.push(MutationRecord {
                op_index,
                at_ns,
                mutation: mutation(),
            });
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
            redo_log: self.redo_log.clone(),
            faults: self.faults,
            factory_fresh: self.factory_fresh,
        }
    }

    /// Cuts power now, between operations. Nothing is torn, unless an instant
    /// cut is armed ([`Nand::arm_instant_cut`]): then every operation it names
    /// ends as it says, as at its stop operation.
    pub fn power_off(&mut self) {
        self.powered = false;
        self.resolve_in_flight();
    }

    /// An operation on a bad block still costs an operation index (a cut can land on it).
    fn bad_block_op(&mut self, block: BlockId, kind: FlashOp, at_ns: u64) -> NandError {
        match self.begin_op(kind, block, at_ns) {
            Ok(None) => NandError::BadBlock(block),
            Ok(Some(_)) | Err(_) => NandError::PowerLoss,
        }
    }

    fn violation(&self, v: Violation) -> NandError {
        match self.cfg.violation_policy {
            ViolationPolicy::Panic => panic!("NAND rule violated: {v}"),
            ViolationPolicy::Error => NandError::Violation(v),
        }
    }

    /// Starts an operation on `target` (a page; a block for an erase or an
    /// operation refused on a bad block) issued at `at_ns`: fails if power is
    /// off; returns the cut if this is the one it tears.
    #[inline]
    fn begin_op(&mut self, kind: FlashOp, target: u32, at_ns: u64) -> Result<Option<PowerCut>, NandError> {
        if !self.powered {
            return Err(NandError::PowerLoss);
        }
        if let Some(log) = &mut self.op_log {
            log.push(kind);
        }
        if let Some(trace) = &mut self.op_trace {
            // Done at issue until the operation reports its times: an
            // operation that fails or is refused is never in flight.
            trace.push(OpTrace {
                kind,
                target,
                at_ns,
                start_ns: at_ns,
                done_ns: at_ns,
            });
        }
        if kind.mutates() {
            self.factory_fresh = false;
        }
        let index = self.op_count;
        self.op_count += 1;
        if index == self.cut_at {
            self.powered = false;
            self.resolve_in_flight();
            return Ok(self.cut);
        }
        if index == self.undo_at {
            self.save_undo(index, kind, target);
        }
        Ok(None)
    }

    #[inline]
    fn check_ppn(&self, ppn: Ppn) -> Result<(), NandError> {
        let page_count = self.cfg.geometry.page_count();
        if ppn >= page_count {
            return Err(self.violation(Violation::PageOutOfRange { ppn, page_count }));
        }
        Ok(())
    }

    fn check_len(&self, what: &'static str, got: usize, want: usize) -> Result<(), NandError> {
        if got != want {
            return Err(self.violation(Violation::BufferSize { what, got, want }));
        }
        Ok(())
    }

    fn unit_channel(&self, ppn: Ppn) -> (u32, u32) {
        let g = &self.cfg.geometry;
        let unit = g.unit_of_block(g.block_of(ppn));
        (unit, g.channel_of_unit(unit))
    }

    /// Reads a page. `data: None` reads the OOB only (a spare-area read: the
    /// channel moves only the OOB bytes). With a fault model, a page with more
    /// bit errors than ECC corrects is [`NandError::Uncorrectable`]: the area
    /// that failed holds corrupted bytes, the other one what the cells hold.
    pub fn read(&mut self, ppn: Ppn, at_ns: u64, data: Option<&mut [u8]>, oob: &mut [u8]) -> Result<OpTime, NandError> {
        self.read_at_level(ppn, at_ns, 0, data, oob)
    }

    /// A read retry: rereads the page with read thresholds shifted to retry
    /// level `level` (1 and up; see `bit_errors.rs`). Without a fault model it
    /// is a plain read.
    pub fn read_retry(&mut self, ppn: Ppn, at_ns: u64, level: u8, data: Option<&mut [u8]>, oob: &mut [u8]) -> Result<OpTime, NandError> {
        self.read_at_level(ppn, at_ns, level, data, oob)
    }

    /// Retry levels the fault model offers (0 without one).
    pub fn read_retry_levels(&self) -> u8 {
        self.faults.map_or(0, |f| f.read_retries)
    }

    fn read_at_level(&mut self, ppn: Ppn, at_ns: u64, level: u8, mut data: Option<&mut [u8]>, oob: &mut [u8]) -> Result<OpTime, NandError> {
        self.check_ppn(ppn)?;
        let g = self.cfg.geometry;
        self.check_len("read oob", oob.len(), g.oob_size as usize)?;
        if let Some(buf) = &data {
            // In metadata-only mode an empty buffer reads the data area (its
            // time, its bit errors) without handing it up: the mode stores no data.
            let discard = buf.is_empty() && self.cfg.data_mode == DataMode::MetaOnly;
            if !discard {
                self.check_len("read data", buf.len(), g.page_size as usize)?;
            }
        }
        let kind = if data.is_some() { FlashOp::Read } else { FlashOp::OobRead };
        if self.begin_op(kind, ppn, at_ns)?.is_some() {
            // A read changes nothing on the array: the cut just stops it.
            return Err(NandError::PowerLoss);
        }
        let (unit, channel) = self.unit_channel(ppn);
        self.spare.read(ppn, oob);
        let bytes = match &mut data {
            Some(buf) => {
                if !buf.is_empty() {
                    self.copy_data_out(ppn, buf);
                }
                self.stats.reads += 1;
                g.page_size + g.oob_size
            }
            None => {
                self.stats.oob_reads += 1;
                g.oob_size
            }
        };
        if level > 0 {
            self.stats.read_retries += 1;
        }
        let t = self.cfg.timing;
        let time = self.clocks.read(unit, channel, at_ns, t.read_ns, t.transfer_ns(bytes));
        self.trace_times(time.done_ns, time.done_ns);
        if let (Some(model), true) = (self.faults, self.programs.get(ppn) > 0) {
            let key = self.page_key(ppn);
            let data_bytes = if data.is_some() { g.page_size } else { 0 };
            let d = model.decode(key, data_bytes, g.oob_size, self.cfg.endurance, level);
            self.stats.corrected_bits += d.corrected_bits;
            if !d.ok() {
                self.stats.uncorrectable_reads += 1;
                // What the controller hands up from a failed decode is not the
                // page: corrupt it so a caller that ignored the error would
                // see a checksum mismatch rather than good data.
                if d.oob_failed {
                    scramble(&model, key, 0, oob);
                }
                if let (true, Some(buf)) = (d.data_failed, data) {
                    scramble(&model, key, 1, buf);
                }
                return Err(NandError::Uncorrectable {
                    ppn,
                    data: d.data_failed,
                    oob: d.oob_failed,
                    done_ns: time.done_ns,
                });
            }
        }
        Ok(time)
    }

    fn page_key(&self, ppn: Ppn) -> PageKey {
        let block = self.cfg.geometry.block_of(ppn);
        PageKey {
            ppn,
            erase_count: self.erase_counts[block as usize],
        }
    }

    /// Sets (or with `None` removes) the fault model: bit errors, ECC, read
    /// retry, program and erase failures. Refuses invalid parameters.
    pub fn set_fault_model(&mut self, model: Option<FaultModel>) -> Result<(), String> {
        if let Some(m) = &model {
            m.validate()?;
        }
        self.faults = model;
        Ok(())
    }

    pub fn fault_model(&self) -> Option<FaultModel> {
        self.faults
    }

    /// Metadata-only mode: the FTL will not read the data of `ppn` again (a
    /// metadata page no checkpoint it may fall back to names any more). The
    /// array drops it, as it never stores the data of pages programmed without
    /// any: a later read yields zeros. The spare area stays. Costs no time and
    /// counts no operation; a no-op in full-data mode, which stores everything.
    pub fn forget_data(&mut self, ppn: Ppn) {
        if let Data::Meta(m) = &mut self.data {
            m.remove(ppn);
        }
    }

    /// Installs the codec of the FTL's OOB record: in metadata-only mode,
    /// spare areas of its common form are stored packed from now on (see
    /// `spare.rs`); reads return the same bytes either way. No effect in
    /// full-data mode, which stores every byte. The codec's protocol bytes
    /// take that many bytes a page: an allocation the machine refuses is an
    /// error (the codec is then not installed).
    pub fn set_spare_codec(&mut self, codec: Option<SpareCodec>) -> Result<(), MemoryError> {
        self.spare.set_codec(codec)
    }

    /// Would reading the data of `ppn` fail ECC at every retry level? For
    /// checkers that must tell a reported loss from a bug. No operation, no time.
    pub fn inspect_unreadable(&self, ppn: Ppn) -> bool {
        let Some(model) = self.faults else { return false };
        if self.programs.get(ppn) == 0 {
            return false;
        }
        let g = self.cfg.geometry;
        (0..=model.read_retries).all(|level| {
            !model
                .decode(self.page_key(ppn), g.page_size, g.oob_size, self.cfg.endurance, level)
                .ok()
        })
    }

    fn copy_data_out(&self, ppn: Ppn, buf: &mut [u8]) {
        let ps = self.cfg.geometry.page_size as usize;
        match &self.data {
            // An erased page's bytes in the store are stale (erase does not touch
            // them, it is too costly): it reads as 0xFF.
            Data::Full(_) if self.programs.get(ppn) == 0 => buf.fill(0xFF),
            Data::Full(d) => buf.copy_from_slice(&d[ppn as usize * ps..(ppn as usize + 1) * ps]),
            Data::Meta(m) => {
                if !m.read(ppn, buf) {
                    buf.fill(if self.programs.get(ppn) == 0 { 0xFF } else { 0 });
                }
            }
        }
    }

    /// Programs an erased page. `data` is a full page, or empty in `MetaOnly` mode
    /// (the data is then not stored).
    pub fn program(&mut self, ppn: Ppn, at_ns: u64, data: &[u8], oob: &[u8]) -> Result<OpTime, NandError> {
        self.program_hinted(ppn, at_ns, data, oob, None)
    }

    /// [`Nand::program`], with a hint for a metadata-only array: `data` is
    /// likely to differ little from that of page `like` (the earlier version
    /// of an FTL table page). The array may then keep it as a patch (`kept.rs`);
    /// reads return the bytes programmed all the same, whatever `like` holds
    /// or later becomes. Same operation, time and counts as `program`.
    pub fn program_like(&mut self, ppn: Ppn, at_ns: u64, data: &[u8], oob: &[u8], like: Ppn) -> Result<OpTime, NandError> {
        self.program_hinted(ppn, at_ns, data, oob, Some(like))
    }

    fn program_hinted(&mut self, ppn: Ppn, at_ns: u64, data: &[u8], oob: &[u8], like: Option<Ppn>) -> Result<OpTime, NandError> {
        self.log_mutation(at_ns, || Mutation::Program {
            ppn,
            data: data.to_vec(),
            oob: oob.to_vec(),
            like,
        });
        self.check_ppn(ppn)?;
        let g = self.cfg.geometry;
        self.check_len("program oob", oob.len(), g.oob_size as usize)?;
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
        self.programs.set(ppn, 1);
        let np = &mut self.next_page[block as usize];
        *np = (*np).max(index + 1);
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
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
                self.tear_page(ppn, garbage, data, oob);
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
                self.spare.write(ppn, oob);
                self.store_data(ppn, data, like);
            }
            Some(cut) => {
                self.tear_page(ppn, cut, data, oob);
                self.write_through_page(ppn)?;
                return Err(NandError::PowerLoss);
            }
        }
        self.write_through_page(ppn)?;
        self.image_op_done()?;
        self.stats.programs += 1;
        let (unit, channel) = self.unit_channel(ppn);
        let t = self.cfg.timing;
        let bytes = if data.is_empty() {
            g.page_size + g.oob_size
        } else {
            (ps + os) as u32
        };
        let time = self.clocks.program(unit, channel, at_ns, t.transfer_ns(bytes), t.program_ns);
        // The cells change once the data is in the die's register.
        self.trace_times(time.transferred_ns, time.done_ns);
        Ok(time)
    }

    fn store_data(&mut self, ppn: Ppn, data: &[u8], like: Option<Ppn>) {
        let ps = self.cfg.geometry.page_size as usize;
        match &mut self.data {
            Data::Full(d) => d[ppn as usize * ps..(ppn as usize + 1) * ps].copy_from_slice(data),
            Data::Meta(m) => {
                if !data.is_empty() {
                    m.insert(ppn, data, like);
                }
            }
        }
    }

    /// Leaves what a torn program of `target_data`/`target_oob` leaves.
    fn tear_page(&mut self, ppn: Ppn, cut: PowerCut, target_data: &[u8], target_oob: &[u8]) {
        let g = self.cfg.geometry;
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        let mut rng = cut.rng();
        let mut spare = vec![0u8; os];
        self.spare.read(ppn, &mut spare);
        tear_program(&mut rng, cut.torn, Area::Oob, &mut spare, target_oob);
        self.spare.write(ppn, &spare);
        match &mut self.data {
            Data::Full(d) => {
                let target: Vec<u8> = if target_data.is_empty() {
                    vec![0u8; ps]
                } else {
                    target_data.to_vec()
                };
                // The page was erased: its stored bytes are stale, start from 0xFF.
                let region = &mut d[ppn as usize * ps..(ppn as usize + 1) * ps];
                region.fill(0xFF);
                tear_program(&mut rng, cut.torn, Area::Data, region, &target);
            }
            Data::Meta(m) => {
                if !target_data.is_empty() {
                    let mut buf = vec![0xFF; ps];
                    m.read(ppn, &mut buf);
                    tear_program(&mut rng, cut.torn, Area::Data, &mut buf, target_data);
                    m.insert(ppn, &buf, None);
                }
            }
        }
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
                tear_program(&mut rng, cut.torn, Area::Oob, &mut spare, new);
                self.spare.write(ppn, &spare);
            }
            if let Some(new) = data {
                tear_program(&mut rng, cut.torn, Area::Data, &mut current, new);
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
        let (unit, channel) = self.unit_channel(ppn);
        let t = self.cfg.timing;
        let bytes = data.map_or(0, |d| d.len()) + oob.map_or(0, |o| o.len());
        let time = self
            .clocks
            .program(unit, channel, at_ns, t.transfer_ns(bytes as u32), t.partial_program_ns);
        self.trace_times(time.transferred_ns, time.done_ns);
        Ok(time)
    }

    /// Erases a block. At its endurance the erase fails and the block goes bad.
    pub fn erase(&mut self, block: BlockId, at_ns: u64) -> Result<OpTime, NandError> {
        self.log_mutation(at_ns, || Mutation::Erase { block });
        let g = self.cfg.geometry;
        if block >= g.block_count() {
            return Err(self.violation(Violation::BlockOutOfRange {
                block,
                block_count: g.block_count(),
            }));
        }
        if self.bad[block as usize] {
            return Err(self.bad_block_op(block, FlashOp::Erase, at_ns));
        }
        let cut = self.begin_op(FlashOp::Erase, block, at_ns)?;
        let unit = g.unit_of_block(block);
        let t = self.cfg.timing;
        if let Some(cut) = cut {
            self.tear_erase(block, cut);
            return Err(NandError::PowerLoss);
        }
        let time = self.clocks.erase(unit, at_ns, t.erase_ns);
        let ec = self.erase_counts[block as usize];
        let random_failure = self
            .faults
            .is_some_and(|m| m.uniform(&[SALT_ERASE, block as u64, ec as u64]) < m.erase_fail_p(ec, self.cfg.endurance));
        if ec >= self.cfg.endurance || random_failure {
            self.bad[block as usize] = true;
            self.stats.erase_failures += 1;
            if let Some(img) = &mut self.image {
                img.write_block(block, self.erase_counts[block as usize], true)?;
            }
            self.image_op_done()?;
            return Err(NandError::EraseFailed(block));
        }
        self.erase_counts[block as usize] += 1;
        self.stats.erases += 1;
        let first = g.ppn(block, 0);
        for ppn in first..first + g.pages_per_block {
            self.erase_page(ppn);
        }
        self.spare.block_erased(block);
        self.next_page[block as usize] = 0;
        self.write_through_block(block)?;
        self.image_op_done()?;
        self.trace_times(time.done_ns - t.erase_ns, time.done_ns);
        Ok(time)
    }

    fn erase_page(&mut self, ppn: Ppn) {
        let g = self.cfg.geometry;
        let os = g.oob_size as usize;
        if self.programs.get(ppn) == 0 {
            return;
        }
        self.programs.set(ppn, 0);
        self.spare.erase_page(ppn, os);
        // The data bytes are left as they are: `programs == 0` makes them read as
        // erased, and a program overwrites the whole page.
        if let Data::Meta(m) = &mut self.data {
            m.remove(ppn);
        }
    }

    /// A torn erase: wear is spent, a random subset of pages is erased, the rest
    /// keep their contents (`Partial`) or hold random bytes (`Garbage`).
    fn tear_erase(&mut self, block: BlockId, cut: PowerCut) {
        let g = self.cfg.geometry;
        let mut rng = cut.rng();
        if cut.torn != Torn::None {
            self.erase_counts[block as usize] += 1;
            let first = g.ppn(block, 0);
            for ppn in first..first + g.pages_per_block {
                if rng.gen_bool(0.5) {
                    self.erase_page(ppn);
                } else if cut.torn == Torn::Garbage {
                    let os = g.oob_size as usize;
                    self.programs.set(ppn, self.programs.get(ppn).max(1));
                    let mut spare = vec![0u8; os];
                    rng.fill(&mut spare[..]);
                    self.spare.write(ppn, &spare);
                    let mut junk = vec![0u8; g.page_size as usize];
                    rng.fill(&mut junk[..]);
                    if self.cfg.data_mode == DataMode::Full {
                        self.store_data(ppn, &junk, None);
                    }
                }
            }
            self.next_page[block as usize] = (0..g.pages_per_block)
                .rposition(|i| self.programs.get(first + i) > 0)
                .map_or(0, |i| i as u32 + 1);
        }
        // A failed write-through after a power cut has nowhere to be reported; the
        // image then simply lacks the torn state, which is also a possible outcome.
        let _ = self.write_through_block(block);
    }

    fn write_through_page(&mut self, ppn: Ppn) -> Result<(), ImageError> {
        if self.image.is_none() {
            return Ok(());
        }
        let g = self.cfg.geometry;
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        let oob = self.spare.slice(ppn, os).expect("images store every spare byte");
        let programs = self.programs.get(ppn);
        let erased;
        let data = match &self.data {
            Data::Full(_) if programs == 0 => {
                erased = vec![0xFFu8; ps];
                &erased[..]
            }
            Data::Full(d) => &d[ppn as usize * ps..(ppn as usize + 1) * ps],
            Data::Meta(_) => unreachable!("images always store full data"),
        };
        self.image.as_mut().expect("checked").write_page(ppn, programs, oob, data)
    }

    fn write_through_block(&mut self, block: BlockId) -> Result<(), ImageError> {
        if self.image.is_none() {
            return Ok(());
        }
        let g = self.cfg.geometry;
        let (ec, bad) = (self.erase_counts[block as usize], self.bad[block as usize]);
        self.image.as_mut().expect("checked").write_block(block, ec, bad)?;
        let first = g.ppn(block, 0);
        for ppn in first..first + g.pages_per_block {
            self.write_through_page(ppn)?;
        }
        Ok(())
    }

    // ---- Inspection, for checkers and tests. Costs no time, counts no operation,
    // ---- ignores power. An FTL must never use these: recovery reads through `read`.

    pub fn inspect_oob(&self, ppn: Ppn) -> Vec<u8> {
        let mut oob = vec![0u8; self.cfg.geometry.oob_size as usize];
        self.spare.read(ppn, &mut oob);
        oob
    }
    pub fn inspect_data(&self, ppn: Ppn) -> Vec<u8> {
        let mut buf = vec![0u8; self.cfg.geometry.page_size as usize];
        self.copy_data_out(ppn, &mut buf);
        buf
    }
    pub fn inspect_programs(&self, ppn: Ppn) -> u8 {
        self.programs.get(ppn)
    }
    /// The physical wear of a block (the FTL keeps its own, possibly lagging, count).
    pub fn inspect_erase_count(&self, block: BlockId) -> u32 {
        self.erase_counts[block as usize]
    }
    pub fn inspect_bad(&self, block: BlockId) -> bool {
        self.bad[block as usize]
    }
    /// Metadata-only mode: how many pages' data the array holds (the FTL's
    /// metadata pages it has not erased or forgotten); 0 in full-data mode.
    pub fn inspect_stored_data_pages(&self) -> usize {
        match &self.data {
            Data::Meta(m) => m.len(),
            Data::Full(_) => 0,
        }
    }
    /// Metadata-only mode: the bytes of page data the array holds (each
    /// page kept whole or as a patch against a shared whole page, `kept.rs`:
    /// every shared page counted once); 0 in full-data mode.
    pub fn inspect_stored_data_bytes(&self) -> u64 {
        match &self.data {
            Data::Meta(m) => m.bytes(),
            Data::Full(_) => 0,
        }
    }

    /// Fault injection: XORs `mask` into byte `offset` of a programmed page's
    /// data (`in_oob` false) or OOB, as a retention error or a flipped byte in an
    /// image would. Costs no time and counts no operation; written through to an
    /// image. Returns false (and changes nothing) for an erased page or an
    /// offset past the area.
    pub fn flip_byte(&mut self, ppn: Ppn, in_oob: bool, offset: usize, mask: u8) -> Result<bool, NandError> {
        self.check_ppn(ppn)?;
        let g = self.cfg.geometry;
        let (os, ps) = (g.oob_size as usize, g.page_size as usize);
        if self.programs.get(ppn) == 0 || offset >= if in_oob { os } else { ps } {
            return Ok(false);
        }
        if in_oob {
            let mut spare = vec![0u8; os];
            self.spare.read(ppn, &mut spare);
            spare[offset] ^= mask;
            self.spare.write(ppn, &spare);
        } else {
            match &mut self.data {
                Data::Full(d) => d[ppn as usize * ps + offset] ^= mask,
                Data::Meta(m) => {
                    let mut page = vec![0u8; ps];
                    if !m.read(ppn, &mut page) {
                        return Ok(false);
                    }
                    page[offset] ^= mask;
                    m.insert(ppn, &page, None);
                }
            }
        }
        self.write_through_page(ppn)?;
        Ok(true)
    }
}

/// Corrupts a buffer a failed ECC decode hands up: one byte in 64 flipped,
/// positions and masks drawn from the page's key.
fn scramble(model: &FaultModel, key: PageKey, area: u64, buf: &mut [u8]) {
    let mut h = model
        .uniform(&[SALT_GARBAGE, key.ppn as u64, key.erase_count as u64, area])
        .to_bits();
    for chunk in buf.chunks_mut(64) {
        h = crate::bit_errors::splitmix64(h);
        let i = (h % chunk.len() as u64) as usize;
        chunk[i] ^= ((h >> 32) as u8) | 1;
    }
}

/// First byte where `new` has a 1 bit over a 0 bit of `old`.
fn first_bit_set(old: &[u8], new: &[u8]) -> Option<usize> {
    old.iter().zip(new).position(|(o, n)| n & !o != 0)
}
