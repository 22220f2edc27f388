//! Named device presets: the devices of the papers, plus `tiny` for crash
//! tests and its SLC twin `tiny-slc` for protocols that program a page more
//! than once.
//!
//! Where a paper gives a number it is used as is; every other number is an
//! assumption stated in `source` (and in docs/device-files.md's preset table).
//! Capacities are scaled down by default (`blocks_per_plane`); the CLI can
//! override `blocks_per_plane` to scale them up or further down.

use crate::geometry::{CellType, Geometry};
use crate::timing::Timing;
use serde::Serialize;
use std::borrow::Cow;

/// A device: the flash array, its timing and endurance, with a name and what
/// it models. The built-in presets borrow static text; a device read from a
/// file (the CLI's `--config`, `--mqsim-config`) owns its strings.
#[derive(Clone, Debug, Serialize)]
pub struct Preset {
    pub name: Cow<'static, str>,
    /// What the preset models.
    pub models: Cow<'static, str>,
    /// Where its numbers come from, and which are assumptions.
    pub source: Cow<'static, str>,
    pub geometry: Geometry,
    pub timing: Timing,
    /// Erase cycles a block survives; the next erase fails and the block goes bad.
    pub endurance: u32,
}

pub const PRESET_NAMES: &[&str] = &["jasmine", "mobius", "lighttx", "flagcommit", "femu", "tiny", "tiny-slc"];

/// Looks a preset up by name.
pub fn preset(name: &str) -> Option<Preset> {
    Some(match name {
        "jasmine" => jasmine(),
        "mobius" => mobius(),
        "lighttx" => lighttx(),
        "flagcommit" => flagcommit(),
        "femu" => femu(),
        "tiny" => tiny(),
        "tiny-slc" => tiny_slc(),
        _ => return None,
    })
}

fn jasmine() -> Preset {
    Preset {
        name: Cow::Borrowed("jasmine"),
        models: Cow::Borrowed("OpenSSD Jasmine board as used by X-FTL (SIGMOD 2013): Samsung K9LCG08U1M MLC, 8 KiB pages, 128 pages/block"),
        source: Cow::Borrowed(
            "page size, pages/block and MLC from X-FTL sec. 6.1; 4 channels x 2 dies, 448 B OOB, \
                 read 60 us / program 800 us / erase 1.5 ms, 80 MB/s bus and 3,000-cycle endurance are \
                 assumed datasheet-class values for 3x-nm MLC (the paper gives no latencies); \
                 capacity scaled to 1 GiB",
        ),
        geometry: Geometry {
            channels: 4,
            dies_per_channel: 2,
            planes_per_die: 1,
            blocks_per_plane: 128,
            pages_per_block: 128,
            page_size: 8192,
            oob_size: 448,
            cell: CellType::Mlc,
            nop: 1,
        },
        timing: Timing {
            read_ns: 60_000,
            program_ns: 800_000,
            partial_program_ns: 800_000,
            erase_ns: 1_500_000,
            transfer_ns_per_kib: 12_500,
        },
        endurance: 3_000,
    }
}

/// `jasmine`'s board and assumed values with Möbius's 4 KiB + 224 B flash:
/// the same 1 GiB in twice the blocks.
fn mobius() -> Preset {
    let board = jasmine();
    Preset {
        name: Cow::Borrowed("mobius"),
        models: Cow::Borrowed(
            "OpenSSD Jasmine board as Möbius (ICDCS 2017) Table II runs it: Micron MT29F32G08CBABA MLC, \
             4 KiB + 224 B pages",
        ),
        source: Cow::Borrowed(
            "page and spare size, MLC and the board from Möbius Table II; 4 channels x 2 dies, \
                 128 pages/block, read 60 us / program 800 us / erase 1.5 ms, 80 MB/s bus and 3,000-cycle \
                 endurance are the `jasmine` preset's assumed values (the paper gives no latencies); \
                 capacity scaled from 64 GB to 1 GiB. Its figure of write amplification ran on the \
                 board's 8 KiB + 448 B flash (Samsung K9LCG08U1M): that is the `jasmine` preset",
        ),
        geometry: Geometry {
            blocks_per_plane: 2 * board.geometry.blocks_per_plane,
            page_size: 4096,
            oob_size: 224,
            ..board.geometry
        },
        ..board
    }
}

fn lighttx() -> Preset {
    Preset {
        name: Cow::Borrowed("lighttx"),
        models: Cow::Borrowed("LightTx (ICCD 2013) Table II: 4 KiB pages, 64 pages/block, 8 packages x 8 planes"),
        source: Cow::Borrowed(
            "page size, pages/block, packages, planes, read 25 us, program 200 us, erase 1.5 ms from \
                 LightTx Table II; SLC with NOP 4, 128 B OOB, 400 MB/s bus and 100,000-cycle endurance \
                 assumed; capacity scaled from 32 GB to 512 MiB",
        ),
        geometry: Geometry {
            channels: 8,
            dies_per_channel: 1,
            planes_per_die: 8,
            blocks_per_plane: 32,
            pages_per_block: 64,
            page_size: 4096,
            oob_size: 128,
            cell: CellType::Slc,
            nop: 4,
        },
        timing: Timing {
            read_ns: 25_000,
            program_ns: 200_000,
            partial_program_ns: 200_000,
            erase_ns: 1_500_000,
            transfer_ns_per_kib: 2_500,
        },
        endurance: 100_000,
    }
}

