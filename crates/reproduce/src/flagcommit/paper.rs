//! What the Flag Commit paper states (On et al., IEEE TKDE, sec. 5.1 and
//! 5.2, Table 2, Figs. 12 to 14, Table 3): its setup and its headline numbers.

/// Table 2: TPC-C's clients and warehouses, the buffer pool (pages), the
/// default abort ratio delta (percent).
pub const CLIENTS: u32 = 50;
pub const WAREHOUSES: u32 = 20;
pub const BUFFER_PAGES: u32 = 512;
pub const ABORT_PCT: u32 = 5;
/// Table 2: the logical (DB) page, bytes: 8 KB, on 2 KB flash pages.
pub const LOGICAL_PAGE_BYTES: u32 = 8 << 10;
/// Table 2: a 2 GB database on a 32 GB SSD (sec. 5.1): a sixteenth.
pub const DB_SHARE_DIVISOR: u64 = 16;
/// Sec. 5.1: the SSD's capacity, bytes (Table 3's memory is at this size).
pub const SSD_BYTES: u64 = 32 << 30;

/// Fig. 12a: throughput of AFC and CFC over BPCC and SCC, percent.
pub const AFC_OVER_BPCC: f64 = 35.0;
pub const AFC_OVER_SCC: f64 = 110.0;
pub const CFC_OVER_BPCC: f64 = 24.0;
pub const CFC_OVER_SCC: f64 = 94.0;
/// Fig. 12a's ordering.
pub const FIG12_ORDER: &str = "AFC > CFC > BPCC > SCC";

/// Fig. 13a: AFC's GC time against CFC's, BPCC's and SCC's, percent.
pub const AFC_GC_VS_CFC: f64 = -13.0;
pub const AFC_GC_VS_BPCC: f64 = -34.0;
pub const AFC_GC_VS_SCC: f64 = -58.0;
/// Fig. 13a: GC's share of the total execution cost is "over 35 and 55
/// percent" for BPCC and SCC.
pub const BPCC_GC_SHARE_OVER: f64 = 35.0;
pub const SCC_GC_SHARE_OVER: f64 = 55.0;

/// Fig. 14: the abort ratios the paper names (1 to 50 percent, CFC's
/// crossing of AFC "greater than 15 percent").
pub const DELTA_LOW: u32 = 1;
pub const DELTA_HIGH: u32 = 50;
pub const DELTA_CROSSING: u32 = 15;
/// Fig. 14a: CFC's lead over BPCC and SCC at delta 1 and 50, percent.
pub const CFC_OVER_BPCC_LOW: f64 = 12.0;
pub const CFC_OVER_BPCC_HIGH: f64 = 47.0;
pub const CFC_OVER_SCC_LOW: f64 = 77.0;
pub const CFC_OVER_SCC_HIGH: f64 = 153.0;
/// Fig. 14b: GC overhead per committed transaction, delta 1 to 50, percent.
pub const BPCC_GC_PER_COMMIT_GROWTH: f64 = 38.0;
pub const SCC_GC_PER_COMMIT_GROWTH: f64 = 72.0;

/// Table 3: memory for each protocol's data structures at 32 GB, MB.
pub const TABLE3_MB: [(&str, f64); 4] = [("afc", 59.88), ("cfc", 59.88), ("bpcc", 63.10), ("scc", 60.24)];

/// Sec. 5.3: max_c of the extended protocols' runs ("We set max_c at 3").
pub const MAX_C: u32 = 3;
/// Fig. 15: max_c 2 to 3: throughput +13%, restart ratio "reduced by nearly 40 percent".
pub const EX_THROUGHPUT_2_TO_3: f64 = 13.0;
pub const EX_RESTARTS_2_TO_3: f64 = -40.0;
/// Fig. 16: the extended protocols over the basic (throughput; commit
/// response time's improvement), and over WAL, percent.
pub const CFC_EX_OVER_CFC: f64 = 64.0;
pub const AFC_EX_OVER_AFC: f64 = 53.0;
pub const CFC_EX_COMMIT_GAIN: f64 = 68.0;
pub const AFC_EX_COMMIT_GAIN: f64 = 67.0;
pub const CFC_EX_OVER_WAL: f64 = 49.0;
pub const AFC_EX_OVER_WAL: f64 = 51.0;
/// Fig. 18: CFC_ex over WAL for short (lambda <= 10) and long transactions;
/// GC time of CFC_ex / AFC_ex against WAL ("84-85" and "72-73 percent less":
/// read as CFC_ex's then AFC_ex's, the legend's order).
pub const CFC_EX_OVER_WAL_SHORT: f64 = 64.0;
pub const CFC_EX_OVER_WAL_LONG: f64 = 46.0;
pub const EX_GC_VS_WAL_SHORT: [f64; 2] = [-84.0, -85.0];
pub const EX_GC_VS_WAL_LONG: [f64; 2] = [-72.0, -73.0];
/// Fig. 19: the lead over WAL at 256 pages (CFC_ex, AFC_ex) and at 4,096
/// (both); GC time from 256 to 4,096 pages (CFC_ex, AFC_ex, WAL).
pub const EX_OVER_WAL_256: [f64; 2] = [24.0, 34.0];
pub const EX_OVER_WAL_4096: f64 = 83.0;
pub const GC_256_TO_4096: [f64; 3] = [-71.0, -61.0, -41.0];
