//! SW-WAL (Wu et al., DATE 2021), as NoLgn-FTL (§2.3, §4.1, §5) describes
//! it: NoLgn's baseline that keeps SQLite's WAL but checkpoints it by
//! remapping, not copying. The FTL is `plain`'s with the `Remap` extension:
//!
//! - `write_remappable(w, data, d)`: a WAL page `w`, its spare area naming the
//!   database page `d` it holds a version of (`format.rs`; "inscribing
//!   transaction information directly into the OOB area", §5).
//! - `remap(w, d)`: `d` takes `w`'s physical page (no program); `w` reads as
//!   unwritten; `d`'s old page is garbage. The spare area names `w`, so the
//!   page is `d`'s through its alias (`Hooks::alias_lpn`): reads of `d`, GC
//!   (which copies it as `d`'s from then on) and the checks accept it.
//! - Remaps are pending in device DRAM until the next flush, which applies
//!   them all to the L2P and appends the remap record that makes them
//!   durable together (`record.rs`: which tagged pages moved where, with
//!   the trims since the last record; the tagged pages' spare areas name
//!   their targets, NoLgn-FTL §5), read back at mount: a cut before its last
//!   page finds none of them (the WAL whole, the database as it was), one
//!   after it all of them. Option `remap-record=0` writes a checkpoint
//!   instead (the mapping table's dirty pages), a variant kept for
//!   comparison. Not one by one: the FTL
//!   writes checkpoints of its own (GC, its rings) whenever it needs, and a
//!   WAL whose first remapped frames were durable and later ones not has a
//!   gap its recovery cannot read past (SQLite stops at the first frame
//!   whose checksum fails), losing the commits after it. Until the flush,
//!   reads of `d` return `w`'s page and reads of `w` zeros; a write or trim
//!   of `d` drops its pending remap (the newer data wins) and trims `w`;
//!   one of `w` (no
//!   host does that before the flush: SQLite syncs the database before it
//!   reuses the WAL) applies the remap first.
//! - A remap of a page not written with `write_remappable` naming that target
//!   since the mount (the device keeps which in DRAM) is refused with
//!   `Unsupported`, and the host copies instead. So is one past the pending
//!   remaps' bound (option `pending-remaps`), with `TableFull`: a flush to
//!   make room would make part of a checkpoint's remaps durable alone.

mod entry;
mod format;
mod record;

pub use entry::{ENTRY, PENDING_REMAPS_DEFAULT};
pub use format::RemapTag;
use record::Change;

use std::collections::{BTreeMap, BTreeSet};
use txftl_nand::BlockId;
use txftl_ftl::extensions::Remap;
use txftl_ftl::{Capabilities, Dense, Device, DeviceError, DeviceStats, EventHooks, Ftl, GcHooks, Hooks, Lpn, Oob, PersistHooks, Ppn};
use txftl_ftl::oob::OobState;
use txftl_ftl::{LogSource, ProtocolCounters, RecoveredUpdate, RecoveryHooks, Result};

/// Blocks of the remap record's ring. A flush's group may take half of it
/// (a larger one is made durable by a checkpoint instead).
const RING_BLOCKS: u32 = 4;

/// Changes applied to the L2P and not yet in a record (trims, remaps
/// applied before their flush), past which a checkpoint makes them
/// durable: the table stays bounded between flushes.
const LOGGED_MAX: usize = 1 << 16;

/// SW-WAL's state inside the framework: the remappable pages written since
/// the mount (DRAM only), and its counters.
#[derive(Clone, Debug, Default)]
pub struct SwHooks {
    canary: bool,
    /// WAL page -> the database page its spare area names.
    targets: BTreeMap<Lpn, Lpn>,
    /// Remaps not applied yet (the next flush applies them): target -> WAL page.
    pending: BTreeMap<Lpn, Lpn>,
    /// The same, WAL page -> target.
    pending_from: BTreeMap<Lpn, Lpn>,
    /// The most remaps `pending` holds (option `pending-remaps`).
    pending_max: u32,
    /// Option `remap-record`: a flush's changes go to the remap record
    /// (else a checkpoint makes them durable).
    record: bool,
    /// Option `record-page-entries`: entries a record page holds at most
    /// (0: as many as fit).
    record_page_entries: u32,
    /// Changes applied to the L2P since the last record or checkpoint, in
    /// order: the next record's entries.
    logged: Vec<Change>,
    /// Ring blocks holding record pages written since the last checkpoint
    /// (recovery needs them: the ring must not erase them).
    needed: BTreeSet<BlockId>,
    record_pages: u64,
    record_groups: u64,
    flush_checkpoints: u64,
    remaps: u64,
    remappable_writes: u64,
    refused: u64,
    tagged_gc_copies: u64,
}

