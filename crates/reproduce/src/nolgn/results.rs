//! What the experiments of `reproduce nolgn` measured (`figures` in the
//! JSON). Times are simulated (the device clock); nothing here is wall time.

use crate::paper::Head;
use serde::Serialize;
use txftl_sqlite::host_cost::HostWork;

/// One sqlite-bench `overwrite` run (Figs. 6 to 9): one system, one
/// synchronous mode, one value size, measured from the overwrite's start
/// to its connection's close (everything it wrote durable on the device:
/// the WAL systems' closing checkpoint, NoLgn-FTL's last group commit).
#[derive(Clone, Debug, Serialize)]
pub struct BenchRun {
    pub system: String,
    pub synchronous: String,
    pub value_size: u32,
    pub operations: u64,
    pub sim_s: f64,
    /// Overwrites per simulated second (Fig. 7).
    pub ops_per_sim_s: f64,
    /// Mean latency of one overwrite transaction, us (Fig. 8).
    pub latency_mean_us: f64,
    /// Every flash page program (Fig. 6), and its split (Fig. 9): the
    /// host's page writes; GC's copies, those a greedy choice would have
    /// made and the extra ones because a locked (NoLgn) block was skipped;
    /// the FTL's own (mapping checkpoints, protocol metadata).
    pub flash_programs: u64,
    pub host_writes: u64,
    pub gc_copies: u64,
    pub gc_skip_extra_copies: u64,
    pub gc_victims_skipped: u64,
    pub gc_runs: u64,
    pub ftl_programs: u64,
    /// Of those, pages of the protocol's own records (commit records, logs).
    pub protocol_meta_writes: u64,
    /// Flash page reads (data and spare area, any cause).
    pub flash_reads: u64,
    /// File page reads the host's page cache served.
    pub cached_reads: u64,
    /// File page writes the host's page cache absorbed (a page written again
    /// before it went to the device).
    pub absorbed_writes: u64,
    /// The file system's page writes by file: database, WAL, its own metadata.
    pub db_page_writes: u64,
    pub wal_page_writes: u64,
    pub fs_metadata_writes: u64,
    pub fsyncs: u64,
    /// SW-WAL: checkpoint pages remapped instead of copied.
    pub remapped_pages: u64,
    /// NoLgn-FTL: pages its commits programmed (the page the device held
    /// back for the end flag, when the host's sync had sent every page before
    /// the commit), P2P entries at their peak since the device was made.
    pub commit_programs: u64,
    pub p2p_peak: u64,
    /// The host's work over the run (statements, VM operations, system
    /// calls, bytes copied): priced by the host model, beside `sim_s`.
    pub host_work: HostWork,
    pub integrity: String,
}

impl BenchRun {
    /// Device + host time, seconds.
    pub fn elapsed_s(&self, head: &Head) -> f64 {
        self.sim_s + head.host_s(&self.host_work)
    }
    /// Overwrites per second of device + host time (Fig. 7).
    pub fn ops_per_s(&self, head: &Head) -> f64 {
        txftl_host::per_second(self.operations, self.elapsed_s(head))
    }
    /// Mean latency of one overwrite on device + host time, us (Fig. 8):
    /// the device's mean plus the host's time per overwrite (the host's
    /// work is counted over the run, not per transaction).
    pub fn latency_us(&self, head: &Head) -> f64 {
        self.latency_mean_us + head.host_s(&self.host_work) * 1e6 / self.operations.max(1) as f64
    }
}

/// One YCSB workload on one system (Fig. 10), NORMAL mode.
#[derive(Clone, Debug, Serialize)]
pub struct YcsbRun {
    pub system: String,
    pub workload: String,
    pub operations: u64,
    pub sim_s: f64,
    pub ops_per_sim_s: f64,
    pub flash_programs: u64,
    pub flash_reads: u64,
    pub gc_copies: u64,
    /// Blocks erased: GC's victims, those without a valid page too (no copy).
    pub erases: u64,
    /// Flushes the device received (each waits for every program in flight).
    pub flushes: u64,
    /// Blocks a write stream opened on another parallel unit, its own having
    /// no free block (two streams then share a die while another idles).
    pub blocks_borrowed: u64,
    pub host_work: HostWork,
    pub integrity: String,
}

