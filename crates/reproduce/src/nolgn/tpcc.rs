//! Fig. 11: TPC-C's tpmC on each system against the device's free space
//! (sec. 4.5: "sufficient random overwrite iterations are performed before
//! each of the experiments"; one connection). Each point: a fresh device
//! aged by random writes until (100 - free)% of its logical pages hold
//! data, TPC-C loaded (not measured), then run, NORMAL mode, measured from
//! its first transaction to its connection's close.

use super::params::Params;
use super::results::{Aging, Runs, TpccRun};
use super::stack::{build, snap, why, Precondition};
use super::System;
use crate::{Error, Progress};
use txftl_sqlite::tpcc::{self, TpccSpec};
use txftl_sqlite::{Stack, Synchronous};

/// Every free-space level on every system, then at the least free space the
/// run-length sweep's continuation (`Params::longer`). Returns the measured
/// runs, the continuations, and the agings.
pub fn run(params: &Params, progress: &Progress) -> Result<Runs<TpccRun>, Error> {
    let mut runs = Vec::new();
    let mut longer = Vec::new();
    let mut aging = Vec::new();
    let least = params.free_pct.iter().copied().min();
    for &free in &params.free_pct {
        for system in System::ALL {
            progress.say(format!("Fig. 11: {} at {free}% free: aging, loading TPC-C", system.label()));
            let built = build(params, system, Precondition::FillPct(100 - free), Synchronous::Normal)?;
            let filled_pct = built.filled_pages as f64 * 100.0 / built.logical_pages as f64;
            aging.push(Aging {
                experiment: format!("TPC-C {free}% free"),
                system: system.key().into(),
                writes: built.writes,
                filled_pct,
            });
            let at = Point { system, free, filled_pct };
            progress.say(format!("Fig. 11: {} at {free}% free: TPC-C", system.label()));
            runs.push(measure(params, &built.stack, at, 1, true)?);
            if Some(free) == least && params.longer > 1 {
                progress.say(format!(
                    "Fig. 11: {} at {free}% free: TPC-C continued to {}x",
                    system.label(),
                    params.longer
                ));
                longer.push(measure(params, &built.stack, at, params.longer - 1, false)?);
            }
            progress.step();
        }
    }
    Ok(Runs {
        measured: runs,
        longer,
        aging,
    })
}

/// A system at a free-space level, as its runs record it.
#[derive(Clone, Copy)]
struct Point {
    system: System,
    free: u32,
    filled_pct: f64,
}

/// Runs TPC-C for `times` the run's transactions (the run's seed, or the
/// next one for a continuation), measured from its first transaction to
/// its connection's close, then checks its consistency; `load` loads the
/// database first (not measured).
fn measure(params: &Params, stack: &Stack, at: Point, times: u32, load: bool) -> Result<TpccRun, Error> {
    let Point { system, free, filled_pct } = at;
    let what = |e: &dyn std::fmt::Display| Error::Failed(format!("{} TPC-C at {free}% free: {e}{}", system.label(), why(stack)));
    let spec = TpccSpec {
        warehouses: params.tpcc_warehouses,
        scale: params.tpcc_scale,
        transactions: params.tpcc_transactions * times as u64,
        seed: params.head.seed.wrapping_add(u64::from(!load)),
        ..TpccSpec::default()
    };
    let open = || stack.open("tpcc.db", params.page_size as usize).map_err(|e| what(&e));
    if load {
        // The load on its own connection, closed: what it leaves reaches
        // the device before the measurement; the checks run after it.
        tpcc::load(&open()?, &spec).map_err(|e| what(&e))?;
    }
    let conn = open()?;
    let a = snap(stack)?;
    let report = tpcc::run(&conn, &spec).map_err(|e| what(&e))?;
    drop(conn);
    let b = snap(stack)?;
    let conn = open()?;
    let consistency = match tpcc::check(&conn) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    };
    let integrity = txftl_sqlite::workload::integrity_check(&conn).map_err(|e| what(&e))?;
    let sim_s = (b.now_ns - a.now_ns) as f64 / 1e9;
    Ok(TpccRun {
        system: system.key().into(),
        free_pct: free,
        filled_pct,
        transactions: report.transactions(),
        new_orders: report.new_orders,
        sim_s,
        tpmc: txftl_host::per_second(report.new_orders, sim_s) * 60.0,
        flash_programs: b.dev.flash_programs - a.dev.flash_programs,
        flash_reads: b.dev.flash_reads - a.dev.flash_reads,
        gc_copies: b.dev.gc_copies - a.dev.gc_copies,
        erases: b.dev.flash_erases - a.dev.flash_erases,
        flushes: b.dev.host_flushes - a.dev.host_flushes,
        blocks_borrowed: b.dev.blocks_borrowed - a.dev.blocks_borrowed,
        map_writes: b.dev.map_writes - a.dev.map_writes,
        remapped_pages: b.fs.remapped_pages - a.fs.remapped_pages,
        host_work: b.host - a.host,
        consistency,
        integrity,
    })
}
