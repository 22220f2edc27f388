//! The parameters of a run of `reproduce mobius`: the paper's setup (Table
//! II's board with its 4 KiB flash, sec. V-A's compound writes), scaled
//! down where one machine cannot hold it (and saying so).

use super::paper;
use crate::paper::Head;
use serde::Serialize;
use txftl_nand::Preset;

/// Fig. 9's fileserver file set: 2,000 files of 128 KiB mean (about 250 MiB)
/// on the 1 GiB device.
const FILESERVER_FILES: u32 = 2_000;

/// The parameters of a run, all printed.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    // `head.device`: The device of Figs. 7 and 8 (set by the run).
    #[serde(flatten)]
    pub head: Head,
    /// Translation pages cached in device DRAM, the same for DFTL and
    /// Möbius (the paper gives no CMT size): the protocols' default, an
    /// eighth of the table.
    pub cmt_pages: u32,
    /// The cache sizes Fig. 7's random DFTL and DWRITE runs are swept over,
    /// as divisors of the table's pages (8: the run's own).
    pub cmt_divisors: Vec<u32>,
    /// Fig. 7's compound-write sizes, pages.
    pub sizes: Vec<u32>,
    /// Compound writes per size, interface and pattern, averaged.
    pub iterations: u32,
    /// The random pattern's range, logical pages (the paper's 5 GB).
    pub random_range_pages: u32,
    /// Fig. 8: the preset's bound on write bandwidth, MB/s: every die
    /// programming a page per program time, or the channels' transfer rate
    /// if lower (the paper's 95 MB/s is its board's, never compared).
    pub max_write_mb_s: f64,
    /// Fig. 11's device (its DFTL rolls forward the blocks written since its
    /// checkpoint; the capacity bounds the zones).
    pub recovery_device: String,
    pub recovery_blocks_per_plane: u32,
    /// Fig. 11's zones: data written since the last persistence point, MiB.
    pub zones_mib: Vec<u32>,
    /// Fig. 10: the board's 8 KiB + 448 B flash (the `jasmine` preset) at
    /// this size; the TPC-C run whose trace it replays; the share of the
    /// logical pages written once before each replay.
    pub wa_device: String,
    pub wa_blocks_per_plane: u32,
    pub tpcc: crate::tpcc_trace::TpccRun,
    pub fill_pct: u32,
    /// Fig. 9's Filebench personalities on the file system.
    pub filebench: super::filebench::FilebenchRun,
    /// What is smaller than the paper's setup, and by how much.
    pub scaled_down: Vec<String>,
}

impl Params {
    pub fn new(quick: bool, seed: u64) -> Params {
        let p = txftl_nand::preset("mobius").expect("the mobius preset");
        let page = p.geometry.page_size as u64;
        let range = (paper::FIG7_RANDOM_RANGE_BYTES / page) as u32;
        // Room for the 5 GB range and a sixth more for GC, the rings and
        // over-provisioning.
        let bpp = blocks_per_plane_for(&p, paper::FIG7_RANDOM_RANGE_BYTES * 6 / 5);
        let iterations = if quick { 10 } else { paper::FIG7_ITERATIONS };
        // Fig. 11: 32 GiB and zones up to the paper's 4 GB (quick: 4 GiB, up to 1 GiB).
        let (recovery_gib, zones_mib) = if quick {
            (4, vec![64, 256, 1024])
        } else {
            (32, vec![256, 1024, 4096])
        };
        let recovery_bpp = blocks_per_plane_for(&p, recovery_gib << 30);
        let mut scaled_down = vec![format!(
            "capacity: {:.1} GiB raw instead of the board's 64 GB (the random range, 5 GB, fits with room to spare; nothing else depends on it)",
            capacity_gib(&p, bpp)
        )];
        scaled_down.push(format!(
            "Figs. 9, 10: 1 GiB of 4 KiB (Fig. 9) and 8 KiB (Fig. 10) flash instead of 64 GB, TPC-C of 1 warehouse, {} transactions",
            if quick { "1,000" } else { "4,000" }
        ));
        scaled_down.push(format!(
            "Fig. 9 Filebench: fileserver of {} files instead of Filebench's 10,000 (1.25 GB: more than the 1 GiB device), {} loops of one thread per personality instead of 50 and 100 threads for 60 s",
            if quick { 500 } else { FILESERVER_FILES },
            if quick { 300 } else { 1_500 }
        ));
        scaled_down.push(format!(
            "Fig. 11: {recovery_gib} GiB raw instead of 64 GB{}",
            if quick { ", zones up to 1 GiB instead of 4 GB" } else { "" }
        ));
        if quick {
            scaled_down.push(format!(
                "--quick: {iterations} compound writes per point instead of the paper's {}",
                paper::FIG7_ITERATIONS
            ));
        }
        Params {
            head: Head {
                quick,
                seed,
                preset: "mobius".into(),
                device: String::new(),
                blocks_per_plane: bpp,
                host: None,
            },
            cmt_pages: 0,
            cmt_divisors: vec![32, 8, 2, 1],
            sizes: paper::FIG7_SIZES.to_vec(),
            iterations,
            random_range_pages: range,
            max_write_mb_s: max_write_mb_s(&p),
            recovery_device: String::new(),
            recovery_blocks_per_plane: recovery_bpp,
            zones_mib,
            wa_device: String::new(),
            // `jasmine`'s own size, 1 GiB.
            wa_blocks_per_plane: txftl_nand::preset("jasmine").expect("the jasmine preset").geometry.blocks_per_plane,
            tpcc: crate::tpcc_trace::TpccRun {
                warehouses: 1,
                scale: 1,
                transactions: if quick { 1_000 } else { 4_000 },
                // The clients of `reproduce lighttx`'s trace (the paper's DBT-2
                // runs give none).
                clients: 7,
                seed,
            },
            fill_pct: 100,
            filebench: super::filebench::FilebenchRun::new(
                if quick { 500 } else { FILESERVER_FILES },
                if quick { 300 } else { 1_500 },
                seed,
            ),
            scaled_down,
        }
    }

