//! Memory of the FTL: an estimate of what a device's tables need, so that a
//! device too large for the machine is refused with a typed error that says
//! how much it needs (`DeviceError::Memory`) before anything is allocated,
//! and fallible allocation of the largest table (the L2P), so that an
//! allocation the machine refuses is that error too, never an abort.

use crate::checkpoint::{Record, TableLayout};
use crate::error::{DeviceError, Result};
use serde::Serialize;
use txftl_nand::{DataMode, Geometry};

/// Bytes of DRAM per block: state (1), valid count (4), erase count (4),
/// write pointer (4), last sequence number (8), clean flag (1), the greedy
/// victim index (12), the free pool's B-tree entry (about 16), erase counts
/// as checkpointed (4), block records as persisted (8) and the checkpoint's
/// copy of them (8).
const PER_BLOCK: u64 = 1 + 4 + 4 + 4 + 8 + 1 + 12 + 16 + 4 + 8 + 8;
/// Bytes of DRAM per table page: the directories of the current, previous
/// and next checkpoints (8 + 4 + 8), its dirty bit, and the checkpoint's list
/// of pages to write (5).
const PER_TABLE_PAGE: u64 = 8 + 4 + 8 + 1 + 5;
/// Bytes a metadata-only array spends per metadata page besides its data:
/// the map entry and the spare area it keeps whole.
const PER_KEPT_PAGE: u64 = 160;

/// What the FTL of a device needs in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FtlMemory {
    /// Logical pages the device will offer.
    pub logical_pages: u32,
    /// The FTL's DRAM: the L2P (4 bytes a logical page), a bit per physical
    /// page for mapped and for known-intact, the block table, the checkpoint
    /// directories and the ring's page map.
    pub tables: u64,
    /// What a metadata-only array keeps in memory for this FTL: the
    /// protocol's packed OOB bytes (`PersistHooks::packed_protocol_bytes` and
    /// `PersistHooks::flag_bytes` a page),
    /// and metadata pages: three
    /// checkpoints (the current one, the previous one, and the one being
    /// written: table pages, most of them as patches, and records), the
    /// superblocks, every protocol log page. 0 with full data (the array
    /// counts every page itself).
    pub metadata: u64,
}

impl FtlMemory {
    pub fn total(&self) -> u64 {
        self.tables + self.metadata
    }

    /// `ring_pages`: pages of the checkpoint ring, then of each protocol ring.
    pub(crate) fn estimate(
        geo: &Geometry,
        logical_pages: u32,
        data_mode: DataMode,
        ring_pages: &[u64],
        protocol_section_max: usize,
        packed: PackedBytes,
    ) -> FtlMemory {
        let (pages, blocks) = (geo.page_count() as u64, geo.block_count() as u64);
        let layout = TableLayout::new(logical_pages, geo.block_count(), geo.page_size);
        let t = layout.table_pages() as u64;
        let record = Record::encoded_len(t as u32, protocol_section_max) as u64;
        let tables = 4 * logical_pages as u64
            + 2 * pages.div_ceil(8)
            + PER_BLOCK * blocks
            + PER_TABLE_PAGE * t
            + 4 * ring_pages.first().copied().unwrap_or(0)
            + 2 * record
            + crate::ftl::flag_counts_memory(geo);
        let metadata = match data_mode {
            DataMode::Full => 0,
            DataMode::MetaOnly => {
                let ps = geo.page_size as u64;
                // Table pages: the three versions of each take about one
                // page and two patches (the array's `kept.rs`; patches grow
                // when a page changes much between checkpoints): counted as
                // 1.25 pages. Records, superblocks and log pages whole.
                let whole = 3 * record.div_ceil(ps) + 2 * geo.pages_per_block as u64 + ring_pages.iter().skip(1).sum::<u64>();
                let protocol = pages * packed.per_page();
                whole * (ps + PER_KEPT_PAGE) + 3 * t * PER_KEPT_PAGE + t * ps * 5 / 4 + protocol
            }
        };
        FtlMemory {
            logical_pages,
            tables,
            metadata,
        }
    }
}

/// The bytes a metadata-only array keeps per page for the protocol, beside
/// its own packed fields: its protocol bytes and its flag bytes.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PackedBytes {
    pub protocol: usize,
    pub flags: usize,
}

impl PackedBytes {
    pub fn of<H: crate::PersistHooks + ?Sized>(hooks: &H) -> PackedBytes {
        PackedBytes {
            protocol: hooks.packed_protocol_bytes(),
            flags: hooks.flag_bytes(),
        }
    }

    fn per_page(self) -> u64 {
        (self.protocol.min(txftl_nand::PackedSpare::PROTOCOL_MAX) + self.flags.min(crate::oob::FLAG_BYTES)) as u64
    }
}

/// Refuses `needed` bytes when the machine reports less available.
pub(crate) fn check(needed: u64) -> Result<()> {
    txftl_nand::check_memory(needed).map_err(DeviceError::Memory)
}

/// `vec![value; n]`, a refused allocation a typed error; a zero `value`
/// takes memory only where entries are written.
pub(crate) fn filled<T: txftl_nand::Zeroable>(n: usize, value: T) -> Result<Vec<T>> {
    txftl_nand::try_filled(n, value, (n * std::mem::size_of::<T>()) as u64).map_err(DeviceError::Memory)
}
