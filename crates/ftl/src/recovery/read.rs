//! Recovery's reads, timed on the device clock: one page (data and OOB, or
//! the OOB alone), whether a page is programmed at all, and how far a block
//! is programmed.

use crate::ecc::{retrying, Unreadable};
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use txftl_nand::{is_erased, BlockId, Ppn};

impl<H: Hooks> Ftl<H> {
    /// Reads a page (data and OOB) at `at_ns`; returns the completion time. A
    /// page ECC cannot correct (after read retry) leaves corrupted bytes that
    /// fail every check, as a torn page does: see `recovery_read_ecc` for the
    /// one reader that must tell the two apart.
    pub(super) fn recovery_read(&mut self, ppn: Ppn, at_ns: u64, data: bool, buf: &mut [u8], oob: &mut [u8]) -> Result<u64> {
        Ok(self.recovery_read_ecc(ppn, at_ns, data, buf, oob)?.0)
    }

    /// `recovery_read`, saying whether the page was unreadable.
    pub(super) fn recovery_read_ecc(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        data: bool,
        buf: &mut [u8],
        oob: &mut [u8],
    ) -> Result<(u64, Option<Unreadable>)> {
        self.recovery_read_with(ppn, at_ns, data.then_some(buf), oob, None)
    }

    /// `recovery_read_ecc` that, for a data read the ECC decoded, also
    /// returns the CRC-32 of the data handed up (`Nand::read_crc`: the array
    /// remembers it per page version, so a page every recovery reads again
    /// costs no hash; a crash set recovers after every point).
    pub(super) fn recovery_read_crc(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        data: bool,
        buf: &mut [u8],
        oob: &mut [u8],
    ) -> Result<(u64, Option<Unreadable>, Option<u32>)> {
        let mut crc = data.then_some(0);
        let (done, unreadable) = self.recovery_read_with(ppn, at_ns, data.then_some(buf), oob, crc.as_mut())?;
        Ok((done, unreadable, crc.filter(|_| unreadable.is_none())))
    }

    /// The one read both share: through ECC with retries, an unreadable
    /// page counted, a NAND failure failing the device.
    fn recovery_read_with(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        data: Option<&mut [u8]>,
        oob: &mut [u8],
        crc: Option<&mut u32>,
    ) -> Result<(u64, Option<Unreadable>)> {
        match retrying(&mut self.nand, ppn, at_ns, data, oob, crc) {
            Ok(Ok(done)) => Ok((done, None)),
            Ok(Err(u)) => {
                self.counters.uncorrectable_reads += 1;
                Ok((u.done_ns, Some(u)))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// Is the page programmed at all (data or OOB not all 0xFF)? Full read.
    /// Reads into the FTL's scratch buffers: recovery probes pages by the
    /// hundred (binary searches of every block's programmed prefix).
    pub(super) fn is_programmed(&mut self, ppn: Ppn, at_ns: &mut u64) -> Result<bool> {
        let (mut buf, mut oob) = (std::mem::take(&mut self.page_buf), std::mem::take(&mut self.oob_buf));
        debug_assert_eq!((buf.len(), oob.len()), (self.geo.page_size as usize, self.geo.oob_size as usize));
        let read = self.recovery_read(ppn, *at_ns, true, &mut buf, &mut oob);
        let programmed = !is_erased(&buf) || !is_erased(&oob);
        (self.page_buf, self.oob_buf) = (buf, oob);
        *at_ns = read?;
        Ok(programmed)
    }

    /// Number of programmed pages at the start of `block` from `from` on
    /// (pages are programmed in order, so they form a prefix): binary search.
    pub(super) fn programmed_prefix(&mut self, block: BlockId, from: u32, at_ns: &mut u64) -> Result<u32> {
        let (mut lo, mut hi) = (from, self.geo.pages_per_block);
        // Invariant: pages < lo are programmed, pages >= hi are erased.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.is_programmed(self.geo.ppn(block, mid), at_ns)? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}
