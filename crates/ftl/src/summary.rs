//! Per-block summary pages (TxFlash, Prabhakaran et al., OSDI 2008; LightTx
//! §IV-D: "page metadata in all pages of one block is stored in the last page
//! of the block (called the summary page)"), for a protocol that asks for
//! them (`PersistHooks::summary_pages`).
//!
//! A protocol without a mapping table on flash (SCC, BPCC) rebuilds every
//! mapping from the OOB records of every page in use: one read per page. With
//! summary pages, the last page of each data block (host and GC streams
//! alike) holds the OOB records of the block's other pages, in a compact
//! form (below), so recovery reads one page for a block full at the
//! checkpoint, plus the spare area of any page whose record the compact form
//! cannot hold. A block has `pages_per_block
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
//! # Format (version 2)
//!
//! The summary page's OOB is an ordinary record (`oob.rs`): kind 0x05, `lpn`
//! = the number of records, a fresh sequence number (larger than every page
//! it describes), the block's erase count, and the CRC-32 of the data area
//! (flag bit 0). The data area, integers little-endian:
//!
//! ```text
//!    0  [u8; 4]  magic "TXSM"
//!    4  u8       format version (2)
//!    5  u8       W: protocol bytes a record holds (the protocol's
//!                `PersistHooks::packed_protocol_bytes`, at most 32)
//!    6  u8       F: flag bytes a record holds (`PersistHooks::flag_bytes`,
//!                at most 4)
//!    7  u8       0
//!    8  u16      n: number of records (pages_per_block - 1)
//!   10  u16      0
//!   12  u32      block id
//!   16  u32      erase count of the block when the summary was written
//!   20  u64      base: the smallest sequence number of a compact record
//!   28  u32      CRC-32 of bytes 0..28 followed by the n records
//!   32  n x R    the record of page 0, 1, ..., n-1 of the block, R = 13+W+F
//!  32+nR ..      0xFF to the end of the page
//! ```
//!
//! A record is the page's OOB record as programmed, compacted (fields as in
//! `oob.rs`):
//!
//! ```text
//!    0  u8       flags: bit 0 = the data CRC is stored, bit 1 = lost,
//!                bit 2 = relocated (the OOB record's flag bits 0..2);
//!                bits 3..6 zero; bit 7 = "read its spare": the page's record
//!                has no compact form, every other byte of this record is 0
//!    1  u32      lpn
//!    5  u32      sequence number minus the header's base
//!    9  u32      CRC-32 of the data area (0 unless flag bit 0)
//!   13  [u8; W]  protocol bytes 0..W (bytes W..32 were 0)
//! 13+W  [u8; F]  flag bytes 0..F as programmed (bytes F..4 were 0xFF)
//! ```
//!
//! The rest of the OOB record is implied: kind data (0x01), the header's
//! erase count. A record has a compact form only if decoding it gives back
//! exactly what `Oob::decode` gives for the page's spare area as programmed:
//! a data page, of the block's erase count, whose sequence number is within
//! `u32::MAX` above the base, with no protocol byte set past W and every flag
//! byte past F still 0xFF. Any other page (or a record that does not decode,
//! never expected) is marked "read its spare": recovery reads that page's
//! spare area, on the device clock, instead.
//!
//! The flag bytes are those the page was programmed with: a partial program
//! may have cleared bits since (`Ftl::program_flags`), which the summary does
//! not see. A protocol that decides on a flag of a page read from a summary
//! (`ScannedPage::from_summary`) asks the page's live spare area
//! (`LiveSpares::live_oob`).
//!
//! The records are compact so that a summary fits Flag Commit's geometry:
//! 2 KiB pages of 64-page SLC blocks hold 32 + 63 x R bytes for W + F up to
//! 19 (the whole 64-byte records took 4,096). `check_fits` refuses, at
//! format, a geometry whose page cannot hold a summary, and says the largest
//! W + F it could.
//!
//! # When recovery trusts it
//!
//! For a block full at the checkpoint (its write pointer there is the whole
//! block; the zone scan, `scan.rs`): the summary page's OOB record is intact,
//! of kind 0x05, with a sequence number below the checkpoint's (a summary
//! written after it belongs to a block erased and reused since, after a
//! fallback to an older checkpoint). For a block free or open at the
//! checkpoint (the roll-forward scan, `recovery/roll_forward.rs`, which
//! reads the block's first page written since, then its summary page): a
//! sequence number above the checkpoint's, and no fallback (after one, a
//! block may have been erased and reused more than once since the
//! checkpoint recovery loaded). In both, its data matches the OOB's data CRC, the header names version
//! 2, this block and `pages_per_block - 1` records of widths that fit the
//! page, the header's CRC holds, and every record is well formed (no unknown
//! flag bit, no data CRC without its flag, a "read its spare" record all
//! zero, a sequence number that does not overflow). Otherwise (an open block,
//! a torn or missing summary, a cut while writing it, a read ECC could not
//! correct) recovery reads the block page by page as without summaries.