    /// The preset at the run's size.
    pub fn preset(&self) -> Preset {
        let mut p = txftl_nand::preset(&self.head.preset).expect("the mobius preset");
        p.geometry.blocks_per_plane = self.head.blocks_per_plane;
        p
    }

    /// Fig. 11's preset at its size.
    pub fn recovery_preset(&self) -> Preset {
        let mut p = txftl_nand::preset(&self.head.preset).expect("the mobius preset");
        p.geometry.blocks_per_plane = self.recovery_blocks_per_plane;
        p
    }

    /// Fig. 9's preset: the 4 KiB flash at its own size (1 GiB; the tests' 64
    /// blocks per plane with `--tiny`).
    pub fn tps_preset(&self) -> Preset {
        let mut p = txftl_nand::preset(&self.head.preset).expect("the mobius preset");
        if self.wa_blocks_per_plane < p.geometry.blocks_per_plane {
            p.geometry.blocks_per_plane = self.wa_blocks_per_plane;
        }
        p
    }

    /// Fig. 10's preset (8 KiB flash) at its size.
    pub fn wa_preset(&self) -> Preset {
        let mut p = txftl_nand::preset("jasmine").expect("the jasmine preset");
        p.geometry.blocks_per_plane = self.wa_blocks_per_plane;
        p
    }

    pub fn page_bytes(&self) -> u64 {
        self.recovery_preset().geometry.page_size as u64
    }

    pub fn recovery_block_bytes(&self) -> u64 {
        let g = self.recovery_preset().geometry;
        g.page_size as u64 * g.pages_per_block as u64
    }

    /// The smallest sizes that still run every experiment (tests).
    pub fn tiny(&mut self) {
        self.head.quick = true;
        self.head.blocks_per_plane = 64;
        self.recovery_blocks_per_plane = 64;
        self.zones_mib = vec![4, 16];
        self.wa_blocks_per_plane = 64;
        self.tpcc.transactions = 60;
        self.sizes = vec![4, 16];
        self.iterations = 2;
        self.random_range_pages = 16_384;
        self.filebench = super::filebench::FilebenchRun::new(100, 20, self.head.seed);
        self.scaled_down.push(
            "--tiny (tests): 256 MiB, sizes 4 and 16 pages, 2 iterations, a 64 MiB random range; Fig. 11 zones of 4 and 16 MiB; Filebench 20 loops, a fileserver of 100 files".into(),
        );
    }
}

/// Blocks per plane of `p` holding at least `bytes` raw.
fn blocks_per_plane_for(p: &Preset, bytes: u64) -> u32 {
    let g = &p.geometry;
    let per_block_row = g.page_size as u64 * g.pages_per_block as u64 * (g.channels * g.dies_per_channel * g.planes_per_die) as u64;
    bytes.div_ceil(per_block_row) as u32
}

fn capacity_gib(p: &Preset, bpp: u32) -> f64 {
    let mut g = p.geometry;
    g.blocks_per_plane = bpp;
    g.capacity_bytes() as f64 / (1u64 << 30) as f64
}

/// Every die programming a page per program time, or the channels' bus
/// rate if that is lower, MB/s (10^6 bytes).
fn max_write_mb_s(p: &Preset) -> f64 {
    let g = &p.geometry;
    let dies = (g.channels * g.dies_per_channel) as f64;
    let page = g.page_size as f64;
    let program_s = p.timing.program_ns as f64 / 1e9;
    let transfer_s = p.timing.transfer_ns(g.page_size) as f64 / 1e9;
    let by_dies = dies * page / (program_s + transfer_s);
    let by_bus = g.channels as f64 * page / transfer_s;
    by_dies.min(by_bus) / 1e6
}
