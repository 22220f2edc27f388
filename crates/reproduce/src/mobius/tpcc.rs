//! Fig. 9's TPC-C bars (throughput on Atomic-Write, LightTx, and Möbius
//! with S-SWRITE and A-SWRITE commits, on the 4 KiB flash) and Fig. 10 (and
//! the TPC-C traces they replay): write amplification of raw
//! DFTL, Atomic-Write, LightTx and Möbius on the board's 8 KiB + 448 B flash
//! (the `jasmine` preset), replaying a TPC-C transactional block trace
//! recorded in the run (`crate::tpcc_trace`: TPC-C on SQLite, one device
//! transaction per SQLite transaction, recorded on the same preset). The
//! paper states no workload for Fig. 10; it is Fig. 9's TPC-C here. Each
//! replay runs on a fresh device, metadata only, its logical pages written
//! once sequentially first and flushed (as `reproduce lighttx` does), with
//! the trace's clients, strict isolation, no aborts. DFTL has no
//! transactions: the replay's host redo journal gives the trace's
//! transactions their atomicity there, its writes counted as host writes.

use super::params::Params;
use super::results::{TpsRun, WaRun};
use crate::device::preconditioned;
use crate::tpcc_trace::{record_tpcc, Workload};
use crate::{Error, Progress};
use txftl_host::replay::{replay, Isolation, ReplayOptions, ReplayReport};
use txftl_host::trace::Trace;
use txftl_nand::Preset;
use txftl_protocols::ProtocolOptions;

/// Fig. 10's protocols, in the paper's legend order, and their names.
pub const PROTOCOLS: [(&str, &str); 4] = [
    ("dftl", "DFTL"),
    ("atomic-write", "Atomic-Write"),
    ("lighttx", "LightTx"),
    ("mobius", "Möbius"),
];

/// One of Fig. 9's runs: a key, the protocol, its options, the paper's name.
pub type Fig9Run = (&'static str, &'static str, &'static [(&'static str, u32)], &'static str);

/// Fig. 9's runs.
pub const FIG9: [Fig9Run; 4] = [
    ("atomic-write", "atomic-write", &[], "Atomic-Write"),
    ("lighttx", "lighttx", &[], "LightTx"),
    ("s-swrite", "mobius", &[], "S-SWRITE"),
    ("a-swrite", "mobius", &[("async-commit", 1)], "A-SWRITE"),
];

/// `trace` replayed on a fresh device: the trace's clients, strict
/// isolation, no aborts.
pub(super) fn replay_on(params: &Params, p: &Preset, trace: &Trace, protocol: &str, opts: &ProtocolOptions) -> Result<ReplayReport, Error> {
    replay_with(params, p, trace, protocol, opts, params.tpcc.clients)
}

/// `trace` replayed on a fresh device by `clients` clients, strict
/// isolation, no aborts.
pub(super) fn replay_with(
    params: &Params,
    p: &Preset,
    trace: &Trace,
    protocol: &str,
    opts: &ProtocolOptions,
    clients: u32,
) -> Result<ReplayReport, Error> {
    let mut dev = preconditioned(protocol, p, opts, params.fill_pct)?;
    dev.reset_stats();
    let ropts = ReplayOptions {
        clients,
        think_ns: 0,
        isolation: Isolation::Strict,
        abort_pct: 0,
        seed: params.head.seed,
    };
    replay(&mut *dev, trace, ropts, None, &mut |_, _| {}).map_err(|e| Error::Failed(format!("replay on {protocol}: {e}")))
}

/// The trace replayed on `protocol`: its write amplification and where the
/// writes went.
fn replay_one(params: &Params, trace: &Trace, protocol: &str) -> Result<WaRun, Error> {
    let r = replay_on(params, &params.wa_preset(), trace, protocol, &super::protocol_options(protocol))
        .map_err(|e| Error::Failed(format!("Fig. 10: {e}")))?;
    let m = r.measured;
    let p = &m.protocol;
    Ok(WaRun {
        protocol: protocol.into(),
        // One denominator for every protocol: the pages the trace writes
        // (DFTL's host journal is the host's doing, not the trace's).
        write_amplification: m.flash_programs as f64 / m.host_writes.saturating_sub(r.host_journal_writes).max(1) as f64,
        host_writes: m.host_writes,
        journal_writes: r.host_journal_writes,
        flash_programs: m.flash_programs,
        gc_copies: m.gc_copies,
        map_writes: m.map_writes,
        protocol_meta_writes: m.protocol_meta_writes,
        inodes: p.get("mobius_inodes"),
        commits: r.counts.commits,
    })
}

/// Records the trace on Fig. 10's preset and replays it on every protocol.
pub fn fig10(params: &Params, progress: &Progress) -> Result<(Workload, Vec<WaRun>), Error> {
    progress.say("Fig. 10: recording TPC-C on SQLite (8 KiB pages)");
    let mut p = params.wa_preset();
    p.geometry.blocks_per_plane = params.wa_blocks_per_plane;
    let (trace, workload) = record_tpcc(&p, &params.tpcc)?;
    if workload.consistency != "ok" {
        return Err(Error::Failed(format!(
            "Fig. 10: TPC-C's consistency check failed: {}",
            workload.consistency
        )));
    }
    progress.step();
    let mut runs = Vec::new();
    for (protocol, name) in PROTOCOLS {
        progress.say(format!("Fig. 10: the TPC-C trace on {name}"));
        runs.push(replay_one(params, &trace, protocol)?);
        progress.step();
    }
    Ok((workload, runs))
}

/// Fig. 9's TPC-C: the trace recorded on the 4 KiB flash (the `mobius`
/// preset at its own 1 GiB), replayed on each of [`FIG9`]'s runs: committed
/// transactions per simulated second.
pub fn fig9(params: &Params, progress: &Progress) -> Result<(Workload, Vec<TpsRun>), Error> {
    progress.say("Fig. 9: recording TPC-C on SQLite (4 KiB pages)");
    let p = params.tps_preset();
    let (trace, workload) = record_tpcc(&p, &params.tpcc)?;
    if workload.consistency != "ok" {
        return Err(Error::Failed(format!(
            "Fig. 9: TPC-C's consistency check failed: {}",
            workload.consistency
        )));
    }
    progress.step();
    let mut runs = Vec::new();
    for (key, protocol, opts, name) in FIG9 {
        progress.say(format!("Fig. 9: the TPC-C trace on {name}"));
        let opts = opts.iter().fold(super::protocol_options(protocol), |o, &(k, v)| o.with(k, v));
        let r = replay_on(params, &p, &trace, protocol, &opts).map_err(|e| Error::Failed(format!("Fig. 9: {e}")))?;
        runs.push(tps_run(key, &r));
        progress.step();
    }
    Ok((workload, runs))
}

/// One of Fig. 9's bars from its replay.
pub(super) fn tps_run(key: &str, r: &ReplayReport) -> TpsRun {
    TpsRun {
        key: key.into(),
        tps: r.transactions_per_sim_s,
        sim_s: r.measured.sim_time_ns as f64 / 1e9,
        commits: r.counts.commits,
        commit_mean_us: r.latency.by_op.get("commit").map_or(0.0, |l| l.mean_ns / 1e3),
        flash_programs: r.measured.flash_programs,
        map_writes: r.measured.map_writes,
        protocol_meta_writes: r.measured.protocol_meta_writes,
        host_writes: r.measured.host_writes,
        gc_copies: r.measured.gc_copies,
    }
}