use crate::config::Canary;
use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::{Hooks, PersistHooks};
use crate::oob::{Oob, OobState, PageKind, FLAG_BYTES, OOB_RECORD_SIZE, PROTOCOL_BYTES};
use std::collections::BTreeMap;
use txftl_nand::{BlockId, Geometry, NandError};

const MAGIC: [u8; 4] = *b"TXSM";
const VERSION: u8 = 2;
/// Bytes before the first record.
const HEADER: usize = 32;
/// Where the header's CRC sits.
const CRC_AT: usize = 28;
/// Bytes of a record before its protocol bytes: flags, lpn, sequence
/// number delta, data CRC.
const RECORD_FIXED: usize = 13;
/// A record's flag bits (byte 0).
const REC_DATA_CRC: u8 = 1;
const REC_LOST: u8 = 2;
const REC_RELOCATED: u8 = 4;
const REC_READ_SPARE: u8 = 0x80;

/// How many protocol bytes (W) and flag bytes (F) each record holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Widths {
    pub protocol: usize,
    pub flags: usize,
}

impl Widths {
    /// The protocol's widths, bounded as the spare codec bounds them
    /// (`oob::spare_codec`): a wider answer than the record has is the record.
    pub(crate) fn of(hooks: &impl PersistHooks) -> Widths {
        Widths {
            protocol: hooks.packed_protocol_bytes().min(PROTOCOL_BYTES),
            flags: hooks.flag_bytes().min(FLAG_BYTES),
        }
    }

    /// Bytes of one record.
    fn record_len(self) -> usize {
        RECORD_FIXED + self.protocol + self.flags
    }
}

/// Bytes a summary takes for this geometry and these widths.
fn summary_len(geo: &Geometry, w: Widths) -> usize {
    HEADER + (geo.pages_per_block as usize).saturating_sub(1) * w.record_len()
}

/// The largest W + F whose summary fits a page of `geo` (`None`: not even
/// records of no protocol or flag byte do).
pub(crate) fn widths_max(geo: &Geometry) -> Option<usize> {
    let n = (geo.pages_per_block as usize).checked_sub(1).filter(|&n| n > 0)?;
    ((geo.page_size as usize).saturating_sub(HEADER) / n).checked_sub(RECORD_FIXED)
}

