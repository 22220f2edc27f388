//! What the DBMS's crash tests share: arming a cut, and remounting.
#[allow(dead_code)]
pub mod records;

use txftl_harness::DeviceSpec;
use txftl_nand::{Nand, PowerCut, Torn};
use txftl_protocols::AnyDevice;

/// Starts the op log (`log_ops`) and arms `cut`: `at` operations from now,
/// seeded by `at`. The operation count now.
pub fn arm(nand: &mut Nand, cut: Option<(u64, Torn)>, log_ops: bool) -> u64 {
    let base_op = nand.op_count();
    nand.set_op_log(log_ops);
    if let Some((at, torn)) = cut {
        nand.arm_power_cut(PowerCut {
            at_op: base_op + at,
            torn,
            seed: at,
        });
    }
    base_op
}

/// Power off and on, then `spec`'s protocol mounted from the NAND alone,
/// its invariants checked.
pub fn remount(spec: &DeviceSpec, mut nand: Nand) -> Result<Box<dyn AnyDevice>, String> {
    nand.power_off();
    nand.power_on();
    let dev = txftl_protocols::mount(&spec.protocol, nand, spec.ftl.clone(), &spec.opts).map_err(|e| format!("recovery failed: {e}"))?;
    dev.check_invariants()
        .map_err(|e| format!("invariant broken after recovery: {e}"))?;
    Ok(dev)
}
