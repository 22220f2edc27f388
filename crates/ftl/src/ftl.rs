//! The page-mapping FTL core: L2P in DRAM, write streams striped over the
//! parallel units, and the plain block-device operations. GC lives in `gc.rs`,
//! checkpoints and the superblock in `persist.rs`, mount in `recovery.rs`.
//!
//! This file holds the [`Ftl`] type and the types its parts share; the parts
//! live in the child modules, each named for what it holds: `format`,
//! `accessors`, `guards` (the checks operations start with), `stream` (the
//! write streams), `l2p`, `write`, `run` (a host's run of plain writes),
//! `read`, `flush` (trims, flushes, close), `clock`, `stats` and
//! `block_device` (the [`Device`](crate::Device) impl).
//!
//! Durability rules the whole design rests on:
//! - every program gets a fresh sequence number, recorded in its OOB;
//! - a checkpoint has a sequence number larger than every page programmed
//!   before it, and is durable once the superblock naming it is programmed;
//!   it starts once every program and erase issued is done, since its L2P
//!   and block records count them from their issue;
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
use crate::blocks::BlockTable;
use crate::config::FtlConfig;
use crate::device::{DeviceStats, RecoveryReport};
use crate::hooks::Hooks;
use crate::tables::Tables;
use txftl_nand::{BlockId, Geometry, Nand, NandStats, Ppn};

mod accessors;
mod block_device;
mod clock;
mod flags;
mod flush;
mod format;
mod guards;
mod l2p;
mod read;
mod run;
mod stats;
mod stream;
mod tx;
mod write;

pub(crate) use flags::counts_memory as flag_counts_memory;
pub use flags::{FlagOutcome, FlagProgram};
pub use write::Writer;

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
    pub(crate) programs_since_ckpt: u64,
    pub(crate) trims_pending: bool,
    pub(crate) erases_since_wl_check: u32,
    /// The NAND's die time (`NandStats::busy_ns`) when the outermost GC work
    /// under way began (`Ftl::as_gc`); `None` outside GC.
    pub(crate) gc_busy_from: Option<u64>,
    /// FTL-level counters; the flash fields stay zero here (the NAND counts its
    /// own operations, merged in by `device_stats`).
    pub(crate) counters: DeviceStats,
    /// Transactions the protocol reported begun and not ended (`tx.rs`).
    pub(crate) open_txs: std::collections::BTreeSet<crate::device::Tid>,
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
    /// Per physical page (SLC arrays with NOP above 1; empty otherwise):
    /// programs since its erase as this mount knows them, 1 after its
    /// program and one more per flag program; [`flags::UNKNOWN`] for a page
    /// programmed before the mount, where a torn flag program may have spent
    /// one unseen (`flags.rs`).
    pub(crate) flag_programs: Vec<u8>,
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
