//! sqlite-bench (LevelDB's db_bench_sqlite3) on real SQLite: the benchmarks
//! on the device in `wal` and `xftl` modes at NoLgn-FTL's smallest and
//! largest values, batches, the hook, determinism, refusals.

mod common;
use common::{count, stack};
use txftl_protocols::PROTOCOLS;

use rusqlite::Connection;
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::sqlitebench::random::ValueGenerator;
use txftl_sqlite::sqlitebench::{self, key, BenchError, BenchEvent, BenchReport, BenchResult, BenchSpec, Benchmark, KEY_BYTES};
use txftl_sqlite::workload::integrity_check;
use txftl_sqlite::{Mode, Stack, Synchronous};

fn spec(benchmarks: &[Benchmark], num: u64, value_size: u32) -> BenchSpec {
    BenchSpec {
        benchmarks: benchmarks.to_vec(),
        num,
        value_size,
        ..BenchSpec::default()
    }
}

fn result(r: &BenchReport, i: usize, bench: Benchmark) -> &BenchResult {
    assert_eq!(r.results[i].benchmark, bench);
    &r.results[i]
}

/// fillseq, readseq, readrandom, fillrandom, readseq, overwrite, readrandom
/// at 256 B and 16 KiB values, in `wal` and `xftl` modes: the counts, the
/// bytes, the reads finding what was written, an intact database.
#[test]
fn the_benchmarks_run_on_wal_and_xftl_and_reads_find_the_writes() {
    use Benchmark::*;
    let list = [FillSeq, ReadSeq, ReadRandom, FillRandom, ReadSeq, Overwrite, ReadRandom];
    for mode in [Mode::parse(PROTOCOLS, "wal").unwrap(), Mode::parse(PROTOCOLS, "xftl").unwrap()] {
        for (value_size, num) in [(256u32, 300u64), (16384, 40)] {
            let s = stack(mode);
            let conn = s.open("bench.db", 4096).unwrap();
            let sp = spec(&list, num, value_size);
            let r = sqlitebench::run(&conn, &sp).unwrap();
            let label = format!("{mode:?} {value_size} B");
            assert_eq!(r.page_size, 4096);
            assert_eq!(r.journal_mode, mode.journal_mode(), "{label}");
            let locking = if mode == Mode::parse(PROTOCOLS, "wal").unwrap() {
                "EXCLUSIVE"
            } else {
                "NORMAL"
            };
            assert_eq!(r.locking_mode, locking, "{label}: refused on a transactional device");
            let entry = (KEY_BYTES as u64 + value_size as u64) * num;
            let fill = result(&r, 0, FillSeq);
            assert_eq!((fill.operations, fill.transactions, fill.bytes), (num, num, entry), "{label}");
            assert_eq!(fill.synchronous, Some(Synchronous::Off));
            assert_eq!(fill.checkpointed, mode == Mode::parse(PROTOCOLS, "wal").unwrap());
            let seq = result(&r, 1, ReadSeq);
            assert_eq!((seq.operations, seq.bytes, seq.transactions), (num, entry, 1), "{label}");
            let rnd = result(&r, 2, ReadRandom);
            assert_eq!((rnd.found, rnd.not_found, rnd.bytes), (num, 0, entry), "{label}");
            // fillrandom draws keys with repeats: the table holds the distinct ones.
            assert_eq!(result(&r, 3, FillRandom).operations, num);
            let distinct = result(&r, 4, ReadSeq).operations;
            assert!(distinct < num && distinct > num / 2, "{label}: {distinct} distinct keys");
            assert_eq!(result(&r, 5, Overwrite).operations, num);
            let rnd = result(&r, 6, ReadRandom);
            assert_eq!(rnd.found + rnd.not_found, num);
            let rows = count(&conn, "SELECT count(*) FROM test") as u64;
            assert!(rows >= distinct && rows < num, "{label}: {rows} rows");
            assert_eq!(
                count(
                    &conn,
                    &format!("SELECT count(*) FROM test WHERE length(value) != {value_size} OR length(key) != 16")
                ),
                0
            );
            // Every key read back is one the table holds.
            assert!(rnd.found >= rows * 6 / 10, "{label}: {rnd:?} of {rows} rows");
            assert_eq!(integrity_check(&conn).unwrap(), "ok", "{label}");
            drop(conn);
            s.into_fs().unwrap();
        }
    }
}

