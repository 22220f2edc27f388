//! Flash operations per wall second of each transactional protocol on a
//! GC-active transactional run: `jasmine` (1 GiB raw, 8 dies), or
//! `flagcommit` (512 MiB raw, SLC, 8 dies) for a protocol that needs SLC
//! cells (the registry entry's `NandNeeds::full_preset`), metadata-only,
//! the working set (90% of the logical pages) filled and aged by random
//! transactions until GC runs in steady state; then each iteration runs the
//! same 2,000 transactions of 8 random page writes (one open at a time, 10%
//! aborted) on a fresh mount of a copy of that device, so the flash
//! operations per iteration are exact (asserted).
//!
//! Run: `cargo bench -p txftl-bench --bench protocols`

use divan::counter::ItemsCount;
use divan::Bencher;
use std::collections::BTreeMap;
use std::sync::{Mutex, OnceLock};
use txftl_bench::transactions;
use txftl_ftl::FtlConfig;
use txftl_nand::Nand;
use txftl_protocols::{mount, AnyDevice, ProtocolOptions};

const TXS: usize = 2_000;

struct Prepared {
    nand: Nand,
    working_set: u32,
    flash_ops: u64,
}

fn prepared(protocol: &'static str) -> &'static Prepared {
    static P: OnceLock<Mutex<BTreeMap<&'static str, &'static Prepared>>> = OnceLock::new();
    let mut map = P.get_or_init(Default::default).lock().unwrap();
    map.entry(protocol).or_insert_with(|| {
        let preset = txftl_protocols::entry(protocol).expect("a registry name").nand.full_preset();
        let (nand, working_set) = txftl_bench::tx_steady_state(protocol, preset, 90, 1);
        let flash_ops = transactions(&mut *fresh(protocol, &nand), working_set, TXS, 7);
        eprintln!("{protocol}: {TXS} transactions -> {flash_ops} flash ops");
        Box::leak(Box::new(Prepared {
            nand,
            working_set,
            flash_ops,
        }))
    })
}

fn fresh(protocol: &str, nand: &Nand) -> Box<dyn AnyDevice> {
    mount(protocol, nand.snapshot(), FtlConfig::default(), &ProtocolOptions::default()).expect("mount")
}

/// Every transactional protocol of the registry.
fn transactional() -> impl Iterator<Item = &'static str> {
    txftl_protocols::PROTOCOLS.iter().filter(|e| e.transactional).map(|e| e.name)
}

#[divan::bench(args = transactional(), sample_count = 10, sample_size = 1)]
fn transactions_gc_active_jasmine_meta(bencher: Bencher, protocol: &'static str) {
    let p = prepared(protocol);
    bencher
        .counter(ItemsCount::new(p.flash_ops))
        .with_inputs(|| fresh(protocol, &p.nand))
        .bench_local_values(|mut dev| {
            let ops = transactions(&mut *dev, p.working_set, TXS, 7);
            assert_eq!(ops, p.flash_ops);
            dev
        });
}

fn main() {
    divan::main();
}
