//! Recovery's reads, timed on the device clock: one page (data and OOB, or
//! the OOB alone), whether a page is programmed at all, and how far a block
//! is programmed.

use crate::ecc::{read_retrying_digest, retrying, Unreadable};
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use txftl_nand::{is_erased, BlockId, DataDigest, Ppn};

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
        match retrying(&mut self.nand, ppn, at_ns, data.then_some(buf), oob, None) {
            Ok(Ok(done)) => Ok((done, None)),
            Ok(Err(u)) => {
                self.counters.uncorrectable_reads += 1;
                Ok((u.done_ns, Some(u)))
            }
            Err(e) => Err(self.fail(e)),
        }
    }

    /// A data and spare read whose data only matters by its digest (whether
    /// it reads erased and, if `crc`, its CRC-32; `Nand::read_digest`: the
    /// array does not copy the page out). `None` for a page ECC could not
    /// decode: `buf` then holds what the last decode handed up.
    pub(super) fn recovery_read_digest(
        &mut self,
        ppn: Ppn,
        at_ns: u64,
        (buf, oob): (&mut [u8], &mut [u8]),
        crc: bool,
    ) -> Result<(u64, Option<Unreadable>, Option<DataDigest>)> {
        match read_retrying_digest(&mut self.nand, ppn, at_ns, (buf, oob), crc) {
            Ok((Ok(done), digest)) => Ok((done, None, digest)),
            Ok((Err(u), _)) => {
                self.counters.uncorrectable_reads += 1;
                Ok((u.done_ns, Some(u), None))
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
        let read = self.recovery_read_digest(ppn, *at_ns, (&mut buf, &mut oob), false);
        let data_erased = match &read {
            Ok((_, _, Some(digest))) => digest.erased,
            _ => is_erased(&buf),
        };
        let programmed = !data_erased || !is_erased(&oob);
        (self.page_buf, self.oob_buf) = (buf, oob);
        *at_ns = read?.0;
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