/// The values are db_bench's, cut in turn from its generator.
#[test]
fn the_values_are_db_benchs() {
    let conn = Connection::open_in_memory().unwrap();
    sqlitebench::run(&conn, &spec(&[Benchmark::FillSeq], 3, 100)).unwrap();
    let mut g = ValueGenerator::new(0.5);
    for k in 0..3u64 {
        let v: Vec<u8> = conn
            .query_row("SELECT value FROM test WHERE key = ?", [&key(k)[..]], |r| r.get(0))
            .unwrap();
        assert_eq!(v, g.generate(100), "entry {k}");
    }
    assert_eq!(&key(42), b"0000000000000042");
}

/// The batch benchmarks put `batch` entries in a transaction (one device
/// commit each on `xftl`), the others one; the sync ones write num/100 at FULL.
#[test]
fn batches_transactions_and_the_hook() {
    let s = stack(Mode::parse(PROTOCOLS, "xftl").unwrap());
    let conn = s.open("bench.db", 4096).unwrap();
    let commits = || s.with_fs_mut(|fs| fs.stats().tx_commits).unwrap();
    let sp = BenchSpec {
        batch: 64,
        ..spec(
            &[
                Benchmark::FillSeq,
                Benchmark::FillSeqBatch,
                Benchmark::OverwriteBatch,
                Benchmark::FillRandSync,
                Benchmark::ReadRandom,
            ],
            1000,
            256,
        )
    };
    let mut per_bench = std::collections::BTreeMap::<Benchmark, (u64, u64, u64)>::new();
    let (mut at, mut open, mut started) = (0, None, None);
    let r = sqlitebench::run_with(&conn, &sp, |e| match *e {
        BenchEvent::Start { bench } => {
            assert_eq!(started, None);
            started = Some(bench);
        }
        BenchEvent::Begin { bench, index } => {
            assert_eq!(open, None);
            assert_eq!(started, Some(bench));
            open = Some(index);
            at = commits();
        }
        BenchEvent::End { bench, index, ops } => {
            assert_eq!(open.take(), Some(index));
            let e = per_bench.entry(bench).or_default();
            e.0 += 1;
            e.1 += ops;
            e.2 += commits() - at;
        }
        BenchEvent::Finish { bench } => assert_eq!(started.take(), Some(bench)),
    })
    .unwrap();
    // 1000 entries: 1000 transactions alone, 16 in batches of 64 (the last of 40).
    assert_eq!(per_bench[&Benchmark::FillSeq], (1000, 1000, 1000));
    assert_eq!(per_bench[&Benchmark::FillSeqBatch], (16, 1000, 16));
    assert_eq!(per_bench[&Benchmark::OverwriteBatch], (16, 1000, 16));
    assert_eq!(per_bench[&Benchmark::FillRandSync], (10, 10, 10));
    assert_eq!(per_bench[&Benchmark::ReadRandom].2, 0, "reads commit nothing");
    let sync = &r.results[3];
    assert_eq!((sync.operations, sync.synchronous), (10, Some(Synchronous::Full)));
    assert_eq!(r.results[1].synchronous, Some(Synchronous::Off));
    // The connection's synchronous setting is back.
    assert_eq!(count(&conn, "PRAGMA synchronous"), 2);

    // Without transactions (db_bench's --no_transaction) a batch benchmark commits each entry.
    let sp = BenchSpec {
        transaction: false,
        synchronous: Some(Synchronous::Normal),
        ..spec(&[Benchmark::FillRandBatch], 200, 256)
    };
    let r = sqlitebench::run(&conn, &sp).unwrap();
    assert_eq!(r.results[0].transactions, 200);
    assert_eq!(r.results[0].synchronous, Some(Synchronous::Normal));
    assert_eq!(integrity_check(&conn).unwrap(), "ok");
}

fn table_hash(conn: &Connection) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut st = conn.prepare("SELECT key, value FROM test ORDER BY key").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .map(Result::unwrap)
        .collect()
}

