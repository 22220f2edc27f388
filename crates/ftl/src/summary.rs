//! Per-block summary pages (TxFlash, Prabhakaran et al., OSDI 2008; LightTx
//! §IV-D: "page metadata in all pages of one block is stored in the last page
//! of the block (called the summary page)"), for a protocol that asks for
//! them (`PersistHooks::summary_pages`).
//!
//! A protocol without a mapping table on flash (SCC, BPCC) rebuilds every
//! mapping from the OOB records of every page in use: one read per page. With
//! summary pages, the last page of each data block (host and GC streams
//! alike) holds the OOB records of the block's other pages, so recovery reads
//! one page for a block full at the checkpoint. A block has `pages_per_block
//! - 1` data pages; the logical capacity a format derives leaves the summary
//! pages out (`shrink_logical_pages`).
//!
//! # When it is written
//!
//! The FTL keeps each open data block's records in DRAM as it programs the
//! block's pages ([`Pending`]); right after the block's last data page is
//! programmed it programs the summary page, on the same die: the die runs
//! them one after the other, so a summary on flash implies every page it
//! describes was programmed whole before it started. A block the FTL does
//! not fill this way (open at a mount, which closes it; retired after a
//! failed program; a failed summary program) has no summary, and recovery
//! reads it page by page.
//!
//! # Format
//!
//! The summary page's OOB is an ordinary record (`oob.rs`): kind 0x05, `lpn`
//! = the number of records, a fresh sequence number (larger than every page
//! it describes), the block's erase count, and the CRC-32 of the data area
//! (flag bit 0). The data area, integers little-endian:
//!
//! ```text
//!    0  [u8; 4]  magic "TXSM"
//!    4  u8       format version (1)
//!    5  u8       0
//!    6  u16      n: number of records (pages_per_block - 1)
//!    8  u32      block id
//!   12  u32      erase count of the block when the summary was written
//!   16  [u8; 44] zero
//!   60  u32      CRC-32 of bytes 0..60 followed by the n records
//!   64  n x 64   the OOB record (`oob.rs`, bytes 0..64, its own CRC
//!                included) of page 0, 1, ..., n-1 of the block, as programmed
//!  64+64n ..     0xFF to the end of the page
//! ```
//!
//! It takes 64 x pages_per_block bytes: a page of the `tiny`, `lighttx` and
//! `jasmine` presets exactly; a geometry whose page cannot hold it is refused
//! at format (`check_fits`).
//!
//! # When recovery trusts it
//!
//! Only for a block full at the checkpoint (its write pointer there is the
//! whole block): the summary page's OOB record is intact, of kind 0x05, with
//! a sequence number below the checkpoint's (a summary written after it
//! belongs to a block erased and reused since, after a fallback to an older
//! checkpoint), its data matches the OOB's data CRC, the header names this
//! block and `pages_per_block - 1` records, the header's CRC holds, and
//! every record decodes. Otherwise (an open block, a torn or missing
//! summary, a cut while writing it, a read ECC could not correct) recovery
//! reads the block page by page as without summaries.

use crate::config::Canary;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::oob::{Oob, OobState, PageKind, OOB_RECORD_SIZE};
use std::collections::BTreeMap;
use txftl_nand::{BlockId, Geometry, NandError};

const MAGIC: [u8; 4] = *b"TXSM";
const VERSION: u8 = 1;
/// Bytes before the first record.
const HEADER: usize = 64;
/// Where the header's CRC sits.
const CRC_AT: usize = 60;

/// Bytes a summary takes for this geometry.
fn summary_len(geo: &Geometry) -> usize {
    HEADER + (geo.pages_per_block as usize - 1) * OOB_RECORD_SIZE
}

/// Refuses a geometry whose page cannot hold a summary, or whose blocks
/// would have no data page left.
pub(crate) fn check_fits(geo: &Geometry) -> Result<()> {
    if geo.pages_per_block < 2 || summary_len(geo) > geo.page_size as usize {
        return Err(DeviceError::Config(format!(
            "summary pages need {} bytes a page ({} pages a block, 64 bytes each) and at least 2 pages a block; \
             this geometry has {}-byte pages",
            HEADER + (geo.pages_per_block as usize).saturating_sub(1) * OOB_RECORD_SIZE,
            geo.pages_per_block,
            geo.page_size
        )));
    }
    Ok(())
}

/// The logical capacity a format derived for whole blocks of data, with the
/// summary pages left out: the same share of the data pages stays spare.
pub(crate) fn shrink_logical_pages(logical_pages: u32, geo: &Geometry) -> u32 {
    let ppb = geo.pages_per_block as u64;
    (logical_pages as u64 * (ppb - 1) / ppb) as u32
}

/// The OOB records of the open data blocks' programmed pages, until their
/// summary is written. Lost with the DRAM: a mount closes every open block.
#[derive(Clone, Default)]
pub(crate) struct Pending {
    blocks: BTreeMap<BlockId, Vec<u8>>,
}