impl SwHooks {
    /// Record pages of at most `n` entries (0: as many as fit).
    pub fn with_record_page_entries(mut self, n: u32) -> SwHooks {
        self.record_page_entries = n;
        self
    }

    pub fn new(canary: bool, pending_max: u32, record: bool) -> SwHooks {
        assert!(pending_max > 0, "the option's minimum is 1");
        SwHooks {
            canary,
            pending_max,
            record,
            record_page_entries: 0,
            ..SwHooks::default()
        }
    }
}

impl Hooks for SwHooks {
    type Mapping = Dense;
    const CAPABILITIES: Capabilities = Capabilities::NONE;

    fn name(&self) -> &'static str {
        if self.canary {
            "sw-wal-canary"
        } else {
            "sw-wal"
        }
    }

    fn alias_lpn(&self, oob: &Oob) -> Option<Lpn> {
        RemapTag::of(oob).target
    }

    /// A pending remap's page names its target: the flush will make it
    /// that page's.
    fn check(&self, l2p: &[u32], nand: &txftl_nand::Nand) -> std::result::Result<(), String> {
        for (&to, &from) in &self.pending {
            let ppn = l2p.get(from as usize).copied().unwrap_or(u32::MAX);
            let named = match Oob::decode(&nand.inspect_oob(ppn)) {
                OobState::Valid(o) => RemapTag::of(&o).target,
                _ => None,
            };
            if ppn == u32::MAX || named != Some(to) {
                return Err(format!(
                    "lpn {from} is pending a remap onto lpn {to}, but its page {ppn} names {named:?}"
                ));
            }
        }
        Ok(())
    }
}

impl GcHooks for SwHooks {
    fn on_relocate(&mut self, _old: Ppn, _new: Ppn, oob: &Oob, _new_erase_count: u32) {
        if RemapTag::of(oob).target.is_some() {
            self.tagged_gc_copies += 1;
        }
    }
}
impl RecoveryHooks for SwHooks {
    /// The remap records since the checkpoint (`record.rs`): each whole
    /// group's remaps and trims, at its last page's sequence number.
    fn recover(&mut self, ckpt_seq: u64, _root: &[u8], _section: &[u8], _fell_back: bool, logs: &mut dyn LogSource) -> Result<Vec<RecoveredUpdate>> {
        Ok(record::read(ckpt_seq, logs)?.updates)
    }
}
impl EventHooks for SwHooks {}

impl PersistHooks for SwHooks {
    /// The target's 4 bytes.
    fn packed_protocol_bytes(&self) -> usize {
        4
    }

    /// The remap record's ring (with `remap-record=0` too: the variant is
    /// the flush's choice, not the format's).
    fn protocol_rings(&self, _geo: &txftl_nand::Geometry) -> Vec<u32> {
        vec![RING_BLOCKS]
    }

    /// The checkpoint's L2P holds every change applied so far.
    fn checkpoint_durable(&mut self) {
        self.logged.clear();
        self.needed.clear();
    }
}

/// The SW-WAL device.
#[derive(Clone)]
pub struct SwWal {
    ftl: Ftl<SwHooks>,
}

impl SwWal {
    pub fn new(ftl: Ftl<SwHooks>) -> SwWal {
        SwWal { ftl }
    }
    pub fn ftl(&self) -> &Ftl<SwHooks> {
        &self.ftl
    }
    /// The FTL, for tests and tools that need a given block reclaimed.
    pub fn ftl_mut(&mut self) -> &mut Ftl<SwHooks> {
        &mut self.ftl
    }
}

impl SwWal {
    /// Applies the pending remaps to the L2P, each logged for the flush's
    /// record (or its checkpoint).
    fn apply_pending(&mut self) -> Result<()> {
        let h = self.ftl.hooks_mut();
        assert_eq!(h.pending.len(), h.pending_from.len(), "the two maps of pending remaps differ");
        assert!(h.pending.len() <= h.pending_max as usize, "more pending remaps than the table holds");
        let pending = std::mem::take(&mut h.pending);
        h.pending_from.clear();
        for (to, from) in pending {
            // Before a remap's source changes, the remap is applied
            // (`before_change`): the source still maps the page written for it.
            self.remap_logged(from, to)?;
        }
        Ok(())
    }

