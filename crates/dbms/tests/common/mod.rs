//! What the DBMS's crash tests share: arming a cut, and remounting.

/// Every crash test binary includes this module: the CLI's allocator
/// (the workspace manifest says why).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
#[allow(dead_code)]
pub mod records;

use std::sync::atomic::{AtomicUsize, Ordering};
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

/// `f` of each item, on every core (a shared counter hands the items out,
/// each cut independent of the others), the results in the items' order:
/// the same results, and failures listed in the same order, as one core
/// would give. A panic in `f` goes on in the caller.
#[allow(dead_code)]
pub fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len()).max(1);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut got = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break got };
                        got.push((i, f(item)));
                    }
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)))
            .collect()
    });
    done.sort_by_key(|&(i, _)| i);
    done.into_iter().map(|(_, r)| r).collect()
}
