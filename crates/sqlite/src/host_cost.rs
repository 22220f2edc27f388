//! The host's own work beside the device: what a real host spends running
//! SQLite over a file system, which the device clock does not hold.
//!
//! The model is declared, counted and measured apart, never folded into
//! device time:
//!
//! - [`HostWork`] counts, per run, what the host did: SQLite statements run,
//!   the virtual-machine operations they executed (SQLite's own count,
//!   `SQLITE_STMTSTATUS_VM_STEP`: deterministic, so the work is the same on
//!   every machine), the VFS calls a kernel VFS would make system calls for
//!   (open, read, write, sync, truncate, size, lock, unlock, delete,
//!   access), and the bytes those reads and writes copy between the page
//!   cache and SQLite's buffers;
//! - [`HostProfile`] prices each: ns per statement, per VM operation, per
//!   system call and per KiB copied, measured once on a machine by
//!   `txftl calibrate-host` ([`calibrate`]) and stored in a TOML profile
//!   with where each number came from. Host time is the counts times the
//!   prices; the reproductions show device time and device + host time
//!   side by side.

use rusqlite::{ffi, Connection};
use serde::{Deserialize, Serialize};
use std::os::raw::{c_uint, c_void};
use std::sync::Arc;
use std::time::Instant;

/// What a host did during a run (the difference of two [`HostCounters::work`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostWork {
    /// SQLite statements run to completion (or reset).
    pub statements: u64,
    /// SQLite virtual-machine operations those statements executed.
    pub vm_steps: u64,
    /// VFS calls a kernel VFS makes a system call for.
    pub syscalls: u64,
    /// Bytes read and written through the VFS (copied by the kernel).
    pub bytes_copied: u64,
}

impl std::ops::Sub for HostWork {
    type Output = HostWork;
    fn sub(self, o: HostWork) -> HostWork {
        HostWork {
            statements: self.statements - o.statements,
            vm_steps: self.vm_steps - o.vm_steps,
            syscalls: self.syscalls - o.syscalls,
            bytes_copied: self.bytes_copied - o.bytes_copied,
        }
    }
}

impl std::ops::Add for HostWork {
    type Output = HostWork;
    fn add(self, o: HostWork) -> HostWork {
        HostWork {
            statements: self.statements + o.statements,
            vm_steps: self.vm_steps + o.vm_steps,
            syscalls: self.syscalls + o.syscalls,
            bytes_copied: self.bytes_copied + o.bytes_copied,
        }
    }
}

pub use crate::vfs::HostCounters;

impl HostCounters {
    /// The counts so far.
    pub fn work(&self) -> HostWork {
        let [statements, vm_steps, syscalls, bytes_copied] = self.counts();
        HostWork {
            statements,
            vm_steps,
            syscalls,
            bytes_copied,
        }
    }
}

/// SQLite's trace callback: at each statement's end (`SQLITE_TRACE_PROFILE`)
/// one statement and its VM operations, read and reset; at the
/// connection's close (`SQLITE_TRACE_CLOSE`) the reference [`attach`] gave
/// it is released.
unsafe extern "C" fn on_trace(event: c_uint, ctx: *mut c_void, p: *mut c_void, _x: *mut c_void) -> std::os::raw::c_int {
    let counters = ctx as *const HostCounters;
    match event {
        ffi::SQLITE_TRACE_PROFILE => {
            let steps = ffi::sqlite3_stmt_status(p as *mut ffi::sqlite3_stmt, ffi::SQLITE_STMTSTATUS_VM_STEP, 1);
            (*counters).statement(steps.max(0) as u64);
        }
        ffi::SQLITE_TRACE_CLOSE => drop(Arc::from_raw(counters)),
        _ => {}
    }
    0
}

/// Counts `conn`'s statements and VM operations into `counters` until the
/// connection closes.
pub fn attach(conn: &Connection, counters: &Arc<HostCounters>) -> Result<(), rusqlite::Error> {
    let ctx = Arc::into_raw(counters.clone()) as *mut c_void;
    let mask = ffi::SQLITE_TRACE_PROFILE | ffi::SQLITE_TRACE_CLOSE;
    // SAFETY: the handle is live for the call; the context is a counted
    // reference SQLite hands back to `on_trace` until the close event,
    // which releases it.
    let rc = unsafe { ffi::sqlite3_trace_v2(conn.handle(), mask, Some(on_trace), ctx) };
    if rc != ffi::SQLITE_OK {
        // SAFETY: SQLite did not take the reference.
        unsafe { drop(Arc::from_raw(ctx as *const HostCounters)) };
        return Err(rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some("sqlite3_trace_v2".into())));
    }
    Ok(())
}

