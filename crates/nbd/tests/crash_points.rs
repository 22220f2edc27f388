//! Power cuts at every flash operation of a scripted workload, on the seeded
//! schedule (`CutSchedule::after_ops`): a 3-page write is atomic on a
//! transactional protocol, page by page on plain, and what a flush
//! acknowledged survives.
//!
//! The workload: write V1 over pages 0..3 in one command, flush, write V2
//! over them in one command, flush. Cut N falls at the N-th flash operation
//! after the export armed its schedule; the enumeration runs N = 0, 1, ...
//! until a run's workload completes with no cut (N is then past the last of
//! its K operations). Each run is a fresh server; runs go in parallel
//! batches (the server's accept loop polls, so a run mostly waits).

mod common;

use common::*;
use std::os::unix::net::UnixStream;
use txftl_nand::Torn;
use txftl_nbd::client::{Client, ClientError};
use txftl_nbd::CutSchedule;

const PAGES: u32 = 3;
/// Runs at once.
const BATCH: u64 = 8;
/// No enumeration on a tiny device needs more cut points than this.
const LIMIT: u64 = 400;

/// What one run saw.
#[derive(Debug)]
struct Run {
    n: u64,
    /// Workload steps acknowledged before the cut (4: all, no cut).
    acked: usize,
    /// A scheduled cut happened (during the workload or the check's read).
    cut: bool,
    /// Pages 0..3 after it all, one Vec a page.
    pages: Vec<Vec<u8>>,
}

/// The bytes of pages 0..3 the second write covers: all of them, or
/// (unaligned) all but 100 bytes at each end, every page of it in part.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Second {
    Whole,
    Unaligned,
}

impl Second {
    fn range(self, page: u32) -> std::ops::Range<usize> {
        let len = (PAGES * page) as usize;
        match self {
            Second::Whole => 0..len,
            Second::Unaligned => 100..len - 100,
        }
    }
}

/// V1, and the pages as V2's write leaves them.
fn values(page: u32, second: Second) -> (Vec<u8>, Vec<u8>) {
    let v1 = pattern(101, (PAGES * page) as usize);
    let mut v2 = v1.clone();
    let r = second.range(page);
    v2[r.clone()].copy_from_slice(&pattern(202, (PAGES * page) as usize)[r]);
    (v1, v2)
}

/// Runs the workload with a cut at flash operation `n`, then reads pages 0..3.
fn run(protocol: &str, second: Second, n: u64, torn: Option<Torn>, seed: u64) -> Run {
    let schedule = CutSchedule {
        after_ops: Some(n),
        at_ns: None,
        cuts: 1,
        torn,
        seed,
    };
    let s = TestServer::with(protocol, false, schedule);
    let (v1, v2) = values(s.page, second);
    let r = second.range(s.page);
    // Block sizes asked for only where every request is aligned.
    let mut c = s.connect(n.is_multiple_of(2), second == Second::Whole);
    type Step<'a> = &'a dyn Fn(&mut Client<UnixStream>) -> txftl_nbd::client::Result<()>;
    let steps: [Step; 4] = [
        &|c| c.write(0, &v1, false),
        &|c| c.flush(),
        &|c| c.write(r.start as u64, &v2[r.clone()], false),
        &|c| c.flush(),
    ];
    let mut acked = 0;
    for step in steps {
        match step(&mut c) {
            Ok(()) => acked += 1,
            Err(ClientError::Io(_)) => break,
            Err(e) => panic!("{protocol}, cut at op {n}: step {acked} failed with an NBD error: {e}"),
        }
    }
    drop(c);
    let during = acked < 4;
    if during {
        check_scheduled_cut(&s, protocol, n);
    }
    // The check's read may meet the cut itself when the workload did not.
    let mut pages = None;
    for attempt in 0..2 {
        match s.connect(true, false).read(0, PAGES * s.page) {
            Ok(d) => {
                pages = Some(d);
                break;
            }
            Err(ClientError::Io(e)) if attempt == 0 && !during => check_scheduled_cut(&s, &format!("{protocol} (read: {e})"), n),
            Err(e) => panic!("{protocol}, cut at op {n}: reading back after the cut: {e}"),
        }
    }
    let pages = pages.expect("read back");
    let cut = s.stats()["scheduled_cuts"].as_u64().unwrap() == 1;
    let pages = pages.chunks(s.page as usize).map(|p| p.to_vec()).collect();
    Run { n, acked, cut, pages }
}

