//! Recording what a host sends to the device interface, as a txftl trace:
//! a device wrapper that writes one line per call (its submission time on the
//! device clock, the transaction id the caller gave, the operation and page)
//! and passes the call on. Put under a file system, it records the file
//! system's own transaction ids, so an SQL workload becomes a trace any
//! protocol can replay.
//!
//! The trace is what was *sent*: a call the device refused is recorded too.
//! Reads are recorded; `flush` and every transactional call as they come.

use crate::trace::{TraceKind, TraceOp, TraceRecord};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use txftl_ftl::AnyDevice;
use txftl_ftl::{Call, Device, DeviceError, DeviceInfo, DeviceStats, Extension, Lpn, OpKind, RecoveryReport, Tid};
use txftl_nand::Nand;

pub struct Recorder {
    inner: Box<dyn AnyDevice>,
    out: TraceRecord,
    /// The client the next calls are recorded for.
    pub client: u32,
    /// The first write error (recording stops; every later call fails with it).
    failed: Option<String>,
    /// Record while set (the caller keeps the other handle: e.g. on after a load).
    on: Arc<AtomicBool>,
}

impl Recorder {
    pub fn wrap(inner: Box<dyn AnyDevice>, out: TraceRecord, on: Arc<AtomicBool>) -> Box<dyn AnyDevice> {
        Box::new(Recorder {
            inner,
            out,
            client: 0,
            failed: None,
            on,
        })
    }

    /// What recording `dev` leaves out: the extension calls it offers, which
    /// a recorded run does not use (no trace word carries them), as a note
    /// for the command to print; None if it offers none.
    pub fn left_out(dev: &mut dyn AnyDevice) -> Option<String> {
        let calls: Vec<&str> = Extension::ALL
            .into_iter()
            .filter(|&e| dev.offers(e))
            .map(Extension::calls)
            .collect();
        (!calls.is_empty()).then(|| {
            format!(
                "note: a trace carries no {}: the recorded run uses the base calls instead",
                calls.join(", ")
            )
        })
    }

    fn note(&mut self, tid: Option<Tid>, kind: TraceKind, lpn: Lpn, pages: u32) -> Result<(), DeviceError> {
        if !self.on.load(Ordering::Relaxed) {
            return Ok(());
        }
        if let Some(e) = &self.failed {
            return Err(DeviceError::Config(e.clone()));
        }
        let op = TraceOp::new(self.inner.now_ns(), self.client, tid, kind, lpn, pages);
        if let Err(e) = self.out.op(&op) {
            let msg = format!("writing the trace record failed: {e}");
            self.failed = Some(msg.clone());
            return Err(DeviceError::Config(msg));
        }
        Ok(())
    }
}

type R<T> = Result<T, DeviceError>;

impl Device for Recorder {
    fn info(&self) -> DeviceInfo {
        self.inner.info()
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> R<u64> {
        self.note(None, TraceKind::Op(OpKind::Read), lpn, 1)?;
        self.inner.read(lpn, buf)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> R<u64> {
        self.note(None, TraceKind::Op(OpKind::Write), lpn, 1)?;
        self.inner.write(lpn, data)
    }
    fn flush(&mut self) -> R<u64> {
        self.note(None, TraceKind::Op(OpKind::Flush), 0, 0)?;
        self.inner.flush()
    }
    fn trim(&mut self, lpn: Lpn) -> R<u64> {
        self.note(None, TraceKind::Op(OpKind::Trim), lpn, 1)?;
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
        self.note(Some(tid), TraceKind::Op(OpKind::Begin), 0, 0)?;
        self.inner.begin(tid)
    }
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> R<u64> {
        self.note(Some(tid), TraceKind::Op(OpKind::Write), lpn, 1)?;
        self.inner.write_tx(tid, lpn, data)
    }
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> R<u64> {
        self.note(Some(tid), TraceKind::Op(OpKind::Read), lpn, 1)?;
        self.inner.read_tx(tid, lpn, buf)
    }
    fn commit(&mut self, tid: Tid) -> R<u64> {
        self.note(Some(tid), TraceKind::Op(OpKind::Commit), 0, 0)?;
        self.inner.commit(tid)
    }
    fn abort(&mut self, tid: Tid) -> R<u64> {
        self.note(Some(tid), TraceKind::Op(OpKind::Abort), 0, 0)?;
        self.inner.abort(tid)
    }
    // A recorded device offers no extension calls: the trace format has no
    // words for them yet, and a call that went around the record would leave
    // it incomplete. The host stack asks the device (the VFS, the file
    // system), so a recorded run takes the base calls throughout (SW-WAL's
    // checkpoints copy, NoLgn's last page is an ordinary write), and the
    // commands that record say so.
    fn offers(&mut self, _ext: Extension) -> bool {
        false
    }
    fn call(&mut self, call: Call<'_>) -> R<u64> {
        Err(self.unsupported(call.name()))
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
