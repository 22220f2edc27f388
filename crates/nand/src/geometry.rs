//! Geometry of a NAND array and the flat addresses used everywhere above it.
//!
//! Addresses are flat integers so the hot paths index plain vectors:
//! - a *block id* is `0..block_count()`; blocks are grouped by die (parallel unit):
//!   unit `u` owns blocks `u * blocks_per_unit() .. (u + 1) * blocks_per_unit()`;
//! - a *ppn* (physical page number) is `block * pages_per_block + page_index`;
//! - unit `u` sits on channel `u % channels`, so striping round-robin over units
//!   touches every channel before it touches a second die of the same channel.
//!
//! Planes are part of the geometry (they set the capacity) but multi-plane
//! operations are not modelled: a plane's blocks are timed as blocks of its die.

use serde::{Deserialize, Serialize};

/// Physical page number: `block * pages_per_block + page_index`.
pub type Ppn = u32;
/// Physical block id, `0..block_count()`.
pub type BlockId = u32;

/// The cell technology decides which programming rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CellType {
    /// One bit per cell: partial programming allowed (only clears bits, at most NOP times).
    Slc,
    /// Two bits per cell: each page programmed once, pages of a block in order.
    Mlc,
    /// Three bits per cell: same rules as MLC.
    Tlc,
}

impl std::fmt::Display for CellType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            CellType::Slc => "SLC",
            CellType::Mlc => "MLC",
            CellType::Tlc => "TLC",
        })
    }
}

