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
//! alone when recovery may trust it (`summary.rs`), plus the spare area of
//! each page whose record the summary could not hold in its compact form.
//!
//! A summary holds each page's flag bytes as programmed, not as partial
//! programs cleared them since. `for_each` hands each page over once, marked
//! `from_summary`, and returns [`LiveSpares`]: the protocol asks it for the
//! live spare area of the pages whose flags it must see as they are now.

use crate::device::RecoveryReport;
use crate::ecc::{read_retrying, read_retrying_digest, retrying};
use crate::error::{DeviceError, Result};
use crate::hooks::ScannedPage;
use crate::oob::{Oob, OobState, PageKind};
use crate::recovery::Found;
use crate::summary::SummaryRead;
use txftl_nand::{BlockId, DataMode, Geometry, Nand, Ppn};

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

impl<'a> ScannedPages<'a> {
    /// Calls `visit` on every page, in the order the type describes; then
    /// hands back what reads live spare areas after the scan ([`LiveSpares`]).
    pub fn for_each(mut self, mut visit: impl FnMut(&ScannedPage)) -> Result<LiveSpares<'a>> {
        for f in self.rolled_forward.iter().filter(|f| f.oob.kind == PageKind::Data) {
            visit(&ScannedPage {
                ppn: f.ppn,
                oob: f.oob,
                from_summary: f.from_summary,
            });
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
            t = match summarized {
                Some(records) => self.visit_summarized(block, &records, t, &mut oob, done, &mut visit)?,
                None => self.read_pages(block, end, t, (&mut buf, &mut oob), done, &mut visit)?,
            };
            done = done.max(t);
            self.outcome.done_ns = done;
        }
        self.outcome.done_ns = done;
        Ok(LiveSpares {
            nand: self.nand,
            geo: self.geo,
            report: self.report,
            outcome: self.outcome,
            issue_ns: done,
            oob,
        })
    }

    /// Visits the data pages older than the checkpoint that a trusted
    /// summary of `block` describes (`records`, page `i`'s at index `i`): a
    /// record the summary holds as it is, and for each it marks "read its
    /// spare" that page's spare area, read from `t` (when the summary page's
    /// read finished: the reads depend on it). Returns when the last read
    /// finished.
    fn visit_summarized(
        &mut self,
        block: BlockId,
        records: &[Option<Oob>],
        t: u64,
        oob: &mut [u8],
        done: u64,
        visit: &mut impl FnMut(&ScannedPage),
    ) -> Result<u64> {
        debug_assert!(records.len() < self.geo.pages_per_block as usize, "more records than data pages");
        let mut end = t;
        for (page, record) in records.iter().enumerate() {
            let ppn = self.geo.ppn(block, page as u32);
            let (o, from_summary) = match record {
                Some(o) => (Some(*o), true),
                None => {
                    let (o, d) = read_spare(self.nand, ppn, t, oob, (&mut *self.outcome, &mut *self.report), done)?;
                    self.report.protocol_pages_scanned += 1;
                    self.report.summary_spare_reads += 1;
                    end = end.max(d);
                    (o, false)
                }
            };
            if let Some(o) = o.filter(|o| o.kind == PageKind::Data && o.seq < self.ckpt_seq) {
                visit(&ScannedPage { ppn, oob: o, from_summary });
            }
        }
        Ok(end)
    }

    /// Reads `block`'s summary page from `t`: its records if recovery may
    /// trust them, and when the read finished. A read ECC cannot correct is
    /// not trusted; any other NAND error ends the scan (`done`: when the
    /// reads before it finished).
    fn read_summary(
        &mut self,
        block: BlockId,
        t: u64,
        buf: &mut [u8],
        oob: &mut [u8],
        done: u64,
    ) -> Result<(Option<Vec<Option<Oob>>>, u64)> {
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
            // The data's CRC as the array hands it up (remembered per page
            // version: no hash for a page every recovery reads again, and
            // no copy of the page: `Nand::read_digest`).
            let read = match full_reads {
                true => read_retrying_digest(self.nand, ppn, t, (&mut *buf, &mut *oob), true),
                false => retrying(self.nand, ppn, t, None, oob, None).map(|r| (r, None)),
            };
            let crc = read.as_ref().ok().and_then(|(_, d)| d.and_then(|d| d.crc));
            let (unreadable, oob_failed) = match read.map(|(r, _)| r) {
                Ok(Ok(d)) => {
                    t = d;
                    (false, false)
                }
                Ok(Err(u)) => {
                    self.outcome.uncorrectable_reads += 1;
                    t = u.done_ns;
                    (true, u.oob)
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
            // A spare area ECC decoded is as the cells hold it: its record's
            // CRC is the one the array remembers.
            let state = match oob_failed {
                true => Oob::decode(oob),
                false => Oob::decode_stored(oob, self.nand, ppn),
            };
            if let OobState::Valid(o) = state {
                if o.kind == PageKind::Data && o.seq < self.ckpt_seq && (data_ok || crc.is_some_and(|c| o.crc_matches(c))) {
                    visit(&ScannedPage {
                        ppn,
                        oob: o,
                        from_summary: false,
                    });
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

/// Reads `ppn`'s spare area alone (an OOB read) from `at`: its record if
/// intact, and when the read finished. A read ECC cannot correct at any
/// retry level gives no record (counted as the page-by-page scan counts
/// one); any other NAND error ends the scan (`done`: when the reads before
/// it finished).
fn read_spare(
    nand: &mut Nand,
    ppn: Ppn,
    at: u64,
    oob: &mut [u8],
    (outcome, report): (&mut ScanOutcome, &mut RecoveryReport),
    done: u64,
) -> Result<(Option<Oob>, u64)> {
    match read_retrying(nand, ppn, at, None, oob) {
        Ok(Ok(d)) => match Oob::decode(oob) {
            OobState::Valid(o) => Ok((Some(o), d)),
            OobState::Erased | OobState::Garbage => Ok((None, d)),
        },
        Ok(Err(u)) => {
            outcome.uncorrectable_reads += 1;
            report.unreadable_pages += 1;
            Ok((None, u.done_ns))
        }
        Err(e) => {
            outcome.nand_failed = true;
            outcome.done_ns = done.max(at);
            Err(e.into())
        }
    }
}

/// What a protocol's recovery reads after its scan ([`ScannedPages::for_each`]
/// returns it): the spare area of chosen pages as it is now on the NAND.
///
/// A page visited from a summary (`ScannedPage::from_summary`) carries the
/// flag bytes it was programmed with; a partial program may have cleared
/// bits since (Flag Commit's commit flag). A protocol that decides on such a
/// flag asks here. Each read is a spare-area read on the device clock,
/// issued when the scan's last read finished (the protocol chose the pages
/// from what the scan found), in parallel across dies as the NAND allows;
/// recovery's time ends no earlier than the last of them. Counted in
/// `RecoveryReport::spare_rereads`.
pub struct LiveSpares<'a> {
    nand: &'a mut Nand,
    geo: Geometry,
    report: &'a mut RecoveryReport,
    outcome: &'a mut ScanOutcome,
    /// When the reads are issued: the scan's end (device clock).
    issue_ns: u64,
    oob: Vec<u8>,
}

impl LiveSpares<'_> {
    /// The OOB record `ppn`'s spare area holds now (flag bytes as partial
    /// programs left them), or `None` if it holds none intact (erased, torn,
    /// or unreadable after every read retry). A page beyond the array is a
    /// protocol's bug, refused (`DeviceError::CallOrder`) without a read.
    pub fn live_oob(&mut self, ppn: Ppn) -> Result<Option<Oob>> {
        if ppn >= self.geo.page_count() {
            return Err(DeviceError::CallOrder(format!(
                "live spare read of physical page {ppn}: the array has {} pages",
                self.geo.page_count()
            )));
        }
        let done = self.outcome.done_ns;
        let (o, d) = read_spare(
            self.nand,
            ppn,
            self.issue_ns,
            &mut self.oob,
            (&mut *self.outcome, &mut *self.report),
            done,
        )?;
        self.report.spare_rereads += 1;
        self.outcome.done_ns = done.max(d);
        debug_assert!(self.outcome.done_ns >= self.issue_ns, "a reread finished before it was issued");
        Ok(o)
    }
}
