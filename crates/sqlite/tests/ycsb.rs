//! YCSB on real SQLite: the generators against theory, each workload's mix,
//! every workload on the device in `wal` and `xftl` modes, the hook, and
//! determinism.

mod common;
use common::{count, stack};
use txftl_protocols::PROTOCOLS;

use rusqlite::Connection;
use txftl_sqlite::workload::integrity_check;
use txftl_sqlite::ycsb::generator::{fnv_hash64, zeta, ScrambledZipfian, SkewedLatest, Zipfian, ZIPFIAN_CONSTANT};
use txftl_sqlite::ycsb::{self, fingerprint, Distribution, OpEvent, OpKind, Proportions, Workload, YcsbError, YcsbReport, YcsbSpec};
use txftl_sqlite::Mode;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn small(workload: Workload, records: u64, operations: u64, seed: u64) -> YcsbSpec {
    YcsbSpec {
        recordcount: records,
        operationcount: operations,
        seed,
        ..YcsbSpec::preset(workload)
    }
}

fn loaded_in_memory(spec: &YcsbSpec) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    ycsb::load(&conn, spec).unwrap();
    conn
}

fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

/// Gray et al.'s generator returns the first item with probability exactly
/// 1/zeta(n) and the second with 0.5^theta/zeta(n).
#[test]
fn zipfian_most_popular_items_match_theory() {
    let n = 1000;
    let draws = 200_000;
    let mut z = Zipfian::new(0, n - 1, ZIPFIAN_CONSTANT);
    let mut r = rng(1);
    let mut hits = vec![0u64; n as usize];
    for _ in 0..draws {
        hits[z.next(&mut r) as usize] += 1;
    }
    let zetan = zeta(0, n, ZIPFIAN_CONSTANT, 0.0);
    assert!((zetan - z.zetan()).abs() < 1e-12);
    let p0 = 1.0 / zetan;
    let p1 = 0.5f64.powf(ZIPFIAN_CONSTANT) / zetan;
    let f0 = hits[0] as f64 / draws as f64;
    let f1 = hits[1] as f64 / draws as f64;
    assert!((0.125..0.135).contains(&p0), "1/zeta(1000, 0.99) = {p0}");
    assert!((f0 / p0 - 1.0).abs() < 0.03, "item 0: {f0:.4} drawn, {p0:.4} in theory");
    assert!((f1 / p1 - 1.0).abs() < 0.04, "item 1: {f1:.4} drawn, {p1:.4} in theory");
    // Popularity falls with the rank, and the tail is still reached.
    assert!(hits[0] > hits[1] && hits[1] > hits[2] && hits[2] > hits[10] && hits[10] > hits[500]);
    assert!(hits[900..].iter().sum::<u64>() > 0);
}

/// The scrambled generator hashes the zipfian draw (over 10^16 items) onto
/// the keys: the hottest key is FNV(0) mod n at about 1/zeta(10^16) = 3.8%,
/// the hot keys are scattered, and nearly every key is drawn.
#[test]
fn scrambled_zipfian_spreads_the_popular_items() {
    let n = 1000u64;
    let draws = 200_000;
    let mut s = ScrambledZipfian::new(0, n - 1);
    let mut r = rng(2);
    let mut hits = vec![0u64; n as usize];
    for _ in 0..draws {
        hits[s.next(&mut r) as usize] += 1;
    }
    let hottest = (0..n as usize).max_by_key(|&i| hits[i]).unwrap();
    assert_eq!(hottest as i64, fnv_hash64(0) % n as i64);
    let f = hits[hottest] as f64 / draws as f64;
    assert!((0.035..0.045).contains(&f), "hottest key drawn {f:.4} (plain zipfian: 0.134)");
    let mut by_heat: Vec<usize> = (0..n as usize).collect();
    by_heat.sort_by_key(|&i| std::cmp::Reverse(hits[i]));
    let top: Vec<usize> = by_heat[..10].to_vec();
    assert!(top.iter().any(|&i| i >= 100), "hot keys scattered: {top:?}");
    assert!(hits.iter().filter(|&&h| h > 0).count() > 990);
}

