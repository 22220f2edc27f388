//! The recovery-equivalence check, run at every checkpoint of the
//! workload's dry run: a recovery from the NAND alone, on a copy, rebuilds
//! the durable protocol state the live device holds
//! (`AnyDevice::durable_state`: the L2P, and what each protocol adds, such
//! as BPCC's pins).
//!
//! The crash points test what recovery makes of the flash a cut leaves,
//! against the model's logical contents; a state a recovery rebuilds
//! differently from the device's without changing what the host reads
//! now (a pin dropped on a GC copy) shows there only once a later
//! operation depends on it, and only if a cut falls after that. Here it
//! shows at the first checkpoint after it. Between two host operations
//! nothing is in flight (no cut is armed), so the copy holds every page
//! the live device wrote; what a cut legitimately drops (open
//! transactions, caches, GC's bookkeeping) stays out of the comparison.
//!
//! Cost: one mount of the device per checkpoint of the dry run (the
//! continuations' dry runs, one per crash point, are not checked).

use super::DeviceSpec;
use txftl_protocols::AnyDevice;

/// A checkpoint where the recovered state differed from the live one.
#[derive(Clone, Debug)]
pub(super) struct Mismatch {
    /// The host operation after which it was found (its index in the run).
    pub host_op: u64,
    /// The flash operations issued up to the end of that host operation.
    pub flash_ops: u64,
    pub message: String,
}

/// Mounts a copy of `dev`'s NAND and compares the state it rebuilds with
/// `dev`'s. `None`: the same, or `dev` describes no durable state.
pub(super) fn check(spec: &DeviceSpec, dev: &dyn AnyDevice) -> Option<String> {
    let live = dev.durable_state()?;
    let mut nand = dev.nand().snapshot();
    nand.set_op_log(false);
    nand.set_redo_log(false);
    let mount = || txftl_protocols::mount(&spec.protocol, nand, spec.ftl.clone(), &spec.opts);
    let recovered = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(mount)) {
        Ok(Ok(d)) => d,
        Ok(Err(e)) => return Some(format!("a recovery of a copy of the NAND failed: {e}")),
        Err(p) => return Some(format!("a recovery of a copy of the NAND panicked: {}", super::panic_message(&*p))),
    };
    let Some(rebuilt) = recovered.durable_state() else {
        return Some("the recovered device describes no durable state".into());
    };
    live.diff(&rebuilt)
}