fn flagcommit() -> Preset {
    Preset {
        name: Cow::Borrowed("flagcommit"),
        models: Cow::Borrowed("Flag Commit (TKDE) Table 2: SLC, 2 KiB pages, 128 KiB blocks, partial programming level 2"),
        source: Cow::Borrowed(
            "page and block size, read 80 us, program 200 us, partial program 200 us, NOP 2, erase \
                 1.5 ms from Flag Commit Table 2; eight packages as in its sec. 5.1; 64 B OOB, 400 MB/s \
                 bus and 100,000-cycle endurance assumed; capacity scaled from 32 GB to 512 MiB",
        ),
        geometry: Geometry {
            channels: 8,
            dies_per_channel: 1,
            planes_per_die: 1,
            blocks_per_plane: 512,
            pages_per_block: 64,
            page_size: 2048,
            oob_size: 64,
            cell: CellType::Slc,
            nop: 2,
        },
        timing: Timing {
            read_ns: 80_000,
            program_ns: 200_000,
            partial_program_ns: 200_000,
            erase_ns: 1_500_000,
            transfer_ns_per_kib: 2_500,
        },
        endurance: 100_000,
    }
}

fn femu() -> Preset {
    Preset {
        name: Cow::Borrowed("femu"),
        models: Cow::Borrowed("NoLgn-FTL's FEMU setup (JSA 2025): 4 KiB pages, 1024 pages/block"),
        source: Cow::Borrowed(
            "page size, pages/block, read 50 us, program 500 us, erase 5 ms from NoLgn-FTL sec. 4; \
                 8 channels x 8 dies (FEMU's default layout), MLC rules, 128 B OOB, 400 MB/s bus and \
                 3,000-cycle endurance assumed; capacity scaled from 16 GB to 2 GiB",
        ),
        geometry: Geometry {
            channels: 8,
            dies_per_channel: 8,
            planes_per_die: 1,
            blocks_per_plane: 8,
            pages_per_block: 1024,
            page_size: 4096,
            oob_size: 128,
            cell: CellType::Mlc,
            nop: 1,
        },
        timing: Timing {
            read_ns: 50_000,
            program_ns: 500_000,
            partial_program_ns: 500_000,
            erase_ns: 5_000_000,
            transfer_ns_per_kib: 2_500,
        },
        endurance: 3_000,
    }
}

fn tiny() -> Preset {
    Preset {
        name: Cow::Borrowed("tiny"),
        models: Cow::Borrowed("a toy MLC array for exhaustive crash tests: 2 dies, 32 blocks of 8 pages of 512 B"),
        source: Cow::Borrowed("made up to be small; timings are round SLC-class numbers"),
        geometry: Geometry {
            channels: 1,
            dies_per_channel: 2,
            planes_per_die: 1,
            blocks_per_plane: 16,
            pages_per_block: 8,
            page_size: 512,
            oob_size: 64,
            cell: CellType::Mlc,
            nop: 1,
        },
        timing: Timing {
            read_ns: 25_000,
            program_ns: 200_000,
            partial_program_ns: 200_000,
            erase_ns: 1_500_000,
            transfer_ns_per_kib: 2_500,
        },
        endurance: 100_000,
    }
}

/// `tiny` with SLC cells: the toy array for protocols that commit by partial
/// programming (a protocol entry's `NandNeeds` picks it).
fn tiny_slc() -> Preset {
    let toy = tiny();
    Preset {
        name: Cow::Borrowed("tiny-slc"),
        models: Cow::Borrowed(
            "a toy SLC array for exhaustive crash tests of protocols that program a page more than once: \
             `tiny` with SLC cells, NOP 4",
        ),
        source: Cow::Borrowed(
            "made up to be small, as `tiny`; NOP 4 leaves room beyond the 2 programs a page Flag Commit's \
             protocols need; timings are `tiny`'s round SLC-class numbers",
        ),
        geometry: Geometry {
            cell: CellType::Slc,
            nop: 4,
            ..toy.geometry
        },
        ..toy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_preset_is_valid() {
        for name in PRESET_NAMES {
            let p = preset(name).unwrap();
            p.geometry.validate().unwrap();
            assert_eq!(p.name, *name);
        }
        assert!(preset("nope").is_none());
    }

    #[test]
    fn paper_numbers_are_kept() {
        let l = preset("lighttx").unwrap();
        assert_eq!((l.geometry.page_size, l.geometry.pages_per_block), (4096, 64));
        assert_eq!(
            (l.timing.read_ns, l.timing.program_ns, l.timing.erase_ns),
            (25_000, 200_000, 1_500_000)
        );
        let f = preset("flagcommit").unwrap();
        assert_eq!(f.geometry.page_size * f.geometry.pages_per_block, 128 * 1024);
        assert_eq!((f.geometry.nop, f.timing.read_ns), (2, 80_000));
        let n = preset("femu").unwrap();
        assert_eq!((n.geometry.pages_per_block, n.timing.erase_ns), (1024, 5_000_000));
        let m = preset("mobius").unwrap();
        assert_eq!(
            (m.geometry.page_size, m.geometry.oob_size, m.geometry.cell),
            (4096, 224, CellType::Mlc)
        );
        let (t, s) = (preset("tiny").unwrap(), preset("tiny-slc").unwrap());
        assert_eq!((s.geometry.cell, s.geometry.nop), (CellType::Slc, 4));
        assert_eq!(
            Geometry {
                cell: t.geometry.cell,
                nop: t.geometry.nop,
                ..s.geometry
            },
            t.geometry,
            "tiny-slc is tiny but for its cells"
        );
        assert_eq!(s.timing, t.timing);
        let j = preset("jasmine").unwrap();
        assert_eq!(
            (j.geometry.page_size, j.geometry.pages_per_block, j.geometry.cell),
            (8192, 128, CellType::Mlc)
        );
    }
}
