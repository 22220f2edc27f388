//! The fill's fast paths (`Dealer::fill_writes`: the fill's writes without
//! the host's per-operation bookkeeping; metadata-only, as one
//! `Device::write_run`) leave the device exactly as the
//! general path does. A run that records a trace takes the general path for
//! every operation, so the same run with and without a record must leave the
//! same flash (every page's spare area and data, the array's counters and
//! busy clocks), the same device counters and clock, and print the same
//! report, wall-clock fields aside. Covered: one and several clients, think
//! time, metadata-only and full data, protocols with and without
//! transactions (the host journal's pages lie outside the fill).

use serde_json::Value;
use std::io::Write;
use txftl_ftl::FtlConfig;
use txftl_harness::{TxShape, WorkloadKind, WorkloadSpec};
use txftl_host::trace::TraceWriter;
use txftl_host::{run_workload, HostOptions};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::{AnyDevice, ProtocolOptions};

struct Discard;
impl Write for Discard {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn device(protocol: &str, mode: DataMode) -> Box<dyn AnyDevice> {
    let mut p = preset("jasmine").unwrap();
    p.geometry.blocks_per_plane = 12;
    let nand = Nand::new(p.config(mode, ViolationPolicy::Panic)).unwrap();
    txftl_protocols::format(protocol, nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap()
}

/// The report as JSON without its wall-clock fields.
fn simulated(v: Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.into_iter()
                .filter(|(k, _)| !k.contains("wall"))
                .map(|(k, v)| (k, simulated(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Runs `spec` with or without a trace record; returns the report and the device.
fn run(protocol: &str, mode: DataMode, spec: WorkloadSpec, host: HostOptions, record: bool) -> (Value, Box<dyn AnyDevice>) {
    let mut dev = device(protocol, mode);
    let rec = record.then(|| TraceWriter::new(Box::new(Discard) as Box<dyn Write + Send>).unwrap());
    let r = run_workload(&mut *dev, spec, host, rec, None, &mut |_| {}).unwrap();
    (simulated(serde_json::to_value(&r).unwrap()), dev)
}

fn assert_same_device(a: &dyn AnyDevice, b: &dyn AnyDevice, what: &str) {
    assert_eq!(a.now_ns(), b.now_ns(), "{what}: device clock");
    assert_eq!(a.stats(), b.stats(), "{what}: device counters");
    let (na, nb) = (a.nand(), b.nand());
    assert_eq!(na.stats(), nb.stats(), "{what}: NAND counters");
    assert_eq!(na.op_count(), nb.op_count(), "{what}: NAND operations");
    assert_eq!(na.all_idle_ns(), nb.all_idle_ns(), "{what}: NAND busy clocks");
    for ppn in 0..na.geometry().page_count() {
        assert_eq!(na.inspect_oob(ppn), nb.inspect_oob(ppn), "{what}: spare area of page {ppn}");
        assert_eq!(na.inspect_data(ppn), nb.inspect_data(ppn), "{what}: data of page {ppn}");
    }
}

fn check(protocol: &str, mode: DataMode, kind: WorkloadKind, fill_pct: u32, host: HostOptions) {
    let spec = WorkloadSpec {
        kind,
        ops: 3_000,
        fill_pct,
        seed: 11,
        flush_every: 0,
        tx: TxShape {
            pages_per_tx: 4,
            ..TxShape::default()
        },
    };
    let what = format!("{protocol} {mode:?} {} fill {fill_pct}% {host:?}", kind.name());
    let (fast, dev_fast) = run(protocol, mode, spec, host, false);
    let (general, dev_general) = run(protocol, mode, spec, host, true);
    assert_eq!(fast, general, "{what}: reports");
    assert!(fast["fill"]["host_writes"].as_u64().unwrap() > 0, "{what}: the fill wrote nothing");
    assert_same_device(&*dev_fast, &*dev_general, &what);
}

#[test]
fn one_client_metadata_only() {
    let one = HostOptions::default();
    check("plain", DataMode::MetaOnly, WorkloadKind::RandWrite, 90, one);
    check("lighttx", DataMode::MetaOnly, WorkloadKind::TxWrite, 80, one);
}

#[test]
fn several_clients_with_think_time() {
    let four = HostOptions {
        clients: 4,
        think_ns: 3_000,
    };
    check("plain", DataMode::MetaOnly, WorkloadKind::RandWrite, 90, four);
    check("xftl", DataMode::MetaOnly, WorkloadKind::TxWrite, 70, four);
    check(
        "nolgn",
        DataMode::MetaOnly,
        WorkloadKind::RandWrite,
        95,
        HostOptions { clients: 3, think_ns: 0 },
    );
}

#[test]
fn full_data_and_a_host_journal() {
    let two = HostOptions { clients: 2, think_ns: 0 };
    check("plain", DataMode::Full, WorkloadKind::TxWrite, 60, two);
    check("dftl", DataMode::Full, WorkloadKind::RandRead, 90, HostOptions::default());
}
