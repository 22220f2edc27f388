//! The workload of `reproduce lighttx`: the TPC-C transactional block trace
//! (`crate::tpcc_trace`) recorded on the run's `lighttx` device.

use super::params::{preset, Params};
use super::results::Workload;
use crate::tpcc_trace::TpccRun;
use crate::Error;
use txftl_host::trace::Trace;

/// Records the TPC-C trace on the run's device, with the run's TPC-C setup.
pub fn record_tpcc(params: &Params) -> Result<(Trace, Workload), Error> {
    let run = TpccRun {
        warehouses: params.tpcc_warehouses,
        scale: params.tpcc_scale,
        transactions: params.tpcc_transactions,
        clients: params.tpcc_clients,
        seed: params.head.seed,
    };
    crate::tpcc_trace::record_tpcc(&preset(params.head.blocks_per_plane)?, &run)
}
