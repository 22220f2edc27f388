//! The mapping table (L2P) behind a small trait: where the table lives,
//! what a lookup costs, and what a checkpoint makes of it. A protocol picks
//! one with `Hooks::Mapping`; the framework's code is the same for all.
//!
//! - [`Dense`]: the whole table in DRAM, persisted by checkpoints as table
//!   pages (the L2P pages of the checkpoint ring, named by its directory),
//!   rolled forward from the pages' spare areas after the last one.
//! - [`Unpersisted`]: the whole table in DRAM, never written: checkpoints
//!   write no L2P page, recovery starts from an empty table and the protocol
//!   rebuilds every mapping from the pages it scans (TxFlash's SCC and BPCC,
//!   which keep no mapping table on flash), and trims are refused (a trim is
//!   made durable only by a checkpoint's L2P).
//! - A cached table (DFTL's demand paging, which Möbius builds on) keeps
//!   only some table pages in DRAM: a lookup of an entry whose page is not
//!   cached first reads that page from flash ([`Mapping::fetch`]), and a
//!   cache full of changed pages asks for a checkpoint, which writes them
//!   ([`Mapping::needs_checkpoint`]). The emulator keeps the whole table in
//!   its own memory either way; what the cache changes is the device's cost.
//!
//! Entries are physical page numbers, [`UNMAPPED`] for none.

use crate::checkpoint::UNMAPPED;
use crate::device::Lpn;
use crate::error::Result;
use std::ops::Range;
use txftl_nand::Ppn;

/// A logical-to-physical table.
pub trait Mapping: Clone + Send + Sized {
    /// Whether checkpoints persist the table. If not, recovery starts from
    /// an empty table and the protocol must rebuild every mapping from the
    /// pages it scans (`Capabilities::scans_pages`; the framework refuses
    /// the one without the other), and trims are refused.
    const PERSISTED: bool;

    /// A table of `logical_pages` entries, all unmapped. The largest
    /// allocation of a device: an allocation the machine refuses is
    /// `DeviceError::Memory`, never an abort.
    fn unmapped(logical_pages: u32) -> Result<Self>;

    fn len(&self) -> u32;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The physical page of `lpn`, or [`UNMAPPED`].
    fn get(&self, lpn: Lpn) -> Ppn;

    fn set(&mut self, lpn: Lpn, ppn: Ppn);

    /// Every entry, in logical order (checkers, recovery's rebuilds).
    fn entries(&self) -> &[Ppn];

    /// The entries of `lpns` (a checkpoint's table page, as it is decoded).
    fn entries_mut(&mut self, lpns: Range<usize>) -> &mut [Ppn];

    /// Before the device looks `lpn` up or changes it: the table page
    /// (index of the checkpoint's L2P pages) it must first read from flash,
    /// if its DRAM does not hold it. A table kept whole in DRAM never does.
    fn fetch(&mut self, _lpn: Lpn, _entries_per_page: u32) -> Option<u32> {
        None
    }

    /// Whether only a checkpoint can make room (every cached page changed).
    fn needs_checkpoint(&self) -> bool {
        false
    }

    /// A checkpoint wrote every changed table page: none is dirty now.
    fn checkpointed(&mut self) {}
}

/// The whole table in DRAM. `PERSISTED`: checkpoints write it.
#[derive(Clone, Debug, Default)]
pub struct DenseTable<const PERSISTED: bool> {
    ppns: Vec<Ppn>,
}

/// Today's FTL table: whole in DRAM, persisted by checkpoints.
pub type Dense = DenseTable<true>;
/// Whole in DRAM and never written: the protocol rebuilds it at every mount.
pub type Unpersisted = DenseTable<false>;

impl<const P: bool> Mapping for DenseTable<P> {
    const PERSISTED: bool = P;

    fn unmapped(logical_pages: u32) -> Result<Self> {
        Ok(DenseTable {
            ppns: crate::memory::filled(logical_pages as usize, UNMAPPED)?,
        })
    }

    fn len(&self) -> u32 {
        self.ppns.len() as u32
    }

    #[inline]
    fn get(&self, lpn: Lpn) -> Ppn {
        self.ppns[lpn as usize]
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, ppn: Ppn) {
        self.ppns[lpn as usize] = ppn;
    }

    fn entries(&self) -> &[Ppn] {
        &self.ppns
    }

    fn entries_mut(&mut self, lpns: Range<usize>) -> &mut [Ppn] {
        &mut self.ppns[lpns]
    }
}
