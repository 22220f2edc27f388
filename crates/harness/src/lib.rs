//! txftl-harness: the crash-point enumerator and the checks it runs, on the
//! workloads, reference model and driver of `txftl-workload` (re-exported
//! here under their module names).

pub mod crash;
pub mod exercise;
pub mod inflight;

// The workloads, the model and the driver, shared with the concurrent host.
pub use txftl_workload::{data, journal, model, run, workload};

pub use crash::{crashtest, CrashReport, CrashSpec, CrashViolation, DeviceSpec, SecondCuts};
pub use exercise::{Exercised, Expect};
pub use inflight::{InFlight, InFlightReport};
pub use txftl_workload::{OpStream, TxShape, WorkloadKind, WorkloadSpec, WORKLOAD_NAMES};
