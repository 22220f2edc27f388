//! Replaying txftl traces: recorded from a run, replayed on X-FTL and on plain
//! (host journal), with 1 and 8 clients under each isolation level; what each
//! level promises is checked on a record of what the replay sent.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use txftl_ftl::{FtlConfig, OpKind};
use txftl_harness::{TxShape, WorkloadKind, WorkloadSpec};
use txftl_host::replay::{replay, Isolation, ReplayError, ReplayOptions, ReplayReport};
use txftl_host::trace::{read_trace, Trace, TraceKind, TraceRecord, TraceWriter};
use txftl_host::{run_workload, HostOptions};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{AnyDevice, ProtocolOptions};

fn device(protocol: &str) -> Box<dyn AnyDevice> {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 8;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    txftl_protocols::format(protocol, nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

/// A shared in-memory sink for trace records.
#[derive(Clone, Default)]
struct Sink(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);
impl Write for Sink {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
impl Sink {
    fn writer(&self) -> TraceRecord {
        TraceWriter::new(Box::new(self.clone()) as Box<dyn Write + Send>).unwrap()
    }
    fn trace(&self) -> Trace {
        read_trace(&self.0.lock().unwrap()[..]).unwrap()
    }
}

/// 400 transactions of 6 page writes over a small working set (so they
/// conflict), recorded from `run` on X-FTL.
fn recorded() -> Trace {
    let mut dev = device("xftl");
    let spec = WorkloadSpec {
        kind: WorkloadKind::TxWrite,
        ops: 0,
        fill_pct: 2,
        seed: 3,
        flush_every: 0,
        tx: TxShape {
            pages_per_tx: 6,
            abort_pct: 10,
            concurrency: 1,
            nontx_pct: 0,
            trim_pct: 0,
            transactions: 400,
            cross_pct: 0,
            exclusive: false,
            end_flag: false,
            static_dynamic: None,
        },
    };
    let sink = Sink::default();
    run_workload(&mut *dev, spec, HostOptions::default(), Some(sink.writer()), None, &mut |_| {}).unwrap();
    sink.trace()
}

fn go(trace: &Trace, protocol: &str, clients: u32, isolation: Isolation, abort_pct: u32) -> (ReplayReport, Trace) {
    let mut dev = device(protocol);
    let opts = ReplayOptions {
        clients,
        think_ns: 0,
        isolation,
        abort_pct,
        seed: 5,
    };
    let sink = Sink::default();
    let r = replay(&mut *dev, trace, opts, Some(sink.writer()), &mut |_, _| {}).unwrap();
    assert_eq!(r.counts.wrong_reads, 0, "{r:?}");
    (r, sink.trace())
}

/// Per page, the transaction whose commit came last (in the order sent).
fn last_committed_writer(sent: &Trace) -> BTreeMap<u32, u32> {
    let mut writes: BTreeMap<u32, BTreeSet<u32>> = BTreeMap::new();
    let mut last = BTreeMap::new();
    for op in &sent.ops {
        match (op.kind, op.tid) {
            (TraceKind::Op(OpKind::Write), Some(t)) => {
                writes.entry(t).or_default().insert(op.lpn);
            }
            (TraceKind::Op(OpKind::Commit), Some(t)) => {
                for &p in writes.get(&t).into_iter().flatten() {
                    last.insert(p, t);
                }
            }
            _ => {}
        }
    }
    last
}

#[test]
fn every_level_commits_the_same_transactions_and_serializable_keeps_the_serial_order() {
    let trace = recorded();
    let (base, serial) = go(&trace, "xftl", 1, Isolation::Strict, 0);
    assert_eq!(base.trace.transactions, 400);
    assert_eq!(base.counts.commits + base.counts.aborts, 400);
    assert!(base.trace.tx_pages_max <= 6 && base.trace.tx_pages_mean > 3.0, "{:?}", base.trace);
    // Replay tids are the units' trace order, so serial order is tid order.
    let serial_last = last_committed_writer(&serial);
    for iso in [Isolation::Strict, Isolation::NoPageConflict, Isolation::Serializable] {
        for clients in [1, 8] {
            let (r, sent) = go(&trace, "xftl", clients, iso, 0);
            eprintln!(
                "xftl {} {clients} clients: {:.1} tx per simulated s, p99 tx latency {} us, segments {}, commit waits {}",
                iso.name(),
                r.transactions_per_sim_s,
                r.latency.transaction.p99_ns / 1000,
                r.segments,
                r.commit_waits
            );
            assert_eq!((r.counts.commits, r.counts.aborts), (base.counts.commits, base.counts.aborts));
            assert_eq!(last_committed_writer(&sent), serial_last, "{} {clients} clients", iso.name());
            if iso == Isolation::Serializable && clients == 8 {
                assert!(r.commit_waits > 0, "8 clients on conflicting transactions never waited");
            }
        }
    }
}

/// Transactions open at once, at each point of what was sent.
fn max_open(sent: &Trace) -> usize {
    let mut open = BTreeSet::new();
    let mut most = 0;
    for op in &sent.ops {
        match (op.kind, op.tid) {
            (TraceKind::Op(OpKind::Begin), Some(t)) => {
                open.insert(t);
                most = most.max(open.len());
            }
            (TraceKind::Op(OpKind::Commit) | TraceKind::Op(OpKind::Abort), Some(t)) => {
                open.remove(&t);
            }
            _ => {}
        }
    }
    most
}

#[test]
fn strict_runs_one_transaction_at_a_time_and_no_page_conflict_segments_are_disjoint() {
    let trace = recorded();
    let (strict, sent) = go(&trace, "xftl", 8, Isolation::Strict, 0);
    assert_eq!(max_open(&sent), 1, "strict let transactions overlap");
    assert!(strict.segments > 400, "{}", strict.segments);
    let (npc, sent) = go(&trace, "xftl", 8, Isolation::NoPageConflict, 0);
    assert!(max_open(&sent) > 1, "no-page-conflict never overlapped transactions");
    assert!(npc.segments > 1 && npc.segments < strict.segments);
    // Between barriers, no page is written by two transactions.
    let mut seg: BTreeMap<u32, u32> = BTreeMap::new();
    for op in &sent.ops {
        match (op.kind, op.tid) {
            (TraceKind::Barrier, _) => seg.clear(),
            (TraceKind::Op(OpKind::Write), Some(t)) => {
                let w = *seg.entry(op.lpn).or_insert(t);
                assert_eq!(w, t, "page {} written by {w} and {t} in one segment", op.lpn);
            }
            _ => {}
        }
    }
    let (ser, sent) = go(&trace, "xftl", 8, Isolation::Serializable, 0);
    assert!(max_open(&sent) >= 4, "serializable kept clients apart");
    assert!(ser.transactions_per_sim_s > strict.transactions_per_sim_s, "{ser:?}");
}

#[test]
fn aborts_are_injected_from_the_seed_and_plain_replays_through_the_host_journal() {
    let trace = recorded();
    let (a, _) = go(&trace, "xftl", 4, Isolation::Serializable, 50);
    let (b, _) = go(&trace, "xftl", 4, Isolation::Serializable, 50);
    assert_eq!(a.injected_aborts, b.injected_aborts);
    assert_eq!(a.measured, b.measured, "same seed, same replay");
    assert!((150..=250).contains(&a.injected_aborts), "{}", a.injected_aborts);
    assert_eq!(a.counts.commits + a.counts.aborts, 400);
    let (p, _) = go(&trace, "plain", 4, Isolation::Serializable, 0);
    let (x, _) = go(&trace, "xftl", 4, Isolation::Serializable, 0);
    assert_eq!(p.counts.commits, x.counts.commits);
    assert!(p.host_journal_writes > 0 && p.measured.host_writes > x.measured.host_writes);
}

#[test]
fn a_bad_trace_is_refused_with_its_line() {
    let text = "# t\n0 0 - write 1 1\n5 0 9 commit - -\n";
    let trace = read_trace(text.as_bytes()).unwrap();
    let mut dev = device("xftl");
    let opts = ReplayOptions {
        clients: 1,
        think_ns: 0,
        isolation: Isolation::Strict,
        abort_pct: 0,
        seed: 1,
    };
    match replay(&mut *dev, &trace, opts, None, &mut |_, _| {}) {
        Err(ReplayError::Trace(e)) => {
            assert_eq!(e.line, 3);
            assert!(e.message.contains("transaction 9 is not open"), "{e}");
        }
        other => panic!("{:?}", other.map(|r| r.counts)),
    }
    let big = read_trace("0 0 - write 4000000 1\n".as_bytes()).unwrap();
    let Err(ReplayError::Trace(e)) = replay(&mut *dev, &big, opts, None, &mut |_, _| {}) else {
        panic!("a page past the device was accepted")
    };
    assert!(e.line == 1 && e.message.contains("past the"), "{e}");
}
