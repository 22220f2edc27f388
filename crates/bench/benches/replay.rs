//! Requests per wall second of a public-trace replay: a `tpcc-small`-like
//! trace (MQSim's shape: 37% writes, 8 KiB requests; generated, see
//! `txftl_host::blocktrace::gen`) replayed as fast as possible at queue depth
//! 32 on `jasmine` (1 GiB raw), metadata-only, on a copy of a device filled to
//! 90% and aged until GC runs in steady state.
//!
//! The larger devices of the issue (64 GiB, 512 GiB raw) are measured with the
//! CLI (`txftl trace replay --format mqsim --precondition 90
//! --as-fast-as-possible`), which reports requests per wall second too.
//!
//! Run: `cargo bench -p txftl-bench --bench replay`

use divan::counter::ItemsCount;
use divan::Bencher;
use std::sync::OnceLock;
use txftl_bench::steady_state;
use txftl_ftl::{Device, Ftl};
use txftl_host::block_replay::{replay_block, BlockReplayOptions};
use txftl_host::blocktrace::gen::{GenSpec, Generator};
use txftl_host::blocktrace::{AddressMap, BlockRequest, Overflow};
use txftl_protocols::plain::Plain;

const REQUESTS: u64 = 200_000;

struct Prepared {
    device: Ftl<Plain>,
    requests: Vec<BlockRequest>,
}

fn prepared() -> &'static Prepared {
    static P: OnceLock<Prepared> = OnceLock::new();
    P.get_or_init(|| {
        let (device, _) = steady_state("jasmine", None, 90, 1);
        let info = device.info();
        let spec = GenSpec::tpcc_like(1, REQUESTS, info.logical_pages as u64 * info.page_size as u64);
        let requests = Generator::new(&spec).expect("spec").collect();
        Prepared { device, requests }
    })
}

fn replay(dev: &mut Ftl<Plain>, requests: &[BlockRequest]) -> u64 {
    let info = dev.info();
    let mut map = AddressMap::new(info.page_size, info.logical_pages as u64).with_overflow(Overflow::Refuse);
    let opts = BlockReplayOptions {
        as_fast_as_possible: true,
        queue_depth: 32,
        precondition_pct: 0,
        age_pct: 0,
        age_seed: 0,
    };
    let reqs = requests.iter().enumerate().map(|(i, r)| Ok((i as u64 + 1, *r)));
    let r = replay_block(dev, reqs, &mut map, opts, &mut |_| {}).expect("replay");
    assert!(r.measured.gc_runs > 0, "GC must run");
    r.counts.requests
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn tpcc_like_qd32_jasmine_meta(bencher: Bencher) {
    let p = prepared();
    bencher
        .counter(ItemsCount::new(REQUESTS))
        .with_inputs(|| p.device.duplicate())
        .bench_local_values(|mut dev| {
            assert_eq!(replay(&mut dev, &p.requests), REQUESTS);
            dev
        });
}

fn main() {
    divan::main();
}
