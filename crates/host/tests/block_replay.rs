//! Replaying public block traces: queue depth and open loop on the device
//! clock, partial pages, flushes, determinism.

use txftl_ftl::FtlConfig;
use txftl_host::block_replay::{replay_block, BlockReplayOptions, BlockReplayReport};
use txftl_host::blocktrace::gen::{GenSpec, Generator};
use txftl_host::blocktrace::{read_requests, AddressMap, Overflow, TraceFormat};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{AnyDevice, ProtocolOptions};

fn device() -> Box<dyn AnyDevice> {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 16;
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
    txftl_protocols::format("plain", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

fn replay_text(format: TraceFormat, text: &str, opts: BlockReplayOptions) -> BlockReplayReport {
    let mut dev = device();
    let info = dev.info();
    let mut map = AddressMap::new(info.page_size, info.logical_pages as u64);
    let reqs = read_requests(format, text.as_bytes()).numbered();
    replay_block(&mut *dev, reqs, &mut map, opts, &mut |_| {}).unwrap()
}

fn generated(requests: u64, opts: BlockReplayOptions) -> BlockReplayReport {
    let mut dev = device();
    let info = dev.info();
    let capacity = info.logical_pages as u64 * info.page_size as u64;
    let spec = GenSpec::tpcc_like(3, requests, capacity);
    let reqs = Generator::new(&spec).unwrap().enumerate().map(|(i, r)| Ok((i as u64 + 1, r)));
    let mut map = AddressMap::new(info.page_size, info.logical_pages as u64).with_overflow(Overflow::Refuse);
    replay_block(&mut *dev, reqs, &mut map, opts, &mut |_| {}).unwrap()
}

const OPEN: BlockReplayOptions = BlockReplayOptions {
    as_fast_as_possible: false,
    queue_depth: 0,
    precondition_pct: 0,
    age_pct: 0,
    age_seed: 0,
};

#[test]
fn a_deeper_queue_serves_more_requests_per_simulated_second() {
    let fast = |q| {
        generated(
            20_000,
            BlockReplayOptions {
                as_fast_as_possible: true,
                queue_depth: q,
                precondition_pct: 50,
                age_pct: 0,
                age_seed: 0,
            },
        )
    };
    let (q1, q8, q32) = (fast(1), fast(8), fast(32));
    eprintln!(
        "as fast as possible, requests per simulated s: QD1 {:.0}, QD8 {:.0}, QD32 {:.0}",
        q1.throughput_per_sim_s, q8.throughput_per_sim_s, q32.throughput_per_sim_s
    );
    // jasmine has 4 channels: an 8 KiB transfer (100 us) outlasts a read's
    // sense (60 us), so reads are channel-bound and collide (measured x2.1).
    assert!(q8.throughput_per_sim_s > 1.8 * q1.throughput_per_sim_s);
    assert!(q32.throughput_per_sim_s >= q8.throughput_per_sim_s);
    // Latency counts from the submission; a deeper queue waits on busier dies.
    assert!(q32.latency.request.mean_ns > q1.latency.request.mean_ns);
    assert_eq!(q1.counts.requests, 20_000);
    assert!((0.33..0.41).contains(&(q1.counts.writes as f64 / 20_000.0)));
    // Deterministic: the same trace, the same figures.
    assert_eq!(fast(8).measured, q8.measured);
}

#[test]
fn open_loop_follows_the_arrival_times() {
    // Two reads 10 ms apart on an idle device: each completes long before the
    // next arrives, and the run lasts the trace's span plus one read.
    let r = replay_text(TraceFormat::Mqsim, "0 0 0 16 1\n10000000 0 64 16 1\n", OPEN);
    assert_eq!(r.counts.reads, 2);
    assert!(r.measured.sim_time_ns >= 10_000_000, "{}", r.measured.sim_time_ns);
    assert!(r.latency.request.max_ns < 1_000_000, "{:?}", r.latency.request);
}

#[test]
fn partial_pages_are_read_modify_written_and_partial_trims_skipped() {
    // 8 KiB pages: a 4 KiB write at sector 8 covers half of page 0; a 12 KiB
    // write from sector 0 covers page 0 and half of page 1.
    let r = replay_text(TraceFormat::Mqsim, "0 0 8 8 0\n1000 0 0 24 0\n", OPEN);
    assert_eq!((r.counts.page_writes, r.counts.rmw_reads), (3, 2), "{:?}", r.counts);
    // blkparse: a discard of 1.5 pages trims one page and skips the half page.
    let text = "  8,0    0        1     0.000000000   10  Q   D 0 + 24 [fstrim]\n";
    let r = replay_text(TraceFormat::Blkparse, text, OPEN);
    assert_eq!((r.counts.page_trims, r.counts.partial_trim_pages_skipped), (1, 1), "{:?}", r.counts);
}

#[test]
fn a_trace_past_the_device_is_refused_with_its_line() {
    let mut dev = device();
    let info = dev.info();
    let mut map = AddressMap::new(info.page_size, info.logical_pages as u64);
    let far = info.logical_pages as u64 * 16 + 16;
    let text = format!("0 0 0 16 0\n5 0 {far} 16 0\n");
    let reqs = read_requests(TraceFormat::Mqsim, text.as_bytes()).numbered();
    let e = replay_block(&mut *dev, reqs, &mut map, OPEN, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("line 2"), "{e}");
}

/// `age_pct`: random overwrites after the sequential fill use up the free
/// space, so GC runs in a replay whose own writes would not make it run; the
/// overwrites are counted with the precondition, and they are deterministic.
#[test]
fn aging_after_the_precondition_makes_gc_run_in_the_replay() {
    let opts = |age_pct| BlockReplayOptions {
        as_fast_as_possible: true,
        queue_depth: 32,
        precondition_pct: 90,
        age_pct,
        age_seed: 4,
    };
    let (fresh, aged) = (generated(2_000, opts(0)), generated(2_000, opts(50)));
    assert_eq!(fresh.measured.gc_runs, 0, "{:?}", fresh.measured);
    assert!(aged.measured.gc_runs > 0, "{:?}", aged.measured);
    let logical = aged.precondition.host_writes * 100 / (90 + 50);
    assert!(aged.precondition.host_writes > fresh.precondition.host_writes + logical * 49 / 100);
    assert_eq!(generated(2_000, opts(50)).measured, aged.measured);
}
