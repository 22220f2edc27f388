//! Fig. 10: YCSB's core workloads A to F on each system, NORMAL mode (sec.
//! 4.5). One aged device per system; each workload loads its own database
//! on it (not measured) and runs, measured from its first operation to its
//! connection's close.

use super::params::Params;
use super::results::{Aging, Runs, YcsbRun};
use super::stack::{build, snap, why, Precondition};
use super::System;
use crate::{Error, Progress};
use txftl_sqlite::ycsb::{self, Workload, YcsbSpec};
use txftl_sqlite::{Stack, Synchronous};

pub const WORKLOADS: [Workload; 6] = [Workload::A, Workload::B, Workload::C, Workload::D, Workload::E, Workload::F];

/// YCSB A and F, write-heavy: the workloads the run-length sweep continues.
pub const LONGER: [Workload; 2] = [Workload::A, Workload::F];

/// Every system's six workloads on its aged device, then the run-length
/// sweep's continuations of A and F (`Params::longer`). Returns the
/// measured runs, the continuations (each after its workload's measured
/// run, on the same database), and the agings.
pub fn run(params: &Params, progress: &Progress) -> Result<Runs<YcsbRun>, Error> {
    let mut runs = Vec::new();
    let mut longer = Vec::new();
    let mut aging = Vec::new();
    for system in System::ALL {
        progress.say(format!("Fig. 10: {}: aging the device", system.label()));
        let built = build(params, system, Precondition::DeviceWorth, Synchronous::Normal)?;
        aging.push(Aging {
            experiment: "YCSB NORMAL".into(),
            system: system.key().into(),
            writes: built.writes,
            filled_pct: built.filled_pages as f64 * 100.0 / built.logical_pages as f64,
        });
        for w in WORKLOADS {
            progress.say(format!("Fig. 10: {} YCSB {}", system.label(), w.name()));
            runs.push(workload(params, &built.stack, system, w, 1, true)?);
            progress.step();
        }
        for w in LONGER.into_iter().filter(|_| params.longer > 1) {
            progress.say(format!(
                "Fig. 10: {} YCSB {}, continued to {}x",
                system.label(),
                w.name(),
                params.longer
            ));
            longer.push(workload(params, &built.stack, system, w, params.longer - 1, false)?);
        }
    }
    Ok(Runs {
        measured: runs,
        longer,
        aging,
    })
}

/// Runs workload `w` of `times` the operations (the run's seed, or the
/// next one for a continuation), measured from its first operation to its
/// connection's close; `load` loads its database first (not measured).
fn workload(params: &Params, stack: &Stack, system: System, w: Workload, times: u32, load: bool) -> Result<YcsbRun, Error> {
    let what = |e: &dyn std::fmt::Display| Error::Failed(format!("{} YCSB {}: {e}{}", system.label(), w.name(), why(stack)));
    let mut spec = YcsbSpec::preset(w);
    spec.recordcount = params.ycsb_records;
    spec.operationcount = params.ycsb_operations * times as u64;
    spec.seed = params.head.seed.wrapping_add(u64::from(!load));
    let db = format!("ycsb-{}.db", w.name().to_ascii_lowercase());
    let open = || stack.open(&db, params.page_size as usize).map_err(|e| what(&e));
    if load {
        // The load on its own connection, closed: what it leaves reaches
        // the device before the measurement; the check runs after it.
        ycsb::load(&open()?, &spec).map_err(|e| what(&e))?;
    }
    let conn = open()?;
    let a = snap(stack)?;
    let report = ycsb::run(&conn, &spec).map_err(|e| what(&e))?;
    drop(conn);
    let b = snap(stack)?;
    let integrity = txftl_sqlite::workload::integrity_check(&open()?).map_err(|e| what(&e))?;
    let sim_s = (b.now_ns - a.now_ns) as f64 / 1e9;
    Ok(YcsbRun {
        system: system.key().into(),
        workload: w.name().into(),
        operations: report.operations(),
        sim_s,
        ops_per_sim_s: txftl_host::per_second(report.operations(), sim_s),
        flash_programs: b.dev.flash_programs - a.dev.flash_programs,
        flash_reads: b.dev.flash_reads - a.dev.flash_reads,
        gc_copies: b.dev.gc_copies - a.dev.gc_copies,
        erases: b.dev.flash_erases - a.dev.flash_erases,
        flushes: b.dev.host_flushes - a.dev.host_flushes,
        blocks_borrowed: b.dev.blocks_borrowed - a.dev.blocks_borrowed,
        host_work: b.host - a.host,
        integrity,
    })
}
