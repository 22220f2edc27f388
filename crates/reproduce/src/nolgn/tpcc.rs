//! Fig. 11: TPC-C's tpmC on each system against the device's free space
//! (sec. 4.5: "sufficient random overwrite iterations are performed before
//! each of the experiments"; one connection). Each point: a fresh device
//! aged by random writes until (100 - free)% of its logical pages hold
//! data, TPC-C loaded (not measured), then run, NORMAL mode, measured from
//! its first transaction to its connection's close.

use super::params::Params;
use super::results::{Aging, TpccRun};
use super::stack::{build, snap, why, Precondition};
use super::System;
use crate::{Error, Progress};
use txftl_sqlite::tpcc::{self, TpccSpec};
use txftl_sqlite::Synchronous;

pub fn run(params: &Params, progress: &Progress) -> Result<(Vec<TpccRun>, Vec<Aging>), Error> {
    let mut runs = Vec::new();
    let mut aging = Vec::new();
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
            let stack = &built.stack;
            let what = |e: &dyn std::fmt::Display| Error::Failed(format!("{} TPC-C at {free}% free: {e}{}", system.label(), why(stack)));
            let spec = TpccSpec {
                warehouses: params.tpcc_warehouses,
                scale: params.tpcc_scale,
                transactions: params.tpcc_transactions,
                seed: params.head.seed,
                ..TpccSpec::default()
            };
            let open = || stack.open("tpcc.db", params.page_size as usize).map_err(|e| what(&e));
            // The load on its own connection, closed: what it leaves reaches
            // the device before the measurement; the checks run after it.
            tpcc::load(&open()?, &spec).map_err(|e| what(&e))?;
            progress.say(format!("Fig. 11: {} at {free}% free: TPC-C", system.label()));
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
            runs.push(TpccRun {
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
                map_writes: b.dev.map_writes - a.dev.map_writes,
                remapped_pages: b.fs.remapped_pages - a.fs.remapped_pages,
                host_work: b.host - a.host,
                consistency,
                integrity,
            });
            progress.step();
        }
    }
    Ok((runs, aging))
}
