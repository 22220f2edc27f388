//! The checks operations start with: the device alive (and writable), the
//! logical page in range, the buffer a page; and `fail`, after which the
//! device refuses everything.

use super::Ftl;
use crate::device::Lpn;
use crate::error::{DeviceError, Result};
use crate::hooks::Hooks;
use txftl_nand::{DataMode, NandError};

impl<H: Hooks> Ftl<H> {
    pub(crate) fn check_alive(&self) -> Result<()> {
        if self.failed || !self.nand.is_powered() {
            return Err(if self.nand.is_powered() {
                DeviceError::Failed
            } else {
                DeviceError::PowerLoss
            });
        }
        Ok(())
    }

    /// `check_alive`, and the device is not mounted read-only.
    pub(crate) fn check_writable(&self, what: &'static str) -> Result<()> {
        self.check_alive()?;
        if self.cfg.read_only {
            return Err(DeviceError::ReadOnly(what));
        }
        Ok(())
    }

    /// A NAND error that leaves DRAM state unusable: refuse everything from now on.
    pub(crate) fn fail(&mut self, e: NandError) -> DeviceError {
        self.failed = true;
        e.into()
    }

    /// Refuses a logical page past the device's capacity.
    pub fn check_lpn(&self, lpn: Lpn) -> Result<()> {
        if lpn >= self.derived.logical_pages {
            return Err(DeviceError::OutOfRange {
                lpn: lpn as u64,
                logical_pages: self.derived.logical_pages,
            });
        }
        Ok(())
    }

    /// Refuses a buffer that is not a page (an empty one is a page of a
    /// metadata-only array).
    pub fn check_data_len(&self, len: usize) -> Result<()> {
        let want = self.geo.page_size as usize;
        if len == want || (len == 0 && self.nand.config().data_mode == DataMode::MetaOnly) {
            Ok(())
        } else {
            Err(DeviceError::BufferSize { got: len, want })
        }
    }

    /// Refuses a host page write's logical page or buffer (`check_lpn`,
    /// `check_data_len`): for a protocol's own write paths.
    pub fn check_page(&self, lpn: Lpn, data: &[u8]) -> Result<()> {
        self.check_lpn(lpn)?;
        self.check_data_len(data.len())
    }
}