/// After a scheduled cut: counted once, recovered, power on.
fn check_scheduled_cut(s: &TestServer, what: &str, n: u64) {
    let st = s.stats();
    assert_eq!(st["scheduled_cuts"], 1, "{what}, cut at op {n}: {st}");
    assert_eq!(st["power_cuts"], 1, "{what}, cut at op {n}");
    assert_eq!(st["powered"], true, "{what}, cut at op {n}: recovered by itself");
    let mounts = st["mounts"].as_array().unwrap();
    assert_eq!(mounts.last().unwrap()["why"], "after the scheduled cut", "{what}, cut at op {n}");
    let events = st["events"].as_array().unwrap();
    assert!(
        events.iter().any(|e| e.as_str().unwrap().starts_with("power cut (scheduled cut")),
        "{what}, cut at op {n}: {events:?}"
    );
}

/// What each run may read: the whole write on a transactional protocol,
/// each page alone on another.
fn check(protocol: &str, transactional: bool, page: u32, r: &Run, second: Second, variant: &str) {
    let (v1, v2) = values(page, second);
    let ps = page as usize;
    let zero = vec![0u8; PAGES as usize * ps];
    let whole: Vec<u8> = r.pages.concat();
    let what = format!("{protocol} ({variant}), cut at op {}, {} steps acknowledged", r.n, r.acked);
    let desc = || r.pages.iter().map(|p| describe(p)).collect::<Vec<_>>().join(" | ");
    // Before the first flush returned: nothing or V1; after: V1 or V2;
    // after the second: V2.
    let allowed: Vec<&Vec<u8>> = match r.acked {
        0 | 1 => vec![&zero, &v1],
        2 | 3 => vec![&v1, &v2],
        _ => vec![&v2],
    };
    if transactional {
        assert!(allowed.contains(&&whole), "{what}: pages 0..3 read {}, a mix or neither", desc());
    } else {
        for (i, p) in r.pages.iter().enumerate() {
            let ok = allowed.iter().any(|a| a[i * ps..(i + 1) * ps] == p[..]);
            assert!(ok, "{what}: page {i} reads {}, neither old nor new", describe(p));
        }
    }
}

/// Enumerates every cut point of the workload; the number of flash
/// operations the workload takes (K).
fn enumerate(protocol: &str, second: Second, torn: Option<Torn>, seed: u64) -> u64 {
    let entry = txftl_protocols::entry(protocol).unwrap();
    let variant = torn.map_or(format!("seeded {seed}"), |t| format!("torn {}", t.name())) + &format!(", second write {second:?}");
    let mut outcomes = [0usize; 5];
    let mut start = 0;
    while start < LIMIT {
        let runs: Vec<Run> = std::thread::scope(|scope| {
            let handles: Vec<_> = (start..start + BATCH)
                .map(|n| {
                    std::thread::Builder::new()
                        .name(format!("{protocol}-cut-{n}"))
                        .spawn_scoped(scope, move || run(protocol, second, n, torn, seed.wrapping_add(n)))
                        .unwrap()
                })
                .collect();
            handles.into_iter().map(|h| h.join().expect("a run panicked")).collect()
        });
        for r in &runs {
            check(protocol, entry.transactional, 512, r, second, &variant);
            outcomes[r.acked] += 1;
        }
        if let Some(done) = runs.iter().find(|r| r.acked == 4) {
            // Every later cut point completes too (the operations are the same run after run).
            assert!(runs.iter().all(|r| r.n < done.n || r.acked == 4), "{protocol}: {runs:?}");
            // Cut points just past K land in the check's own read, after the last flush.
            let in_check = runs.iter().filter(|r| r.acked == 4 && r.cut).count();
            assert!(in_check > 0, "{protocol} ({variant}): no cut landed in the check's read: {runs:?}");
            eprintln!(
                "{protocol} ({variant}): K = {}, runs by steps acknowledged {outcomes:?}, {in_check} cut in the check's read",
                done.n
            );
            // Cuts landed in both writes (a flush may have nothing to program).
            assert!(outcomes[0] >= 3 && outcomes[2] >= 3, "{protocol}: {outcomes:?}");
            return done.n;
        }
        assert!(runs.iter().all(|r| r.cut), "{protocol}: a run without a cut before K");
        start += BATCH;
    }
    panic!("{protocol}: the workload never completed within {LIMIT} flash operations");
}