    /// `to` takes `from`'s page (`Ftl::remap_page`), logged for the next record.
    fn remap_logged(&mut self, from: Lpn, to: Lpn) -> Result<()> {
        let ppn = self
            .ftl
            .mapping(from)
            .ok_or_else(|| DeviceError::Corrupted(format!("remap of {from} onto {to}: its source maps no page")))?;
        self.ftl.remap_page(from, to)?;
        debug_assert_eq!(self.ftl.mapping(to), Some(ppn));
        self.ftl.hooks_mut().logged.push(Change::Remap { from, to, ppn });
        Ok(())
    }

    /// A trim, logged for the next record; past [`LOGGED_MAX`] changes a
    /// checkpoint makes them durable (a trim may be durable before its flush).
    fn trim_logged(&mut self, lpn: Lpn) -> Result<()> {
        if self.ftl.trim_page_logged(lpn)? {
            let h = self.ftl.hooks_mut();
            h.logged.push(Change::Trim { lpn });
            if h.logged.len() >= LOGGED_MAX {
                self.ftl.checkpoint()?;
            }
        }
        Ok(())
    }

    /// The flush's part: the pending remaps applied and, with every change
    /// since the last record, made durable together by one record group
    /// (or a checkpoint: `remap-record=0`, or a group over half the ring).
    fn make_durable(&mut self) -> Result<()> {
        let h = self.ftl.hooks();
        let changes = h.logged.len() + h.pending.len();
        if changes == 0 {
            return Ok(());
        }
        let page_size = self.ftl.page_size() as usize;
        let fit = record::per_page(page_size);
        let per = match h.record_page_entries as usize {
            0 => fit,
            n => n.min(fit),
        };
        let pages = record::pages_for(changes, per);
        let half_ring = (RING_BLOCKS / 2 * self.ftl.nand().geometry().pages_per_block) as usize;
        if !h.record || pages > half_ring {
            self.apply_pending()?;
            self.ftl.checkpoint()?;
            self.ftl.hooks_mut().flush_checkpoints += 1;
            return Ok(());
        }
        // The pages the remaps name are done before the record naming them.
        self.ftl.wait_idle();
        // Room first: a checkpoint here comes before the remaps are applied,
        // so none is made durable apart from the others.
        let entered = self.ftl.log_blocks_entered(0, pages as u32);
        if entered.iter().any(|b| self.ftl.hooks().needed.contains(b)) {
            self.ftl.checkpoint()?;
        }
        self.apply_pending()?;
        let changes = std::mem::take(&mut self.ftl.hooks_mut().logged);
        if changes.is_empty() {
            return Ok(());
        }
        let group = record::encode(&changes, page_size, per);
        assert!(group.len() <= pages, "the group grew after its room was made");
        for page in &group {
            let (ppn, _) = self.ftl.append_log(0, page)?;
            let b = self.ftl.block_of(ppn);
            self.ftl.hooks_mut().needed.insert(b);
        }
        let h = self.ftl.hooks_mut();
        h.record_pages += group.len() as u64;
        h.record_groups += 1;
        Ok(())
    }

    /// Before `lpn` is written or trimmed: a pending remap onto it is
    /// dropped (the new data wins) and its WAL page trimmed (it reads
    /// unwritten, as it has since the remap); one of it is applied first.
    fn before_change(&mut self, lpn: Lpn) -> Result<()> {
        let h = self.ftl.hooks_mut();
        h.targets.remove(&lpn);
        if let Some(from) = h.pending.remove(&lpn) {
            h.pending_from.remove(&from);
            self.trim_logged(from)?;
        }
        let h = self.ftl.hooks_mut();
        if let Some(to) = h.pending_from.remove(&lpn) {
            h.pending.remove(&to);
            self.remap_logged(lpn, to)?;
        }
        Ok(())
    }
}