#[test]
fn same_seed_same_database_another_seed_another() {
    let go = |seed| {
        let conn = Connection::open_in_memory().unwrap();
        let sp = BenchSpec {
            seed,
            ..spec(&[Benchmark::FillRandom, Benchmark::Overwrite, Benchmark::ReadRandom], 500, 128)
        };
        let r = sqlitebench::run(&conn, &sp).unwrap();
        (table_hash(&conn), r)
    };
    let a = go(301);
    assert_eq!(a, go(301));
    assert_ne!(a.0, go(302).0);
}

#[test]
fn bad_specs_are_refused() {
    let conn = Connection::open_in_memory().unwrap();
    for bad in [
        spec(&[Benchmark::FillSeq], 0, 100),
        spec(&[Benchmark::FillSeq], 10, 1 << 20),
        BenchSpec {
            batch: 0,
            ..spec(&[Benchmark::FillSeq], 10, 100)
        },
        BenchSpec {
            page_size: Some(1000),
            ..spec(&[Benchmark::FillSeq], 10, 100)
        },
        BenchSpec {
            compression_ratio: 0.0,
            ..spec(&[Benchmark::FillSeq], 10, 100)
        },
    ] {
        assert!(matches!(sqlitebench::run(&conn, &bad), Err(BenchError::Spec(_))), "{bad:?}");
    }
    // A database with content keeps its page size.
    sqlitebench::run(&conn, &spec(&[Benchmark::FillSeq], 10, 100)).unwrap();
    let other = BenchSpec {
        page_size: Some(8192),
        ..spec(&[Benchmark::ReadSeq], 10, 100)
    };
    assert!(matches!(sqlitebench::run(&conn, &other), Err(BenchError::Spec(m)) if m.contains("page size")));
    assert_eq!(
        Benchmark::parse_list("fillseq,readrandom,,overwrite"),
        Ok(vec![Benchmark::FillSeq, Benchmark::ReadRandom, Benchmark::Overwrite])
    );
    assert!(Benchmark::parse_list("fillseq,fillsequential")
        .unwrap_err()
        .contains("fillsequential"));
}

/// NoLgn-FTL's overwrite benchmark at its value sizes on `wal` and `xftl`,
/// with wall-clock rates and device counters. By hand, in release:
/// `cargo test --release -p txftl-sqlite --test sqlitebench -- --ignored --nocapture`
#[test]
#[ignore = "1,000 entries of up to 16 KiB per size and mode; run by hand in release"]
fn overwrite_at_nolgn_value_sizes() {
    use std::time::Instant;
    for mode in [Mode::parse(PROTOCOLS, "wal").unwrap(), Mode::parse(PROTOCOLS, "xftl").unwrap()] {
        for value_size in [256u32, 512, 8192, 16384] {
            let mut p = preset("tiny").unwrap();
            p.geometry.blocks_per_plane = 2048;
            p.geometry.page_size = 4096;
            let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
            let dev = format(mode.protocol(), nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
            let s = Stack::format(dev, mode).unwrap();
            let conn = s.open("bench.db", 4096).unwrap();
            let sp = BenchSpec {
                synchronous: Some(Synchronous::Normal),
                ..spec(&[Benchmark::FillSeq, Benchmark::Overwrite, Benchmark::ReadRandom], 1000, value_size)
            };
            let mut started = Instant::now();
            let mut before = s.with_fs_mut(|fs| fs.stats()).unwrap();
            let r = sqlitebench::run_with(&conn, &sp, |e| match *e {
                BenchEvent::Start { .. } => {
                    started = Instant::now();
                    before = s.with_fs_mut(|fs| fs.stats()).unwrap();
                }
                BenchEvent::Finish { bench } => {
                    let after = s.with_fs_mut(|fs| fs.stats()).unwrap();
                    eprintln!(
                        "{mode:?} {value_size:>5} B {:<10} {:>8.0} ops/s wall, {:>6} host page writes",
                        bench.name(),
                        1000.0 / started.elapsed().as_secs_f64(),
                        after.host_page_writes() - before.host_page_writes()
                    );
                }
                _ => {}
            })
            .unwrap();
            assert_eq!(r.results[2].found, 1000);
            assert_eq!(integrity_check(&conn).unwrap(), "ok");
            drop(conn);
            s.into_fs().unwrap();
        }
    }
}