/// The latest distribution draws the last record most, and follows the inserts.
#[test]
fn latest_favours_recent_inserts() {
    let mut l = SkewedLatest::new(999);
    let mut r = rng(3);
    let draws = 100_000;
    let (mut last_hits, mut recent) = (0u64, 0u64);
    for _ in 0..draws {
        let k = l.next(999, &mut r);
        assert!(k <= 999);
        last_hits += (k == 999) as u64;
        recent += (k >= 900) as u64;
    }
    let f = last_hits as f64 / draws as f64;
    assert!((0.12..0.14).contains(&f), "the last record drawn {f:.4}");
    assert!(recent as f64 / draws as f64 > 0.6, "the last 100 records: {recent} of {draws}");
    // 100 inserts later the hot spot has moved to them.
    let (mut new_hits, mut newest) = (0u64, 0u64);
    for _ in 0..draws {
        let k = l.next(1099, &mut r);
        assert!(k <= 1099);
        new_hits += (k >= 1000) as u64;
        newest += (k == 1099) as u64;
    }
    assert!(new_hits as f64 / draws as f64 > 0.6, "inserted records: {new_hits} of {draws}");
    assert!(newest as f64 / draws as f64 > 0.1);
}

fn share(r: &YcsbReport, kind: OpKind) -> f64 {
    r.kind(kind).count as f64 / r.operations() as f64
}

/// Each preset's operations come in its parameter file's proportions; every
/// record read, updated or scanned is there; inserts grow the table.
#[test]
fn each_workload_runs_its_mix() {
    for w in Workload::STANDARD {
        let spec = small(w, 500, if w == Workload::E { 600 } else { 2000 }, 5);
        let conn = loaded_in_memory(&spec);
        let r = ycsb::run(&conn, &spec).unwrap();
        assert_eq!(r.operations(), spec.operationcount);
        let p = w.proportions();
        for kind in OpKind::ALL {
            let (got, want) = (share(&r, kind), p.of(kind));
            assert!(
                (got - want).abs() < 0.035,
                "workload {} {}: {got:.3} of operations, {want} asked",
                w.name(),
                kind.name()
            );
            let k = r.kind(kind);
            assert_eq!(k.found + k.not_found, k.count);
            assert_eq!(k.not_found, 0, "workload {} {}: {r:?}", w.name(), kind.name());
        }
        assert_eq!(r.records, spec.recordcount + r.insert.count);
        assert_eq!(count(&conn, "SELECT count(*) FROM usertable") as u64, r.records);
        assert_eq!(r.transactions, spec.operationcount);
        if w == Workload::E {
            let mean = r.scan_records_asked as f64 / r.scan.count as f64;
            assert!((44.0..57.0).contains(&mean), "scan lengths uniform in 1..=100: mean {mean}");
            assert!(r.scan_records <= r.scan_records_asked && r.scan_records > r.scan_records_asked / 2);
        }
        assert_eq!(integrity_check(&conn).unwrap(), "ok");
    }
}

/// Every workload on the device in `wal` and `xftl` modes: consistent,
/// intact, and the very same database in both modes.
#[test]
fn every_workload_runs_on_wal_and_xftl_to_the_same_database() {
    let mut first: Vec<(u64, YcsbReport)> = Vec::new();
    for mode in [Mode::parse(PROTOCOLS, "wal").unwrap(), Mode::parse(PROTOCOLS, "xftl").unwrap()] {
        let s = stack(mode);
        for (i, w) in Workload::STANDARD.into_iter().enumerate() {
            let spec = small(w, 200, if w == Workload::E { 100 } else { 300 }, 7);
            let conn = s.open(&format!("ycsb-{}.db", w.name()), 4096).unwrap();
            ycsb::load(&conn, &spec).unwrap();
            let r = ycsb::run(&conn, &spec).unwrap();
            assert_eq!(integrity_check(&conn).unwrap(), "ok", "{mode:?} {}", w.name());
            assert_eq!(count(&conn, "SELECT count(*) FROM usertable") as u64, r.records);
            for kind in OpKind::ALL {
                assert_eq!(r.kind(kind).not_found, 0, "{mode:?} {} {kind:?}", w.name());
            }
            let fp = fingerprint(&conn).unwrap();
            match first.get(i) {
                None => first.push((fp, r)),
                Some((fp0, r0)) => {
                    assert_eq!(fp, *fp0, "workload {}: another database in {mode:?}", w.name());
                    assert_eq!(&r, r0);
                }
            }
        }
        s.into_fs().unwrap();
    }
}

