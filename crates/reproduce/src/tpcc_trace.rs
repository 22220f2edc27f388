//! A TPC-C transactional block trace, recorded in a reproduction's run
//! from our TPC-C on SQLite (X-FTL mode: one device transaction per SQLite
//! transaction), deterministic from the seed: the workload of `reproduce
//! lighttx` and of `reproduce mobius`'s Figs. 9 and 10.

use crate::device::{check_device_fits, device_error, nand_config, ram};
use crate::Error;
use serde::Serialize;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use txftl_ftl::FtlConfig;
use txftl_host::record::Recorder;
use txftl_host::trace::{read_trace, Trace, TraceWriter};
use txftl_nand::{DataMode, Preset};
use txftl_protocols::ProtocolOptions;
use txftl_protocols::PROTOCOLS;
use txftl_sqlite::tpcc::clients::{run_clients, ClientsSpec};
use txftl_sqlite::tpcc::{self, TpccSpec, TxKind};
use txftl_sqlite::{Mode, Stack};

/// The trace record, in memory.
pub(crate) struct Shared(pub(crate) Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let mut v = self.0.lock().map_err(|_| std::io::Error::other("trace buffer lock poisoned"))?;
        v.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn stack_err(what: &'static str) -> impl Fn(txftl_sqlite::StackError) -> Error {
    move |e| Error::Failed(format!("{what}: {e}"))
}

/// The TPC-C run a trace records.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TpccRun {
    pub warehouses: u32,
    pub scale: u32,
    pub transactions: u64,
    pub clients: u32,
    pub seed: u64,
}

/// The recorded trace's shape and how it was made.
#[derive(Clone, Debug, Serialize)]
pub struct Workload {
    /// TPC-C transactions run, and the device transactions they made (read-only ones make none).
    pub tpcc_transactions: u64,
    pub device_transactions: u64,
    pub trace_ops: u64,
    /// Distinct pages a device transaction writes.
    pub tx_pages_mean: f64,
    pub tx_pages_max: u64,
    /// Host page writes per TPC-C transaction, by kind (New-Order, Payment,
    /// Order-Status, Delivery, Stock-Level): what makes the mean.
    pub host_pages_by_kind: Vec<(String, u64, f64)>,
    /// The logical pages the most transactions write, and how many write
    /// each: what leaves no-page-conflict no room.
    pub most_shared_pages: Vec<(u32, u64)>,
    pub consistency: String,
    pub record_wall_s: f64,
}

/// Records the TPC-C trace: TPC-C on SQLite in X-FTL mode (one device
/// transaction per SQLite transaction) on preset `p`, full data, the run
/// (not the load) recorded, as `txftl sql tpcc --mode xftl --clients N
/// --record FILE` does.
pub fn record_tpcc(p: &Preset, params: &TpccRun) -> Result<(Trace, Workload), Error> {
    let t0 = std::time::Instant::now();
    let nand_cfg = nand_config(p, DataMode::Full);
    let ftl = FtlConfig::default();
    let opts = ProtocolOptions::default();
    let mode = Mode::parse(PROTOCOLS, "xftl").ok_or_else(|| Error::Failed("the registry offers no `xftl` SQLite mode".into()))?;
    check_device_fits(mode.protocol(), &nand_cfg, &ftl, &opts, 0)?;
    let dev = txftl_protocols::format(mode.protocol(), ram(nand_cfg)?, ftl, &opts).map_err(device_error)?;
    let buf = Arc::new(Mutex::new(Vec::new()));
    let out: Box<dyn Write + Send> = Box::new(Shared(buf.clone()));
    let record = TraceWriter::new(out).map_err(Error::failed)?;
    let on = Arc::new(AtomicBool::new(false));
    let dev = Recorder::wrap(dev, record, on.clone());
    let stack = Stack::format(dev, mode).map_err(stack_err("formatting the SQLite stack"))?;
    let page_size = stack.with_fs_mut(|fs| fs.page_size()).map_err(Error::failed)?;
    let spec = TpccSpec {
        warehouses: params.warehouses,
        scale: params.scale,
        transactions: params.transactions,
        seed: params.seed,
        ..TpccSpec::default()
    };
    spec.validate().map_err(|e| Error::Failed(e.to_string()))?;
    let conn = stack.open("tpcc.db", page_size).map_err(stack_err("opening tpcc.db"))?;
    tpcc::load(&conn, &spec).map_err(|e| Error::Failed(format!("loading TPC-C: {e}")))?;
    on.store(true, Ordering::Relaxed);
    let mut conns = vec![conn];
    for _ in 1..params.clients {
        conns.push(stack.open("tpcc.db", page_size).map_err(stack_err("opening tpcc.db"))?);
    }
    let mut by_kind = [(0u64, 0u64); 5];
    let (_, mut conns) = run_clients(&stack, conns, &spec, &ClientsSpec::default(), |t| {
        let k = &mut by_kind[t.kind.index()];
        k.0 += 1;
        k.1 += t.host_page_writes;
    })
    .map_err(|e| Error::Failed(format!("running TPC-C: {e}")))?;
    on.store(false, Ordering::Relaxed);
    let conn = conns.swap_remove(0);
    drop(conns);
    let consistency = match tpcc::check(&conn) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    };
    drop(conn);
    drop(stack);
    let bytes = std::mem::take(&mut *buf.lock().map_err(|_| Error::Failed("trace buffer lock poisoned".into()))?);
    let trace = read_trace(&bytes[..]).map_err(|e| Error::Failed(format!("reading the recorded trace: {e}")))?;
    let shape = txftl_host::replay::shape(&trace).map_err(|e| Error::Failed(format!("the recorded trace: {e}")))?;
    let workload = Workload {
        tpcc_transactions: params.transactions,
        device_transactions: shape.transactions,
        trace_ops: shape.ops,
        tx_pages_mean: shape.tx_pages_mean,
        tx_pages_max: shape.tx_pages_max,
        host_pages_by_kind: TxKind::ALL
            .iter()
            .map(|k| {
                let (n, w) = by_kind[k.index()];
                (k.name().to_string(), n, if n > 0 { w as f64 / n as f64 } else { 0.0 })
            })
            .collect(),
        most_shared_pages: most_shared(&trace, 3),
        consistency,
        record_wall_s: t0.elapsed().as_secs_f64(),
    };
    Ok((trace, workload))
}

/// The `n` logical pages written by the most transactions, with their counts.
fn most_shared(trace: &Trace, n: usize) -> Vec<(u32, u64)> {
    use std::collections::{BTreeMap, BTreeSet};
    let mut seen: BTreeSet<(u32, u32)> = BTreeSet::new();
    let mut count: BTreeMap<u32, u64> = BTreeMap::new();
    for op in &trace.ops {
        if let (txftl_host::trace::TraceKind::Op(txftl_ftl::OpKind::Write), Some(t)) = (op.kind, op.tid) {
            for l in op.lpn..op.lpn + op.pages {
                if seen.insert((t, l)) {
                    *count.entry(l).or_default() += 1;
                }
            }
        }
        // A trace may reuse an id after the transaction ended.
        if matches!(
            op.kind,
            txftl_host::trace::TraceKind::Op(txftl_ftl::OpKind::Commit) | txftl_host::trace::TraceKind::Op(txftl_ftl::OpKind::Abort)
        ) {
            if let Some(t) = op.tid {
                seen.retain(|&(x, _)| x != t);
            }
        }
    }
    let mut v: Vec<(u32, u64)> = count.into_iter().collect();
    v.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v.truncate(n);
    v
}