/// The price of each unit of host work, ns, and where the numbers came from.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HostProfile {
    pub statement_ns: f64,
    pub vm_step_ns: f64,
    pub syscall_ns: f64,
    pub copy_ns_per_kib: f64,
    /// How, where and when the numbers were measured.
    pub source: String,
}

impl HostProfile {
    /// Host time of `w`, ns, with every price multiplied by `scale` (the
    /// profile sweep: 0.5, 1, 2).
    pub fn ns(&self, w: &HostWork, scale: f64) -> f64 {
        scale
            * (w.statements as f64 * self.statement_ns
                + w.vm_steps as f64 * self.vm_step_ns
                + w.syscalls as f64 * self.syscall_ns
                + w.bytes_copied as f64 / 1024.0 * self.copy_ns_per_kib)
    }

    /// Every price finite and not negative.
    pub fn check(&self) -> Result<(), String> {
        for (k, v) in [
            ("statement_ns", self.statement_ns),
            ("vm_step_ns", self.vm_step_ns),
            ("syscall_ns", self.syscall_ns),
            ("copy_ns_per_kib", self.copy_ns_per_kib),
        ] {
            if !v.is_finite() || v < 0.0 {
                return Err(format!("host profile: {k} = {v}: a price must be a finite number of ns, 0 or more"));
            }
        }
        Ok(())
    }
}

