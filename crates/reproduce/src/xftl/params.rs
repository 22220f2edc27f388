//! The parameters of a run of `reproduce xftl`: the paper's setup, scaled
//! down where one machine cannot hold it (and saying so).

use super::{modes, paper};
use crate::fmt::thousands;
use crate::paper::Head;
use serde::Serialize;
use txftl_sqlite::Mode;

/// The parameters of a run, all printed.
#[derive(Clone, Debug, Serialize)]
pub struct Params {
    #[serde(flatten)]
    pub head: Head,
    /// The FTL writes its mapping table at every flush (the paper's
    /// firmware, sec. 6.3.4); Table 1's ablation runs with the other setting.
    pub map_at_flush: bool,
    pub xl2p_entries: u32,
    pub rows: u32,
    pub transactions: u32,
    pub table1_k: u32,
    pub ks: Vec<u32>,
    pub validities_pct: Vec<u32>,
    pub restart_validity_pct: u32,
    /// Restart measurements per mode, cut where
    /// `compare::restart_points` says (spread over the second
    /// half of the run and through the transaction; each run's `Restart`
    /// records where its cut fell).
    pub restart_cuts: u32,
    pub tpcc_warehouses: u32,
    pub tpcc_scale: u32,
    pub tpcc_transactions: u64,
    /// Table 4's run-length sweep (the paper gives no run's length): its
    /// write and read mixes run again this many times as long.
    pub tpcc_longer: u32,
    pub tpcc_validity_pct: u32,
    pub modes: Vec<Mode>,
    /// What is smaller than the paper's setup, and by how much.
    pub scaled_down: Vec<String>,
}

impl Params {
    pub fn new(quick: bool, seed: u64) -> Params {
        let blocks_per_plane = if quick { 32 } else { 128 };
        let rows = if quick { 6_000 } else { 60_000 };
        let transactions = if quick { 200 } else { 1_000 };
        let tpcc_scale = if quick { 10 } else { 1 };
        let tpcc_transactions = if quick { 300 } else { 2_000 };
        let mut scaled_down = vec![
            "device: the jasmine preset models the OpenSSD board's chips (8 KiB pages, 128 pages a block, MLC) at 1 GiB raw (the board has 64 GiB of flash)".to_string(),
            format!(
                "TPC-C: {} warehouse(s) instead of the paper's {} (one connection, as in the paper); {} transactions per mix and mode",
                1,
                paper::TPCC_WAREHOUSES,
                thousands(tpcc_transactions)
            ),
        ];
        if quick {
            scaled_down.push(format!(
                "--quick: device {} blocks per plane (256 MiB raw), partsupp {} tuples (paper 60,000), {} transactions per run (paper 1,000), K in 1,5,10,20 (paper 1..20), 10 restart cuts per mode instead of 20, TPC-C cardinalities divided by {}",
                blocks_per_plane, rows, transactions, tpcc_scale
            ));
        }
        Params {
            head: Head {
                quick,
                seed,
                preset: "jasmine".into(),
                device: String::new(),
                blocks_per_plane,
                host: None,
            },
            map_at_flush: true,
            xl2p_entries: txftl_protocols::xftl::DEFAULT_ENTRIES,
            rows,
            transactions,
            table1_k: 5,
            ks: if quick { vec![1, 5, 10, 20] } else { vec![1, 5, 10, 15, 20] },
            validities_pct: vec![30, 50, 70],
            restart_validity_pct: 50,
            // More cuts than compare's five (20, 10 with --quick): RBJ leaves
            // a hot journal only in the short stretch between its journal's
            // sync and its deletion.
            restart_cuts: if quick { 10 } else { 20 },
            tpcc_warehouses: 1,
            tpcc_scale,
            tpcc_transactions,
            tpcc_longer: 3,
            tpcc_validity_pct: 0,
            modes: modes().to_vec(),
            scaled_down,
        }
    }

    /// Tests only: the smallest sizes that still run every experiment.
    pub fn tiny(&mut self) {
        self.head.quick = true;
        self.head.blocks_per_plane = 16;
        self.rows = 600;
        self.transactions = 20;
        self.ks = vec![1, 5];
        self.tpcc_scale = 100;
        self.tpcc_transactions = 30;
        self.tpcc_longer = 2;
        self.scaled_down.push(
            "--tiny (tests only): 16 blocks per plane, 600 tuples, 20 transactions, K in 1,5, TPC-C scale 1/100, 30 transactions, its run-length sweep at 2x".into(),
        );
    }
}