/// The hook brackets each operation: reads commit nothing on the device,
/// each update one transaction; with batches, only the COMMITs commit.
#[test]
fn the_hook_attributes_device_commits_to_operations() {
    let s = stack(Mode::parse(PROTOCOLS, "xftl").unwrap());
    let conn = s.open("ycsb.db", 4096).unwrap();
    let spec = small(Workload::A, 300, 200, 9);
    ycsb::load(&conn, &spec).unwrap();
    let commits = || s.with_fs_mut(|fs| fs.stats().tx_commits).unwrap();
    let pages = || s.with_fs_mut(|fs| fs.stats().database_page_writes).unwrap();
    let (c0, p0) = (commits(), pages());
    let mut committed = [0u64; 5];
    let mut written = [0u64; 5];
    let mut at = (0, 0);
    let mut open = None;
    let r = ycsb::run_with(&conn, &spec, |e| match *e {
        OpEvent::Begin { index, kind } => {
            assert_eq!(open, None);
            open = Some((index, kind));
            at = (commits(), pages());
        }
        OpEvent::End { index, kind, found } => {
            assert_eq!(open.take(), Some((index, kind)));
            assert!(found);
            committed[kind.index()] += commits() - at.0;
            written[kind.index()] += pages() - at.1;
        }
        OpEvent::CommitBegin { .. } | OpEvent::CommitEnd { .. } => panic!("no batches at batch = 1"),
    })
    .unwrap();
    assert_eq!(committed.iter().sum::<u64>(), commits() - c0);
    assert_eq!(written.iter().sum::<u64>(), pages() - p0);
    assert_eq!(committed[OpKind::Read.index()], 0);
    assert_eq!(written[OpKind::Read.index()], 0);
    assert_eq!(committed[OpKind::Update.index()], r.update.count);
    assert!(written[OpKind::Update.index()] >= r.update.count);

    // Batches of 16 operations: the operations commit nothing, the COMMITs all.
    let spec = YcsbSpec {
        batch: 16,
        seed: 10,
        ..spec
    };
    let c0 = commits();
    let (mut in_ops, mut in_commits, mut groups, mut grouped) = (0, 0, 0, 0);
    let r = ycsb::run_with(&conn, &spec, |e| match *e {
        OpEvent::Begin { .. } | OpEvent::CommitBegin { .. } => at = (commits(), 0),
        OpEvent::End { .. } => in_ops += commits() - at.0,
        OpEvent::CommitEnd { ops } => {
            in_commits += commits() - at.0;
            groups += 1;
            grouped += ops as u64;
        }
    })
    .unwrap();
    assert_eq!(in_ops, 0);
    assert_eq!(in_commits, commits() - c0);
    assert_eq!(groups, 13, "200 operations in groups of 16");
    assert_eq!((grouped, r.transactions), (200, 13));
    assert!(in_commits > 0 && in_commits <= 13);
    assert_eq!(integrity_check(&conn).unwrap(), "ok");
}

#[test]
fn same_seed_same_database_another_seed_another() {
    for w in [Workload::A, Workload::D, Workload::E] {
        let go = |seed| {
            let spec = small(w, 300, 200, seed);
            let conn = loaded_in_memory(&spec);
            let r = ycsb::run(&conn, &spec).unwrap();
            (fingerprint(&conn).unwrap(), r)
        };
        let a = go(21);
        assert_eq!(a, go(21), "workload {}", w.name());
        assert_ne!(a.0, go(22).0, "workload {}", w.name());
    }
}

/// `writeallfields` rewrites the whole record, the default one field;
/// `readallfields=false` and a custom mix run too.
#[test]
fn write_all_fields_or_one() {
    let only_updates = Workload::Custom(Proportions {
        read: 0.0,
        update: 1.0,
        insert: 0.0,
        scan: 0.0,
        read_modify_write: 0.0,
    });
    for all in [false, true] {
        let spec = YcsbSpec {
            writeallfields: all,
            ..small(only_updates, 1, 1, 3)
        };
        assert_eq!(spec.request_distribution(), Distribution::Uniform);
        let conn = loaded_in_memory(&spec);
        let row = |conn: &Connection| -> Vec<String> {
            conn.query_row("SELECT * FROM usertable", [], |r| (1..=10).map(|i| r.get(i)).collect())
                .unwrap()
        };
        let before = row(&conn);
        let r = ycsb::run(&conn, &spec).unwrap();
        assert_eq!(r.update.found, 1);
        let after = row(&conn);
        let changed = before.iter().zip(&after).filter(|(a, b)| a != b).count();
        assert_eq!(changed, if all { 10 } else { 1 });
        assert!(after.iter().all(|f| f.len() == 100));
    }
    let spec = YcsbSpec {
        readallfields: false,
        distribution: Some(Distribution::Latest),
        ..small(Workload::E, 100, 200, 4)
    };
    let conn = loaded_in_memory(&spec);
    let r = ycsb::run(&conn, &spec).unwrap();
    assert_eq!(r.scan.not_found, 0);
    assert_eq!(count(&conn, "SELECT count(*) FROM usertable") as u64, r.records);
}

