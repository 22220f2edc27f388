//! Power cuts at instants of the device clock (`CutSchedule::at_ns`): every
//! program or erase running at the instant is torn (or lost), later ones
//! never happen. A 3-page write stays all or nothing on a transactional
//! protocol, and what a flush acknowledged survives.
//!
//! The workload: six 3-page values written over pages 0..3, one command
//! each, a flush after every second one. A first run without a cut gives
//! the device time the workload spans; the instants are an even grid over
//! it (each a fresh server), plus one past its end.

mod common;

use common::*;
use txftl_nbd::client::ClientError;
use txftl_nbd::CutSchedule;

const PAGES: u32 = 3;
const VALUES: u8 = 6;
const INSTANTS: u64 = 48;

struct Run {
    /// Values acknowledged (written), and the last one a flush acknowledged.
    written: u8,
    flushed: u8,
    pages: Vec<u8>,
    cut: bool,
    torn_found: u64,
}

fn workload(s: &TestServer) -> (u8, u8) {
    let mut c = s.connect(true, true);
    let (mut written, mut flushed) = (0, 0);
    for v in 1..=VALUES {
        match c.write(0, &pattern(v, (PAGES * s.page) as usize), false) {
            Ok(()) => written = v,
            Err(ClientError::Io(_)) => break,
            Err(e) => panic!("write {v}: {e}"),
        }
        if v % 2 == 0 {
            match c.flush() {
                Ok(()) => flushed = v,
                Err(ClientError::Io(_)) => break,
                Err(e) => panic!("flush after {v}: {e}"),
            }
        }
    }
    (written, flushed)
}

fn run(protocol: &str, at_ns: Option<u64>, seed: u64) -> Run {
    let schedule = CutSchedule {
        after_ops: None,
        at_ns,
        cuts: 1,
        torn: None,
        seed,
    };
    let s = TestServer::with(protocol, false, schedule);
    let (written, flushed) = workload(&s);
    // A cut at an instant past the last command lands at the next one: the read.
    let pages = match s.connect(true, true).read(0, PAGES * s.page) {
        Ok(p) => p,
        Err(ClientError::Io(_)) => s.connect(true, true).read(0, PAGES * s.page).expect("read after the cut"),
        Err(e) => panic!("read back: {e}"),
    };
    let st = s.stats();
    let torn_found = st["mounts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["report"]["torn_pages_found"].as_u64().unwrap())
        .sum();
    Run {
        written,
        flushed,
        pages,
        cut: st["scheduled_cuts"] == 1,
        torn_found,
    }
}

/// The device time the whole workload takes, from a run without a cut.
fn span(protocol: &str) -> u64 {
    let s = TestServer::with(protocol, false, CutSchedule::default());
    workload(&s);
    s.stats()["device_clock_ns"].as_u64().unwrap()
}

fn check(protocol: &str) {
    let end = span(protocol);
    let size = (PAGES * 512) as usize;
    let (mut cuts, mut torn) = (0, 0);
    for i in 0..=INSTANTS {
        let t = end * i / INSTANTS + if i == INSTANTS { 1 } else { 0 };
        let r = run(protocol, Some(t), i);
        assert!(r.cut, "{protocol}: no cut at {t} ns (workload spans {end} ns)");
        cuts += 1;
        torn += r.torn_found;
        // The value read is one whole value, none older than the last flushed.
        let which = (0..=VALUES).find(|&v| {
            if v == 0 {
                r.pages == vec![0u8; size]
            } else {
                r.pages == pattern(v, size)
            }
        });
        let Some(v) = which else {
            panic!("{protocol}, cut at {t} ns: pages 0..3 hold a mix ({})", describe(&r.pages));
        };
        assert!(
            v >= r.flushed,
            "{protocol}, cut at {t} ns: value {v} read, {} was flushed",
            r.flushed
        );
        assert!(
            v <= r.written.max(r.flushed) + 1,
            "{protocol}, cut at {t} ns: value {v} read, {} written",
            r.written
        );
    }
    eprintln!("{protocol}: {cuts} instants over {end} ns, {torn} torn pages found by the recoveries");
    assert!(
        torn > 0,
        "{protocol}: no instant tore a program in flight: the cut by time proved nothing"
    );
}

#[test]
fn instant_cuts_keep_writes_whole_on_xftl() {
    check("xftl");
}

#[test]
fn instant_cuts_keep_writes_whole_on_lighttx() {
    check("lighttx");
}
