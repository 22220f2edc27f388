//! Issue 35: one transaction of 50,000 inserts into a table with three
//! indexes, in every SQLite mode that keeps a WAL, on the README's image
//! (`jasmine`, 16 blocks per plane, 8 KiB flash pages) at SQLite's default
//! 4 KiB pages, as a Python user gets them. The transaction spills over
//! 1,600 frames to the WAL before its COMMIT, and SQLite reads them
//! back: on `sw-wal` its 4 KiB frames straddle the remapping layout's 8 KiB
//! ones (`walmap.rs`), and the WAL's length must give back every byte
//! SQLite wrote (a frame read short is `SQLITE_IOERR_SHORT_READ`).

use std::time::Instant;
use txftl_ftl::FtlConfig;
use txftl_nand::{DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, ProtocolOptions, SqlJournal};
use txftl_sqlite::{Mode, Stack};

const ROWS: i64 = 50_000;
/// SQLite's WAL offset of the first frame this transaction reads short on
/// `sw-wal` when the WAL's length counts whole layout frames only: it must
/// spill past it (the file's length, compared with it, is at least SQLite's).
const FAILED_AT: u64 = 2_603_896;

/// A fresh `jasmine` image of 16 blocks a plane (`flagcommit` of its raw
/// size for a protocol that needs SLC cells), formatted for `mode`.
fn readme_image(mode: Mode) -> Stack {
    let p = txftl_sqlite::heavy::device_preset(mode.entry().nand);
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::new())
        .unwrap_or_else(|e| panic!("{}: format: {e}", mode.cli()));
    Stack::format(dev, mode).unwrap_or_else(|e| panic!("{}: {e}", mode.cli()))
}

/// The transaction: `ROWS` inserts of a random `a`, `b` = i and a
/// text of 10 to 60 letters, in one BEGIN ... COMMIT. Returns the WAL
/// file's length before the COMMIT.
fn large_commit(mode: Mode) -> u64 {
    let s = readme_image(mode);
    let c = s.open("x.db", 4096).unwrap();
    c.execute_batch(
        "CREATE TABLE t(a INTEGER, b INTEGER, c TEXT);
         CREATE INDEX ta ON t(a); CREATE INDEX tb ON t(b); CREATE INDEX tc ON t(c);
         BEGIN;",
    )
    .unwrap();
    let mut ins = c.prepare("INSERT INTO t VALUES (?1, ?2, ?3)").unwrap();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for i in 0..ROWS {
        // xorshift64: the same "random" rows on every mode.
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let text: String = (0..10 + x % 51).map(|k| (b'a' + ((x >> (k % 58)) % 26) as u8) as char).collect();
        if let Err(e) = ins.execute(rusqlite::params![(x >> 1) as i64, i, text]) {
            panic!("{}: insert {i}: {e} ({:?})", mode.cli(), s.last_error());
        }
    }
    drop(ins);
    // What the page cache spilled of the open transaction into the WAL,
    // which SQLite reads back to finish it: the failure needed a spill.
    let spilled = s.with_fs_mut(|fs| fs.size(None, fs.lookup("x.db-wal").unwrap()).unwrap()).unwrap();
    assert!(spilled > FAILED_AT, "{}: the transaction spilled {spilled} WAL bytes", mode.cli());
    if let Err(e) = c.execute_batch("COMMIT") {
        panic!("{}: COMMIT: {e} ({:?})", mode.cli(), s.last_error());
    }
    let (n, ok): (i64, String) = c
        .query_row(
            "SELECT (SELECT count(*) FROM t), (SELECT integrity_check FROM pragma_integrity_check)",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((n, ok.as_str()), (ROWS, "ok"), "{}", mode.cli());
    // Closing checkpoints the WAL into the database (on `sw-wal` by copies:
    // 4 KiB frames are not flash pages) and deletes it.
    drop(c);
    let c = s.open("x.db", 4096).unwrap();
    let n: i64 = c.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(n, ROWS, "{} after the checkpoint", mode.cli());
    spilled
}

#[test]
fn every_wal_mode_commits_50_000_inserts_with_three_indexes() {
    let modes: Vec<Mode> = Mode::all(PROTOCOLS).filter(|m| m.journal() == SqlJournal::Wal).collect();
    assert!(modes.iter().any(|m| m.cli() == "sw-wal"), "sw-wal carries WAL");
    for mode in modes {
        let t = Instant::now();
        let spilled = large_commit(mode);
        eprintln!(
            "{}: {ROWS} rows committed, WAL of {spilled} bytes before it, {:.1} s",
            mode.cli(),
            t.elapsed().as_secs_f64()
        );
    }
}
