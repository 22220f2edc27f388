//! txftl-host: the host side of the device interface.
//!
//! - [`exec`]: operations executed at their submission time on the device
//!   clock, so clients' operations overlap wherever dies and channels are free;
//! - [`filebench`]: Filebench's fileserver and webserver personalities on the file system;
//! - [`run`]: a generated workload sent by N closed-loop clients (`txftl run`);
//! - [`latency`]: per-operation and per-transaction latency percentiles;
//! - [`trace`]: txftl's transactional block trace format (record, read);
//! - [`record`]: a device wrapper recording every call as a trace line;
//! - [`replay`]: a txftl trace replayed by N clients at an isolation level;
//! - [`block_replay`]: a public block trace replayed open loop or with a queue depth;
//! - [`blocktrace`]: public block traces as users have them (MQSim/DiskSim
//!   ASCII, MSR Cambridge / SNIA CSV, blkparse text), parsed into
//!   [`blocktrace::BlockRequest`]s and mapped onto logical pages.

pub mod block_replay;
pub mod blocktrace;
pub mod exec;
pub mod filebench;
pub mod latency;
pub mod record;
pub mod replay;
pub mod run;
pub mod trace;

pub use exec::HostCounts;
pub use latency::{LatencyReport, LatencySummary};
pub use run::{run_workload, HostOptions, RunError, RunReport};

/// `n` per second over `seconds` (0 over no time): throughput on the device
/// clock or on the wall clock.
pub fn per_second(n: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        n as f64 / seconds
    } else {
        0.0
    }
}
