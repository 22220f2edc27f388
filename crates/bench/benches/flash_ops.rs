//! Flash operations per wall second: random writes at 90% logical fill on the
//! `jasmine` preset (1 GiB raw, 8 dies), metadata-only mode, GC in steady state.
//!
//! Each iteration replays the same 20,000-write segment on a fresh copy of the
//! same steady-state device, so the flash operations per iteration are exact;
//! divan reports them as items per second.
//!
//! Run: `cargo bench -p txftl-bench`

use divan::counter::ItemsCount;
use divan::Bencher;
use std::sync::OnceLock;
use txftl_bench::{replay, segment, steady_state};
use txftl_ftl::Ftl;
use txftl_protocols::plain::Plain;

const WRITES: usize = 20_000;

struct Prepared {
    device: Ftl<Plain>,
    lpns: Vec<u32>,
    flash_ops: u64,
}

fn prepared() -> &'static Prepared {
    static P: OnceLock<Prepared> = OnceLock::new();
    P.get_or_init(|| {
        let (device, ws) = steady_state("jasmine", None, 90, 1);
        let lpns = segment(ws, WRITES, 7);
        let flash_ops = replay(&mut device.duplicate(), &lpns);
        eprintln!(
            "segment: {WRITES} host writes -> {flash_ops} flash ops ({:.2} per host write)",
            flash_ops as f64 / WRITES as f64
        );
        Prepared { device, lpns, flash_ops }
    })
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn randwrite_90pct_fill_jasmine_meta(bencher: Bencher) {
    let p = prepared();
    bencher
        .counter(ItemsCount::new(p.flash_ops))
        .with_inputs(|| p.device.duplicate())
        .bench_local_values(|mut dev| {
            let ops = replay(&mut dev, &p.lpns);
            assert_eq!(ops, p.flash_ops);
            dev
        });
}

fn main() {
    divan::main();
}
