//! txftl-workload: what the crash harness and the concurrent host share. The
//! workload generators (`workload`, with SW-WAL's WAL-shaped stream in
//! `remap`), the page contents they write (`data`), the reference model of
//! the crash contract (`model`), the host's journal of what it asked
//! (`journal`) and the driver that issues operations on a device and keeps
//! the model (`run`). It depends on the device interface alone
//! (`txftl_ftl::AnyDevice`), never on a protocol.

pub mod data;
pub mod journal;
pub mod model;
mod remap;
pub mod run;
pub mod workload;

pub use workload::{OpStream, TxShape, WorkloadKind, WorkloadSpec, WORKLOAD_NAMES};
