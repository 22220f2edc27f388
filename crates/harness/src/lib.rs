//! txftl-harness: workloads, the reference model of the crash contract, the
//! operation driver, and the crash-point enumerator.

pub mod crash;
pub mod data;
pub mod exercise;
pub mod inflight;
pub mod journal;
pub mod model;
mod remap;
pub mod run;
pub mod workload;

pub use crash::{crashtest, CrashReport, CrashSpec, CrashViolation, DeviceSpec, SecondCuts};
pub use exercise::{Exercised, Expect};
pub use inflight::{InFlight, InFlightReport};
pub use workload::{OpStream, TxShape, WorkloadKind, WorkloadSpec, WORKLOAD_NAMES};
