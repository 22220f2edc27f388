//! The end-to-end crash test over SQLite's heavy statements (`txftl
//! sqlcrash --workload heavy`, `txftl_sqlite::crash::heavy`): CREATE INDEX,
//! five of them in one transaction, an ORDER BY whose sorter spills, a
//! transaction of inserts into a table of three indexes, VACUUM, DELETE of
//! the whole table, cut at a sample of their programs and erases (every torn
//! variant), restarted, and held to "the database is the state after an
//! allowed prefix of the statements" (digests of an in-memory run) and
//! `integrity_check` at each.
//!
//! On Möbius, whose inode lists 8 pages in this scenario: every writing
//! statement's transaction (12 pages for the DELETE, 567 for VACUUM) spans
//! several inodes bound by the last, so cuts land between a transaction's
//! inodes, among its pages, and in the checkpoints and GC its commits take. The sample keeps debug builds quick; `txftl
//! sqlcrash --workload heavy --modes mobius` enumerates every point (the proof).

use txftl_protocols::PROTOCOLS;
use txftl_sqlite::crash::{heavy, sql_crashtest, SqlCrashSpec, SqlExpect, SqlWorkload};
use txftl_sqlite::{Mode, Synchronous};

const WORKLOAD: SqlWorkload = SqlWorkload::Heavy {
    rows: heavy::ROWS_DEFAULT,
    insert_rows: heavy::INSERT_ROWS_DEFAULT,
};

// 7 is prime to the 5 torn variants: the sample covers each of them.
#[test]
fn heavy_statements_on_mobius_survive_sampled_cuts_at_synchronous_full() {
    let spec = SqlCrashSpec::on_tiny(WORKLOAD, Mode::parse(PROTOCOLS, "mobius").unwrap(), Synchronous::Full, 7);
    let r = sql_crashtest(&spec, &|_, _| {}).unwrap_or_else(|e| panic!("{e}"));
    eprintln!("{}", r.summary());
    for v in r.violations.iter().take(5) {
        eprintln!("  {v:?}");
    }
    assert_eq!(r.violation_count, 0, "{}", r.summary());
    // Met, or `sql_crashtest` would have failed: listed, so it was checked.
    let parts = SqlExpect::Protocol("mobius_part_inodes");
    assert!(r.expected.contains(&parts), "{:?}", r.expected);
    assert!(r.dry_run.protocol.get("mobius_part_inodes") > 0, "{:?}", r.dry_run);
    let s = &r.exercised.cuts_in_statements;
    assert!(s.fewest_in_writes() > 0, "{s:?}");
    assert!(
        r.dry_run.sort_temp_files > 0,
        "the ORDER BY's sorter did not spill: {:?}",
        r.dry_run
    );
    assert!(r.dry_run.gc_runs > 0 && r.exercised.cuts_in_gc > 0, "{}", r.summary());
}
