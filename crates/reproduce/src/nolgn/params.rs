//! The parameters of a run of `reproduce nolgn`: the paper's FEMU setup
//! (sec. 4.1: 4 KiB pages, 1,024 pages a block, 50 / 500 / 5,000 us) on the
//! `femu` preset, its workloads (sqlite-bench overwrite, YCSB A to F, TPC-C),
//! scaled down where one machine cannot hold them (and saying so).

use super::paper;
use crate::paper::Head;
use serde::Serialize;
use txftl_nand::Preset;

/// The parameters of a run, all printed.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    // `head.device`: The device (set by the run).
    #[serde(flatten)]
    pub head: Head,
    /// Channels and dies per channel (the preset's 8 x 8; fewer with `--tiny`).
    pub channels: u32,
    pub dies_per_channel: u32,
    /// Logical pages of the device (set by the run).
    pub logical_pages: u32,
    /// The database page size (the flash page, as the paper's 4 KB).
    pub page_size: u32,
    /// Figs. 6 to 9: sqlite-bench value sizes, B.
    pub sizes: Vec<u32>,
    /// Entries of each size's table (`fillseq`, not measured), and the
    /// `overwrite` operations measured (db_bench's `--num`: the same count).
    pub entries: u64,
    /// `PRAGMA wal_autocheckpoint` of Base-WAL and SW-WAL, and NoLgn-FTL's
    /// NORMAL-mode group, pages (the paper's 1,000).
    pub wal_autocheckpoint: u32,
    pub nolgn_group_pages: u32,
    /// SQLite's page cache, pages (db_bench's 4,096).
    pub cache_pages: u32,
    /// The host's clean-page cache, pages (the Linux page cache under the
    /// paper's ext4; the file system's `set_read_cache`).
    pub read_cache_pages: usize,
    /// Random 4 KiB writes to each device of Figs. 6 to 10 before the file
    /// system is made: its logical pages' worth (the paper's 4 million on
    /// 16 GB); this figure is NoLgn-FTL's device's.
    pub precondition_writes: u64,
    /// Fig. 10: YCSB records loaded and operations run per workload.
    pub ycsb_records: u64,
    pub ycsb_operations: u64,
    /// Fig. 11: TPC-C (one connection), its scale divisor, transactions;
    /// the device's free space before each run, percent of its logical pages.
    pub tpcc_warehouses: u32,
    pub tpcc_scale: u32,
    pub tpcc_transactions: u64,
    pub free_pct: Vec<u32>,
    /// The run-length sweep (the paper gives neither run's length): YCSB A
    /// and F, and TPC-C at the least free space, continue on the same
    /// device after their measured run until `longer` times its length,
    /// and are judged again over the whole.
    pub longer: u32,
    /// What is smaller than the paper's setup, and by how much.
    pub scaled_down: Vec<String>,
}

impl Params {
    pub fn new(quick: bool, seed: u64) -> Params {
        let p = txftl_nand::preset("femu").expect("the femu preset");
        let (bpp, entries, records, scale, transactions) = if quick {
            (8, 4_000, 3_000, 20, 4_000)
        } else {
            (64, 100_000, 100_000, 5, 20_000)
        };
        // The paper's 16 GB: the array keeps no data for the aged pages
        // (written without, metadata-only), only for the pages SQLite writes.
        let mut scaled_down = Vec::new();
        if quick {
            scaled_down.push(format!(
                "capacity: {:.1} GiB raw instead of 16 GB; the aging writes one device's worth of logical pages, as the paper's 4 million 4 KB writes do on its 16 GB",
                capacity_gib(&p, bpp)
            ));
        }
        scaled_down.push(format!(
            "Figs. 6-9: tables of {} entries and as many overwrites per value size instead of {}",
            crate::fmt::thousands(entries),
            crate::fmt::thousands(paper::OVERWRITES),
        ));
        scaled_down.push(format!(
            "Fig. 10: YCSB of {} records and {} operations per workload",
            crate::fmt::thousands(records),
            crate::fmt::thousands(if quick { 4 * records } else { records })
        ));
        scaled_down.push(format!(
            "Fig. 11: TPC-C of {} warehouses at 1/{scale} of the item, customer and order counts, {} transactions per point",
            paper::TPCC_WAREHOUSES,
            crate::fmt::thousands(transactions)
        ));
        Params {
            head: Head {
                quick,
                seed,
                preset: "femu".into(),
                device: String::new(),
                blocks_per_plane: bpp,
                host: None,
            },
            channels: p.geometry.channels,
            dies_per_channel: p.geometry.dies_per_channel,
            logical_pages: 0,
            page_size: p.geometry.page_size,
            sizes: paper::SIZES.to_vec(),
            entries,
            wal_autocheckpoint: paper::NORMAL_GROUP_PAGES,
            nolgn_group_pages: paper::NORMAL_GROUP_PAGES,
            cache_pages: 4_096,
            read_cache_pages: crate::host::read_cache_pages(p.geometry.page_size as usize),
            precondition_writes: 0,
            ycsb_records: records,
            ycsb_operations: if quick { 4 * records } else { records },
            tpcc_warehouses: paper::TPCC_WAREHOUSES,
            tpcc_scale: scale,
            tpcc_transactions: transactions,
            free_pct: paper::FREE_PCT.to_vec(),
            longer: 3,
            scaled_down,
        }
    }

    /// The preset at the run's size.
    pub fn preset(&self) -> Preset {
        let mut p = txftl_nand::preset(&self.head.preset).expect("the femu preset");
        p.geometry.blocks_per_plane = self.head.blocks_per_plane;
        p.geometry.channels = self.channels;
        p.geometry.dies_per_channel = self.dies_per_channel;
        p
    }

    /// The smallest sizes that still run every experiment (tests, debug builds).
    pub fn tiny(&mut self) {
        self.head.quick = true;
        self.channels = 2;
        self.dies_per_channel = 2;
        self.head.blocks_per_plane = 16;
        self.sizes = vec![256, 4096, 16384];
        self.entries = 60;
        self.ycsb_records = 100;
        self.ycsb_operations = 100;
        self.tpcc_warehouses = 1;
        self.tpcc_scale = 300;
        self.tpcc_transactions = 40;
        self.free_pct = vec![75, 25];
        self.longer = 2;
        self.scaled_down.push(
            "--tiny (tests): 256 MiB of 2 channels x 2 dies, sizes 256 B, 4 KiB and 16 KiB, 60 entries; YCSB of 100; TPC-C of 1 warehouse at 1/300, 40 transactions, at 75% and 25% free; the run-length sweep at 2x".into(),
        );
    }
}

fn capacity_gib(p: &Preset, bpp: u32) -> f64 {
    let mut g = p.geometry;
    g.blocks_per_plane = bpp;
    g.capacity_bytes() as f64 / (1u64 << 30) as f64
}
