//! The pages a protocol's recovery scan hands it (`RecoveryHooks::recover_scanned`),
//! read from the NAND one at a time as the protocol visits them.
//!
//! A protocol without a mapping table on flash (SCC, BPCC) scans every block
//! in use: at 32 GiB that is millions of pages. Handing them over as one
//! `Vec<ScannedPage>` (an 80-byte decoded OOB record each) made the scan
//! alone cost hundreds of bytes a page before the protocol kept anything;
//! visiting them one at a time lets each protocol keep only the few fields
//! its decision needs, in the compact form it chooses.
//!
//! The reads are the same, in the same order and on the same device clock,
//! as a scan that collects first: blocks are issued together at `at_ns`, in
//! parallel across blocks, each read page after page from its first page to
//! its write pointer at the checkpoint, or, for a block full at the
//! checkpoint whose protocol asked for summary pages, by its summary page
//! alone when recovery may trust it (`summary.rs`).

use crate::device::RecoveryReport;
use crate::ecc::read_retrying;
use crate::error::Result;
use crate::hooks::ScannedPage;
use crate::oob::{Oob, OobState, PageKind};
use crate::recovery::Found;
use crate::summary::SummaryRead;
use txftl_nand::{BlockId, DataMode, Geometry, Nand};

/// The pages of a recovery scan, visited once (`for_each` consumes it).
///
/// First every intact data page the roll-forward scan found (programmed
/// after the checkpoint; already read, so visiting them costs no time), then
/// every intact data page programmed before the checkpoint in the blocks the
/// protocol named (`RecoveryHooks::zone_blocks`), read as they are visited. A
/// protocol that never visits them reads nothing.
pub struct ScannedPages<'a> {
    pub(crate) nand: &'a mut Nand,
    pub(crate) geo: Geometry,
    pub(crate) ckpt_seq: u64,
    /// The pages the roll-forward scan found (data pages are visited).
    pub(crate) rolled_forward: &'a [Found],
    /// Blocks to read, ascending, each with its write pointer at the checkpoint.
    pub(crate) blocks: Vec<(BlockId, u32)>,
    /// When the reads are issued (device clock).
    pub(crate) at_ns: u64,
    pub(crate) report: &'a mut RecoveryReport,
    pub(crate) outcome: &'a mut ScanOutcome,
    /// Whether blocks full at the checkpoint are read by their summary page.
    pub(crate) summaries: SummaryRead,
}

/// What reading a scan did that the FTL keeps (the report's counters are
/// updated in place).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ScanOutcome {
    /// When the last read finished (the issue time if nothing was read).
    pub done_ns: u64,
    /// Reads ECC could not correct at any retry level (`DeviceStats`).
    pub uncorrectable_reads: u64,
    /// A NAND error other than an uncorrectable read ended the scan.
    pub nand_failed: bool,
}