fn enumerate_all(protocol: &str, second: Second, torns: &[Option<Torn>]) {
    let page = device(protocol).info().page_size;
    assert_eq!(page, 512, "the checks assume the tiny preset's pages");
    let mut ks = Vec::new();
    for (i, &torn) in torns.iter().enumerate() {
        ks.push(enumerate(protocol, second, torn, 0x5eed + 1000 * i as u64));
    }
    // The workload programs 6 data pages at least, and takes as many
    // operations whatever the cut would tear.
    assert!(ks[0] >= 6, "{protocol}: K = {}", ks[0]);
    assert!(ks.iter().all(|&k| k == ks[0]), "{protocol}: K differs by variant: {ks:?}");
}

/// Every torn variant, then two seeded draws.
fn variants() -> Vec<Option<Torn>> {
    Torn::ALL.iter().map(|&t| Some(t)).chain([None, None]).collect()
}

#[test]
fn every_cut_point_xftl() {
    enumerate_all("xftl", Second::Whole, &variants());
}

#[test]
fn every_cut_point_lighttx() {
    enumerate_all("lighttx", Second::Whole, &variants());
}

#[test]
fn every_cut_point_plain() {
    enumerate_all("plain", Second::Whole, &[None, Some(Torn::Garbage), Some(Torn::Partial)]);
}

/// The second write patches parts of 3 pages (each read, patched, written
/// whole): still all or nothing on a transactional protocol.
#[test]
fn every_cut_point_unaligned_xftl() {
    enumerate_all("xftl", Second::Unaligned, &[None, Some(Torn::Garbage), Some(Torn::Data)]);
}

#[test]
fn every_cut_point_unaligned_plain() {
    enumerate_all("plain", Second::Unaligned, &[None, Some(Torn::Partial)]);
}

/// A schedule of two cuts cuts each boot at the same point of it: the
/// first write is cut, then (after recovery) the second, then no more.
#[test]
fn two_scheduled_cuts() {
    for protocol in ["plain", "xftl"] {
        let schedule = CutSchedule {
            after_ops: Some(1),
            at_ns: None,
            cuts: 2,
            torn: Some(Torn::Partial),
            seed: 7,
        };
        let s = TestServer::with(protocol, false, schedule);
        let v = pattern(3, 3 * 512);
        for k in 1..=2u64 {
            let mut c = s.connect(true, true);
            match c.write(0, &v, false) {
                Err(ClientError::Io(_)) => {}
                other => panic!("{protocol}: write {k} is cut, got {other:?}"),
            }
            let st = s.stats();
            assert_eq!(st["scheduled_cuts"], k, "{protocol}");
            assert_eq!(st["powered"], true, "{protocol}");
        }
        let mut c = s.connect(true, true);
        c.write(0, &v, false).unwrap();
        c.flush().unwrap();
        assert_eq!(c.read(0, 3 * 512).unwrap(), v);
        let st = s.stats();
        assert_eq!(st["scheduled_cuts"], 2);
        assert_eq!(st["power_cuts"], 2);
        let whys: Vec<&str> = st["mounts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["why"].as_str().unwrap())
            .collect();
        assert_eq!(whys, ["after the scheduled cut", "after the scheduled cut"], "{protocol}");
    }
}
