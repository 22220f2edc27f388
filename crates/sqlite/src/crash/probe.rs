//! A device wrapper the crash runs put under the file system, for two things
//! the stack above cannot give back:
//!
//! - the NAND, whatever happens: when the stack is dropped (SQLite, the file
//!   system and the FTL all gone, as at a power cut), or a mount fails half
//!   way, the wrapper's `Drop` hands the array to a shared slot, so a cut in
//!   the middle of a restart can be restarted again;
//! - in the dry run, which NAND operations each device call issued and whether
//!   GC ran or a checkpoint was taken inside a transactional write (X-FTL takes
//!   one there to reclaim committed X-L2P entries when the table is full), so a
//!   crash point can be attributed to them. The attribution is per device call:
//!   a cut at any operation of a call during which GC ran counts as "in GC".

use std::sync::{Arc, Mutex};
use txftl_ftl::AnyDevice;
use txftl_ftl::{Call, Extension};
use txftl_ftl::{Device, DeviceError, DeviceInfo, DeviceStats, Lpn, OpKind, RecoveryReport, Tid};
use txftl_nand::Nand;

/// The NAND operations `[first_op, end_op)` of one device call of the dry
/// run, and the call: its kind and whether it named a transaction.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Span {
    pub first_op: u64,
    pub end_op: u64,
    pub call: OpKind,
    pub in_tx: bool,
    /// GC ran during the call, a checkpoint was taken during it.
    pub gc: bool,
    pub checkpointed: bool,
}

impl Span {
    /// A checkpoint taken inside a transactional write (X-FTL takes one
    /// there to reclaim committed X-L2P entries when its table is full).
    pub fn table_reclaim(&self) -> bool {
        self.call == OpKind::Write && self.in_tx && self.checkpointed
    }

    /// A checkpoint taken inside a device commit (Möbius, which writes a
    /// static transaction's inodes and pages at its commit, takes its
    /// merges and GC's checkpoints there).
    pub fn commit_checkpoint(&self) -> bool {
        self.call == OpKind::Commit && self.checkpointed
    }
}

#[derive(Default)]
pub(crate) struct ProbeShared {
    /// Where the NAND goes when the wrapper is dropped.
    pub nand: Option<Nand>,
    /// Record spans (the dry run only).
    pub record: bool,
    pub spans: Vec<Span>,
}

pub(crate) type Shared = Arc<Mutex<ProbeShared>>;

pub(crate) struct Probe {
    inner: Option<Box<dyn AnyDevice>>,
    shared: Shared,
}

impl Probe {
    pub fn wrap(inner: Box<dyn AnyDevice>, shared: Shared) -> Box<dyn AnyDevice> {
        Box::new(Probe {
            inner: Some(inner),
            shared,
        })
    }

    fn dev(&self) -> &dyn AnyDevice {
        // Only `into_nand`/`close`/`drop` take it, and they consume the wrapper.
        self.inner.as_deref().expect("probe: device taken")
    }

    fn dev_mut(&mut self) -> &mut dyn AnyDevice {
        self.inner.as_deref_mut().expect("probe: device taken")
    }

    /// Runs one device call (`call`, inside a transaction if `in_tx`),
    /// recording its span in the dry run.
    fn call_spanned<T>(&mut self, call: OpKind, in_tx: bool, f: impl FnOnce(&mut dyn AnyDevice) -> T) -> T {
        let record = self.shared.lock().map(|s| s.record).unwrap_or(false);
        if !record {
            return f(self.dev_mut());
        }
        let (op0, s0) = (self.dev().nand().op_count(), self.dev().stats());
        let r = f(self.dev_mut());
        let (op1, s1) = (self.dev().nand().op_count(), self.dev().stats());
        if op1 > op0 {
            let span = Span {
                first_op: op0,
                end_op: op1,
                call,
                in_tx,
                gc: s1.gc_runs > s0.gc_runs || s1.gc_copies > s0.gc_copies,
                checkpointed: s1.checkpoints > s0.checkpoints,
            };
            if let Ok(mut s) = self.shared.lock() {
                s.spans.push(span);
            }
        }
        r
    }
}

