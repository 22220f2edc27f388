//! Step 3 of the mount (the module doc): the roll-forward scan of the blocks
//! free or open at the checkpoint, and the erase counts of the metadata ring
//! blocks, which only their pages' OOB records.
//!
//! With summary pages (`summary.rs`), a block whose first page written since
//! the checkpoint is intact is read by its summary page next: a summary
//! written after the checkpoint that recovery trusts stands for every other
//! page of the block (each was programmed whole before it), so a block
//! filled since costs two reads instead of one a page.

use super::Mounted;
use crate::checkpoint::RecordState;
use crate::device::RecoveryReport;
use crate::error::Result;
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::oob::{Oob, OobState, PageKind};
use crate::summary::{SummaryRead, Written};
use txftl_nand::{BlockId, DataMode, Ppn};

/// What the roll-forward scan found in one block.
#[derive(Clone, Copy, Debug)]
pub(super) struct Scanned {
    pub block: BlockId,
    pub write_ptr: u32,
    /// Something was programmed after the checkpoint (intact or torn).
    pub written: bool,
    /// Page 0 is an intact page older than the checkpoint: the block was not
    /// erased since (it still holds what the checkpoint describes).
    pub first_page_old: bool,
    /// The largest sequence number of a page programmed since the
    /// checkpoint that recovery read (0: none).
    pub newest_seq: u64,
}

/// A page found by the roll-forward scan.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Found {
    pub seq: u64,
    pub ppn: Ppn,
    pub oob: Oob,
    /// Read from its block's summary page: its flag bytes are those it was
    /// programmed with (`ScannedPage::from_summary`).
    pub from_summary: bool,
}

impl<H: Hooks> Ftl<H> {
    /// Rolls forward over blocks free or open at the checkpoint (probes them,
    /// for a protocol that logs its mappings: `block_probe.rs`), in parallel
    /// (a ring's blocks hold no data, even one swapped in since): every block
    /// is scanned from `*at_ns`, which ends at the last scan's completion.
    /// Restores every block's erase count as the checkpoint recorded it on
    /// the way. Returns the pages found (in scan order) and what each block
    /// scanned holds.
    pub(super) fn roll_forward(
        &mut self,
        m: &Mounted<H::Mapping>,
        report: &mut RecoveryReport,
        at_ns: &mut u64,
    ) -> Result<(Vec<Found>, Vec<Scanned>)> {
        let (ck, ring_owned, fallback) = (&m.ck, &m.ring_owned, m.fallback);
        let mut found = Vec::new();
        let scan_start = *at_ns;
        let mut scanned: Vec<Scanned> = Vec::new();
        // One page and spare area of scratch for every block scanned.
        let mut page = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        // With an allocation window, data went only to the blocks open or
        // ready at the checkpoint.
        // After a fallback, the newer checkpoint's window may have been used:
        // every free block is read, as without a window.
        let windowed = ck.window && !fallback;
        // After a fallback a block may have been reused more than once since
        // the checkpoint recovery loaded: page by page (`summary.rs`).
        let summaries = match fallback {
            true => SummaryRead::Off,
            false => SummaryRead::of(self.hooks.summary_pages(), self.cfg.canary),
        };
        for (b, rec) in ck.blocks.iter().enumerate() {
            let b = b as BlockId;
            self.blocks.erase_count[b as usize] = rec.erase_count;
            if ring_owned.contains(&b) {
                continue;
            }
            let (start, was_free) = match rec.state {
                RecordState::Free if windowed => continue,
                RecordState::Free | RecordState::Ready => (0, true),
                RecordState::Open => (rec.write_ptr as u32, false),
                // After a fallback, a block in use at the checkpoint may have been
                // reclaimed and reused since: a page 0 newer than the checkpoint says so.
                RecordState::Used if fallback => (0, true),
                _ => continue,
            };
            let (found_here, done) = if H::CAPABILITIES.logs_mappings {
                self.probe_block((b, start, was_free), ck.seq, report, scan_start)?
            } else {
                let scratch = (&mut page[..], &mut oob[..]);
                self.scan_block((b, start, was_free), (ck.seq, summaries), scratch, &mut found, report, scan_start)?
            };
            *at_ns = (*at_ns).max(done);
            scanned.push(found_here);
        }
        Ok((found, scanned))
    }

