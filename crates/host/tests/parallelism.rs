//! The concurrent host's parallelism is real: clients' reads overlap on the
//! device clock wherever dies and channels are free, and queue where they are
//! not. Throughput is host reads per simulated second.
//!
//! - Sequential reads dealt to 8 clients land on 8 different dies (the fill
//!   striped consecutive pages over the units), so 8 clients on 8 idle dies
//!   reach close to 8 times one client's throughput.
//! - Uniformly random reads collide: 8 closed-loop clients over 8 dies keep
//!   fewer than 8 dies busy. With exponential service times the closed
//!   queueing network of N clients and M servers with random routing gives
//!   N*M/(N+M-1) = 64/15 = 4.27 busy dies; fixed service times (a read here is
//!   always sense + transfer) queue less, and the run measures about 4.9x. The
//!   test holds the gain between those bounds' neighbourhood, which a model
//!   serialising the clients (1x) or ignoring the collisions (8x) both fail.
//! - On one die, nothing overlaps: 8 clients get one client's throughput.

use txftl_ftl::FtlConfig;
use txftl_harness::{TxShape, WorkloadKind, WorkloadSpec};
use txftl_host::{run_workload, HostOptions};
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::ProtocolOptions;

fn throughput(channels: u32, dies_per_channel: u32, clients: u32, kind: WorkloadKind) -> f64 {
    let mut p = preset("jasmine").unwrap();
    p.geometry.channels = channels;
    p.geometry.dies_per_channel = dies_per_channel;
    p.geometry.blocks_per_plane = 24;
    let nand = Nand::new(p.config(DataMode::MetaOnly, ViolationPolicy::Panic)).unwrap();
    let mut dev = txftl_protocols::format("plain", nand, FtlConfig::default(), &ProtocolOptions::default()).unwrap();
    let spec = WorkloadSpec {
        kind,
        ops: 16_000,
        fill_pct: 90,
        seed: 7,
        flush_every: 0,
        tx: TxShape::default(),
    };
    let host = HostOptions { clients, think_ns: 0 };
    let r = run_workload(&mut *dev, spec, host, None, None, &mut |_| {}).unwrap();
    assert_eq!(r.counts.ops, 16_000);
    assert_eq!(r.measured.host_reads, 16_000);
    r.throughput_per_sim_s
}

fn sweep(channels: u32, dies: u32, kind: WorkloadKind) -> Vec<f64> {
    let t: Vec<f64> = [1, 2, 4, 8].iter().map(|&c| throughput(channels, dies, c, kind)).collect();
    eprintln!(
        "{channels} ch x {dies} dies, {}: reads per simulated s for 1/2/4/8 clients: {:.0} / {:.0} / {:.0} / {:.0} (x{:.2} / x{:.2} / x{:.2})",
        kind.name(),
        t[0],
        t[1],
        t[2],
        t[3],
        t[1] / t[0],
        t[2] / t[0],
        t[3] / t[0]
    );
    t
}

#[test]
fn sequential_reads_of_8_clients_on_8_dies_reach_close_to_8_times_one_client() {
    let t = sweep(8, 1, WorkloadKind::SeqRead);
    assert!(t[1] / t[0] > 1.9 && t[2] / t[0] > 3.8, "{t:?}");
    assert!(t[3] / t[0] > 7.5, "8 clients on 8 idle dies: x{:.2}", t[3] / t[0]);
}

#[test]
fn random_reads_of_8_clients_on_8_dies_gain_what_their_collisions_allow() {
    let t = sweep(8, 1, WorkloadKind::RandRead);
    assert!(t.windows(2).all(|w| w[1] > w[0]), "{t:?}");
    let gain = t[3] / t[0];
    assert!(
        (3.8..=5.8).contains(&gain),
        "8 random clients on 8 dies: x{gain:.2} (exponential closed network: x4.27)"
    );
}

#[test]
fn on_one_die_8_clients_get_one_clients_throughput() {
    for kind in [WorkloadKind::SeqRead, WorkloadKind::RandRead] {
        let t = sweep(1, 1, kind);
        assert!(t[3] / t[0] < 1.05, "{}: one die gave x{:.2}", kind.name(), t[3] / t[0]);
    }
}
