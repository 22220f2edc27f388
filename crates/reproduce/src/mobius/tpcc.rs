//! Fig. 10 (and the TPC-C trace it replays): write amplification of raw
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
use super::results::WaRun;
use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::tpcc_trace::{record_tpcc, Workload};
use crate::{Error, Progress};
use txftl_ftl::FtlConfig;
use txftl_host::replay::{replay, Isolation, ReplayOptions};
use txftl_host::trace::Trace;
use txftl_nand::DataMode;
use txftl_protocols::{AnyDevice, ProtocolOptions};

/// Fig. 10's protocols, in the paper's legend order, and their names.
pub const PROTOCOLS: [(&str, &str); 4] = [
    ("dftl", "DFTL"),
    ("atomic-write", "Atomic-Write"),
    ("lighttx", "LightTx"),
    ("mobius", "Möbius"),
];

/// A fresh device of `protocol` on Fig. 10's preset, preconditioned.
fn device(params: &Params, protocol: &str) -> Result<Box<dyn AnyDevice>, Error> {
    let nand_cfg = nand_config(&params.wa_preset(), DataMode::MetaOnly);
    let ftl = FtlConfig::default();
    let opts = ProtocolOptions::new();
    check_device_fits(protocol, &nand_cfg, &ftl, &opts, 0)?;
    let mut dev = txftl_protocols::format(protocol, ram(nand_cfg)?, ftl, &opts).map_err(device_error)?;
    let fill = (dev.info().logical_pages as u64 * params.fill_pct as u64 / 100) as u32;
    for lpn in 0..fill {
        dev.write(lpn, &[])
            .map_err(|e| Error::Failed(format!("{protocol}: precondition: {e}")))?;
    }
    dev.flush().map_err(|e| Error::Failed(format!("{protocol}: precondition: {e}")))?;
    Ok(dev)
}

/// The trace replayed on `protocol`: its write amplification and where the
/// writes went.
fn replay_one(params: &Params, trace: &Trace, protocol: &str) -> Result<WaRun, Error> {
    let mut dev = device(params, protocol)?;
    dev.reset_stats();
    let opts = ReplayOptions {
        clients: params.tpcc.clients,
        think_ns: 0,
        isolation: Isolation::Strict,
        abort_pct: 0,
        seed: params.seed,
    };
    let r =
        replay(&mut *dev, trace, opts, None, &mut |_, _| {}).map_err(|e| Error::Failed(format!("Fig. 10: replay on {protocol}: {e}")))?;
    let m = r.measured;
    let p = &m.protocol;
    Ok(WaRun {
        protocol: protocol.into(),
        write_amplification: r.write_amplification,
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