    /// Scans one block that was free or open at the checkpoint, from page `start`
    /// (`was_free`: it was in the free pool, so a stale page 0 means "unused since").
    /// Returns the pages programmed after the checkpoint (intact ones in
    /// `found`), what the block holds, and when the scan finished.
    fn scan_block(
        &mut self,
        (block, start, was_free): (BlockId, u32, bool),
        (ckpt_seq, summaries): (u64, SummaryRead),
        (buf, oob): (&mut [u8], &mut [u8]),
        found: &mut Vec<Found>,
        report: &mut RecoveryReport,
        at_ns: u64,
    ) -> Result<(Scanned, u64)> {
        let full_reads = self.nand.config().data_mode == DataMode::Full;
        let mut t = at_ns;
        let mut write_ptr = start;
        let mut written = false;
        let mut first_page_old = false;
        report.blocks_scanned += 1;
        for page in start..self.geo.pages_per_block {
            let ppn = self.geo.ppn(block, page);
            // Full data: the data's CRC, and whether it reads erased, not its
            // bytes (`buf` holds them only when the decode failed).
            let (done, unreadable, digest) = match full_reads {
                true => self.recovery_read_digest(ppn, t, (&mut *buf, &mut *oob), true)?,
                false => self
                    .recovery_read_ecc(ppn, t, false, &mut *buf, &mut *oob)
                    .map(|(d, u)| (d, u, None))?,
            };
            let crc = digest.and_then(|d| d.crc);
            t = done;
            report.pages_scanned += 1;
            if unreadable.is_some_and(|u| u.oob) {
                // Not even the spare area decodes: whose page it was is unknown.
                // Counted; the page reads as garbage below.
                report.unreadable_pages += 1;
            }
            // A spare area ECC decoded is as the cells hold it.
            let state = match unreadable.is_some_and(|u| u.oob) {
                true => Oob::decode(oob),
                false => Oob::decode_stored(oob, &self.nand, ppn),
            };
            match state {
                OobState::Valid(o) if o.seq > ckpt_seq => {
                    write_ptr = page + 1;
                    written = true;
                    // An intact OOB records the block's erase count, even over torn data.
                    let count = &mut self.blocks.erase_count[block as usize];
                    *count = (*count).max(o.erase_count);
                    if unreadable.is_some() && o.relocated {
                        // A GC copy (torn, or decayed) whose source still holds
                        // the same data: GC sources are not erased before the
                        // next checkpoint, and the scan only sees pages written
                        // since the last one. Skip it; the source stays mapped.
                        report.unreadable_pages += 1;
                        continue;
                    }
                    if unreadable.is_some() {
                        // The spare area decoded but the data did not: the page
                        // was written (an intact OOB), its data is lost to bit
                        // errors. It stays the newest version (reads report the
                        // loss) rather than letting an older one come back.
                        report.unreadable_pages += 1;
                        found.push(Found {
                            seq: o.seq,
                            ppn,
                            oob: o,
                            from_summary: false,
                        });
                        continue;
                    }
                    if full_reads && !crc.is_some_and(|c| o.crc_matches(c)) {
                        report.torn_pages_found += 1;
                        report.torn_data_intact_oob += 1;
                        continue;
                    }
                    found.push(Found {
                        seq: o.seq,
                        ppn,
                        oob: o,
                        from_summary: false,
                    });
                    // The first page written since: the rest by the summary, if trusted.
                    if page == start && summaries != SummaryRead::Off && page + 1 < self.geo.pages_per_block {
                        if let Some(at) = self.roll_forward_summary(block, (page + 1, ckpt_seq, summaries), found, report, t)? {
                            t = at;
                            write_ptr = self.geo.pages_per_block;
                            break;
                        }
                    }
                }
                OobState::Valid(_) => {
                    // Older than the checkpoint: a free block never reused since
                    // (page 0), or the stale remains of a torn erase.
                    if !(was_free && page == 0) {
                        report.torn_pages_found += 1;
                        write_ptr = page + 1;
                        continue;
                    }
                    first_page_old = true;
                    break;
                }
                OobState::Erased => {
                    // The OOB may be erased over a torn data area: look at the data.
                    let programmed = if full_reads {
                        !digest.map_or_else(|| txftl_nand::is_erased(buf), |d| d.erased)
                    } else {
                        let mut at = t;
                        let p = self.is_programmed(ppn, &mut at)?;
                        t = at;
                        p
                    };
                    if !programmed {
                        break;
                    }
                    report.torn_pages_found += 1;
                    write_ptr = page + 1;
                }
                OobState::Garbage => {
                    report.torn_pages_found += 1;
                    if was_free && page == 0 {
                        // A torn erase, or a torn first program: nothing after it is valid.
                        break;
                    }
                    write_ptr = page + 1;
                }
            }
        }
        let scanned = Scanned {
            block,
            write_ptr,
            written,
            first_page_old,
            // The pages found carry it.
            newest_seq: 0,
        };
        Ok((scanned, t))
    }

