//! The parameters of a run of `reproduce flagcommit`: Table 2's setup on
//! the `flagcommit` preset (SLC, 2 KiB pages, 64-page blocks, NOP 2), the
//! database a sixteenth of the device as 2 GB is of the paper's 32 GB,
//! scaled down where one machine cannot run 4.5 hours of trace (and saying
//! so).

use super::paper;
use crate::paper::Head;
use serde::Serialize;
use txftl_nand::Preset;

/// The parameters of a run, all printed.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    #[serde(flatten)]
    pub head: Head,
    /// Logical pages of the device (set by the run).
    pub logical_pages: u32,
    /// The database's budget, DB pages, and flash pages per DB page (Table
    /// 2: 8 KB logical pages on 2 KB flash pages, 4).
    pub db_pages: u32,
    pub flash_pages_per_db_page: u32,
    pub clients: u32,
    pub warehouses: u32,
    pub buffer_pages: u32,
    /// Transactions run unmeasured first, then measured, per point.
    pub warmup_transactions: u64,
    pub transactions: u64,
    /// The default abort ratio (Table 2's delta), and Fig. 14's sweep.
    pub abort_pct: u32,
    pub deltas: Vec<u32>,
    /// The device's fill with cold data before the load, percent of its
    /// logical pages: the default, and the sweep (up to 92%, about the most
    /// the database leaves room for: it takes 7% of the logical pages).
    pub fill_pct: u32,
    pub fills: Vec<u32>,
    /// Sec. 5.3: the extended protocols' max_c (the paper's 3) and Fig.
    /// 15's sweep; Fig. 19's buffer sizes, pages.
    pub max_c: u32,
    pub max_cs: Vec<u32>,
    pub buffers: Vec<u32>,
    /// Table 3's device: the preset at the paper's 32 GB.
    pub table3_device: String,
    /// What is smaller than the paper's setup, and by how much.
    pub scaled_down: Vec<String>,
}

impl Params {
    pub fn new(quick: bool, seed: u64) -> Params {
        let (bpp, tx) = if quick { (128, 2_000) } else { (512, 20_000) };
        let p = txftl_nand::preset("flagcommit").expect("the flagcommit preset");
        let mut g = p.geometry;
        g.blocks_per_plane = bpp;
        let pages = g.page_count() as u64;
        let fpp = paper::LOGICAL_PAGE_BYTES / g.page_size;
        let db_pages = (pages / paper::DB_SHARE_DIVISOR / fpp as u64) as u32;
        let scaled_down = vec![
            format!(
                "capacity: {} MiB instead of 32 GB, the database {} MiB ({} pages of {} KiB) instead of 2 GB: a sixteenth of the device, as in the paper",
                g.capacity_bytes() >> 20,
                (db_pages as u64 * paper::LOGICAL_PAGE_BYTES as u64) >> 20,
                crate::fmt::thousands(db_pages as u64),
                paper::LOGICAL_PAGE_BYTES >> 10
            ),
            format!(
                "trace: {} transactions of warm-up and {} measured per point instead of 30 minutes and 4 hours",
                crate::fmt::thousands(tx),
                crate::fmt::thousands(tx)
            ),
        ];
        Params {
            head: Head {
                quick,
                seed,
                preset: "flagcommit".into(),
                device: String::new(),
                blocks_per_plane: bpp,
                host: None,
            },
            logical_pages: 0,
            db_pages,
            flash_pages_per_db_page: fpp,
            clients: paper::CLIENTS,
            warehouses: paper::WAREHOUSES,
            buffer_pages: paper::BUFFER_PAGES,
            warmup_transactions: tx,
            transactions: tx,
            abort_pct: paper::ABORT_PCT,
            deltas: vec![1, 5, 10, 15, 20, 30, 50],
            fill_pct: 90,
            fills: vec![0, 50, 75, 90, 92],
            max_c: paper::MAX_C,
            max_cs: vec![2, 3, 4],
            buffers: if quick {
                vec![256, 512, 4096]
            } else {
                vec![256, 512, 1024, 2048, 4096]
            },
            table3_device: String::new(),
            scaled_down,
        }
    }

    /// The preset at the run's size.
    pub fn preset(&self) -> Preset {
        let mut p = txftl_nand::preset(&self.head.preset).expect("the flagcommit preset");
        p.geometry.blocks_per_plane = self.head.blocks_per_plane;
        p
    }

    /// The preset at the paper's 32 GB (Table 3).
    pub fn table3_preset(&self) -> Preset {
        let mut p = txftl_nand::preset(&self.head.preset).expect("the flagcommit preset");
        let g = p.geometry;
        let per_block = g.pages_per_block as u64 * g.page_size as u64;
        let planes = (g.channels * g.dies_per_channel * g.planes_per_die) as u64;
        p.geometry.blocks_per_plane = (paper::SSD_BYTES / per_block / planes) as u32;
        p
    }

    /// The smallest sizes that still run every experiment (tests, debug builds).
    pub fn tiny(&mut self) {
        self.head.quick = true;
        self.head.blocks_per_plane = 16;
        self.db_pages = 64;
        self.clients = 10;
        self.warehouses = 2;
        self.buffer_pages = 64;
        self.warmup_transactions = 150;
        self.transactions = 150;
        self.deltas = vec![1, 5, 20, 50];
        self.fills = vec![0, 90];
        self.max_cs = vec![2, 3];
        self.buffers = vec![32, 64];
        self.scaled_down.push(
            "--tiny (tests): 16 MiB, 64 DB pages, 10 clients, 2 warehouses, 64 buffer frames, 150 + 150 transactions, delta 1, 5, 20, 50, fill 0 and 90%, max_c 2 and 3, buffers of 32 and 64 pages".into(),
        );
    }
}
