//! X-FTL (Kang et al., SIGMOD 2013): transactional atomicity in the FTL through
//! an X-L2P table beside the L2P.
//!
//! - `write(t, p)` programs p's new content to a free page *without* touching the
//!   L2P, and adds (t, p, new page, active) to the X-L2P table (or updates t's
//!   entry for p). The page's OOB carries t, so recovery can tell it apart.
//! - `read(t, p)` returns t's own copy if t wrote p, else the last committed copy (L2P).
//! - `commit(t)`: wait for t's pages; drop committed entries of other
//!   transactions for the same pages (superseded); mark t's entries committed;
//!   write the whole table to its ring copy-on-write, then a superblock naming it
//!   (the root switch: a torn superblock leaves the previous table current); then
//!   fold t's entries into the L2P. Committed entries stay in the table until a
//!   durable checkpoint covers them (or a newer write of the same page supersedes
//!   them in DRAM).
//! - `abort(t)`: mark t's entries aborted and drop them; their pages are dead.
//! - GC keeps a page live if the L2P or an active entry points to it; moving a
//!   page repoints its entry. A GC copy of committed data loses its tid: it is
//!   plain data from then on.
//! - Recovery: the framework loads the last checkpoint and rolls non-transactional
//!   pages forward; X-FTL loads the last durable table and, if it is newer than
//!   the checkpoint, applies its committed entries at the table's sequence number
//!   (idempotent); active and aborted entries, and every other transactional
//!   page, are dropped.
//!
//! A non-transactional write of a page drops its committed entries in DRAM: if
//! the table on flash still has them, the newer write's larger sequence number
//! orders it after the table at recovery. A trim is different: it leaves nothing
//! on flash until the next flush checkpoints it, so the page's committed entry
//! stays in the tables written meanwhile (marked trimmed in DRAM), and a cut
//! before that flush brings back the committed value, never an older one.

mod table;

pub use table::{Entry, Status, XL2P};

use crate::AnyDevice;
use std::collections::BTreeSet;
use txftl_ftl::{
    Device, DeviceError, DeviceInfo, DeviceStats, Ftl, Hooks, Lpn, Oob, Ppn, ProtocolRecord, RecoveredUpdate, RecoveryReport, Result, Tid,
    PROTOCOL_BYTES,
};
use txftl_nand::Nand;

/// Entries the paper uses (500 entries = one 8 KiB page).
pub const DEFAULT_ENTRIES: u32 = 500;

fn tid_of(oob: &Oob) -> Tid {
    u32::from_le_bytes(oob.protocol[0..4].try_into().expect("4 bytes"))
}

fn protocol_bytes(tid: Tid) -> [u8; PROTOCOL_BYTES] {
    let mut p = [0u8; PROTOCOL_BYTES];
    p[0..4].copy_from_slice(&tid.to_le_bytes());
    p
}

/// X-FTL's state inside the framework: the X-L2P table and the active transactions.
#[derive(Clone, Debug)]
pub struct XHooks {
    pub table: XL2P,
    active: BTreeSet<Tid>,
    /// `xftl-canary`: commit returns before the table is durable (deferred to the
    /// next commit or flush). A deliberate bug the crash harness must catch.
    canary: bool,
    table_dirty: bool,
}

impl XHooks {
    pub fn new(entries: u32, canary: bool) -> XHooks {
        XHooks {
            table: XL2P::new(entries),
            active: BTreeSet::new(),
            canary,
            table_dirty: false,
        }
    }
}