impl ScannedPages<'_> {
    /// Calls `visit` on every page, in the order the type describes.
    pub fn for_each(mut self, mut visit: impl FnMut(&ScannedPage)) -> Result<()> {
        for f in self.rolled_forward.iter().filter(|f| f.oob.kind == PageKind::Data) {
            visit(&ScannedPage { ppn: f.ppn, oob: f.oob });
        }
        let mut buf = vec![0u8; self.geo.page_size as usize];
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        let mut done = self.at_ns;
        let blocks = std::mem::take(&mut self.blocks);
        for &(block, end) in &blocks {
            self.report.protocol_blocks_scanned += 1;
            let mut t = self.at_ns;
            // A block full at the checkpoint: its summary page, if trusted,
            // stands for every other page's OOB (`summary.rs`).
            let summarized = if self.summaries != SummaryRead::Off && end == self.geo.pages_per_block {
                let (records, at) = self.read_summary(block, t, &mut buf, &mut oob, done)?;
                t = at;
                records
            } else {
                None
            };
            match summarized {
                Some(records) => {
                    for (page, o) in records.iter().enumerate() {
                        if o.kind == PageKind::Data && o.seq < self.ckpt_seq {
                            visit(&ScannedPage {
                                ppn: self.geo.ppn(block, page as u32),
                                oob: *o,
                            });
                        }
                    }
                }
                None => t = self.read_pages(block, end, t, (&mut buf, &mut oob), done, &mut visit)?,
            }
            done = done.max(t);
            self.outcome.done_ns = done;
        }
        self.outcome.done_ns = done;
        Ok(())
    }

    /// Reads `block`'s summary page from `t`: its records if recovery may
    /// trust them, and when the read finished. A read ECC cannot correct is
    /// not trusted; any other NAND error ends the scan (`done`: when the
    /// reads before it finished).
    fn read_summary(&mut self, block: BlockId, t: u64, buf: &mut [u8], oob: &mut [u8], done: u64) -> Result<(Option<Vec<Oob>>, u64)> {
        let ppn = self.geo.ppn(block, self.geo.pages_per_block - 1);
        // The whole page: the records are in its data area, which a
        // metadata-only array keeps too (it was programmed with data).
        let (readable, t) = match read_retrying(self.nand, ppn, t, Some(buf), oob) {
            Ok(Ok(d)) => (true, d),
            Ok(Err(u)) => {
                self.outcome.uncorrectable_reads += 1;
                (false, u.done_ns)
            }
            Err(e) => {
                self.outcome.nand_failed = true;
                self.outcome.done_ns = done.max(t);
                return Err(e.into());
            }
        };
        self.report.protocol_pages_scanned += 1;
        self.report.summary_pages_read += 1;
        let records = readable
            .then(|| crate::summary::decode(self.summaries, &self.geo, block, self.ckpt_seq, buf, oob))
            .flatten();
        if records.is_none() {
            self.report.summary_fallbacks += 1;
        }
        Ok((records, t))
    }

    /// Reads `block` page after page from its first page to `end`, from
    /// `t`, visiting each intact data page older than the checkpoint;
    /// returns when the last read finished.
    fn read_pages(
        &mut self,
        block: BlockId,
        end: u32,
        mut t: u64,
        (buf, oob): (&mut [u8], &mut [u8]),
        done: u64,
        visit: &mut impl FnMut(&ScannedPage),
    ) -> Result<u64> {
        let full_reads = self.nand.config().data_mode == DataMode::Full;
        for page in 0..end {
            let ppn = self.geo.ppn(block, page);
            let data = if full_reads { Some(&mut buf[..]) } else { None };
            let unreadable = match read_retrying(self.nand, ppn, t, data, oob) {
                Ok(Ok(d)) => {
                    t = d;
                    false
                }
                Ok(Err(u)) => {
                    self.outcome.uncorrectable_reads += 1;
                    t = u.done_ns;
                    true
                }
                Err(e) => {
                    self.outcome.nand_failed = true;
                    self.outcome.done_ns = done.max(t);
                    return Err(e.into());
                }
            };
            self.report.protocol_pages_scanned += 1;
            if unreadable {
                self.report.unreadable_pages += 1;
            }
            // A page whose data is beyond ECC but whose spare area decodes
            // is still there (reads report its loss): the protocol counts it.
            let data_ok = unreadable || !full_reads;
            if let OobState::Valid(o) = Oob::decode(oob) {
                if o.kind == PageKind::Data && o.seq < self.ckpt_seq && (data_ok || o.data_matches(buf)) {
                    visit(&ScannedPage { ppn, oob: o });
                }
            }
        }
        Ok(t)
    }

    /// Every page in one `Vec`, for a protocol whose scan is small (LightTx's
    /// zone, Atomic-Write's roll-forward): the memory is the pages'.
    pub fn collect(self) -> Result<Vec<ScannedPage>> {
        let mut pages = Vec::new();
        self.for_each(|p| pages.push(*p))?;
        Ok(pages)
    }
}
