//! [`Device`] for the FTL: the plain block device, each call forwarded to
//! the FTL's own operation.

use super::Ftl;
use crate::device::{Device, DeviceInfo, DeviceStats, Lpn};
use crate::error::Result;
use crate::hooks::Hooks;

impl<H: Hooks> Device for Ftl<H> {
    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            protocol: self.hooks.name(),
            logical_pages: self.derived.logical_pages,
            page_size: self.geo.page_size,
        }
    }
    fn read(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64> {
        self.read_page(lpn, buf)
    }
    fn write(&mut self, lpn: Lpn, data: &[u8]) -> Result<u64> {
        self.write_page(lpn, data)
    }
    fn flush(&mut self) -> Result<u64> {
        self.flush_all()
    }
    fn trim(&mut self, lpn: Lpn) -> Result<u64> {
        self.trim_page(lpn)
    }
    fn stats(&self) -> DeviceStats {
        self.device_stats()
    }
    fn reset_stats(&mut self) {
        self.reset_device_stats()
    }
    fn now_ns(&self) -> u64 {
        self.now_ns
    }
    fn set_clock(&mut self, at_ns: u64) {
        self.now_ns = at_ns.max(self.time_base_ns);
    }
    fn write_run(
        &mut self,
        lpns: std::ops::Range<Lpn>,
        first_at_ns: u64,
        next_at: &mut dyn FnMut(u64) -> u64,
    ) -> std::result::Result<(), (Lpn, crate::error::DeviceError)> {
        self.write_run_plain(lpns, first_at_ns, next_at).map(|_| ())
    }
}
