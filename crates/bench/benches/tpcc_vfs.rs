//! Wall-clock cost of the whole stack under SQLite on TPC-C: New-Order
//! transactions (the mix 100,0,0,0,0; 1 warehouse at the specification's
//! cardinalities) on X-FTL through the txftl VFS (`journal_mode=OFF`), versus
//! the same SQL on SQLite's in-memory database. Items are New-Order
//! transactions; compare the two throughputs (target: the VFS at most 2x slower).
//!
//! Each runs twice: with SQLite's default page cache (2 MB: the ~100 MB
//! database misses it and reads cross the VFS; the in-memory database never
//! misses), and with `PRAGMA cache_size=-262144` (256 MB) in both, so only
//! writes and commits cross the VFS.
//!
//! Run: `cargo bench -p txftl-bench --bench tpcc_vfs`
//! (`TXFTL_BENCH_TPCC_SCALE=10` divides the cardinalities for a quick look).

use divan::counter::ItemsCount;
use divan::Bencher;
use rusqlite::Connection;
use std::cell::RefCell;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::tpcc::{self, Runner, TpccSpec};
use txftl_sqlite::{Mode, Stack};

const TXS_PER_ITERATION: u64 = 100;
const PAGE_SIZE: usize = 8192;

fn spec() -> TpccSpec {
    let scale = std::env::var("TXFTL_BENCH_TPCC_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    TpccSpec {
        warehouses: 1,
        scale,
        mix: [100, 0, 0, 0, 0],
        transactions: u64::MAX,
        seed: 1,
        ..TpccSpec::default()
    }
}

/// Each iteration runs the next `TXS_PER_ITERATION` New-Orders of the run.
fn bench_new_orders(bencher: Bencher, conn: &Connection) {
    let runner = RefCell::new(Runner::new(conn, &spec()).unwrap());
    bencher.counter(ItemsCount::new(TXS_PER_ITERATION)).bench_local(|| {
        let mut r = runner.borrow_mut();
        for _ in 0..TXS_PER_ITERATION {
            let tx = r.next_transaction().unwrap();
            r.execute(conn, &tx).unwrap();
        }
    });
}

fn cache(conn: &Connection, cache_kib: i64) {
    if cache_kib > 0 {
        conn.pragma_update(None, "cache_size", -cache_kib).unwrap();
    }
}

#[divan::bench(args = [0, 262144], sample_count = 30, sample_size = 1)]
fn xftl_through_the_vfs(bencher: Bencher, cache_kib: i64) {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 128; // 1 GiB: the database and its growth
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Error)).unwrap();
    let dev = txftl_protocols::format("xftl", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let stack = Stack::format(dev, Mode::parse(PROTOCOLS, "xftl").unwrap()).unwrap();
    let conn = stack.open("tpcc.db", PAGE_SIZE).unwrap();
    cache(&conn, cache_kib);
    tpcc::load(&conn, &spec()).unwrap();
    bench_new_orders(bencher, &conn);
}

#[divan::bench(args = [0, 262144], sample_count = 30, sample_size = 1)]
fn sqlite_in_memory(bencher: Bencher, cache_kib: i64) {
    let conn = Connection::open_in_memory().unwrap();
    conn.pragma_update(None, "page_size", PAGE_SIZE as i64).unwrap();
    cache(&conn, cache_kib);
    tpcc::load(&conn, &spec()).unwrap();
    bench_new_orders(bencher, &conn);
}

fn main() {
    divan::main();
}