impl YcsbRun {
    /// Device + host time, seconds.
    pub fn elapsed_s(&self, head: &Head) -> f64 {
        self.sim_s + head.host_s(&self.host_work)
    }
    /// Operations per second of device + host time (Fig. 10).
    pub fn ops_per_s(&self, head: &Head) -> f64 {
        txftl_host::per_second(self.operations, self.elapsed_s(head))
    }
}

/// One TPC-C run (Fig. 11): one system at one free-space level.
#[derive(Clone, Debug, Serialize)]
pub struct TpccRun {
    pub system: String,
    /// The free space asked for, and the logical pages the preconditioning
    /// left holding data (percent; the database's load adds its own).
    pub free_pct: u32,
    pub filled_pct: f64,
    pub transactions: u64,
    pub new_orders: u64,
    pub sim_s: f64,
    /// New-Order transactions committed per simulated minute.
    pub tpmc: f64,
    pub flash_programs: u64,
    pub flash_reads: u64,
    pub gc_copies: u64,
    pub map_writes: u64,
    pub remapped_pages: u64,
    /// Blocks erased: GC's victims, those without a valid page too (no copy).
    pub erases: u64,
    /// Flushes the device received, and blocks borrowed (as [`YcsbRun`]'s).
    pub flushes: u64,
    pub blocks_borrowed: u64,
    pub host_work: HostWork,
    pub consistency: String,
    pub integrity: String,
}

impl TpccRun {
    /// Device + host time, seconds.
    pub fn elapsed_s(&self, head: &Head) -> f64 {
        self.sim_s + head.host_s(&self.host_work)
    }
    /// New-Order transactions per minute of device + host time (Fig. 11).
    pub fn tpm(&self, head: &Head) -> f64 {
        txftl_host::per_second(self.new_orders, self.elapsed_s(head)) * 60.0
    }
}

/// How one device was aged before its file system was made.
#[derive(Clone, Debug, Serialize)]
pub struct Aging {
    pub experiment: String,
    pub system: String,
    pub writes: u64,
    /// Logical pages holding data after it, percent.
    pub filled_pct: f64,
}

/// What a YCSB or TPC-C experiment returns: its measured runs, the
/// run-length sweep's continuations, and the devices' agings.
pub struct Runs<R> {
    pub measured: Vec<R>,
    pub longer: Vec<R>,
    pub aging: Vec<Aging>,
}

/// One system's sqlite-bench runs at one synchronous mode, summed over
/// the sizes ([`Figures::totals`]).
#[derive(Clone, Debug, Default)]
pub struct Totals {
    pub runs: usize,
    pub runs_with_gc: usize,
    pub operations: u64,
    pub sim_s: f64,
    pub flash_programs: u64,
    pub host_writes: u64,
    pub gc_copies: u64,
    pub db_page_writes: u64,
    pub wal_page_writes: u64,
    pub fs_metadata_writes: u64,
    pub fsyncs: u64,
    pub remapped_pages: u64,
    pub absorbed_writes: u64,
    pub commit_programs: u64,
    pub host_work: HostWork,
    /// Every run's integrity check said ok.
    pub intact: bool,
}