#[test]
fn bad_specs_and_databases_are_refused() {
    let conn = Connection::open_in_memory().unwrap();
    let spec = small(Workload::D, 100, 50, 1);
    assert!(matches!(ycsb::run(&conn, &spec), Err(YcsbError::Data(m)) if m.contains("load first")));
    for bad in [
        YcsbSpec {
            fieldcount: 0,
            ..spec.clone()
        },
        YcsbSpec { batch: 0, ..spec.clone() },
        YcsbSpec {
            recordcount: 2,
            ..spec.clone()
        },
        YcsbSpec {
            maxscanlength: 0,
            ..spec.clone()
        },
        YcsbSpec {
            workload: Workload::Custom(Proportions {
                read: 0.0,
                update: 0.0,
                insert: 0.0,
                scan: 0.0,
                read_modify_write: 0.0,
            }),
            ..spec.clone()
        },
        YcsbSpec {
            workload: Workload::Custom(Proportions {
                read: -1.0,
                update: 1.0,
                insert: 0.0,
                scan: 0.0,
                read_modify_write: 0.0,
            }),
            ..spec.clone()
        },
    ] {
        assert!(matches!(bad.validate(), Err(YcsbError::Spec(_))), "{bad:?}");
    }
    ycsb::load(&conn, &spec).unwrap();
    assert!(matches!(ycsb::load(&conn, &spec), Err(YcsbError::Sql(_))), "loading twice");
    let other = YcsbSpec {
        recordcount: 99,
        ..spec.clone()
    };
    assert!(matches!(ycsb::run(&conn, &other), Err(YcsbError::Spec(m)) if m.contains("100 records")));
    let r = ycsb::run(&conn, &spec).unwrap();
    assert!(r.insert.count > 0);
    // A second inserting run would insert the same records again.
    assert!(matches!(ycsb::run(&conn, &spec), Err(YcsbError::Data(m)) if m.contains("already exists")));
    // A run without inserts is fine.
    let c = YcsbSpec {
        workload: Workload::C,
        ..spec
    };
    ycsb::run(&conn, &c).unwrap();
    assert_eq!(Workload::parse("workloadE"), Some(Workload::E));
    assert_eq!(Workload::parse("g"), None);
}

/// Each workload at 10,000 records on `xftl`, with wall-clock rates. By
/// hand, in release:
/// `cargo test --release -p txftl-sqlite --test ycsb -- --ignored --nocapture`
#[test]
#[ignore = "10,000 records per workload; run by hand in release"]
fn ten_thousand_records_on_xftl() {
    use std::time::Instant;
    for w in Workload::STANDARD {
        let s = stack(Mode::parse(PROTOCOLS, "xftl").unwrap());
        let conn = s.open("ycsb.db", 4096).unwrap();
        let spec = small(w, 10_000, 10_000, 1);
        let t = Instant::now();
        ycsb::load(&conn, &spec).unwrap();
        let load_s = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let r = ycsb::run(&conn, &spec).unwrap();
        let run_s = t.elapsed().as_secs_f64();
        let st = s.with_fs_mut(|fs| fs.stats()).unwrap();
        eprintln!(
            "workload {}: load {:.0} records/s, run {:.0} operations/s (wall), {} device commits\n  {r:?}",
            w.name(),
            spec.recordcount as f64 / load_s,
            r.operations() as f64 / run_s,
            st.tx_commits
        );
        assert_eq!(integrity_check(&conn).unwrap(), "ok");
        drop(conn);
        s.into_fs().unwrap();
    }
}