    /// Reads `block`'s summary page from `at_ns` and, if recovery may trust it
    /// as written after checkpoint `ckpt_seq`, adds the data pages it
    /// describes from page `from` on to `found` (reading the spare area of
    /// each whose record it could not hold), and the summary page itself
    /// (which carries the block's newest sequence number). Returns when the
    /// reads finished; `None`: not trusted (the caller reads page by page;
    /// the summary read is still charged).
    fn roll_forward_summary(
        &mut self,
        block: BlockId,
        (from, ckpt_seq, mode): (u32, u64, SummaryRead),
        found: &mut Vec<Found>,
        report: &mut RecoveryReport,
        at_ns: u64,
    ) -> Result<Option<u64>> {
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let last = self.geo.ppn(block, self.geo.pages_per_block - 1);
        let (mut t, unreadable) = self.recovery_read_ecc(last, at_ns, true, &mut buf, &mut oob)?;
        report.pages_scanned += 1;
        if unreadable.is_none() && matches!(Oob::decode(&oob), OobState::Erased) {
            // Not full: no summary to read (the scan goes on page by page).
            return Ok(None);
        }
        report.summary_pages_read += 1;
        let records = match unreadable {
            Some(_) => None,
            None => crate::summary::decode_written(mode, &self.geo, block, Written::After(ckpt_seq), &buf, &oob),
        };
        let (Some(records), OobState::Valid(summary)) = (records, Oob::decode(&oob)) else {
            report.summary_fallbacks += 1;
            return Ok(None);
        };
        let issued = t;
        for (page, record) in records.iter().enumerate().skip(from as usize) {
            let ppn = self.geo.ppn(block, page as u32);
            let o = match record {
                Some(o) => Some(*o),
                None => {
                    let (done, unreadable) = self.recovery_read_ecc(ppn, issued, false, &mut buf, &mut oob)?;
                    t = t.max(done);
                    report.pages_scanned += 1;
                    report.summary_spare_reads += 1;
                    match (unreadable, Oob::decode(&oob)) {
                        (None, OobState::Valid(o)) => Some(o),
                        _ => None,
                    }
                }
            };
            // Every page the summary describes was programmed whole before it.
            if let Some(o) = o.filter(|o| o.kind == PageKind::Data && o.seq > ckpt_seq) {
                debug_assert!(o.seq < summary.seq, "a summary older than a page it describes");
                let from_summary = record.is_some();
                found.push(Found {
                    seq: o.seq,
                    ppn,
                    oob: o,
                    from_summary,
                });
            }
        }
        let count = &mut self.blocks.erase_count[block as usize];
        *count = (*count).max(summary.erase_count);
        found.push(Found {
            seq: summary.seq,
            ppn: last,
            oob: summary,
            from_summary: false,
        });
        Ok(Some(t))
    }

    /// Raises each metadata ring block's erase count to the one its pages'
    /// OOB records, reading from `at_ns`; returns when the last read completed.
    pub(super) fn ring_erase_counts(&mut self, m: &Mounted<H::Mapping>, at_ns: u64) -> Result<u64> {
        let geo = self.geo;
        let (ck, ring_owned) = (&m.ck, &m.ring_owned);
        let mut t = at_ns;
        // Metadata ring blocks are erased as their ring enters them, after the
        // checkpoint recorded their count: the OOB of their pages has the count
        // they were programmed at (every page of one erase cycle records the
        // same). The first page normally tells; if it is not intact (a block
        // never entered, or a torn erase that left older pages behind), the
        // first intact page does. Blocks are read in parallel, each in order.
        // Blocks the checkpoint recorded as metadata but no ring names any more
        // (swapped out for wear since) were ring blocks too, possibly erased
        // after the checkpoint.
        let swapped_out = ck
            .blocks
            .iter()
            .enumerate()
            .filter(|(b, r)| r.state == RecordState::Meta && !ring_owned.contains(&(*b as BlockId)))
            .map(|(b, _)| b as BlockId);
        let meta_blocks: Vec<BlockId> = ring_owned
            .iter()
            .copied()
            .chain(swapped_out)
            .filter(|&b| b < geo.block_count())
            .collect();
        let mut oob = vec![0u8; geo.oob_size as usize];
        let issue = t;
        for b in meta_blocks {
            let mut at = issue;
            for page in 0..geo.pages_per_block {
                at = self.recovery_read(geo.ppn(b, page), at, false, &mut [], &mut oob)?;
                if let OobState::Valid(o) = Oob::decode(&oob) {
                    let count = &mut self.blocks.erase_count[b as usize];
                    *count = (*count).max(o.erase_count);
                    break;
                }
            }
            t = t.max(at);
        }
        Ok(t)
    }
}
