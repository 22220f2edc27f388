//! What the concurrent host costs a single-client run: the same workload
//! (random writes at 90% fill on `jasmine` at 256 MiB, metadata-only, the fill
//! included, GC active) sent (a) by the plain sequential loop the runner used
//! before the host existed (each operation through the harness's driver, in
//! stream order) and (b) by `txftl_host::run_workload` with one client.
//! Both issue exactly the same flash operations (asserted); divan reports
//! flash operations per wall second. Target: (b) within 10% of (a).
//!
//! Run: `cargo bench -p txftl-bench --bench host`

use divan::counter::ItemsCount;
use divan::Bencher;
use std::sync::OnceLock;
use txftl_ftl::FtlConfig;
use txftl_harness::model::TxModel;
use txftl_harness::run::Driver;
use txftl_harness::{OpStream, TxShape, WorkloadKind, WorkloadSpec};
use txftl_host::{run_workload, HostOptions};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::AnyDevice;

fn spec() -> WorkloadSpec {
    WorkloadSpec {
        kind: WorkloadKind::RandWrite,
        ops: 200_000,
        fill_pct: 90,
        seed: 1,
        flush_every: 64,
        tx: TxShape::default(),
    }
}

fn device() -> Box<dyn AnyDevice> {
    let mut p = preset("jasmine").expect("preset");
    p.geometry.blocks_per_plane = 32;
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).expect("geometry");
    txftl_protocols::format(txftl_protocols::DEFAULT_PROTOCOL, nand, FtlConfig::default(), &Default::default()).expect("format")
}

fn sequential(dev: &mut dyn AnyDevice) -> u64 {
    let info = dev.info();
    let mut driver = Driver::new(info.page_size, false);
    let mut model = TxModel::new(info.logical_pages);
    for op in OpStream::new(spec(), info.logical_pages) {
        driver.apply(dev, op, &mut model).expect("op");
    }
    dev.flush().expect("flush");
    dev.stats().flash_ops()
}

fn hosted(dev: &mut dyn AnyDevice) -> u64 {
    let r = run_workload(dev, spec(), HostOptions::default(), None, None, &mut |_| {}).expect("run");
    r.fill.flash_ops() + r.measured.flash_ops()
}

fn flash_ops() -> u64 {
    static N: OnceLock<u64> = OnceLock::new();
    *N.get_or_init(|| {
        let a = sequential(&mut *device());
        let b = hosted(&mut *device());
        assert_eq!(a, b, "the host must issue the same flash operations");
        a
    })
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn sequential_driver_loop(bencher: Bencher) {
    let n = flash_ops();
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(device)
        .bench_local_values(|mut dev| sequential(&mut *dev));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn host_one_client(bencher: Bencher) {
    let n = flash_ops();
    bencher
        .counter(ItemsCount::new(n))
        .with_inputs(device)
        .bench_local_values(|mut dev| hosted(&mut *dev));
}

fn main() {
    divan::main();
}