impl Totals {
    /// `v` per overwrite (0 with none).
    pub fn per_op(&self, v: f64) -> f64 {
        if self.operations > 0 {
            v / self.operations as f64
        } else {
            0.0
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Figures {
    pub bench: Vec<BenchRun>,
    pub ycsb: Vec<YcsbRun>,
    pub tpcc: Vec<TpccRun>,
    pub aging: Vec<Aging>,
    /// The run-length sweep (`Params::longer`): the continuations of YCSB A
    /// and F, and of TPC-C at the least free space, each after its measured
    /// run on the same device and database.
    pub ycsb_longer: Vec<YcsbRun>,
    pub tpcc_longer: Vec<TpccRun>,
}

impl Figures {
    /// These figures with each continued run judged over its whole length:
    /// the measured run and its continuation summed (the others as they
    /// are), for the checks at the sweep's length.
    pub fn longer_view(&self) -> Figures {
        let mut v = self.clone();
        for r in v.ycsb.iter_mut() {
            if let Some(c) = self.ycsb_longer.iter().find(|c| c.system == r.system && c.workload == r.workload) {
                r.operations += c.operations;
                r.sim_s += c.sim_s;
                r.ops_per_sim_s = txftl_host::per_second(r.operations, r.sim_s);
                r.flash_programs += c.flash_programs;
                r.flash_reads += c.flash_reads;
                r.gc_copies += c.gc_copies;
                r.erases += c.erases;
                r.flushes += c.flushes;
                r.blocks_borrowed += c.blocks_borrowed;
                r.host_work = r.host_work + c.host_work;
            }
        }
        for r in v.tpcc.iter_mut() {
            if let Some(c) = self.tpcc_longer.iter().find(|c| c.system == r.system && c.free_pct == r.free_pct) {
                r.transactions += c.transactions;
                r.new_orders += c.new_orders;
                r.sim_s += c.sim_s;
                r.tpmc = txftl_host::per_second(r.new_orders, r.sim_s) * 60.0;
                r.flash_programs += c.flash_programs;
                r.flash_reads += c.flash_reads;
                r.gc_copies += c.gc_copies;
                r.map_writes += c.map_writes;
                r.remapped_pages += c.remapped_pages;
                r.erases += c.erases;
                r.flushes += c.flushes;
                r.blocks_borrowed += c.blocks_borrowed;
                r.host_work = r.host_work + c.host_work;
            }
        }
        v
    }

    pub fn bench_run(&self, system: &str, sync: &str, size: u32) -> Option<&BenchRun> {
        self.bench
            .iter()
            .find(|r| r.system == system && r.synchronous == sync && r.value_size == size)
    }
    /// `system`'s sqlite-bench runs at `sync`, summed.
    pub fn totals(&self, system: &str, sync: &str) -> Totals {
        let mut t = Totals {
            intact: true,
            ..Totals::default()
        };
        for r in self.bench.iter().filter(|r| r.system == system && r.synchronous == sync) {
            t.runs += 1;
            t.runs_with_gc += usize::from(r.gc_copies > 0);
            t.operations += r.operations;
            t.sim_s += r.sim_s;
            t.flash_programs += r.flash_programs;
            t.host_writes += r.host_writes;
            t.gc_copies += r.gc_copies;
            t.db_page_writes += r.db_page_writes;
            t.wal_page_writes += r.wal_page_writes;
            t.fs_metadata_writes += r.fs_metadata_writes;
            t.fsyncs += r.fsyncs;
            t.remapped_pages += r.remapped_pages;
            t.absorbed_writes += r.absorbed_writes;
            t.commit_programs += r.commit_programs;
            t.host_work = t.host_work + r.host_work;
            t.intact &= r.integrity == "ok";
        }
        t
    }

    pub fn ycsb_run(&self, system: &str, workload: &str) -> Option<&YcsbRun> {
        self.ycsb.iter().find(|r| r.system == system && r.workload == workload)
    }
    pub fn tpcc_run(&self, system: &str, free_pct: u32) -> Option<&TpccRun> {
        self.tpcc.iter().find(|r| r.system == system && r.free_pct == free_pct)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tpcc(system: &str, free_pct: u32, new_orders: u64, sim_s: f64) -> TpccRun {
        TpccRun {
            system: system.into(),
            free_pct,
            filled_pct: 100.0 - free_pct as f64,
            transactions: 2 * new_orders,
            new_orders,
            sim_s,
            tpmc: txftl_host::per_second(new_orders, sim_s) * 60.0,
            flash_programs: 10,
            flash_reads: 1,
            gc_copies: 3,
            map_writes: 0,
            remapped_pages: 0,
            erases: 2,
            flushes: 1,
            blocks_borrowed: 0,
            host_work: HostWork::default(),
            consistency: "ok".into(),
            integrity: "ok".into(),
        }
    }

    #[test]
    fn the_longer_view_judges_a_continued_run_whole_and_leaves_the_rest() {
        let f = Figures {
            tpcc: vec![tpcc("nolgn", 25, 100, 1.0), tpcc("nolgn", 75, 100, 1.0)],
            tpcc_longer: vec![tpcc("nolgn", 25, 200, 3.0)],
            ..Figures::default()
        };
        let v = f.longer_view();
        let at25 = v.tpcc_run("nolgn", 25).unwrap();
        assert_eq!((at25.new_orders, at25.transactions, at25.gc_copies, at25.erases), (300, 600, 6, 4));
        assert_eq!(at25.sim_s, 4.0);
        assert_eq!(at25.tpmc, 300.0 / 4.0 * 60.0);
        let at75 = v.tpcc_run("nolgn", 75).unwrap();
        assert_eq!((at75.new_orders, at75.sim_s), (100, 1.0));
        // The measured figures are untouched.
        assert_eq!(f.tpcc_run("nolgn", 25).unwrap().new_orders, 100);
    }
}
