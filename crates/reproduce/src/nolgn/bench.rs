//! Figs. 6 to 9: sqlite-bench's `overwrite` at each value size, on each
//! system, in one synchronous mode. As the paper runs it ("For each
//! transaction size, the database runs separately, but these transactions
//! share the same SSD storage"): one aged device per system and mode, one
//! database file per size on it, the sizes in increasing order. Each size:
//! `fillseq` of the table (not measured), then `overwrite` of as many
//! random keys, measured from its start to the connection's close.

use super::params::Params;
use super::results::{Aging, BenchRun};
use super::stack::{build, snap, why, Precondition};
use super::System;
use crate::{Error, Progress};
use txftl_sqlite::sqlitebench::{self, BenchEvent, BenchSpec, Benchmark};
use txftl_sqlite::{Snapshot, Synchronous};

/// Every size on every system at `sync`.
pub fn run(params: &Params, sync: Synchronous, progress: &Progress) -> Result<(Vec<BenchRun>, Vec<Aging>), Error> {
    let mut runs = Vec::new();
    let mut aging = Vec::new();
    for system in System::ALL {
        progress.say(format!("Figs. 6-9: {} at {}: aging the device", system.label(), sync.name()));
        let built = build(params, system, Precondition::DeviceWorth, sync)?;
        aging.push(Aging {
            experiment: format!("sqlite-bench {}", sync.name()),
            system: system.key().into(),
            writes: built.writes,
            filled_pct: built.filled_pages as f64 * 100.0 / built.logical_pages as f64,
        });
        for &size in &params.sizes {
            progress.say(format!(
                "Figs. 6-9: {} at {}, {} B values: sqlite-bench fillseq, overwrite",
                system.label(),
                sync.name(),
                size
            ));
            runs.push(one(params, &built.stack, system, sync, size)?);
            progress.step();
        }
    }
    Ok((runs, aging))
}

/// One size: its own database on the shared device. The fill runs on its
/// own connection, closed before the overwrite's opens, so that what it
/// leaves (a WAL's last frames, NoLgn-FTL's open group) reaches the device
/// before the measurement; the integrity check runs after it, on a third.
fn one(params: &Params, stack: &txftl_sqlite::Stack, system: System, sync: Synchronous, size: u32) -> Result<BenchRun, Error> {
    let what = |e: &dyn std::fmt::Display| Error::Failed(format!("{} {} {size} B: {e}{}", system.label(), sync.name(), why(stack)));
    let db = format!("bench-{size}.db");
    let open = || stack.open(&db, params.page_size as usize).map_err(|e| what(&e));
    let fill = BenchSpec {
        benchmarks: vec![Benchmark::FillSeq],
        num: params.entries,
        value_size: size,
        cache_pages: params.cache_pages,
        wal_autocheckpoint: params.wal_autocheckpoint,
        synchronous: Some(sync),
        seed: params.head.seed,
        ..BenchSpec::default()
    };
    sqlitebench::run(&open()?, &fill).map_err(|e| what(&e))?;
    let spec = BenchSpec {
        benchmarks: vec![Benchmark::Overwrite],
        ..fill.clone()
    };
    let conn = open()?;
    let mut start: Option<Snapshot> = None;
    let mut begun = 0u64;
    let (mut lat_sum, mut lat_n) = (0u64, 0u64);
    let mut failed: Option<Error> = None;
    let report = sqlitebench::run_with(&conn, &spec, |ev| {
        let r = (|| -> Result<(), Error> {
            match *ev {
                BenchEvent::Start {
                    bench: Benchmark::Overwrite,
                } => start = Some(snap(stack)?),
                BenchEvent::Begin {
                    bench: Benchmark::Overwrite,
                    ..
                } => begun = stack.now_ns().map_err(Error::failed)?,
                BenchEvent::End {
                    bench: Benchmark::Overwrite,
                    ..
                } => {
                    lat_sum += stack.now_ns().map_err(Error::failed)? - begun;
                    lat_n += 1;
                }
                _ => {}
            }
            Ok(())
        })();
        if let Err(e) = r {
            failed.get_or_insert(e);
        }
    })
    .map_err(|e| what(&e))?;
    if let Some(e) = failed {
        return Err(e);
    }
    drop(conn);
    let end = snap(stack)?;
    let integrity = txftl_sqlite::workload::integrity_check(&open()?).map_err(|e| what(&e))?;
    let a = start.ok_or_else(|| Error::Failed("sqlite-bench ran no overwrite".into()))?;
    let ops = report
        .results
        .iter()
        .find(|r| r.benchmark == Benchmark::Overwrite)
        .map_or(0, |r| r.operations);
    Ok(bench_run(system, sync, size, ops, &a, &end, lat_sum, lat_n, integrity))
}

#[allow(clippy::too_many_arguments)]
fn bench_run(
    system: System,
    sync: Synchronous,
    size: u32,
    ops: u64,
    a: &Snapshot,
    b: &Snapshot,
    lat_sum: u64,
    lat_n: u64,
    integrity: String,
) -> BenchRun {
    let (da, db) = (&a.dev, &b.dev);
    let sim_s = (b.now_ns - a.now_ns) as f64 / 1e9;
    let flash_programs = db.flash_programs - da.flash_programs;
    let host_writes = db.host_writes - da.host_writes;
    let gc_copies = db.gc_copies - da.gc_copies;
    BenchRun {
        system: system.key().into(),
        synchronous: sync.name().into(),
        value_size: size,
        operations: ops,
        sim_s,
        ops_per_sim_s: txftl_host::per_second(ops, sim_s),
        latency_mean_us: lat_sum as f64 / lat_n.max(1) as f64 / 1e3,
        flash_programs,
        host_writes,
        gc_copies,
        gc_skip_extra_copies: db.gc_skip_extra_copies - da.gc_skip_extra_copies,
        gc_victims_skipped: db.gc_victims_skipped - da.gc_victims_skipped,
        gc_runs: db.gc_runs - da.gc_runs,
        ftl_programs: flash_programs.saturating_sub(host_writes + gc_copies),
        protocol_meta_writes: db.protocol_meta_writes - da.protocol_meta_writes,
        flash_reads: db.flash_reads - da.flash_reads,
        cached_reads: b.fs.cached_reads - a.fs.cached_reads,
        absorbed_writes: b.fs.cache_absorbed_writes - a.fs.cache_absorbed_writes,
        db_page_writes: b.fs.database_page_writes - a.fs.database_page_writes,
        wal_page_writes: b.fs.wal_page_writes - a.fs.wal_page_writes,
        fs_metadata_writes: (b.fs.metadata_page_writes + b.fs.metadata_journal_writes)
            - (a.fs.metadata_page_writes + a.fs.metadata_journal_writes),
        fsyncs: b.fs.fsyncs - a.fs.fsyncs,
        remapped_pages: b.fs.remapped_pages - a.fs.remapped_pages,
        commit_programs: db.protocol.get("nolgn_commit_programs") - da.protocol.get("nolgn_commit_programs"),
        p2p_peak: db.protocol.get("nolgn_p2p_peak"),
        host_work: b.host - a.host,
        integrity,
    }
}
