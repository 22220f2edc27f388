//! txftl-ftl: the FTL framework every protocol stands on, and the device interface.
//!
//! Page-level mapping in DRAM; an OOB record on every page (logical page,
//! sequence number, CRCs, protocol bytes); write streams striped over the
//! parallel units; GC with greedy or cost-benefit victims and free-block
//! watermarks; dynamic and static wear leveling; incremental mapping
//! checkpoints (the L2P and block-table pages that changed, and a directory of
//! every table page) in a ring of blocks, named by a superblock kept in two
//! copies; roll-forward recovery from the OOB of pages written after the last
//! checkpoint.
//!
//! Protocols plug in through [`Hooks`]. The `plain` protocol is the framework
//! with no hooks (see `txftl-protocols`).

mod any_device;
mod area;
mod bits;
mod blocks;
mod check;
pub mod checkpoint;
mod config;
mod counters;
mod device;
mod ecc;
pub mod entry;
mod error;
pub mod extensions;
mod fetch;
mod ftl;
mod gc;
mod gc_plan;
mod hooks;
mod log;
mod mapping;
mod memory;
pub mod oob;
mod op;
mod options;
mod persist;
mod recovery;
mod reserve;
mod scan;
mod summary;
pub mod superblock;
mod tables;
#[cfg(test)]
mod test_hooks;
mod writeback;

/// The L2P entry of a logical page that maps nowhere (a recovery update
/// with it takes the page back to unmapped).
pub use any_device::{AnyDevice, DurablePart, DurableState, MountFailure, Registered};
pub use checkpoint::UNMAPPED;
pub use config::{Canary, FtlConfig, GcPolicy, DEFAULT_OVERPROVISION_PCT};
pub use counters::{CounterSpec, Group, ProtocolCounters, Row, StatSpec, PROTOCOL_COUNTERS_MAX};
pub use device::{Device, DeviceInfo, DeviceStats, Lpn, RecoveryReport, Tid};
pub use entry::{CellNeed, NandHas, NandNeeds, ProtocolEntry, SqlJournal};
pub use error::{DeviceError, Result};
pub use extensions::{Call, EntryStatus, Extension, RecordVersion};
pub use ftl::{FlagOutcome, FlagProgram, Ftl, Writer};
pub use hooks::{
    Capabilities, EventHooks, GcHooks, Hooks, PersistHooks, RecoveredUpdate, RecoveryHooks, ScannedPage, SpareProbe, VictimPage, VictimPlan,
};
pub use log::{LogPage, LogSource};
pub use mapping::{CacheCounts, Cached, Dense, DenseTable, Evicted, Eviction, Fetch, Mapping, Unpersisted};
pub use memory::FtlMemory;
pub use oob::{Oob, PageKind, SpareBytes, FLAG_BYTES, PROTOCOL_BYTES};
pub use op::{ArgKind, Op, OpArg, OpKind};
pub use options::{OptionSpec, ProtocolOptions};
pub use recovery::formatted_protocol;
pub use scan::{LiveSpares, ScannedPages};
pub use txftl_nand::{BlockId, Ppn};