impl Drop for Probe {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            let nand = inner.into_nand();
            if let Ok(mut s) = self.shared.lock() {
                s.nand = Some(nand);
            }
        }
    }
}

type R<T> = Result<T, DeviceError>;

impl Device for Probe {
    fn info(&self) -> DeviceInfo {
        self.dev().info()
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> R<u64> {
        self.call_spanned(OpKind::Read, false, |d| d.read(lpn, buf))
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> R<u64> {
        self.call_spanned(OpKind::Write, false, |d| d.write(lpn, data))
    }
    fn flush(&mut self) -> R<u64> {
        self.call_spanned(OpKind::Flush, false, |d| d.flush())
    }
    fn trim(&mut self, lpn: Lpn) -> R<u64> {
        self.call_spanned(OpKind::Trim, false, |d| d.trim(lpn))
    }
    fn stats(&self) -> DeviceStats {
        self.dev().stats()
    }
    fn reset_stats(&mut self) {
        self.dev_mut().reset_stats()
    }
    fn now_ns(&self) -> u64 {
        self.dev().now_ns()
    }
    fn commit_durable_ns(&self) -> u64 {
        self.dev().commit_durable_ns()
    }
    fn set_clock(&mut self, at_ns: u64) {
        self.dev_mut().set_clock(at_ns)
    }
    fn begin(&mut self, tid: Tid) -> R<u64> {
        self.call_spanned(OpKind::Begin, true, |d| d.begin(tid))
    }
    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> R<u64> {
        self.call_spanned(OpKind::Write, true, |d| d.write_tx(tid, lpn, data))
    }
    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> R<u64> {
        self.call_spanned(OpKind::Read, true, |d| d.read_tx(tid, lpn, buf))
    }
    fn commit(&mut self, tid: Tid) -> R<u64> {
        self.call_spanned(OpKind::Commit, true, |d| d.commit(tid))
    }
    fn abort(&mut self, tid: Tid) -> R<u64> {
        self.call_spanned(OpKind::Abort, true, |d| d.abort(tid))
    }
    // Every extension call the device offers, passed through (the file
    // system asks for them: without these a probed run would take the
    // plain paths, NoLgn's held-back page and SW-WAL's copies), each
    // spanned as the base operation it acts as.
    fn offers(&mut self, ext: Extension) -> bool {
        self.dev_mut().offers(ext)
    }
    fn call(&mut self, call: Call<'_>) -> R<u64> {
        let (kind, in_tx) = call.acts_as();
        self.call_spanned(kind, in_tx, |d| d.call(call))
    }
}

impl AnyDevice for Probe {
    fn check_invariants(&self) -> Result<(), String> {
        self.dev().check_invariants()
    }
    fn recovery_report(&self) -> Option<RecoveryReport> {
        self.dev().recovery_report()
    }
    fn into_nand(mut self: Box<Self>) -> Nand {
        let inner = self.inner.take().expect("probe: device taken");
        inner.into_nand()
    }
    fn close(mut self: Box<Self>) -> Result<Nand, DeviceError> {
        let inner = self.inner.take().expect("probe: device taken");
        inner.close()
    }
    fn nand(&self) -> &Nand {
        self.dev().nand()
    }
    fn wear_spread(&self) -> (u32, u32) {
        self.dev().wear_spread()
    }
    fn erase_counts(&self) -> Vec<u32> {
        self.dev().erase_counts()
    }
    fn checkpoint_erase_counts(&self) -> Vec<u32> {
        self.dev().checkpoint_erase_counts()
    }
    fn mapping(&self, lpn: u32) -> Option<u32> {
        self.dev().mapping(lpn)
    }
    fn nand_mut(&mut self) -> &mut Nand {
        self.dev_mut().nand_mut()
    }
    fn entry(&self) -> &'static txftl_ftl::ProtocolEntry {
        self.dev().entry()
    }
}
