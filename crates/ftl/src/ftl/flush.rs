//! What makes the host's changes durable: trims, flushes, and the clean
//! close.

use super::Ftl;
use crate::checkpoint::UNMAPPED;
use crate::device::Lpn;
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use crate::mapping::Mapping;
use txftl_nand::Nand;

impl<H: Hooks> Ftl<H> {
    /// Trim: forget a logical page. Durable at the next flush (through a
    /// checkpoint's L2P): refused when checkpoints persist none
    /// (`Mapping::PERSISTED`), since recovery would find the page again.
    pub fn trim_page(&mut self, lpn: Lpn) -> Result<u64> {
        if self.trim_page_logged(lpn)? {
            self.trims_pending = true;
        }
        Ok(0)
    }

    /// A trim the protocol makes durable itself, in a record of its own
    /// that its recovery reads (SW-WAL's remap record): no checkpoint is
    /// owed at the next flush. Returns whether `lpn` mapped a page.
    pub fn trim_page_logged(&mut self, lpn: Lpn) -> Result<bool> {
        self.check_writable("trim")?;
        self.check_lpn(lpn)?;
        if !<H::Mapping as Mapping>::PERSISTED {
            return Err(DeviceError::Unsupported {
                protocol: self.hooks.name(),
                what: "trim (no persistent mapping table to record it in)",
            });
        }
        self.counters.host_trims += 1;
        self.fetch_mapping(lpn)?;
        if self.l2p.get(lpn) == UNMAPPED {
            return Ok(false);
        }
        self.unmap(lpn);
        Ok(true)
    }

    /// Waits for every program in flight; makes pending trims durable.
    pub fn flush_all(&mut self) -> Result<u64> {
        self.check_alive()?;
        let start = self.now_ns;
        self.counters.host_flushes += 1;
        self.now_ns = self.now_ns.max(self.nand.all_idle_ns());
        if self.trims_pending || (self.cfg.checkpoint_at_flush && self.programs_since_ckpt > 0) {
            self.checkpoint()?;
        }
        // With an image synced at flushes (`--sync flush`), a flush that returns
        // is on the host's disk too.
        self.nand.flush_image()?;
        Ok(self.now_ns - start)
    }

    /// Clean shutdown: flush, then checkpoint so the next mount rolls nothing
    /// forward, if anything was programmed or trimmed since the last checkpoint.
    /// A device that changed nothing (a read-only mount, or one that only read)
    /// writes nothing: looking at a device must not wear it.
    pub fn close(mut self) -> Result<Nand> {
        if self.cfg.read_only {
            self.check_alive()?;
            return Ok(self.nand);
        }
        self.flush_all()?;
        if self.programs_since_ckpt > 0 || self.trims_pending {
            self.checkpoint()?;
        }
        self.nand.sync_image()?;
        Ok(self.nand)
    }
}
