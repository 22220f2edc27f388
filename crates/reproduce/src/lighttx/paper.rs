//! What the LightTx paper states, as it states it (sec. IV, the text; the
//! figure images are not in our copy, so only the numbers of the prose).

/// Sec. IV-A: pages a transaction updates, mean and maximum.
pub const TX_PAGES_MEAN: f64 = 27.2;
pub const TX_PAGES_MAX: f64 = 142.0;
/// Sec. IV-A: 7 client connections, 28 warehouses (DBT-2 on PostgreSQL).
pub const CLIENTS: u32 = 7;
pub const WAREHOUSES: u32 = 28;
/// Table II: 32 GB.
pub const CAPACITY_GIB: u64 = 32;
/// Fig. 5: LightTx's no-page-conflict and serializable over strict, percent.
pub const FIG5_NPC_OVER_STRICT_PCT: f64 = 19.6;
pub const FIG5_SER_OVER_STRICT_PCT: f64 = 20.6;
/// Fig. 6: LightTx over Atomic-Write at abort ratio 0, percent.
pub const FIG6_LIGHTTX_OVER_AW_PCT: f64 = 1.6;
/// Fig. 7: GC overhead of SCC and BPCC over LightTx's at 50% aborts;
/// Atomic-Write's above LightTx's, percent.
pub const FIG7_SCC_OVER_LIGHTTX: f64 = 41.8;
pub const FIG7_BPCC_OVER_LIGHTTX: f64 = 4.8;
pub const FIG7_AW_OVER_LIGHTTX_PCT: f64 = 6.1;
/// Fig. 8: recovery time, s (LightTx: "less than", at every zone size).
pub const FIG8_CYCLIC_S: f64 = 6.957;
pub const FIG8_LIGHTTX_MAX_S: f64 = 0.194;
pub const FIG8_AW_S: f64 = 0.126;
/// Fig. 9: mapping persistence writes over the trace's writes, percent
/// (LightTx: "less than", at every zone size; SCC and BPCC: none).
pub const FIG9_AW_PCT: f64 = 3.70;
pub const FIG9_LIGHTTX_MAX_PCT: f64 = 0.75;
pub const FIG9_CYCLIC_PCT: f64 = 0.0;