impl Hooks for XHooks {
    fn name(&self) -> &'static str {
        if self.canary {
            "xftl-canary"
        } else {
            "xftl"
        }
    }

    fn has_extra_live() -> bool {
        true
    }

    fn extra_live(&self, ppn: Ppn) -> bool {
        self.table.by_ppn(ppn).is_some_and(|e| e.status == Status::Active)
    }

    fn extra_live_count(&self, first: Ppn, end: Ppn) -> u32 {
        self.table.active_in(first, end)
    }

    fn on_relocate(&mut self, old: Ppn, new: Ppn, _oob: &Oob) {
        self.table.relocate(old, new);
    }

    fn relocated_protocol_bytes(&self, mapped: bool, oob: &Oob) -> [u8; PROTOCOL_BYTES] {
        if mapped {
            [0; PROTOCOL_BYTES]
        } else {
            oob.protocol
        }
    }

    fn protocol_rings(&self) -> Vec<usize> {
        vec![XL2P::encoded_len(self.table.capacity())]
    }

    fn checkpoint_durable(&mut self) {
        self.table.drop_committed();
    }

    fn recover(&mut self, ckpt_seq: u64, records: &[Vec<ProtocolRecord>]) -> Vec<RecoveredUpdate> {
        self.table = XL2P::new(self.table.capacity());
        self.active.clear();
        self.table_dirty = false;
        let Some(current) = records.first().and_then(|ring| ring.last()) else {
            return Vec::new();
        };
        // The table on flash decides its capacity (a mount may be asked for another).
        if let Some(cap) = current.bytes.get(8..12).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes"))) {
            if cap > 0 && XL2P::encoded_len(cap) == current.bytes.len() {
                self.table = XL2P::new(cap);
            }
        }
        // Every table newer than the checkpoint (normally just the current one;
        // after a fallback to an older checkpoint, the older ones too), each
        // applied at its own sequence number. A table older than the checkpoint
        // is covered by it: its committed entries were folded before it was taken.
        records[0]
            .iter()
            .filter(|rec| rec.seq >= ckpt_seq)
            .flat_map(|rec| {
                // A record passed its CRC, so a decode error is a format bug: apply
                // nothing of it rather than guess (the invariant check then fails loudly).
                XL2P::decode(&rec.bytes)
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|e| e.status == Status::Committed)
                    .map(move |e| RecoveredUpdate {
                        seq: rec.seq,
                        lpn: e.lpn,
                        ppn: e.ppn,
                    })
            })
            .collect()
    }

    fn roll_forward(&self, oob: &Oob) -> bool {
        tid_of(oob) == 0
    }

    fn check(&self, l2p: &[u32], nand: &Nand) -> std::result::Result<(), String> {
        for (slot, e) in self.table.entries() {
            match e.status {
                Status::Active => {
                    if l2p.get(e.lpn as usize) == Some(&e.ppn) {
                        return Err(format!("active X-L2P entry {slot} is already in the L2P"));
                    }
                    match Oob::decode(nand.inspect_oob(e.ppn)) {
                        txftl_ftl::oob::OobState::Valid(o) if o.lpn == e.lpn && tid_of(&o) == e.tid => {}
                        other => return Err(format!("active X-L2P entry {slot} ({e:?}) points to a page whose OOB is {other:?}")),
                    }
                }
                Status::Committed => {
                    if l2p.get(e.lpn as usize) != Some(&e.ppn) {
                        return Err(format!("committed X-L2P entry {slot} ({e:?}) is not what the L2P maps"));
                    }
                }
                Status::Trimmed => {
                    if l2p.get(e.lpn as usize) != Some(&u32::MAX) {
                        return Err(format!("trimmed X-L2P entry {slot} ({e:?}) but the L2P maps its page"));
                    }
                }
                Status::Aborted => return Err(format!("aborted X-L2P entry {slot} was kept")),
            }
        }
        Ok(())
    }
}

/// The X-FTL device.
pub struct XFtl {
    ftl: Ftl<XHooks>,
}

impl XFtl {
    pub fn new(ftl: Ftl<XHooks>) -> XFtl {
        XFtl { ftl }
    }
    pub fn ftl(&self) -> &Ftl<XHooks> {
        &self.ftl
    }
    pub fn table(&self) -> &XL2P {
        &self.ftl.hooks().table
    }

    fn check_active(&self, tid: Tid) -> Result<()> {
        if self.ftl.hooks().active.contains(&tid) {
            Ok(())
        } else {
            Err(DeviceError::UnknownTransaction(tid))
        }
    }

    /// Writes the table and switches the root to it.
    fn write_table(&mut self) -> Result<()> {
        // Lend the table image to the framework for the write (no copy), then put it back.
        if self.ftl.hooks().table.len() > self.ftl.hooks().table.committed_count() {
            self.ftl.counters_mut().protocol_records_with_open_tx += 1;
        }
        let image = self.ftl.hooks_mut().table.take_image();
        debug_assert_eq!(image, self.ftl.hooks().table.encode());
        let r = self.ftl.commit_protocol_record(0, &image);
        self.ftl.hooks_mut().table.put_image(image);
        r?;
        self.ftl.hooks_mut().table_dirty = false;
        Ok(())
    }
}

