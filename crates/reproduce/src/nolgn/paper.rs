//! What the NoLgn-FTL paper states (Yin, Du, Fan, Noh; JSA 2025, sec. 4),
//! as the checks and the tables quote it. Every average is the mean over
//! the paper's transaction sizes (or YCSB workloads, or free-space levels)
//! of the per-point percentage.

/// Sec. 4.1: "different transaction sizes from 256B to 16 KB"; 256B, 512B,
/// 8 KB and 16 KB are named; the points between are the doublings.
pub const SIZES: [u32; 7] = [256, 512, 1024, 2048, 4096, 8192, 16384];
/// Sec. 4.2: "sqlite-bench with 200 thousand overwrite operations".
pub const OVERWRITES: u64 = 200_000;
/// Sec. 4.1: "we conducted 4 million 4 KB write operations on the SSD in
/// each test" (its 16 GB logical capacity: one device's worth).
pub const PRECONDITION_WRITES: u64 = 4_000_000;
/// Sec. 4.1: "a synchronization operation will be triggered every 1000
/// data pages" (NoLgn-FTL in NORMAL mode).
pub const NORMAL_GROUP_PAGES: u32 = 1_000;
/// Sec. 4.5: "TPC-C benchmarks with four 4 warehouses"; "The number of
/// database connections was set to 1".
pub const TPCC_WAREHOUSES: u32 = 4;
/// Fig. 11's x axis: SSD free space, percent.
pub const FREE_PCT: [u32; 3] = [75, 50, 25];

/// Fig. 6 (sec. 4.2), flash page writes, percent change, mean over sizes.
pub const FIG6_NORMAL_SW_VS_BASE: f64 = -35.0;
pub const FIG6_NORMAL_NOLGN_VS_BASE: f64 = -55.0;
pub const FIG6_NORMAL_NOLGN_VS_SW: f64 = -20.0;
pub const FIG6_FULL_NOLGN_VS_BASE: f64 = -35.0;
pub const FIG6_FULL_NOLGN_VS_SW: f64 = -2.0;
/// Fig. 7 (sec. 4.3), throughput, percent change, mean over sizes.
pub const FIG7_NORMAL_NOLGN_VS_BASE: f64 = 51.0;
pub const FIG7_NORMAL_NOLGN_VS_SW: f64 = 15.0;
pub const FIG7_FULL_NOLGN_VS_BASE: f64 = 26.0;
pub const FIG7_FULL_NOLGN_VS_SW: f64 = 4.0;
/// Fig. 8 (sec. 4.3), latency, percent change, mean over sizes.
pub const FIG8_NORMAL_NOLGN_VS_BASE: f64 = -34.4;
pub const FIG8_NORMAL_NOLGN_VS_SW: f64 = -11.0;
pub const FIG8_NORMAL_SW_VS_BASE: f64 = -26.2;
pub const FIG8_FULL_NOLGN_VS_BASE: f64 = -16.4;
pub const FIG8_FULL_NOLGN_VS_SW: f64 = -3.7;
/// Fig. 9 (sec. 4.4): GC migration's share of the writes "reaching a
/// maximum of 62%"; "The maximum proportion of additional migration pages
/// due to block locking is 6%, with an average increase of 3.5% in total
/// write pages".
pub const FIG9_GC_SHARE_MAX: f64 = 62.0;
pub const FIG9_LOCK_SHARE_MAX: f64 = 6.0;
pub const FIG9_LOCK_SHARE_MEAN: f64 = 3.5;
pub const FIG9_GC_RISES: &str =
    "\"as transaction value size increases, the proportion of valid page migration involved in GC also increases\"";
pub const FIG9_LOCK_SMALL: &str = "\"This impact is more significant for smaller transaction sizes\"";
/// Fig. 10 (sec. 4.5), YCSB throughput against Base-WAL, percent, mean over A-F.
pub const FIG10_SW_VS_BASE: f64 = 10.0;
pub const FIG10_NOLGN_VS_BASE: f64 = 17.0;
pub const FIG10_NOLGN_ABOVE_SW: &str =
    "\"NoLgn-FTL still outperforms SW-WAL due to its greater write performance benefits\" (write-intensive A and F)";
/// Fig. 11 (sec. 4.5), tpmC against Base-WAL, percent.
pub const FIG11_SW_VS_BASE: f64 = 20.0;
pub const FIG11_NOLGN_VS_BASE: f64 = 38.0;
pub const FIG11_NOLGN_VS_BASE_AT_25: f64 = 81.0;
pub const FIG11_WIDENS: &str = "\"as SSD free space decreases, the performance gap widens\"";
