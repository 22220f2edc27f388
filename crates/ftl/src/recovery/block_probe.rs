//! Step 3 for a protocol that logs its mappings (`Capabilities::logs_mappings`,
//! Möbius): a block free or open at the checkpoint is probed, not scanned.
//! Recovery needs of it only its state: whether anything was programmed
//! since the checkpoint, how far (pages are programmed in order, so they form
//! a prefix, found by binary search), its erase count (every page's OOB
//! records it) and its newest sequence number (new programs must follow
//! it). No page's mapping is taken from its spare area: the protocol's log
//! holds them.

use super::roll_forward::Scanned;
use crate::device::RecoveryReport;
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::oob::{Oob, OobState};
use txftl_nand::{BlockId, DataMode};

impl<H: Hooks> Ftl<H> {
    /// Probes `block` from page `start` (`was_free`: it was in the free pool
    /// at the checkpoint, so an intact page 0 older than it means "unused
    /// since"). Returns what the block holds and when the last read finished.
    pub(super) fn probe_block(
        &mut self,
        (block, start, was_free): (BlockId, u32, bool),
        ckpt_seq: u64,
        report: &mut RecoveryReport,
        at_ns: u64,
    ) -> Result<(Scanned, u64)> {
        let mut t = at_ns;
        let mut out = Scanned {
            block,
            write_ptr: start,
            written: false,
            first_page_old: false,
            newest_seq: 0,
        };
        report.blocks_scanned += 1;
        if start >= self.geo.pages_per_block {
            return Ok((out, t));
        }
        let first = self.probe_page(block, start, &mut t, report)?;
        match first {
            OobState::Valid(o) if o.seq <= ckpt_seq && was_free && start == 0 => {
                out.first_page_old = true;
                return Ok((out, t));
            }
            OobState::Valid(o) if o.seq > ckpt_seq => {
                out.written = true;
                self.note_probed(block, &o, &mut out);
            }
            OobState::Garbage if was_free && start == 0 => {
                // A torn erase, or a torn first program: nothing after it is valid.
                report.torn_pages_found += 1;
                return Ok((out, t));
            }
            OobState::Erased if !self.is_programmed(self.geo.ppn(block, start), &mut t)? => return Ok((out, t)),
            // Torn (an erased OOB over programmed data, garbage, or the
            // stale remains of a torn erase): the pages after it tell.
            _ => report.torn_pages_found += 1,
        }
        let end = self.programmed_end(block, start + 1, &mut t, report)?;
        out.write_ptr = end;
        // The newest sequence number is the last intact page's: read back
        // from the end past a torn last page.
        for page in (start + 1..end).rev().take(2) {
            match self.probe_page(block, page, &mut t, report)? {
                OobState::Valid(o) if o.seq > ckpt_seq => {
                    out.written = true;
                    self.note_probed(block, &o, &mut out);
                    break;
                }
                _ => report.torn_pages_found += 1,
            }
        }
        Ok((out, t))
    }

    /// The end of `block`'s programmed prefix, searched from page `from`
    /// on (every page before it is programmed), each read counted.
    fn programmed_end(&mut self, block: BlockId, from: u32, t: &mut u64, report: &mut RecoveryReport) -> Result<u32> {
        let (mut lo, mut hi) = (from, self.geo.pages_per_block);
        // Pages < lo are programmed, pages >= hi are erased.
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            report.pages_scanned += 1;
            if self.is_programmed(self.geo.ppn(block, mid), t)? {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }

    /// Reads page `page` of `block` (data too, so that torn data is told from
    /// erased) and decodes its OOB. An intact OOB over torn data is counted
    /// as a torn page (the last page a cut caught): its OOB still tells the
    /// block's erase count and sequence number.
    fn probe_page(&mut self, block: BlockId, page: u32, t: &mut u64, report: &mut RecoveryReport) -> Result<OobState> {
        let full_reads = self.nand.config().data_mode == DataMode::Full;
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let (done, unreadable) = self.recovery_read_ecc(self.geo.ppn(block, page), *t, true, &mut buf, &mut oob)?;
        *t = done;
        report.pages_scanned += 1;
        if unreadable.is_some() {
            report.unreadable_pages += 1;
        }
        let state = Oob::decode(&oob);
        if let OobState::Valid(o) = &state {
            if full_reads && unreadable.is_none() && !o.data_matches(&buf) {
                report.torn_pages_found += 1;
                report.torn_data_intact_oob += 1;
            }
        }
        Ok(state)
    }

    /// A page programmed since the checkpoint: its block's erase count and
    /// newest sequence number.
    fn note_probed(&mut self, block: BlockId, o: &Oob, out: &mut Scanned) {
        let count = &mut self.blocks.erase_count[block as usize];
        *count = (*count).max(o.erase_count);
        out.newest_seq = out.newest_seq.max(o.seq);
    }
}