impl Device for XFtl {
    fn info(&self) -> DeviceInfo {
        self.ftl.info()
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.ftl.read_page(lpn, buf)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        let lat = self.ftl.write_page(lpn, data)?;
        self.ftl.hooks_mut().table.drop_committed_for(lpn);
        Ok(lat)
    }
    fn flush(&mut self) -> Result<u64> {
        let start = self.ftl.now();
        if self.ftl.hooks().table_dirty {
            self.write_table()?;
        }
        self.ftl.flush_all()?;
        Ok(self.ftl.now() - start)
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        let lat = self.ftl.trim_page(lpn)?;
        self.ftl.hooks_mut().table.trim_committed(lpn);
        Ok(lat)
    }
    fn stats(&self) -> DeviceStats {
        self.ftl.device_stats()
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats()
    }
    fn now_ns(&self) -> u64 {
        self.ftl.now()
    }

    fn begin(&mut self, tid: Tid) -> Result<u64> {
        if tid == 0 {
            return Err(DeviceError::InvalidTransactionId);
        }
        if !self.ftl.hooks_mut().active.insert(tid) {
            return Err(DeviceError::TransactionExists(tid));
        }
        Ok(0)
    }

    fn write_tx(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.check_active(tid)?;
        if lpn >= self.ftl.logical_pages() {
            return Err(DeviceError::OutOfRange {
                lpn: lpn as u64,
                logical_pages: self.ftl.logical_pages(),
            });
        }
        let start = self.ftl.now();
        if self.ftl.hooks().table.needs_slot(tid, lpn) {
            // Committed entries wait for a checkpoint to cover them: take one now.
            if self.ftl.hooks().table.has_committed() {
                if self.ftl.hooks().table_dirty {
                    self.write_table()?;
                }
                self.ftl.checkpoint()?;
            }
            if self.ftl.hooks().table.needs_slot(tid, lpn) {
                return Err(DeviceError::TableFull {
                    capacity: self.ftl.hooks().table.capacity(),
                });
            }
        }
        let (ppn, _) = self.ftl.program_unmapped(lpn, data, &protocol_bytes(tid))?;
        self.ftl
            .hooks_mut()
            .table
            .upsert(tid, lpn, ppn)
            .map_err(|_| DeviceError::TableFull {
                capacity: self.table().capacity(),
            })?;
        Ok(self.ftl.now() - start)
    }

    fn read_tx(&mut self, tid: Tid, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.check_active(tid)?;
        match self.ftl.hooks().table.get(tid, lpn) {
            Some(e) => self.ftl.read_physical(lpn, e.ppn, buf),
            None => self.ftl.read_page(lpn, buf),
        }
    }

    fn commit(&mut self, tid: Tid) -> Result<u64> {
        self.check_active(tid)?;
        let start = self.ftl.now();
        if self.ftl.hooks().table.has_entries(tid) {
            // Every page of t must be on flash before the table says it committed.
            self.ftl.wait_idle();
            let hooks = self.ftl.hooks_mut();
            let entries = hooks.table.commit_tx(tid);
            if hooks.canary {
                hooks.table_dirty = true;
            } else {
                self.write_table()?;
            }
            for e in &entries {
                self.ftl.map_page(e.lpn, e.ppn)?;
            }
        }
        self.ftl.hooks_mut().active.remove(&tid);
        self.ftl.counters_mut().commits += 1;
        Ok(self.ftl.now() - start)
    }

    fn abort(&mut self, tid: Tid) -> Result<u64> {
        self.check_active(tid)?;
        let hooks = self.ftl.hooks_mut();
        hooks.table.abort_tx(tid);
        hooks.active.remove(&tid);
        self.ftl.counters_mut().aborts += 1;
        Ok(0)
    }
}

impl AnyDevice for XFtl {
    fn check_invariants(&self) -> std::result::Result<(), String> {
        self.ftl.check_invariants()
    }
    fn recovery_report(&self) -> Option<RecoveryReport> {
        self.ftl.recovery_report()
    }
    fn into_nand(self: Box<Self>) -> Nand {
        self.ftl.into_nand()
    }
    fn close(mut self: Box<Self>) -> std::result::Result<Nand, DeviceError> {
        if self.ftl.hooks().table_dirty {
            self.write_table()?;
        }
        self.ftl.close()
    }
    fn nand(&self) -> &Nand {
        self.ftl.nand()
    }
    fn wear_spread(&self) -> (u32, u32) {
        self.ftl.wear_spread()
    }
    fn erase_counts(&self) -> Vec<u32> {
        self.ftl.erase_counts().to_vec()
    }
    fn checkpoint_erase_counts(&self) -> Vec<u32> {
        self.ftl.checkpoint_erase_counts().to_vec()
    }
    fn nand_mut(&mut self) -> &mut Nand {
        self.ftl.nand_mut()
    }
    fn transactional(&self) -> bool {
        true
    }
}
