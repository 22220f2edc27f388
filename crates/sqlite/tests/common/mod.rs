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

/// Runs the calling test's `body` in a process of its own: the test binary
/// run again on that test alone, with the outcome and output handed back.
///
/// SQLite's PRNG is process-wide and each boot of a crash run reseeds it,
/// so `sql_crashtest` runs one at a time in a process (its `ONE_RUN` lock).
/// A binary of crash tests therefore ran on one core; in processes of their
/// own they run on as many as libtest gives the binary, and each draws
/// exactly the bytes it draws alone. libtest names a test's thread after
/// the test; where it does not (a single-threaded run) `body` runs here.
pub fn in_own_process(body: impl FnOnce()) {
    const CHILD: &str = "TXFTL_TEST_OWN_PROCESS";
    let name = std::thread::current().name().map(str::to_owned);
    let name = match name {
        Some(n) if std::env::var_os(CHILD).is_none() && n != "main" => n,
        _ => return body(),
    };
    let exe = std::env::current_exe().expect("the test binary's path");
    let out = std::process::Command::new(exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .output()
        .expect("the test binary runs again");
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    // Shown by libtest with the test's own output when it fails.
    eprint!("{stderr}");
    assert!(out.status.success(), "{name} failed in its own process ({}):\n{stdout}", out.status);
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "{name} did not run alone in its own process:\n{stdout}"
    );
}