/// The median of `rounds` timings of `f`, ns per unit (`f` returns how many
/// units it did).
fn median_ns(rounds: usize, mut f: impl FnMut() -> u64) -> f64 {
    let mut v: Vec<f64> = (0..rounds)
        .map(|_| {
            let t = Instant::now();
            let n = f().max(1);
            t.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// SQLite's cost per statement and per VM operation: two in-memory
/// workloads, one of point statements (the per-statement cost dominates),
/// one of statements that scan a table (VM operations dominate), solved for
/// the two prices. In memory: no I/O, SQLite's CPU only. The VM operations
/// are counted on one connection, the time taken on another without the
/// counting hook.
fn sqlite_prices(rounds: usize) -> Result<(f64, f64), rusqlite::Error> {
    let table = |conn: &Connection| {
        conn.execute_batch(
            "CREATE TABLE t(k INTEGER PRIMARY KEY, v INTEGER, s TEXT);
             WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
             INSERT INTO t SELECT i, i * 7 % 1000, printf('row %d', i) FROM n;",
        )
    };
    let (counted, timed) = (Connection::open_in_memory()?, Connection::open_in_memory()?);
    table(&counted)?;
    table(&timed)?;
    let counters = Arc::new(HostCounters::default());
    attach(&counted, &counters)?;
    let run = |conn: &Connection, sql: &str, n: u64| -> Result<(), rusqlite::Error> {
        let mut stmt = conn.prepare_cached(sql)?;
        for i in 0..n {
            stmt.query_row([(i % 20000 + 1) as i64], |r| r.get::<_, i64>(0))?;
        }
        Ok(())
    };
    let measure = |sql: &str, n: u64| -> Result<(f64, f64), rusqlite::Error> {
        let before = counters.work();
        run(&counted, sql, n)?;
        let w = counters.work() - before;
        let mut err = None;
        let per = median_ns(rounds, || {
            if let Err(e) = run(&timed, sql, n) {
                err = Some(e);
            }
            n
        });
        match err {
            Some(e) => Err(e),
            None => Ok((per, w.vm_steps as f64 / w.statements.max(1) as f64)),
        }
    };
    let (t_point, s_point) = measure("SELECT v FROM t WHERE k = ?1", 2000)?;
    let (t_scan, s_scan) = measure("SELECT count(*) FROM t WHERE v = ?1 % 1000", 20)?;
    // t = a + b s for each workload.
    let b = ((t_scan - t_point) / (s_scan - s_point)).max(0.0);
    let a = (t_point - b * s_point).max(0.0);
    Ok((a, b))
}

/// A system call's cost: a one-byte `pread` of a cached file.
fn syscall_price(rounds: usize) -> std::io::Result<f64> {
    use std::os::unix::fs::FileExt;
    let path = std::env::temp_dir().join(format!("txftl-calibrate-{}", std::process::id()));
    std::fs::write(&path, [0u8; 4096])?;
    let file = std::fs::File::open(&path)?;
    let mut b = [0u8; 1];
    let mut err = None;
    let ns = median_ns(rounds, || {
        for _ in 0..20_000 {
            if let Err(e) = file.read_at(&mut b, 0) {
                err = Some(e);
            }
        }
        20_000
    });
    let _ = std::fs::remove_file(&path);
    match err {
        Some(e) => Err(e),
        None => Ok(ns),
    }
}

/// A KiB copied: 8 KiB pages copied out of a 64 MiB buffer (larger than the
/// caches, as pages copied out of a page cache are).
fn copy_price(rounds: usize) -> f64 {
    const PAGE: usize = 8192;
    let src = vec![0x5Au8; 64 << 20];
    let mut dst = vec![0u8; PAGE];
    let mut sink = 0u64;
    let ns_per_page = median_ns(rounds, || {
        let pages = src.len() / PAGE;
        for i in 0..pages {
            dst.copy_from_slice(&src[i * PAGE..(i + 1) * PAGE]);
            sink = sink.wrapping_add(u64::from(std::hint::black_box(&dst)[i % PAGE]));
        }
        pages as u64
    });
    std::hint::black_box(sink);
    ns_per_page / (PAGE as f64 / 1024.0)
}

/// Measures a [`HostProfile`] on this machine: each price the median of
/// `rounds` timed rounds (wall clock). `machine` says where (CPU, OS).
pub fn calibrate(rounds: usize, machine: &str) -> Result<HostProfile, String> {
    let rounds = rounds.max(3);
    let (statement_ns, vm_step_ns) = sqlite_prices(rounds).map_err(|e| format!("calibrate: SQLite: {e}"))?;
    let syscall_ns = syscall_price(rounds).map_err(|e| format!("calibrate: pread: {e}"))?;
    let copy_ns_per_kib = copy_price(rounds);
    let p = HostProfile {
        statement_ns,
        vm_step_ns,
        syscall_ns,
        copy_ns_per_kib,
        source: format!(
            "txftl calibrate-host, release build, median of {rounds} rounds (wall clock) on {machine}: \
             statement_ns and vm_step_ns solved from SQLite {} in memory (2,000 point selects by key, 20 \
             scans of 20,000 rows: t = statement_ns + vm_steps x vm_step_ns); syscall_ns a one-byte pread \
             of a cached file; copy_ns_per_kib 8 KiB pages copied out of a 64 MiB buffer",
            rusqlite::version()
        ),
    };
    p.check()?;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_and_their_vm_operations_are_counted_until_close() {
        let conn = Connection::open_in_memory().unwrap();
        let counters = Arc::new(HostCounters::default());
        attach(&conn, &counters).unwrap();
        conn.execute_batch("CREATE TABLE t(a); INSERT INTO t VALUES (1), (2), (3);")
            .unwrap();
        let w = counters.work();
        assert_eq!(w.statements, 2, "{w:?}");
        assert!(w.vm_steps > 10, "{w:?}");
        // A scan runs more VM operations than a point statement.
        let before = counters.work();
        let _: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
        let scan = counters.work() - before;
        assert_eq!(scan.statements, 1);
        // The connection's reference goes at its close.
        assert_eq!(Arc::strong_count(&counters), 2);
        drop(conn);
        assert_eq!(Arc::strong_count(&counters), 1);
    }

    #[test]
    fn host_time_is_the_counts_times_the_prices() {
        let p = HostProfile {
            statement_ns: 1000.0,
            vm_step_ns: 10.0,
            syscall_ns: 500.0,
            copy_ns_per_kib: 100.0,
            source: String::new(),
        };
        let w = HostWork {
            statements: 2,
            vm_steps: 100,
            syscalls: 4,
            bytes_copied: 8192,
        };
        assert_eq!(p.ns(&w, 1.0), 2000.0 + 1000.0 + 2000.0 + 800.0);
        assert_eq!(p.ns(&w, 2.0), 2.0 * 5800.0);
        assert!(p.check().is_ok());
        let bad = HostProfile { syscall_ns: f64::NAN, ..p };
        assert!(bad.check().unwrap_err().contains("syscall_ns"));
    }
}
