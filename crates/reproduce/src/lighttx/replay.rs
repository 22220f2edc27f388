//! The runners of `reproduce lighttx`: a fresh, preconditioned device of a
//! protocol, the recorded trace replayed on it (`trace replay`'s machinery,
//! `txftl_host::replay`), and what a replay measured.

use super::params::{preset, Params};
use super::results::Run;
use crate::device::preconditioned;
use crate::fmt::thousands;
use crate::progress::Progress;
use crate::Error;
use txftl_ftl::DeviceStats;
use txftl_host::replay::{replay, Isolation, ReplayOptions, ReplayReport};
use txftl_host::trace::Trace;
use txftl_protocols::{AnyDevice, ProtocolOptions};

/// The options of run key `key` (a protocol, or a variant): LightTx's zone
/// size (None: the protocol's default, and every other protocol), the
/// paper's protocol's ([`super::PAPER_OPTIONS`]), then a variant's own
/// (which replace those of the same name).
pub fn key_options(key: &str, zone: Option<u32>) -> ProtocolOptions {
    let opts = match zone {
        Some(z) => ProtocolOptions::new().with("zone-blocks", z),
        None => ProtocolOptions::new(),
    };
    let own = super::variant(key).map_or(&[][..], |v| v.opts);
    super::paper_options(super::protocol_of(key))
        .iter()
        .filter(|(k, _)| !own.iter().any(|(o, _)| o == k))
        .chain(own)
        .fold(opts, |o, &(k, v)| o.with(k, v))
}

/// A fresh device of run key `key` (a protocol or a variant) on the preset
/// at `bpp`, metadata only, preconditioned: `fill_pct`% of the logical pages
/// written once, sequentially, without transactions, then flushed.
pub fn device(key: &str, bpp: u32, zone: Option<u32>, fill_pct: u32) -> Result<Box<dyn AnyDevice>, Error> {
    preconditioned(super::protocol_of(key), &preset(bpp)?, &key_options(key, zone), fill_pct)
}

pub fn replay_on(
    dev: &mut dyn AnyDevice,
    trace: &Trace,
    params: &Params,
    isolation: Isolation,
    abort_pct: u32,
    progress: &Progress,
) -> Result<ReplayReport, Error> {
    let opts = ReplayOptions {
        clients: params.replay_clients,
        think_ns: 0,
        isolation,
        abort_pct,
        seed: params.head.seed,
    };
    let what = progress.said();
    let protocol = dev.info().protocol;
    replay(dev, trace, opts, None, &mut |done, total| {
        progress.say(format!("{what} ({}/{} trace operations)", thousands(done), thousands(total)));
    })
    .map_err(|e| Error::Failed(format!("replay on {protocol}: {e}")))
}

pub fn run_of(params: &Params, protocol: &str, zone: Option<u32>, fill_pct: u32, r: &ReplayReport) -> Run {
    let m = r.measured;
    let sim_s = m.sim_time_ns as f64 / 1e9;
    let ended = r.counts.commits + r.counts.aborts;
    // What a device writes to persist its mappings: every page its
    // checkpoints write (L2P table pages, block-table pages, the record:
    // SCC and BPCC persist no L2P, their block table and record are what
    // they persist) and the protocol's own map pages (Atomic-Write's at
    // each commit). Superblocks are shown apart.
    let l2p = m.map_l2p_writes + m.protocol_meta_writes;
    let mapping = l2p + m.map_block_writes + m.map_record_writes;
    let mean = |op: &str| r.latency.by_op.get(op).map_or(0.0, |l| l.mean_ns);
    Run {
        protocol: protocol.into(),
        isolation: r.options.isolation.name().into(),
        abort_pct: r.options.abort_pct,
        zone_blocks: zone,
        fill_pct,
        tx_per_sim_s: if sim_s > 0.0 { ended as f64 / sim_s } else { 0.0 },
        committed_per_sim_s: r.transactions_per_sim_s,
        commits: r.counts.commits,
        aborts: r.counts.aborts,
        segments: r.segments,
        commit_waits: r.commit_waits,
        commit_mean_ns: mean("commit"),
        abort_mean_ns: mean("abort"),
        sim_s,
        gc_overhead_ms: gc_overhead_ns(params, &m) as f64 / 1e6,
        mapping_writes: mapping,
        mapping_ratio_pct: 100.0 * mapping as f64 / m.host_writes.max(1) as f64,
        mapping_l2p_ratio_pct: 100.0 * l2p as f64 / m.host_writes.max(1) as f64,
        measured: m,
    }
}

/// The paper's GC overhead ("time used for moving the valid pages from each
/// block to be erased and erasing the invalid blocks"): every page GC or a
/// forced erase moved (read, two transfers, program) and every block they
/// reclaimed (one erase each), at the preset's latencies.
pub fn gc_overhead_ns(params: &Params, m: &DeviceStats) -> u64 {
    m.gc_copies * params.gc_copy_ns + (m.gc_runs + m.protocol.get("forced_erases")) * params.gc_erase_ns
}