impl Device for SwWal {
    fn info(&self) -> txftl_ftl::DeviceInfo {
        self.ftl.info()
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        let h = self.ftl.hooks();
        if let Some(&from) = h.pending.get(&lpn) {
            return self.ftl.read_page(from, buf);
        }
        let moved = h.pending_from.contains_key(&lpn);
        let r = self.ftl.read_page(lpn, buf)?;
        if moved {
            buf.fill(0);
        }
        Ok(r)
    }
    fn now_ns(&self) -> u64 {
        self.ftl.now()
    }
    fn set_clock(&mut self, at_ns: u64) {
        self.ftl.set_clock(at_ns)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.before_change(lpn)?;
        self.ftl.write_page_with(lpn, data, &RemapTag::NONE.encode())
    }
    fn flush(&mut self) -> Result<u64> {
        let start = self.ftl.now();
        self.make_durable()?;
        self.ftl.flush_all()?;
        Ok(self.ftl.now() - start)
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.before_change(lpn)?;
        self.trim_logged(lpn)?;
        Ok(0)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let h = self.ftl.hooks();
        let mut p = ProtocolCounters::new(ENTRY.counters);
        p.add("sw_wal_remappable_writes", h.remappable_writes);
        p.add("sw_wal_remaps", h.remaps);
        p.add("sw_wal_remaps_refused", h.refused);
        p.add("sw_wal_gc_tagged_copies", h.tagged_gc_copies);
        p.add("sw_wal_record_pages", h.record_pages);
        p.add("sw_wal_record_groups", h.record_groups);
        p.add("sw_wal_flush_checkpoints", h.flush_checkpoints);
        s.protocol = p;
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        let h = self.ftl.hooks_mut();
        (h.remaps, h.remappable_writes, h.refused, h.tagged_gc_copies) = (0, 0, 0, 0);
        (h.record_pages, h.record_groups, h.flush_checkpoints) = (0, 0, 0);
    }
    fn remap_calls(&mut self) -> Option<&mut dyn Remap> {
        Some(self)
    }
}

impl Remap for SwWal {
    fn write_remappable(&mut self, lpn: Lpn, data: &[u8], target: Lpn) -> Result<u64> {
        self.ftl.check_lpn(target)?;
        self.before_change(lpn)?;
        let r = self.ftl.write_page_with(lpn, data, &RemapTag { target: Some(target) }.encode())?;
        let h = self.ftl.hooks_mut();
        h.targets.insert(lpn, target);
        h.remappable_writes += 1;
        Ok(r)
    }

    fn remap(&mut self, from: Lpn, to: Lpn) -> Result<u64> {
        self.ftl.check_lpn(from)?;
        self.ftl.check_lpn(to)?;
        let h = self.ftl.hooks_mut();
        // The canary remaps whatever it is asked to: a page whose spare area
        // names another page then reads as corrupted, or as `to`'s old data.
        if !h.canary && h.targets.get(&from) != Some(&to) {
            h.refused += 1;
            return Err(DeviceError::Unsupported {
                protocol: ENTRY.name,
                what: "remap of a page not written for that target since the mount (copy it)",
            });
        }
        let why = if from == to {
            Some("the same page")
        } else if self.ftl.mapping(from).is_none() {
            Some("it maps no page")
        } else if self.ftl.hooks().pending_from.contains_key(&from) {
            Some("it is remapped already (not flushed yet)")
        } else {
            None
        };
        if let Some(why) = why {
            return Err(DeviceError::CallOrder(format!("remap of logical page {from} onto {to}: {why}")));
        }
        let h = self.ftl.hooks_mut();
        if !h.pending.contains_key(&to) && h.pending.len() >= h.pending_max as usize {
            h.refused += 1;
            return Err(DeviceError::TableFull { capacity: h.pending_max });
        }
        // A second remap onto `to` before the flush replaces the first (whose
        // WAL page keeps its data).
        if let Some(old) = h.pending.insert(to, from) {
            h.pending_from.remove(&old);
        }
        h.pending_from.insert(from, to);
        // The source was written remappable for this target: its spare area
        // names it (the canary skips the check above).
        debug_assert!(
            h.canary
                || self.ftl.mapping(from).is_some_and(|ppn| {
                    // A spare area bit errors make unreadable proves nothing.
                    !matches!(Oob::decode(&self.ftl.nand().inspect_oob(ppn)), OobState::Valid(o) if RemapTag::of(&o).target != Some(to))
                }),
            "remap of {from} onto {to}: its page was not written for that target"
        );
        let h = self.ftl.hooks_mut();
        debug_assert_eq!(h.pending.len(), h.pending_from.len(), "the two maps of pending remaps differ");
        assert!(h.pending.len() <= h.pending_max as usize);
        h.targets.remove(&from);
        h.remaps += 1;
        Ok(0)
    }
}

any_device_over_ftl!(SwWal, ENTRY, |d: &mut SwWal| d.make_durable());

impl crate::DurableParts for SwWal {}
