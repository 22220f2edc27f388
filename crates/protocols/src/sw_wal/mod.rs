//! SW-WAL (Wu et al., DATE 2021), as NoLgn-FTL (§2.3, §4.1, §5) describes
//! it: NoLgn's baseline that keeps SQLite's WAL but checkpoints it by
//! remapping, not copying. The FTL is `plain`'s with the `Remap` extension:
//!
//! - `write_remappable(w, data, d)`: a WAL page `w`, its spare area naming the
//!   database page `d` it holds a version of (`format.rs`; "inscribing
//!   transaction information directly into the OOB area", §5).
//! - `remap(w, d)`: `d` takes `w`'s physical page (no program); `w` is
//!   unmapped; `d`'s old page is garbage. The spare area names `w`, so the
//!   page is `d`'s through its alias (`Hooks::alias_lpn`): reads of `d`, GC
//!   (which copies it as `d`'s from then on) and the checks accept it. A remap
//!   is durable at the next flush, through the checkpoint's L2P, as a trim
//!   is: SQLite syncs the database after a checkpoint's writes, before it
//!   reuses the WAL, so a cut before that finds the WAL whole and SQLite's
//!   own recovery checkpoints it again.
//! - A remap of a page not written with `write_remappable` naming that target
//!   since the mount (the device keeps which in DRAM) is refused with
//!   `Unsupported`, and the host copies instead.

mod entry;
mod format;

pub use entry::ENTRY;
pub use format::RemapTag;

use std::collections::BTreeMap;
use txftl_ftl::extensions::Remap;
use txftl_ftl::{Capabilities, Dense, Device, DeviceError, DeviceStats, EventHooks, Ftl, GcHooks, Hooks, Lpn, Oob, PersistHooks};
use txftl_ftl::{ProtocolCounters, RecoveryHooks, Result};

/// SW-WAL's state inside the framework: the remappable pages written since
/// the mount (DRAM only), and its counters.
#[derive(Clone, Debug, Default)]
pub struct SwHooks {
    canary: bool,
    /// WAL page -> the database page its spare area names.
    targets: BTreeMap<Lpn, Lpn>,
    remaps: u64,
    remappable_writes: u64,
    refused: u64,
}

impl SwHooks {
    pub fn new(canary: bool) -> SwHooks {
        SwHooks {
            canary,
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
}

impl GcHooks for SwHooks {}
impl RecoveryHooks for SwHooks {}
impl EventHooks for SwHooks {}

impl PersistHooks for SwHooks {
    /// The target's 4 bytes.
    fn packed_protocol_bytes(&self) -> usize {
        4
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

impl Device for SwWal {
    device_basics_over_ftl!();
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        let r = self.ftl.write_page_with(lpn, data, &RemapTag::NONE.encode())?;
        self.ftl.hooks_mut().targets.remove(&lpn);
        Ok(r)
    }
    fn flush(&mut self) -> Result<u64> {
        self.ftl.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        let r = self.ftl.trim_page(lpn)?;
        self.ftl.hooks_mut().targets.remove(&lpn);
        Ok(r)
    }
    fn stats(&self) -> DeviceStats {
        let mut s = self.ftl.device_stats();
        let h = self.ftl.hooks();
        let mut p = ProtocolCounters::new(ENTRY.counters);
        p.add("sw_wal_remappable_writes", h.remappable_writes);
        p.add("sw_wal_remaps", h.remaps);
        p.add("sw_wal_remaps_refused", h.refused);
        s.protocol = p;
        s
    }
    fn reset_stats(&mut self) {
        self.ftl.reset_device_stats();
        let h = self.ftl.hooks_mut();
        (h.remaps, h.remappable_writes, h.refused) = (0, 0, 0);
    }
    fn remap_calls(&mut self) -> Option<&mut dyn Remap> {
        Some(self)
    }
}

impl Remap for SwWal {
    fn write_remappable(&mut self, lpn: Lpn, data: &[u8], target: Lpn) -> Result<u64> {
        self.ftl.check_lpn(target)?;
        let r = self.ftl.write_page_with(lpn, data, &RemapTag { target: Some(target) }.encode())?;
        let h = self.ftl.hooks_mut();
        h.targets.insert(lpn, target);
        h.remappable_writes += 1;
        Ok(r)
    }

    fn remap(&mut self, from: Lpn, to: Lpn) -> Result<u64> {
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
        self.ftl.remap_page(from, to)?;
        let h = self.ftl.hooks_mut();
        h.targets.remove(&from);
        h.targets.remove(&to);
        h.remaps += 1;
        Ok(0)
    }
}

any_device_over_ftl!(SwWal, ENTRY);
