//! Recording what a host sends to the device interface, as a txftl trace:
//! a device wrapper that writes one line per call (its submission time on the
//! device clock, the transaction id the caller gave, the operation and page)
//! and passes the call on. Put under a file system, it records the file
//! system's own transaction ids, so an SQL workload becomes a trace any
//! protocol can replay.
//!
//! The trace is what was *sent*: a call the device refused is recorded too.
//! Reads are recorded; `flush` and every transactional call as they come;
//! the extension calls the device offers as their own words
//! (`Call::ops`). Möbius's dynamic calls name no transaction: the record
//! names each dynamic transaction from [`DYNAMIC_TIDS`] up.

use crate::exec::trace_op;
use crate::trace::TraceRecord;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use txftl_ftl::extensions::DynamicPos;
use txftl_ftl::AnyDevice;
use txftl_ftl::{Call, Device, DeviceError, DeviceInfo, DeviceStats, Extension, Lpn, Op, RecoveryReport, Tid};
use txftl_nand::Nand;

/// The first id a record gives a dynamic transaction (the next ones count
/// up): far above the ids hosts give (the file system's count from 1).
pub const DYNAMIC_TIDS: Tid = 1 << 31;

pub struct Recorder {
    inner: Box<dyn AnyDevice>,
    out: TraceRecord,
    /// The client the next calls are recorded for.
    pub client: u32,
    /// The first write error (recording stops; every later call fails with it).
    failed: Option<String>,
    /// Record while set (the caller keeps the other handle: e.g. on after a load).
    on: Arc<AtomicBool>,
    /// The id the record gives the open dynamic transaction, and the next one.
    dynamic: Option<Tid>,
    next_dynamic: Tid,
}

impl Recorder {
    pub fn wrap(inner: Box<dyn AnyDevice>, out: TraceRecord, on: Arc<AtomicBool>) -> Box<dyn AnyDevice> {
        Box::new(Recorder {
            inner,
            out,
            client: 0,
            failed: None,
            on,
            dynamic: None,
            next_dynamic: DYNAMIC_TIDS,
        })
    }

    fn note(&mut self, op: Op) -> Result<(), DeviceError> {
        if !self.on.load(Ordering::Relaxed) {
            return Ok(());
        }
        if let Some(e) = &self.failed {
            return Err(DeviceError::Config(e.clone()));
        }
        let op = trace_op(self.client, self.inner.now_ns(), op);
        if let Err(e) = self.out.op(&op) {
            let msg = format!("writing the trace record failed: {e}");
            self.failed = Some(msg.clone());
            return Err(DeviceError::Config(msg));
        }
        Ok(())
    }

    /// The id of the dynamic transaction `call` belongs to (a new one at a
    /// chain's first page), and whether the call ends it.
    fn dynamic_tid(&mut self, call: &Call<'_>) -> (Tid, bool) {
        let ends = matches!(call, Call::Dabort | Call::Dwrite { pos: DynamicPos::Rear, .. });
        let tid = match (self.dynamic, call) {
            (Some(t), _) => t,
            (None, Call::Dwrite { .. } | Call::Dabort) => {
                let t = self.next_dynamic;
                self.next_dynamic = self.next_dynamic.wrapping_add(1).max(DYNAMIC_TIDS);
                t
            }
            (None, _) => return (0, false),
        };
        self.dynamic = (!ends).then_some(tid);
        (tid, ends)
    }
}

type R<T> = Result<T, DeviceError>;

impl Device for Recorder {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> R<u64> {
        self.note(Op::Read(lpn))?;
        self.inner.read(lpn, buf)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> R<u64> {
        self.note(Op::Write(lpn))?;
        self.inner.write(lpn, data)
    }
    fn flush(&mut self) -> R<u64> {
        self.note(Op::Flush)?;
        self.inner.flush()
    }
    fn trim(&mut self, lpn: Lpn) -> R<u64> {
        self.note(Op::Trim(lpn))?;
        self.inner.trim(lpn)
    }
    fn stats(&self) -> DeviceStats {
        self.inner.stats()
    }
    fn reset_stats(&mut self) {
        self.inner.reset_stats()
    }
    fn now_ns(&self) -> u64 {
        self.inner.now_ns()
    }
    fn commit_durable_ns(&self) -> u64 {
        self.inner.commit_durable_ns()
    }
    fn set_clock(&mut self, at_ns: u64) {
        self.inner.set_clock(at_ns)
    }
    fn begin(&mut self, tid: Tid) -> R<u64> {
        self.note(Op::Begin(tid))?;
        self.inner.begin(tid)
    }
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> R<u64> {
        self.note(Op::TxWrite(tid, lpn))?;
        self.inner.write_tx(tid, lpn, data)
    }
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> R<u64> {
        self.note(Op::TxRead(tid, lpn))?;
        self.inner.read_tx(tid, lpn, buf)
    }
    fn commit(&mut self, tid: Tid) -> R<u64> {
        self.note(Op::Commit(tid))?;
        self.inner.commit(tid)
    }
    fn abort(&mut self, tid: Tid) -> R<u64> {
        self.note(Op::Abort(tid))?;
        self.inner.abort(tid)
    }
    // Every extension call the device offers is recorded, as its words,
    // and passed on.
    fn offers(&mut self, ext: Extension) -> bool {
        self.inner.offers(ext)
    }
    fn call(&mut self, call: Call<'_>) -> R<u64> {
        let (dynamic, _) = self.dynamic_tid(&call);
        let ops = call.ops(dynamic).ok_or_else(|| {
            DeviceError::Config(format!(
                "the trace format has no words for `{}`: it cannot be recorded",
                call.name()
            ))
        })?;
        for op in ops {
            self.note(op)?;
        }
        self.inner.call(call)
    }
}

impl AnyDevice for Recorder {
    fn check_invariants(&self) -> Result<(), String> {
        self.inner.check_invariants()
    }
    fn recovery_report(&self) -> Option<RecoveryReport> {
        self.inner.recovery_report()
    }
    fn into_nand(self: Box<Self>) -> Nand {
        let mut me = *self;
        let _ = me.out.flush();
        me.inner.into_nand()
    }
    fn close(self: Box<Self>) -> Result<Nand, DeviceError> {
        let mut me = *self;
        me.out
            .flush()
            .map_err(|e| DeviceError::Config(format!("writing the trace record failed: {e}")))?;
        me.inner.close()
    }
    fn nand(&self) -> &Nand {
        self.inner.nand()
    }
    fn wear_spread(&self) -> (u32, u32) {
        self.inner.wear_spread()
    }
    fn erase_counts(&self) -> Vec<u32> {
        self.inner.erase_counts()
    }
    fn checkpoint_erase_counts(&self) -> Vec<u32> {
        self.inner.checkpoint_erase_counts()
    }
    fn mapping(&self, lpn: u32) -> Option<u32> {
        self.inner.mapping(lpn)
    }
    fn nand_mut(&mut self) -> &mut Nand {
        self.inner.nand_mut()
    }
    fn entry(&self) -> &'static txftl_ftl::ProtocolEntry {
        self.inner.entry()
    }
}
