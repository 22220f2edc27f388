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
//! [`NandError::Violation`](crate::NandError::Violation), per [`ViolationPolicy`].
//!
//! This file holds the array's types; its operations live in the child
//! modules, each named for what it holds: `create`, `accessors`, `issue`
//! (what every operation goes through), `read`, `program`, `run` (programs
//! extending a block's run), `erase`, `store`
//! (how the cells' contents are kept), `power`, `in_flight`, `logs`,
//! `faults`, `write_through` (the image file) and `inspect`.

use crate::bit_errors::FaultModel;
use crate::fault::PowerCut;
use crate::geometry::Geometry;
use crate::image::ImageFile;
use crate::kept::KeptPages;
use crate::page_data::PageData;
use crate::programs::Programs;
use crate::redo::MutationRecord;
use crate::spare::Spare;
use crate::timing::{Clocks, Timing};
use serde::Serialize;

mod accessors;
mod create;
mod erase;
mod faults;
mod in_flight;
mod inspect;
mod issue;
mod logs;
mod power;
mod program;
mod read;
mod run;
mod store;
mod write_through;
use in_flight::InFlight;
pub use in_flight::OpTrace;
pub use read::DataDigest;

/// Whether page data is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum DataMode {
    /// Data and OOB of every page are stored.
    Full,
    /// Only OOB is stored, plus the data of pages programmed with a full buffer
    /// (the FTL's own metadata pages, and host pages sent with their bytes).
    /// Programs with an empty data buffer store no data; reading such a page
    /// yields zeros. The OOB is stored packed
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
    /// Die time of every operation, ns on the device clock: a read's sense
    /// and transfer, a program's transfer and program (a partial program's
    /// too), an erase. What a share of the flash's work (GC's) is measured
    /// against; waits for a busy die or channel are not in it.
    pub busy_ns: u64,
    /// The per-page program histogram, cumulative: entry `k - 1` counts the
    /// times a page took its `k`-th program since its erase (entry 0: first
    /// programs; entry 1: pages partially programmed once; the last entry,
    /// `PROGRAMS_COUNTED` programs or more). Differences of two snapshots
    /// give a span's, and the highest nonzero entry the most programs a
    /// page took in it, against the NOP.
    pub pages_reaching: [u64; PROGRAMS_COUNTED],
}

/// Programs a page [`NandStats::pages_reaching`] tells apart.
pub const PROGRAMS_COUNTED: usize = 8;

impl NandStats {
    /// One more page took its `n`-th program since its erase.
    #[inline]
    pub(crate) fn page_reached(&mut self, n: u8) {
        self.pages_reaching[(n as usize).clamp(1, PROGRAMS_COUNTED) - 1] += 1;
    }

    /// The histogram of the span since `base` (an earlier snapshot).
    pub fn pages_reaching_since(&self, base: &NandStats) -> [u64; PROGRAMS_COUNTED] {
        std::array::from_fn(|k| self.pages_reaching[k] - base.pages_reaching[k])
    }

    pub fn total_ops(&self) -> u64 {
        self.reads + self.oob_reads + self.programs + self.program_failures + self.partial_programs + self.erases
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
    Full(PageData),
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
    /// The instant of a cut armed by time ([`Nand::arm_cut_at_ns`]; u64::MAX:
    /// none): operations issued after it find power gone.
    instant_ns: u64,
    /// What every program, partial program and erase wrote (`redo.rs`).
    redo_log: Option<Vec<MutationRecord>>,
    /// Bit errors, ECC and program/erase failures (`bit_errors.rs`); `None`: off.
    faults: Option<FaultModel>,
    /// As shipped: no program or erase was ever issued (not even a torn one).
    factory_fresh: bool,
}
