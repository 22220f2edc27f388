//! Fig. 9's Filebench bars: the fileserver and webserver personalities
//! (`txftl_host::filebench`) on our file system, recorded as a
//! transactional block trace and replayed on each of Fig. 9's runs, as its
//! TPC-C bars are.
//!
//! The paper ran Filebench on "a revised jbd layer for ext3": a journal
//! commit is one device transaction. Here the file system runs in
//! transactional mode with [`FsyncPolicy::OneTransaction`]: each fsync
//! sends the file's pages and the metadata naming them as one device
//! transaction (one SWRITE on Möbius), each create and delete its metadata
//! as one; the personalities fsync each file they write before closing it
//! (Filebench's do not fsync; ext3 commits every 5 s: see the host module).
//! The trace is recorded on the 4 KiB flash (the `mobius` preset, full
//! data) from the end of the file sets' preallocation; the replays run it
//! with [`FilebenchRun::clients`] clients, strict isolation, on fresh
//! devices, metadata only.

use super::params::Params;
use super::results::{FilebenchBars, FilebenchWorkload};
use super::tpcc::{replay_with, tps_run, FIG9};
use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::tpcc_trace::Shared;
use crate::{Error, Progress};
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use txftl_fs::{Fs, FsMode, FsyncPolicy};
use txftl_ftl::FtlConfig;
use txftl_host::filebench::{Bench, Spec};
use txftl_host::record::Recorder;
use txftl_host::trace::{read_trace, Trace, TraceWriter};
use txftl_nand::{DataMode, Preset};
use txftl_protocols::ProtocolOptions;

/// The Filebench runs of Fig. 9: each personality's parameters and the
/// replays' clients.
#[derive(Clone, Debug, Serialize)]
pub struct FilebenchRun {
    pub personalities: Vec<Spec>,
    /// Clients of the replays (Filebench runs 50 fileserver threads and 100
    /// webserver threads; the trace is one thread's, dealt to these clients
    /// a transaction or an operation at a time).
    pub clients: u32,
}

impl FilebenchRun {
    /// Filebench's personalities, the fileserver's file set scaled to the
    /// 1 GiB device: `nfiles` files, `loops` iterations each.
    pub fn new(fileserver_files: u32, loops: u64, seed: u64) -> FilebenchRun {
        FilebenchRun {
            personalities: vec![
                Spec {
                    nfiles: fileserver_files,
                    loops,
                    seed,
                    ..Spec::fileserver()
                },
                Spec {
                    loops,
                    seed,
                    ..Spec::webserver()
                },
            ],
            clients: 8,
        }
    }
}

fn fs_err(what: &'static str) -> impl Fn(txftl_fs::FsError) -> Error {
    move |e| Error::Failed(format!("Fig. 9 Filebench: {what}: {e}"))
}

/// Records `spec` on preset `p`: the run (not the preallocation) as a trace.
fn record(p: &Preset, spec: &Spec) -> Result<(Trace, FilebenchWorkload), Error> {
    let t0 = std::time::Instant::now();
    let nand_cfg = nand_config(p, DataMode::Full);
    let ftl = FtlConfig::default();
    let opts = ProtocolOptions::default();
    check_device_fits("mobius", &nand_cfg, &ftl, &opts, 0)?;
    let dev = txftl_protocols::format("mobius", ram(nand_cfg)?, ftl, &opts).map_err(device_error)?;
    let buf = Arc::new(Mutex::new(Vec::new()));
    let out: Box<dyn std::io::Write + Send> = Box::new(Shared(buf.clone()));
    let record = TraceWriter::new(out).map_err(Error::failed)?;
    let on = Arc::new(AtomicBool::new(false));
    let dev = Recorder::wrap(dev, record, on.clone());
    let mut fs = Fs::format(dev, FsMode::Transactional).map_err(fs_err("formatting"))?;
    fs.set_fsync_policy(FsyncPolicy::OneTransaction).map_err(fs_err("fsync policy"))?;
    let name = spec.personality.name();
    let mut bench = Bench::prepare(&mut fs, spec).map_err(|e| Error::Failed(format!("Fig. 9 {name}: {e}")))?;
    fs.reset_stats();
    on.store(true, Ordering::Relaxed);
    let report = bench
        .run(&mut fs, &mut |_| {})
        .map_err(|e| Error::Failed(format!("Fig. 9 {name}: {e}")))?;
    on.store(false, Ordering::Relaxed);
    let stats = fs.stats();
    fs.check().map_err(fs_err("checking the file system after the run"))?;
    drop(fs);
    let bytes = std::mem::take(&mut *buf.lock().map_err(|_| Error::Failed("trace buffer lock poisoned".into()))?);
    let trace = read_trace(&bytes[..]).map_err(|e| Error::Failed(format!("reading the recorded trace: {e}")))?;
    let shape = txftl_host::replay::shape(&trace).map_err(|e| Error::Failed(format!("the recorded trace: {e}")))?;
    let workload = FilebenchWorkload {
        personality: name.into(),
        report,
        device_transactions: shape.transactions,
        trace_ops: shape.ops,
        tx_pages_mean: shape.tx_pages_mean,
        tx_pages_max: shape.tx_pages_max,
        one_tx_fallbacks: stats.one_tx_fallbacks,
        page_reads: stats.page_reads,
        record_wall_s: t0.elapsed().as_secs_f64(),
    };
    Ok((trace, workload))
}

/// Each personality recorded, then replayed on each of Fig. 9's runs.
pub fn fig9(params: &Params, progress: &Progress) -> Result<Vec<FilebenchBars>, Error> {
    let p = params.tps_preset();
    let mut out = Vec::new();
    for spec in &params.filebench.personalities {
        let name = spec.personality.name();
        progress.say(format!("Fig. 9: recording Filebench's {name} on the file system"));
        let (trace, workload) = record(&p, spec)?;
        progress.step();
        let mut runs = Vec::new();
        for (key, protocol, opts, label) in FIG9 {
            progress.say(format!("Fig. 9: the {name} trace on {label}"));
            let opts = opts.iter().fold(ProtocolOptions::new(), |o, &(k, v)| o.with(k, v));
            let r = replay_with(params, &p, &trace, protocol, &opts, params.filebench.clients)
                .map_err(|e| Error::Failed(format!("Fig. 9 {name}: {e}")))?;
            runs.push(tps_run(key, &r));
            progress.step();
        }
        out.push(FilebenchBars { workload, runs });
    }
    Ok(out)
}

/// Steps [`fig9`] reports.
pub fn steps(params: &Params) -> usize {
    params.filebench.personalities.len() * (1 + FIG9.len())
}