impl Pending {
    /// Page `page` of `block` was programmed with the OOB record `record`.
    /// A block whose records do not follow one another from page 0 (never
    /// expected) is forgotten: it gets no summary rather than a wrong one.
    fn note(&mut self, block: BlockId, page: u32, record: &[u8]) {
        let records = self.blocks.entry(block).or_default();
        if page == 0 {
            records.clear();
        }
        if records.len() != page as usize * OOB_RECORD_SIZE {
            debug_assert!(false, "summary records of block {block} skip to page {page}");
            self.blocks.remove(&block);
            return;
        }
        records.extend_from_slice(&record[..OOB_RECORD_SIZE]);
    }
}

/// The summary page's data area for `block` (format in the module doc).
fn encode(block: BlockId, erase_count: u32, records: &[u8], page_size: usize) -> Vec<u8> {
    let n = records.len() / OOB_RECORD_SIZE;
    let mut page = vec![0xFF; page_size];
    page[..HEADER].fill(0);
    page[0..4].copy_from_slice(&MAGIC);
    page[4] = VERSION;
    page[6..8].copy_from_slice(&(n as u16).to_le_bytes());
    page[8..12].copy_from_slice(&block.to_le_bytes());
    page[12..16].copy_from_slice(&erase_count.to_le_bytes());
    page[HEADER..HEADER + records.len()].copy_from_slice(records);
    let crc = summary_crc(&page, n);
    page[CRC_AT..HEADER].copy_from_slice(&crc.to_le_bytes());
    page
}

/// CRC-32 of the header's first 60 bytes and the `n` records.
fn summary_crc(page: &[u8], n: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&page[..CRC_AT]);
    h.update(&page[HEADER..HEADER + n * OOB_RECORD_SIZE]);
    h.finalize()
}

/// How recovery reads summaries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SummaryRead {
    /// The protocol asked for none: every block is read page by page.
    Off,
    /// Trusted only as the module doc says.
    Checked,
    /// The canary `Canary::TrustUncheckedSummary`: no CRC or sequence check.
    Unchecked,
}

impl SummaryRead {
    pub(crate) fn of(summary_pages: bool, canary: Option<Canary>) -> SummaryRead {
        match (summary_pages, canary) {
            (false, _) => SummaryRead::Off,
            (true, Some(Canary::TrustUncheckedSummary)) => SummaryRead::Unchecked,
            (true, _) => SummaryRead::Checked,
        }
    }
}

/// The records of `block`'s summary page, read as `data` and `oob`, if
/// recovery may trust them (`mode`; the module doc says when): page `i`'s
/// record at index `i`. `None`: read the block page by page.
pub(crate) fn decode(mode: SummaryRead, geo: &Geometry, block: BlockId, ckpt_seq: u64, data: &[u8], oob: &[u8]) -> Option<Vec<Oob>> {
    let checked = match mode {
        SummaryRead::Off => return None,
        SummaryRead::Checked => true,
        SummaryRead::Unchecked => false,
    };
    let n = geo.pages_per_block as usize - 1;
    if checked {
        let OobState::Valid(o) = Oob::decode(oob) else { return None };
        let intact = o.kind == PageKind::Summary && o.data_crc.is_some() && o.data_matches(data);
        if !intact || o.seq >= ckpt_seq || o.lpn as usize != n {
            return None;
        }
    }
    if data.len() < HEADER + n * OOB_RECORD_SIZE || data[0..4] != MAGIC || data[4] != VERSION {
        return None;
    }
    let count = u16::from_le_bytes([data[6], data[7]]) as usize;
    let named = u32::from_le_bytes(data[8..12].try_into().expect("4 bytes"));
    if count != n || named != block {
        return None;
    }
    if checked {
        let crc = u32::from_le_bytes(data[CRC_AT..HEADER].try_into().expect("4 bytes"));
        if summary_crc(data, n) != crc {
            return None;
        }
    }
    let mut records = Vec::with_capacity(n);
    for r in data[HEADER..HEADER + n * OOB_RECORD_SIZE].chunks_exact(OOB_RECORD_SIZE) {
        match Oob::decode(r) {
            OobState::Valid(o) => records.push(o),
            // The canary's bug: a record a torn summary lost is skipped.
            _ if !checked => {}
            _ => return None,
        }
    }
    Some(records)
}

impl<H: Hooks> Ftl<H> {
    /// Called after each program into a data block (`program_next`), with the
    /// page's OOB record still in `oob_buf`: keeps the record, and once the
    /// block's last data page is done, programs its summary page, issued at
    /// `at_ns` (the die runs it after that page).
    pub(crate) fn summary_after_program(&mut self, block: BlockId, page: u32, at_ns: u64) -> Result<()> {
        if !self.hooks.summary_pages() {
            return Ok(());
        }
        let record: [u8; OOB_RECORD_SIZE] = self.oob_buf[..OOB_RECORD_SIZE].try_into().expect("64 bytes");
        self.summary.note(block, page, &record);
        if page + 2 != self.geo.pages_per_block {
            return Ok(());
        }
        let Some(records) = self.summary.blocks.remove(&block) else {
            return Ok(());
        };
        if records.len() != (page as usize + 1) * OOB_RECORD_SIZE {
            return Ok(());
        }
        self.program_summary(block, &records, at_ns)
    }

