//! What the SQLite test files share: a stack on the small preset its
//! protocol's NAND needs pick (`tiny`, `tiny-slc`) grown to hold a database
//! (512 blocks a plane, 4 KiB pages: SQLite's default page size), and a
//! one-number query.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use rusqlite::Connection;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::tpcc::{Canary, TpccSpec, STANDARD_MIX};
use txftl_sqlite::{Mode, Stack};

/// A fresh device of `mode`'s protocol with `opts`, formatted for `mode`.
pub fn stack_with(mode: Mode, opts: &ProtocolOptions) -> Stack {
    let mut p = preset(mode.entry().nand.tiny_preset()).unwrap();
    p.geometry.blocks_per_plane = 512;
    p.geometry.page_size = 4096;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), opts).unwrap();
    Stack::format(dev, mode).unwrap()
}

/// [`stack_with`] the default protocol options.
pub fn stack(mode: Mode) -> Stack {
    stack_with(mode, &ProtocolOptions::default())
}

/// The one integer `sql` returns.
pub fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

/// TPC-C on one warehouse, the item, customer and order counts divided by 100.
pub fn small_tpcc(transactions: u64, seed: u64) -> TpccSpec {
    TpccSpec {
        warehouses: 1,
        scale: 100,
        mix: STANDARD_MIX,
        transactions,
        seed,
        canary: Canary::None,
    }
}
