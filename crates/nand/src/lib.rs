//! txftl-nand: the NAND flash model every FTL in txftl runs on.
//!
//! It is the oracle of the physics: geometry, the programming rules of SLC and
//! MLC/TLC cells, simulated timing with overlapping dies and channels, wear and
//! grown bad blocks, RAM or file-image storage, and power cuts that tear the
//! operation in flight, or at an instant of the device clock every operation
//! in flight on any die. See [`Nand`] for the chip contract.

mod array;
mod bit_errors;
mod erased;
mod error;
mod fault;
mod geometry;
mod image;
mod kept;
mod memory;
mod page_data;
mod preset;
mod programs;
mod redo;
mod spare;
mod timing;

pub use array::{DataDigest, DataMode, FlashOp, Nand, NandConfig, NandStats, OpTrace, ViolationPolicy, PROGRAMS_COUNTED};
pub use bit_errors::{FaultModel, FAULT_PROFILES};
pub use erased::is_erased;
pub use error::{gib, Holder, ImageError, MemoryError, NandError, Violation};
pub use fault::{InstantCut, PowerCut, Torn};
pub use geometry::{BlockId, CellType, Geometry, GeometryError, Ppn};
pub use image::{ImageSync, IMAGE_MAGIC, IMAGE_VERSION};
pub use memory::{available as available_memory, check as check_memory, filled as try_filled, Zeroable};
pub use preset::{preset, Preset, PRESET_NAMES};
pub use redo::{Mutation, MutationRecord};
pub use spare::{FieldsSpare, PackedSpare, ReadFields, SpareCodec};
pub use timing::{OpTime, Timing, LATENCY_NS_MAX};

impl Preset {
    /// A configuration for this preset with the given data mode.
    pub fn config(&self, data_mode: DataMode, violation_policy: ViolationPolicy) -> NandConfig {
        NandConfig {
            geometry: self.geometry,
            timing: self.timing,
            endurance: self.endurance,
            data_mode,
            violation_policy,
        }
    }
}