    /// Programs `block`'s summary page (its last page) and closes the block.
    /// A program that fails its status retires the block like a failed data
    /// program; its data pages are read page by page at recovery.
    fn program_summary(&mut self, block: BlockId, records: &[u8], at_ns: u64) -> Result<()> {
        let b = block as usize;
        let page = self.geo.pages_per_block - 1;
        debug_assert_eq!(self.blocks.write_ptr[b], page, "summary of block {block} out of place");
        let ppn = self.geo.ppn(block, page);
        let erase_count = self.blocks.erase_count[b];
        let data = encode(block, erase_count, records, self.geo.page_size as usize);
        let seq = self.seq;
        self.seq += 1;
        let oob = Oob::new(PageKind::Summary, (records.len() / OOB_RECORD_SIZE) as u32, seq, erase_count, &data);
        oob.encode(&mut self.oob_buf);
        match self.nand.program(ppn, at_ns, &data, &self.oob_buf) {
            Ok(_) => {}
            Err(NandError::ProgramFailed { done_ns, .. }) => {
                self.now_ns = self.now_ns.max(done_ns);
                self.start_retiring(block);
                return Ok(());
            }
            Err(NandError::BadBlock(_)) => {
                self.start_retiring(block);
                return Ok(());
            }
            Err(e) => return Err(self.fail(e)),
        }
        self.counters.summary_pages_written += 1;
        self.blocks.write_ptr[b] = page + 1;
        self.blocks.last_seq[b] = seq;
        self.blocks.set_full(block);
        self.close_stream_slot(block);
        self.programs_since_ckpt += 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Geometry {
        txftl_nand::preset("tiny").unwrap().geometry
    }

    fn records(geo: &Geometry, block: BlockId) -> Vec<u8> {
        let mut out = Vec::new();
        for page in 0..geo.pages_per_block - 1 {
            let mut o = Oob::new(PageKind::Data, 100 + page, 10 + page as u64, 3, &[]);
            o.protocol[0] = block as u8;
            let mut r = vec![0u8; OOB_RECORD_SIZE];
            o.encode(&mut r);
            out.extend_from_slice(&r);
        }
        out
    }

    fn summary_oob(data: &[u8], n: u32, seq: u64) -> Vec<u8> {
        let mut oob = vec![0u8; 64];
        Oob::new(PageKind::Summary, n, seq, 3, data).encode(&mut oob);
        oob
    }

    #[test]
    fn a_summary_reads_back_as_its_records_and_fills_a_tiny_page() {
        let geo = tiny();
        check_fits(&geo).unwrap();
        let recs = records(&geo, 9);
        let data = encode(9, 3, &recs, geo.page_size as usize);
        assert_eq!(summary_len(&geo), geo.page_size as usize, "tiny pages hold a summary exactly");
        let oob = summary_oob(&data, 7, 50);
        let got = decode(SummaryRead::Checked, &geo, 9, 51, &data, &oob).expect("trusted");
        assert_eq!(got.len(), 7);
        assert_eq!((got[6].lpn, got[6].seq, got[6].protocol[0]), (106, 16, 9));
    }

    #[test]
    fn a_summary_is_refused_when_torn_misplaced_or_newer_than_the_checkpoint() {
        let geo = tiny();
        let data = encode(9, 3, &records(&geo, 9), geo.page_size as usize);
        let oob = summary_oob(&data, 7, 50);
        let read = |data: &[u8], oob: &[u8], block, ckpt| decode(SummaryRead::Checked, &geo, block, ckpt, data, oob);
        assert!(read(&data, &oob, 8, 51).is_none(), "another block's summary");
        assert!(read(&data, &oob, 9, 50).is_none(), "written after the checkpoint");
        // A torn program: a prefix programmed, the rest erased.
        let mut torn = data.clone();
        torn[300..].fill(0xFF);
        assert!(read(&torn, &oob, 9, 51).is_none(), "data fails the OOB's CRC");
        let torn_oob = summary_oob(&torn, 7, 50);
        assert!(read(&torn, &torn_oob, 9, 51).is_none(), "the header's CRC fails");
        // The canary believes the torn one, minus the records it lost.
        let believed = decode(SummaryRead::Unchecked, &geo, 9, 51, &torn, &oob).expect("canary trusts it");
        assert!(believed.len() < 7);
        assert!(decode(SummaryRead::Off, &geo, 9, 51, &data, &oob).is_none());
    }

    #[test]
    fn geometries_whose_page_cannot_hold_a_summary_are_refused() {
        let mut geo = tiny();
        geo.page_size = 256;
        assert!(matches!(check_fits(&geo), Err(DeviceError::Config(_))));
        assert_eq!(shrink_logical_pages(800, &tiny()), 700);
    }
}