impl CellType {
    pub fn code(self) -> u8 {
        match self {
            CellType::Slc => 1,
            CellType::Mlc => 2,
            CellType::Tlc => 3,
        }
    }
    pub fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(CellType::Slc),
            2 => Some(CellType::Mlc),
            3 => Some(CellType::Tlc),
            _ => None,
        }
    }
    /// MLC and TLC must program the pages of a block in order, each once.
    pub fn in_order_programming(self) -> bool {
        !matches!(self, CellType::Slc)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Geometry {
    pub channels: u32,
    pub dies_per_channel: u32,
    pub planes_per_die: u32,
    pub blocks_per_plane: u32,
    pub pages_per_block: u32,
    /// Data area of a page, bytes.
    pub page_size: u32,
    /// Spare (out-of-band) area of a page, bytes.
    pub oob_size: u32,
    pub cell: CellType,
    /// Number of partial programs allowed per page between erases (SLC only; 1 otherwise).
    pub nop: u8,
}

/// A geometry that cannot describe a device.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GeometryError {
    #[error("geometry field `{0}` must be greater than zero")]
    Zero(&'static str),
    #[error("page size {0} is not a multiple of 512 bytes")]
    PageSize(u32),
    #[error("OOB size {0} is below the 16-byte minimum")]
    OobSize(u32),
    #[error("NOP {nop} is not valid for {cell} cells (SLC allows 1..=8, MLC/TLC exactly 1)")]
    Nop { nop: u8, cell: CellType },
    #[error("geometry has {0} pages, more than the 2^31 a 32-bit page number can address")]
    TooLarge(u64),
}

impl Geometry {
    pub fn validate(&self) -> Result<(), GeometryError> {
        let fields = [
            ("channels", self.channels),
            ("dies_per_channel", self.dies_per_channel),
            ("planes_per_die", self.planes_per_die),
            ("blocks_per_plane", self.blocks_per_plane),
            ("pages_per_block", self.pages_per_block),
            ("page_size", self.page_size),
            ("oob_size", self.oob_size),
        ];
        for (name, value) in fields {
            if value == 0 {
                return Err(GeometryError::Zero(name));
            }
        }
        if !self.page_size.is_multiple_of(512) {
            return Err(GeometryError::PageSize(self.page_size));
        }
        if self.oob_size < 16 {
            return Err(GeometryError::OobSize(self.oob_size));
        }
        let nop_ok = match self.cell {
            CellType::Slc => (1..=8).contains(&self.nop),
            CellType::Mlc | CellType::Tlc => self.nop == 1,
        };
        if !nop_ok {
            return Err(GeometryError::Nop {
                nop: self.nop,
                cell: self.cell,
            });
        }
        let pages = self.channels as u64
            * self.dies_per_channel as u64
            * self.planes_per_die as u64
            * self.blocks_per_plane as u64
            * self.pages_per_block as u64;
        if pages >= (1u64 << 31) {
            return Err(GeometryError::TooLarge(pages));
        }
        Ok(())
    }

    /// Parallel units (dies) in the array.
    pub fn unit_count(&self) -> u32 {
        self.channels * self.dies_per_channel
    }
    pub fn blocks_per_unit(&self) -> u32 {
        self.planes_per_die * self.blocks_per_plane
    }
    pub fn block_count(&self) -> u32 {
        self.unit_count() * self.blocks_per_unit()
    }
    pub fn page_count(&self) -> u32 {
        self.block_count() * self.pages_per_block
    }
    /// Raw capacity of the data areas, bytes.
    pub fn capacity_bytes(&self) -> u64 {
        self.page_count() as u64 * self.page_size as u64
    }
    #[inline]
    pub fn block_of(&self, ppn: Ppn) -> BlockId {
        div(ppn, self.pages_per_block)
    }
    #[inline]
    pub fn page_index_of(&self, ppn: Ppn) -> u32 {
        ppn - self.block_of(ppn) * self.pages_per_block
    }
    #[inline]
    pub fn ppn(&self, block: BlockId, page_index: u32) -> Ppn {
        block * self.pages_per_block + page_index
    }
    #[inline]
    pub fn unit_of_block(&self, block: BlockId) -> u32 {
        div(block, self.blocks_per_unit())
    }
    #[inline]
    pub fn channel_of_unit(&self, unit: u32) -> u32 {
        unit - div(unit, self.channels) * self.channels
    }
}

/// `n / d` (`d` > 0) as a shift where `d` is a power of two, as pages per
/// block and blocks per unit are on every preset: the hot paths ask for a
/// page's block and a block's unit several times a flash operation, and a
/// division costs tens of cycles where a shift costs one (the test is
/// predicted, the same every time).
#[inline]
pub(crate) fn div(n: u32, d: u32) -> u32 {
    if d.is_power_of_two() {
        n >> d.trailing_zeros()
    } else {
        n / d
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn div_is_division_for_powers_of_two_and_others() {
        for d in [1, 2, 3, 64, 100, 128, 256, 384, 1 << 20] {
            for n in [0, 1, d - 1, d, d + 1, 12_345, u32::MAX / 3, u32::MAX] {
                assert_eq!(div(n, d), n / d, "{n} / {d}");
            }
        }
    }

    fn sample() -> Geometry {
        Geometry {
            channels: 2,
            dies_per_channel: 2,
            planes_per_die: 1,
            blocks_per_plane: 8,
            pages_per_block: 4,
            page_size: 512,
            oob_size: 64,
            cell: CellType::Mlc,
            nop: 1,
        }
    }

    #[test]
    fn zero_fields_are_typed_errors() {
        let mut g = sample();
        g.pages_per_block = 0;
        assert_eq!(g.validate(), Err(GeometryError::Zero("pages_per_block")));
        let mut g = sample();
        g.page_size = 1000;
        assert_eq!(g.validate(), Err(GeometryError::PageSize(1000)));
        let mut g = sample();
        g.nop = 2;
        assert!(matches!(g.validate(), Err(GeometryError::Nop { .. })));
        let mut g = sample();
        g.blocks_per_plane = u32::MAX;
        assert!(matches!(g.validate(), Err(GeometryError::TooLarge(_))));
    }

    #[test]
    fn addressing_round_trips() {
        let g = sample();
        g.validate().unwrap();
        assert_eq!(g.block_count(), 32);
        assert_eq!(g.unit_of_block(7), 0);
        assert_eq!(g.unit_of_block(8), 1);
        assert_eq!(g.channel_of_unit(3), 1);
        let ppn = g.ppn(9, 3);
        assert_eq!((g.block_of(ppn), g.page_index_of(ppn)), (9, 3));
    }
}
