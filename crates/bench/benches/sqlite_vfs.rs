//! Wall-clock cost of the whole stack under SQLite: the X-FTL paper's synthetic
//! workload (partsupp, 60,000 tuples; transactions of K=5 reads and updates) on
//! X-FTL through the txftl VFS, versus the same SQL on SQLite's in-memory
//! database. Items are transactions; compare the two throughputs.
//!
//! Each runs twice: with SQLite's default page cache (2 MB: most leaf pages of
//! the 14 MB database miss it and are read from the device through the VFS; the
//! in-memory database never misses), and with `PRAGMA cache_size=-65536` (64 MB)
//! in both, so only writes and commits cross the VFS.
//!
//! Run: `cargo bench -p txftl-bench --bench sqlite_vfs`

use divan::counter::ItemsCount;
use divan::Bencher;
use rusqlite::Connection;
use std::cell::RefCell;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::workload::{load, run_tx, TxWorkload};
use txftl_sqlite::{Mode, Stack};

const ROWS: u32 = 60_000;
const TXS_PER_ITERATION: u32 = 100;

fn workload() -> TxWorkload {
    TxWorkload {
        rows: ROWS,
        k: 5,
        transactions: u32::MAX,
        seed: 3,
    }
}

/// `cache_kib`: 0 for SQLite's default cache, else `PRAGMA cache_size=-cache_kib`.
/// Each iteration runs the next `TXS_PER_ITERATION` transactions of the workload.
fn bench_transactions(bencher: Bencher, conn: &Connection) {
    let next = RefCell::new(0u32);
    bencher.counter(ItemsCount::new(TXS_PER_ITERATION)).bench_local(|| {
        let w = workload();
        for _ in 0..TXS_PER_ITERATION {
            let i = *next.borrow();
            *next.borrow_mut() += 1;
            run_tx(conn, &w.updates(i)).unwrap();
        }
    });
}

#[divan::bench(args = [0, 65536], sample_count = 40, sample_size = 1)]
fn xftl_through_the_vfs(bencher: Bencher, cache_kib: i64) {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 32; // 256 MiB: room for the database, little RAM
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Error)).unwrap();
    let dev = txftl_protocols::format("xftl", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let stack = Stack::format(dev, Mode::parse(PROTOCOLS, "xftl").unwrap()).unwrap();
    let conn = stack.open("bench.db", 8192).unwrap();
    if cache_kib > 0 {
        conn.pragma_update(None, "cache_size", -cache_kib).unwrap();
    }
    load(&conn, ROWS, 1).unwrap();
    bench_transactions(bencher, &conn);
}

#[divan::bench(args = [0, 65536], sample_count = 40, sample_size = 1)]
fn sqlite_in_memory(bencher: Bencher, cache_kib: i64) {
    let conn = Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "page_size", 8192).unwrap();
    if cache_kib > 0 {
        conn.pragma_update(None, "cache_size", -cache_kib).unwrap();
    }
    load(&conn, ROWS, 1).unwrap();
    bench_transactions(bencher, &conn);
}

fn main() {
    divan::main();
}