/// Refuses a geometry whose page cannot hold a summary of records `w` wide,
/// or whose blocks would have no data page left (or more than the header's
/// u16 counts).
pub(crate) fn check_fits(geo: &Geometry, w: Widths) -> Result<()> {
    let n = (geo.pages_per_block as usize).saturating_sub(1);
    if n == 0 || n > u16::MAX as usize {
        return Err(DeviceError::Config(format!(
            "summary pages need 2 to 65,536 pages a block; this geometry has {}",
            geo.pages_per_block
        )));
    }
    if summary_len(geo, w) > geo.page_size as usize {
        let room = match widths_max(geo) {
            Some(m) => format!("at most {m} protocol and flag bytes a record (W + F)"),
            None => "no record at all".to_string(),
        };
        return Err(DeviceError::Config(format!(
            "summary pages need {} bytes a page here: a {HEADER}-byte header and {n} records of {} bytes \
             ({RECORD_FIXED} + {} protocol bytes + {} flag bytes); the geometry's {}-byte pages hold {room}",
            summary_len(geo, w),
            w.record_len(),
            w.protocol,
            w.flags,
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
/// Kept whole (64 bytes a page): the base sequence number of the compact
/// form is known only once the block is full.
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

/// Little-endian integers of a record read from flash, by position (the
/// callers checked the lengths).
fn le_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

fn le_u64(b: &[u8], at: usize) -> u64 {
    le_u32(b, at) as u64 | (le_u32(b, at + 4) as u64) << 32
}

/// Could `o` take the compact form, ignoring its sequence number? (The base
/// is the smallest sequence number of these.)
fn compactable(o: &Oob, erase_count: u32, w: Widths) -> bool {
    o.kind == PageKind::Data
        && o.erase_count == erase_count
        && o.protocol[w.protocol..].iter().all(|&b| b == 0)
        && o.flag_bytes[w.flags..].iter().all(|&b| b == 0xFF)
}

/// Writes `o`'s compact record into `r` (R bytes), or the "read its spare"
/// record when it has no compact form (the module doc).
fn encode_record(o: Option<&Oob>, erase_count: u32, base: u64, w: Widths, r: &mut [u8]) {
    debug_assert_eq!(r.len(), w.record_len());
    r.fill(0);
    let delta = o.filter(|o| compactable(o, erase_count, w)).and_then(|o| {
        let d = o.seq.checked_sub(base)?;
        u32::try_from(d).ok().map(|d| (o, d))
    });
    let Some((o, delta)) = delta else {
        r[0] = REC_READ_SPARE;
        return;
    };
    r[0] = if o.data_crc.is_some() { REC_DATA_CRC } else { 0 }
        | if o.lost { REC_LOST } else { 0 }
        | if o.relocated { REC_RELOCATED } else { 0 };
    r[1..5].copy_from_slice(&o.lpn.to_le_bytes());
    r[5..9].copy_from_slice(&delta.to_le_bytes());
    r[9..13].copy_from_slice(&o.data_crc.unwrap_or(0).to_le_bytes());
    let p = RECORD_FIXED + w.protocol;
    r[RECORD_FIXED..p].copy_from_slice(&o.protocol[..w.protocol]);
    r[p..p + w.flags].copy_from_slice(&o.flag_bytes[..w.flags]);
}

/// The summary page's data area for `block` (format in the module doc), from
/// the OOB records of its data pages as programmed (`records`, 64 bytes
/// each); `None` if it does not fit a page (`check_fits` refused such a
/// geometry at format).
fn encode(block: BlockId, erase_count: u32, records: &[u8], w: Widths, page_size: usize) -> Option<Vec<u8>> {
    let n = records.len() / OOB_RECORD_SIZE;
    let rlen = w.record_len();
    if HEADER + n * rlen > page_size || n > u16::MAX as usize || !records.len().is_multiple_of(OOB_RECORD_SIZE) {
        return None;
    }
    let oobs: Vec<Option<Oob>> = records
        .chunks_exact(OOB_RECORD_SIZE)
        .map(|r| match Oob::decode(r) {
            OobState::Valid(o) => Some(o),
            _ => None,
        })
        .collect();
    let base = oobs
        .iter()
        .flatten()
        .filter(|o| compactable(o, erase_count, w))
        .map(|o| o.seq)
        .min()
        .unwrap_or(0);
    let mut page = vec![0xFF; page_size];
    page[..HEADER].fill(0);
    page[0..4].copy_from_slice(&MAGIC);
    page[4] = VERSION;
    page[5] = w.protocol as u8;
    page[6] = w.flags as u8;
    page[8..10].copy_from_slice(&(n as u16).to_le_bytes());
    page[12..16].copy_from_slice(&block.to_le_bytes());
    page[16..20].copy_from_slice(&erase_count.to_le_bytes());
    page[20..28].copy_from_slice(&base.to_le_bytes());
    for (o, r) in oobs.iter().zip(page[HEADER..HEADER + n * rlen].chunks_exact_mut(rlen)) {
        encode_record(o.as_ref(), erase_count, base, w, r);
    }
    let crc = summary_crc(&page, n * rlen);
    page[CRC_AT..HEADER].copy_from_slice(&crc.to_le_bytes());
    Some(page)
}

/// CRC-32 of the header's first 28 bytes and the `records_len` bytes of records.
fn summary_crc(page: &[u8], records_len: usize) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&page[..CRC_AT]);
    h.update(&page[HEADER..HEADER + records_len]);
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

/// A summary's header, read from flash and checked for shape (not yet for
/// its CRC).
struct Header {
    widths: Widths,
    erase_count: u32,
    base: u64,
}

impl Header {
    /// The header of `data` if it is a version-2 summary of `block` with `n`
    /// records of widths the record allows, all within `data`.
    fn parse(data: &[u8], block: BlockId, n: usize) -> Option<Header> {
        if data.len() < HEADER || data[0..4] != MAGIC || data[4] != VERSION || data[7] != 0 || data[10..12] != [0, 0] {
            return None;
        }
        let widths = Widths {
            protocol: data[5] as usize,
            flags: data[6] as usize,
        };
        let count = u16::from_le_bytes([data[8], data[9]]) as usize;
        let fits = widths.protocol <= PROTOCOL_BYTES && widths.flags <= FLAG_BYTES && HEADER + n * widths.record_len() <= data.len();
        if !fits || count != n || le_u32(data, 12) != block {
            return None;
        }
        Some(Header {
            widths,
            erase_count: le_u32(data, 16),
            base: le_u64(data, 20),
        })
    }

    /// Record `r` read back: `Some(Some(oob))`, the page's OOB record as
    /// programmed; `Some(None)`, "read its spare"; `None`, a record no
    /// writer of this format makes (the summary is not to be trusted).
    fn record(&self, r: &[u8]) -> Option<Option<Oob>> {
        let w = self.widths;
        let flags = r[0];
        if flags == REC_READ_SPARE {
            return r[1..].iter().all(|&b| b == 0).then_some(None);
        }
        let data_crc = le_u32(r, 9);
        if flags & !(REC_DATA_CRC | REC_LOST | REC_RELOCATED) != 0 || (flags & REC_DATA_CRC == 0 && data_crc != 0) {
            return None;
        }
        let seq = self.base.checked_add(le_u32(r, 5) as u64)?;
        let mut protocol = [0u8; PROTOCOL_BYTES];
        let p = RECORD_FIXED + w.protocol;
        protocol[..w.protocol].copy_from_slice(&r[RECORD_FIXED..p]);
        let mut flag_bytes = [0xFF; FLAG_BYTES];
        flag_bytes[..w.flags].copy_from_slice(&r[p..p + w.flags]);
        Some(Some(Oob {
            kind: PageKind::Data,
            lpn: le_u32(r, 1),
            seq,
            erase_count: self.erase_count,
            data_crc: (flags & REC_DATA_CRC != 0).then_some(data_crc),
            lost: flags & REC_LOST != 0,
            relocated: flags & REC_RELOCATED != 0,
            protocol,
            flag_bytes,
        }))
    }
}

/// When a summary recovery trusts was written, against the sequence number
/// of the checkpoint recovery loaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Written {
    /// Before it: a block full at the checkpoint (the zone scan).
    Before(u64),
    /// After it: a block free or open at the checkpoint that the
    /// roll-forward scan finds full (no fallback to an older checkpoint).
    After(u64),
}

/// The records of `block`'s summary page, read as `data` and `oob`, if
/// recovery may trust them (`mode`; the module doc says when) as a summary
/// written before checkpoint `ckpt_seq`: page `i`'s at index `i`, `None` for
/// a page whose spare area must be read instead. `None` as a whole: read the
/// block page by page.
pub(crate) fn decode(
    mode: SummaryRead,
    geo: &Geometry,
    block: BlockId,
    ckpt_seq: u64,
    data: &[u8],
    oob: &[u8],
) -> Option<Vec<Option<Oob>>> {
    decode_written(mode, geo, block, Written::Before(ckpt_seq), data, oob)
}

/// [`decode`] of a summary written as `written` says.
pub(crate) fn decode_written(
    mode: SummaryRead,
    geo: &Geometry,
    block: BlockId,
    written: Written,
    data: &[u8],
    oob: &[u8],
) -> Option<Vec<Option<Oob>>> {
    let checked = match mode {
        SummaryRead::Off => return None,
        SummaryRead::Checked => true,
        SummaryRead::Unchecked => false,
    };
    let n = (geo.pages_per_block as usize).checked_sub(1)?;
    if checked {
        let OobState::Valid(o) = Oob::decode(oob) else { return None };
        let intact = o.kind == PageKind::Summary && o.data_crc.is_some() && o.data_matches(data);
        let when = match written {
            Written::Before(ckpt_seq) => o.seq < ckpt_seq,
            Written::After(ckpt_seq) => o.seq > ckpt_seq,
        };
        if !intact || !when || o.lpn as usize != n {
            return None;
        }
    }
    let header = Header::parse(data, block, n)?;
    let rlen = header.widths.record_len();
    if checked && summary_crc(data, n * rlen) != le_u32(data, CRC_AT) {
        return None;
    }
    let mut records = Vec::with_capacity(n);
    for r in data[HEADER..HEADER + n * rlen].chunks_exact(rlen) {
        match header.record(r) {
            Some(record) => records.push(record),
            // The canary's bug: the records from the first one a torn
            // summary lost on are forgotten, their pages never visited.
            None if !checked => break,
            None => return None,
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
        let widths = Widths::of(&self.hooks);
        let Some(data) = encode(block, erase_count, records, widths, self.geo.page_size as usize) else {
            // `check_fits` refused this at format; a protocol whose widths
            // grew since gets no summary (its last page takes data, and
            // recovery reads the block page by page) rather than a wrong one.
            debug_assert!(false, "the summary of block {block} does not fit a page ({widths:?})");
            return Ok(());
        };
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
    use rand::{Rng, SeedableRng};

    fn tiny() -> Geometry {
        txftl_nand::preset("tiny").unwrap().geometry
    }

    fn flagcommit() -> Geometry {
        txftl_nand::preset("flagcommit").unwrap().geometry
    }

    /// SCC's widths: 24 protocol bytes, no flag byte.
    const SCC: Widths = Widths { protocol: 24, flags: 0 };

    fn raw(o: &Oob) -> Vec<u8> {
        let mut r = vec![0u8; OOB_RECORD_SIZE];
        o.encode(&mut r);
        r
    }

    fn records(geo: &Geometry, block: BlockId) -> Vec<u8> {
        let mut out = Vec::new();
        for page in 0..geo.pages_per_block - 1 {
            let mut o = Oob::new(PageKind::Data, 100 + page, 10 + page as u64, 3, &[]);
            o.protocol[0] = block as u8;
            o.protocol[23] = page as u8;
            out.extend_from_slice(&raw(&o));
        }
        out
    }

    fn summary_oob(data: &[u8], n: u32, seq: u64) -> Vec<u8> {
        let mut oob = vec![0u8; 64];
        Oob::new(PageKind::Summary, n, seq, 3, data).encode(&mut oob);
        oob
    }

    #[test]
    fn a_summary_reads_back_as_its_records() {
        let geo = tiny();
        check_fits(&geo, SCC).unwrap();
        let recs = records(&geo, 9);
        let data = encode(9, 3, &recs, SCC, geo.page_size as usize).unwrap();
        assert_eq!(summary_len(&geo, SCC), 32 + 7 * 37);
        assert!(
            data[summary_len(&geo, SCC)..].iter().all(|&b| b == 0xFF),
            "the rest of the page is erased"
        );
        let oob = summary_oob(&data, 7, 50);
        let got = decode(SummaryRead::Checked, &geo, 9, 51, &data, &oob).expect("trusted");
        assert_eq!(got.len(), 7);
        for (page, (g, r)) in got.iter().zip(recs.chunks_exact(OOB_RECORD_SIZE)).enumerate() {
            assert_eq!(OobState::Valid(g.expect("every record is compact")), Oob::decode(r), "page {page}");
        }
    }

    /// One random OOB record a page of a block of erase count `ec` may
    /// carry, as programmed, and whether the compact form can hold it; its
    /// sequence number is at least `base`, within `u32::MAX` of it when
    /// `fits`.
    fn random_record(rng: &mut impl Rng, w: Widths, ec: u32, base: u64, fits_wanted: bool) -> (Vec<u8>, bool) {
        let mut o = Oob::new(PageKind::Data, rng.gen(), base + rng.gen::<u32>() as u64, ec, &[]);
        o.data_crc = rng.gen_bool(0.5).then(|| rng.gen());
        o.lost = rng.gen_bool(0.2);
        o.relocated = rng.gen_bool(0.3);
        rng.fill(&mut o.protocol[..w.protocol]);
        rng.fill(&mut o.flag_bytes[..w.flags]);
        let mut fits = true;
        if !fits_wanted {
            fits = false;
            match rng.gen_range(0..5) {
                0 => o.kind = [PageKind::Checkpoint, PageKind::Map, PageKind::Protocol, PageKind::Summary][rng.gen_range(0..4)],
                1 => o.erase_count = ec.wrapping_add(rng.gen_range(1..5)),
                2 => o.seq = base + u32::MAX as u64 + 1 + rng.gen_range(0..1000),
                3 if w.protocol < PROTOCOL_BYTES => o.protocol[rng.gen_range(w.protocol..PROTOCOL_BYTES)] = rng.gen_range(1..=255),
                4 if w.flags < FLAG_BYTES => o.flag_bytes[rng.gen_range(w.flags..FLAG_BYTES)] = rng.gen_range(0..0xFF),
                _ => fits = true,
            }
        }
        let mut r = raw(&o);
        if rng.gen_bool(0.1) {
            // Flag bits `Oob::decode` ignores (and the compact form drops).
            r[3] |= 0x40;
            let crc = crc32fast::hash(&r[..56]);
            r[60..64].copy_from_slice(&crc.to_le_bytes());
        }
        (r, fits)
    }

    /// The test the format stands on: for many random records, a summary's
    /// record decodes to exactly what `Oob::decode` gives for the record as
    /// programmed, and is "read its spare" exactly when the compact form
    /// cannot hold it.
    #[test]
    fn a_compact_record_decodes_to_what_the_spare_decodes_to() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let geo = flagcommit();
        let (mut compact, mut spare) = (0, 0);
        for round in 0..300 {
            let w = Widths {
                protocol: rng.gen_range(0..=15),
                flags: rng.gen_range(0..=FLAG_BYTES),
            };
            let ec = rng.gen();
            let base = rng.gen_range(0..u64::MAX / 2);
            let mut recs = Vec::new();
            let mut fits = Vec::new();
            for page in 0..geo.pages_per_block - 1 {
                let fits_wanted = page == 0 || rng.gen_bool(0.8);
                let (mut r, f) = random_record(&mut rng, w, ec, base, fits_wanted);
                if page == 0 {
                    // The smallest sequence number: the header's base.
                    r[8..16].copy_from_slice(&base.to_le_bytes());
                    let crc = crc32fast::hash(&r[..56]);
                    r[60..64].copy_from_slice(&crc.to_le_bytes());
                }
                recs.extend_from_slice(&r);
                fits.push(f);
            }
            let data = encode(4, ec, &recs, w, geo.page_size as usize).expect("fits a 2 KiB page");
            let oob = summary_oob(&data, geo.pages_per_block - 1, u64::MAX - 1);
            let got = decode(SummaryRead::Checked, &geo, 4, u64::MAX, &data, &oob).expect("trusted");
            assert_eq!(got.len(), fits.len());
            for (page, ((g, r), f)) in got.iter().zip(recs.chunks_exact(OOB_RECORD_SIZE)).zip(&fits).enumerate() {
                let OobState::Valid(want) = Oob::decode(r) else {
                    panic!("a valid record")
                };
                match g {
                    Some(g) => {
                        assert!(*f, "round {round} page {page}: {want:?} has no compact form");
                        assert_eq!(*g, want, "round {round} page {page} ({w:?})");
                        compact += 1;
                    }
                    None => {
                        assert!(!*f, "round {round} page {page}: {want:?} fits ({w:?})");
                        spare += 1;
                    }
                }
            }
        }
        assert!(
            compact > 3 * spare && spare > 1000,
            "{compact} compact, {spare} read from the spare"
        );
    }

    #[test]
    fn a_summary_is_refused_when_torn_misplaced_or_newer_than_the_checkpoint() {
        let geo = tiny();
        let data = encode(9, 3, &records(&geo, 9), SCC, geo.page_size as usize).unwrap();
        let oob = summary_oob(&data, 7, 50);
        let read = |data: &[u8], oob: &[u8], block, ckpt| decode(SummaryRead::Checked, &geo, block, ckpt, data, oob);
        assert!(read(&data, &oob, 9, 51).is_some());
        assert!(read(&data, &oob, 8, 51).is_none(), "another block's summary");
        assert!(read(&data, &oob, 9, 50).is_none(), "written after the checkpoint");
        // A torn program: a prefix programmed, the rest erased (record 3 of
        // 7 is cut in its sequence number, its data CRC left 0xFF).
        let mut torn = data.clone();
        torn[150..].fill(0xFF);
        assert!(read(&torn, &oob, 9, 51).is_none(), "data fails the OOB's CRC");
        let torn_oob = summary_oob(&torn, 7, 50);
        assert!(read(&torn, &torn_oob, 9, 51).is_none(), "the header's CRC fails");
        // Any byte of the header or the records flipped: refused.
        for at in 0..summary_len(&geo, SCC) {
            let mut bad = data.clone();
            bad[at] ^= 0x10;
            assert!(read(&bad, &oob, 9, 51).is_none(), "byte {at} flipped under the OOB's CRC");
            assert!(
                read(&bad, &summary_oob(&bad, 7, 50), 9, 51).is_none(),
                "byte {at} flipped under the header's CRC"
            );
        }
        // The canary believes the torn one, minus the records from the first
        // that does not parse (record 3: a data CRC without its flag) on.
        let believed = decode(SummaryRead::Unchecked, &geo, 9, 51, &torn, &oob).expect("canary trusts it");
        assert_eq!(believed.len(), 3);
        assert!(decode(SummaryRead::Off, &geo, 9, 51, &data, &oob).is_none());
        assert!(read(&data[..200], &oob, 9, 51).is_none(), "a short buffer");
    }

    /// A summary whose CRCs hold but whose records no writer makes (a bug,
    /// or another format) is refused, not trusted.
    #[test]
    fn a_malformed_record_is_refused_under_valid_crcs() {
        let geo = tiny();
        let data = encode(9, 3, &records(&geo, 9), SCC, geo.page_size as usize).unwrap();
        let rlen = SCC.record_len();
        let reseal = |mut d: Vec<u8>| {
            let crc = summary_crc(&d, 7 * rlen);
            d[CRC_AT..HEADER].copy_from_slice(&crc.to_le_bytes());
            let oob = summary_oob(&d, 7, 50);
            decode(SummaryRead::Checked, &geo, 9, 51, &d, &oob)
        };
        assert!(reseal(data.clone()).is_some());
        let at = HEADER + 2 * rlen;
        let mut cases: Vec<(&str, Vec<u8>)> = Vec::new();
        let mut d = data.clone();
        d[at] |= 0x08;
        cases.push(("an unknown flag bit", d));
        let mut d = data.clone();
        d[at] = 0;
        d[at + 9] = 1;
        cases.push(("a data CRC without its flag", d));
        let mut d = data.clone();
        d[at] = REC_READ_SPARE;
        cases.push(("a read-its-spare record with fields", d));
        let mut d = data.clone();
        d[20..28].copy_from_slice(&(u64::MAX - 3).to_le_bytes());
        cases.push(("a sequence number past u64", d));
        let mut d = data.clone();
        d[5] = 33;
        cases.push(("more protocol bytes than a record has", d));
        let mut d = data.clone();
        d[5] = 32;
        d[6] = 4;
        cases.push(("records past the page", d));
        let mut d = data.clone();
        d[4] = 1;
        cases.push(("format version 1", d));
        for (what, d) in cases {
            assert!(reseal(d).is_none(), "{what}");
        }
        // A well-formed "read its spare" record: that page's entry is None.
        let mut d = data.clone();
        d[at..at + rlen].fill(0);
        d[at] = REC_READ_SPARE;
        let got = reseal(d).expect("well formed");
        assert!(got[2].is_none() && got[1].is_some() && got[3].is_some());
    }

    /// Flag Commit's geometry: 2 KiB pages of 64-page SLC blocks hold a
    /// summary of records up to W + F = 19 bytes; wider ones are refused,
    /// naming that figure.
    #[test]
    fn check_fits_takes_flag_commits_geometry_up_to_its_widest_records() {
        let geo = flagcommit();
        assert_eq!((geo.page_size, geo.pages_per_block), (2048, 64));
        assert_eq!(widths_max(&geo), Some(19));
        check_fits(&geo, Widths { protocol: 15, flags: 4 }).unwrap();
        check_fits(&geo, Widths { protocol: 12, flags: 2 }).unwrap();
        let refused = check_fits(&geo, Widths { protocol: 16, flags: 4 });
        let Err(DeviceError::Config(msg)) = refused else {
            panic!("W + F = 20 fits: {refused:?}")
        };
        assert!(msg.contains("at most 19 protocol and flag bytes"), "{msg}");
        assert!(
            matches!(check_fits(&geo, SCC), Err(DeviceError::Config(_))),
            "SCC's 24 bytes do not fit"
        );
        // The widest record (32 + 4) fits the other presets' pages.
        let widest = Widths { protocol: 32, flags: 4 };
        for name in ["tiny", "lighttx", "jasmine"] {
            check_fits(&txftl_nand::preset(name).unwrap().geometry, widest).unwrap();
        }
        let mut small = tiny();
        small.page_size = 64;
        assert_eq!(widths_max(&small), None);
        assert!(matches!(
            check_fits(&small, Widths { protocol: 0, flags: 0 }),
            Err(DeviceError::Config(_))
        ));
        small.page_size = 512;
        small.pages_per_block = 1;
        assert!(matches!(
            check_fits(&small, Widths { protocol: 0, flags: 0 }),
            Err(DeviceError::Config(_))
        ));
        assert_eq!(shrink_logical_pages(800, &tiny()), 700);
    }
}

/// A device on Flag Commit's geometry, recovered from its summary pages.
#[cfg(test)]
mod device_tests {
    use crate::config::FtlConfig;
    use crate::device::Device;
    use crate::ftl::FlagProgram;
    use crate::oob::{Oob, FLAG_BYTES, PROTOCOL_BYTES};
    use crate::test_hooks::Summarized;
    use crate::Ftl;
    use std::collections::BTreeMap;
    use txftl_nand::{CellType, DataMode, Nand, ViolationPolicy};

    fn page(lpn: u32) -> Vec<u8> {
        vec![(lpn % 251) as u8 + 1; 2048]
    }

    /// 2 KiB x 64-page SLC blocks with summary pages: recovery reads one
    /// summary page for each block full at the checkpoint (and the spare
    /// area of each page whose record has no compact form), not every page;
    /// every page comes back; a flag cleared after its page's program reads
    /// as programmed from the summary and as cleared from the live spare.
    #[test]
    fn a_2k_by_64_slc_device_recovers_from_one_summary_a_full_block() {
        let mut p = txftl_nand::preset("flagcommit").unwrap();
        p.geometry.channels = 2;
        p.geometry.blocks_per_plane = 16;
        let geo = p.geometry;
        assert_eq!((geo.page_size, geo.pages_per_block, geo.cell), (2048, 64, CellType::Slc));
        let blocks = geo.block_count();
        let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let hooks = Summarized {
            blocks,
            ..Default::default()
        };
        let mut f = Ftl::format(nand, FtlConfig::default(), hooks).unwrap();
        let n = 400u32;
        assert!(f.logical_pages() > n + 10, "{} logical pages", f.logical_pages());
        // Every 10th page carries a protocol byte past the summary's 8: its
        // record has no compact form, and recovery reads its spare area.
        let mut wide = [0u8; PROTOCOL_BYTES];
        wide[20] = 7;
        let is_wide = |lpn: u32| lpn % 10 == 3;
        for lpn in 0..n {
            if is_wide(lpn) {
                f.write_page_with(lpn, &page(lpn), &wide).unwrap();
            } else {
                f.write(lpn, &page(lpn)).unwrap();
            }
        }
        // The blocks full now are those with a summary (no GC ran: nothing
        // was overwritten).
        let mut per_block: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for lpn in 0..n {
            per_block.entry(geo.block_of(f.mapping(lpn).unwrap())).or_default().push(lpn);
        }
        let full: Vec<&Vec<u32>> = per_block.values().filter(|l| l.len() == geo.pages_per_block as usize - 1).collect();
        let summaries = f.device_stats().summary_pages_written;
        assert_eq!(full.len() as u64, summaries);
        assert!(summaries >= 4, "{summaries} full blocks");
        let wide_in_full = full.iter().flat_map(|l| l.iter()).filter(|&&lpn| is_wide(lpn)).count() as u64;
        // A flag cleared after the program of a page of a full block.
        let flagged = f.mapping(full[0][0]).unwrap();
        let now = f.now();
        assert!(matches!(
            f.program_flags(flagged, [0x01, 0, 0, 0], now).unwrap(),
            FlagProgram::Done { .. }
        ));
        f.checkpoint().unwrap();
        // Pages after the checkpoint: rolled forward, read from their spare.
        for lpn in n..n + 5 {
            f.write(lpn, &page(lpn)).unwrap();
        }
        f.wait_idle();
        // The power cut: DRAM lost.
        let hooks = Summarized {
            blocks,
            reread: vec![flagged],
            ..Default::default()
        };
        let mut f = Ftl::mount(f.into_nand(), FtlConfig::default(), hooks).unwrap();
        let r = f.recovery_report().unwrap();
        assert_eq!((r.summary_pages_read, r.summary_fallbacks), (summaries, 0));
        assert_eq!(r.summary_spare_reads, wide_in_full);
        assert!(wide_in_full > 0);
        let open_pages = n as u64 - (geo.pages_per_block as u64 - 1) * summaries;
        assert_eq!(r.protocol_pages_scanned, summaries + wide_in_full + open_pages, "{r:?}");
        assert!(r.protocol_pages_scanned * 3 < n as u64, "not every page: {r:?}");
        assert_eq!(r.spare_rereads, 1);
        let h = f.hooks();
        assert_eq!(h.visited.len() as u32, n + 5, "every page visited once");
        let from_summary = h.visited.iter().filter(|p| p.from_summary).count() as u64;
        assert_eq!(from_summary, (geo.pages_per_block as u64 - 1) * summaries - wide_in_full);
        let seen = h.visited.iter().find(|p| p.ppn == flagged).expect("the flagged page was visited");
        assert!(seen.from_summary);
        assert_eq!(seen.oob.flag_bytes, [0xFF; FLAG_BYTES], "the summary holds the flags as programmed");
        let live: Oob = h.live[0].expect("the flagged page's spare is intact");
        assert_eq!(live.flag_bytes, [0xFE, 0xFF, 0xFF, 0xFF], "the live spare shows the cleared bit");
        assert_eq!(
            Oob {
                flag_bytes: [0xFF; FLAG_BYTES],
                ..live
            },
            seen.oob,
            "the rest as the summary held it"
        );
        let mut buf = vec![0u8; 2048];
        for lpn in 0..n + 5 {
            f.read(lpn, &mut buf).unwrap();
            assert_eq!(buf, page(lpn), "lpn {lpn}");
        }
        f.check_invariants().unwrap();
    }

    /// Blocks filled after the checkpoint: the roll-forward reads each by its
    /// first new page and its summary (two reads, not one a page); a block
    /// not full costs one read of its erased last page and is read page by
    /// page; every page comes back.
    #[test]
    fn the_roll_forward_reads_a_block_filled_since_the_checkpoint_by_its_summary() {
        let mut p = txftl_nand::preset("flagcommit").unwrap();
        p.geometry.channels = 2;
        p.geometry.blocks_per_plane = 16;
        let geo = p.geometry;
        let blocks = geo.block_count();
        let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
        let mut f = Ftl::format(
            nand,
            FtlConfig::default(),
            Summarized {
                blocks,
                ..Default::default()
            },
        )
        .unwrap();
        f.checkpoint().unwrap();
        let n = 300u32;
        for lpn in 0..n {
            f.write(lpn, &page(lpn)).unwrap();
        }
        f.wait_idle();
        let summaries = f.device_stats().summary_pages_written;
        assert!(summaries >= 3, "{summaries} blocks filled since the checkpoint");
        let mut f = Ftl::mount(
            f.into_nand(),
            FtlConfig::default(),
            Summarized {
                blocks,
                ..Default::default()
            },
        )
        .unwrap();
        let r = f.recovery_report().unwrap();
        assert_eq!(
            (r.summary_pages_read, r.summary_fallbacks, r.summary_spare_reads),
            (summaries, 0, 0),
            "{r:?}"
        );
        let in_full = (geo.pages_per_block as u64 - 1) * summaries;
        let open = n as u64 - in_full;
        // Per full block, its first page and its summary; the open blocks
        // page by page (and their erased last page), and the erased first
        // page of each block still free.
        assert!(r.pages_scanned < 2 * summaries + 3 * open + blocks as u64, "{r:?}");
        assert!(r.pages_scanned * 3 < n as u64, "not every page: {r:?}");
        let mut buf = vec![0u8; 2048];
        for lpn in 0..n {
            f.read(lpn, &mut buf).unwrap();
            assert_eq!(buf, page(lpn), "lpn {lpn}");
        }
        f.check_invariants().unwrap();
    }
}
