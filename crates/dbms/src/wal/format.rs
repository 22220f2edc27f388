//! The write-ahead log's bytes on flash: log records, log pages, the master
//! record, and the DB page images the record-level engine writes. Every
//! integer is little-endian; every page ends its used part with a CRC-32
//! (crc32fast, IEEE) so a torn or stale page is told from a good one.
//!
//! A log record is 50 bytes, the paper's size (Table 2), physiological
//! (footnote 8: one record changes one record slot of one page):
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..8  | LSN (page sequence << 16 \| index in the page) |
//! | 8..12 | XID |
//! | 12..16 | PID: the DB page |
//! | 16..20 | RID: the record's slot in the page |
//! | 20    | opcode ([`Op`]) |
//! | 21..25 | before: the record's version before (undo data) |
//! | 25..29 | after: its version after (redo data) |
//! | 29..37 | PrevLN: the transaction's previous record (0: none) |
//! | 37..45 | UndoNxtLN: a compensation record's next record to undo |
//! | 45..50 | zero |
//!
//! A log page (one flash page) is a 24-byte header and as many records as
//! fit (40 in a 2 KiB page):
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..4  | magic `TXLG` |
//! | 4..12 | sequence number (page `s` lives at log page `s mod log_pages`) |
//! | 12..16 | epoch: the restart count when written (a page of an older epoch after one of a newer is stale) |
//! | 16..18 | records held |
//! | 18..20 | zero |
//! | 20..24 | CRC-32 of bytes 0..20 and of the records |
//!
//! The master record (the log region's first flash page): magic `TXMR`,
//! epoch u32, the last checkpoint's LSN u64, the one before it u64, CRC-32
//! of bytes 0..24.
//!
//! A DB page image (each flash page of a DB page holds the records whose
//! slot is its index modulo the flash pages a DB page has): magic `TXDP`,
//! DB page u32, index u16, count u16, pageLSN u64, CRC-32 at 20..24 over
//! bytes 0..20 and the entries, then `count` entries of slot u32 and
//! version u32, slots ascending. A slot not listed holds version 0 (the load).
//! Then the pending records (Flag Commit's extended protocols, sec. 4.2; none
//! under ARIES): a u16 count, then per pending record slot u32, entry u8
//! (which of the flash page's pending-record entries it is, in the order the
//! device was given the transactions: ascending transaction id) and under
//! u32 (the record's committed version beneath the pending one; the CRC
//! covers them too). The pending version itself is the slot's entry above.

use std::collections::BTreeMap;

pub const RECORD_BYTES: usize = 50;
pub const LOG_HEADER_BYTES: usize = 24;
pub const IMAGE_HEADER_BYTES: usize = 24;
const LOG_MAGIC: &[u8; 4] = b"TXLG";
const MASTER_MAGIC: &[u8; 4] = b"TXMR";
const IMAGE_MAGIC: &[u8; 4] = b"TXDP";

/// A log sequence number: the log page's sequence number and the record's
/// index in it. 0 is no record.
pub type Lsn = u64;

pub fn lsn(seq: u64, index: usize) -> Lsn {
    debug_assert!(index < 1 << 16);
    seq << 16 | index as u64
}

pub fn lsn_seq(lsn: Lsn) -> u64 {
    lsn >> 16
}

/// What a log record says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Op {
    /// A record's version changed from `before` to `after`.
    Update = 1,
    /// Compensation: an update undone (`after` is the version restored),
    /// `undo_next` the transaction's next record to undo. Redo-only.
    Compensation = 2,
    Commit = 3,
    /// The transaction is over (after its commit, or its rollback's last CLR).
    End = 4,
    /// A checkpoint's entry for an open transaction: `prev` its last record.
    CheckpointTx = 5,
    /// The checkpoint's end: `prev` is the checkpoint before it.
    CheckpointEnd = 6,
    /// A transaction's first record (ARIES logs it before its first update).
    Begin = 7,
}

impl Op {
    fn from_byte(b: u8) -> Option<Op> {
        Some(match b {
            1 => Op::Update,
            2 => Op::Compensation,
            3 => Op::Commit,
            4 => Op::End,
            5 => Op::CheckpointTx,
            6 => Op::CheckpointEnd,
            7 => Op::Begin,
            _ => return None,
        })
    }
}

/// One log record (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogRecord {
    pub lsn: Lsn,
    pub xid: u32,
    pub page: u32,
    pub slot: u32,
    pub op: Op,
    pub before: u32,
    pub after: u32,
    pub prev: Lsn,
    pub undo_next: Lsn,
}

impl LogRecord {
    pub fn encode(&self, out: &mut [u8]) {
        assert_eq!(out.len(), RECORD_BYTES);
        out[0..8].copy_from_slice(&self.lsn.to_le_bytes());
        out[8..12].copy_from_slice(&self.xid.to_le_bytes());
        out[12..16].copy_from_slice(&self.page.to_le_bytes());
        out[16..20].copy_from_slice(&self.slot.to_le_bytes());
        out[20] = self.op as u8;
        out[21..25].copy_from_slice(&self.before.to_le_bytes());
        out[25..29].copy_from_slice(&self.after.to_le_bytes());
        out[29..37].copy_from_slice(&self.prev.to_le_bytes());
        out[37..45].copy_from_slice(&self.undo_next.to_le_bytes());
        out[45..50].fill(0);
    }

    pub fn decode(b: &[u8]) -> Option<LogRecord> {
        Some(LogRecord {
            lsn: u64_at(b, 0),
            xid: u32_at(b, 8),
            page: u32_at(b, 12),
            slot: u32_at(b, 16),
            op: Op::from_byte(b[20])?,
            before: u32_at(b, 21),
            after: u32_at(b, 25),
            prev: u64_at(b, 29),
            undo_next: u64_at(b, 37),
        })
    }
}

/// Records a log page of `page_size` bytes holds.
pub fn records_per_page(page_size: usize) -> usize {
    (page_size - LOG_HEADER_BYTES) / RECORD_BYTES
}

fn u32_at(b: &[u8], i: usize) -> u32 {
    u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"))
}

fn u64_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"))
}

fn crc(parts: &[&[u8]]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    parts.iter().for_each(|p| h.update(p));
    h.finalize()
}

/// Writes log page `seq` of `epoch` holding `records` into `out`.
pub fn encode_log_page(out: &mut [u8], seq: u64, epoch: u32, records: &[LogRecord]) {
    assert!(
        records.len() <= records_per_page(out.len()),
        "{} records overflow a log page",
        records.len()
    );
    out.fill(0);
    out[0..4].copy_from_slice(LOG_MAGIC);
    out[4..12].copy_from_slice(&seq.to_le_bytes());
    out[12..16].copy_from_slice(&epoch.to_le_bytes());
    out[16..18].copy_from_slice(&(records.len() as u16).to_le_bytes());
    for (i, r) in records.iter().enumerate() {
        debug_assert_eq!(r.lsn, lsn(seq, i), "record {i} of log page {seq}");
        let at = LOG_HEADER_BYTES + i * RECORD_BYTES;
        r.encode(&mut out[at..at + RECORD_BYTES]);
    }
    let end = LOG_HEADER_BYTES + records.len() * RECORD_BYTES;
    let c = crc(&[&out[0..20], &out[LOG_HEADER_BYTES..end]]);
    out[20..24].copy_from_slice(&c.to_le_bytes());
}

/// A log page read back: its sequence number, epoch and records, or None
/// when the page is not a whole log page (never written, torn, garbage).
pub fn decode_log_page(b: &[u8]) -> Option<(u64, u32, Vec<LogRecord>)> {
    if &b[0..4] != LOG_MAGIC {
        return None;
    }
    let n = u16::from_le_bytes([b[16], b[17]]) as usize;
    if n > records_per_page(b.len()) {
        return None;
    }
    let end = LOG_HEADER_BYTES + n * RECORD_BYTES;
    if crc(&[&b[0..20], &b[LOG_HEADER_BYTES..end]]) != u32_at(b, 20) {
        return None;
    }
    let seq = u64_at(b, 4);
    let records = (0..n)
        .map(|i| LogRecord::decode(&b[LOG_HEADER_BYTES + i * RECORD_BYTES..][..RECORD_BYTES]))
        .collect::<Option<Vec<_>>>()?;
    records
        .iter()
        .enumerate()
        .all(|(i, r)| r.lsn == lsn(seq, i))
        .then_some((seq, u32_at(b, 12), records))
}

/// The master record: where restart starts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Master {
    pub epoch: u32,
    /// The last checkpoint's end record (0: none yet).
    pub checkpoint: Lsn,
    /// The checkpoint before it: redo starts there (sec. 4.3).
    pub previous: Lsn,
}

impl Master {
    pub fn encode(&self, out: &mut [u8]) {
        out.fill(0);
        out[0..4].copy_from_slice(MASTER_MAGIC);
        out[4..8].copy_from_slice(&self.epoch.to_le_bytes());
        out[8..16].copy_from_slice(&self.checkpoint.to_le_bytes());
        out[16..24].copy_from_slice(&self.previous.to_le_bytes());
        let c = crc(&[&out[0..24]]);
        out[24..28].copy_from_slice(&c.to_le_bytes());
    }

    pub fn decode(b: &[u8]) -> Option<Master> {
        (&b[0..4] == MASTER_MAGIC && crc(&[&b[0..24]]) == u32_at(b, 24)).then(|| Master {
            epoch: u32_at(b, 4),
            checkpoint: u64_at(b, 8),
            previous: u64_at(b, 16),
        })
    }
}

/// Entries (slot, version) one flash page of an image holds.
pub fn image_capacity(page_size: usize) -> usize {
    (page_size - IMAGE_HEADER_BYTES - 2) / 8
}

/// One flash page of a DB page image: its pageLSN and its records'
/// versions (slot to version; absent slots hold 0).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImagePart {
    pub lsn: Lsn,
    pub records: BTreeMap<u32, u32>,
    /// The pending records (Flag Commit's extended protocols): slot to its
    /// writer and the committed version beneath. In memory the writer is
    /// the transaction's id; decoded from flash it is the entry index.
    pub pending: BTreeMap<u32, Pending>,
}

/// A pending record of an open transaction (sec. 4.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pending {
    pub owner: u32,
    pub under: u32,
}

impl ImagePart {
    /// The transactions with a pending record here, ascending: entry `i`
    /// is the `i`-th.
    pub fn pending_owners(&self) -> Vec<u32> {
        let mut o: Vec<u32> = self.pending.values().map(|p| p.owner).collect();
        o.sort_unstable();
        o.dedup();
        o
    }
}

/// Writes flash page `index` of DB page `page`; false if the records do not fit.
pub fn encode_image(out: &mut [u8], page: u32, index: u16, part: &ImagePart) -> bool {
    let end = IMAGE_HEADER_BYTES + part.records.len() * 8;
    if end + 2 + part.pending.len() * PENDING_BYTES > out.len() || part.pending.len() > u16::MAX as usize {
        return false;
    }
    out.fill(0);
    out[0..4].copy_from_slice(IMAGE_MAGIC);
    out[4..8].copy_from_slice(&page.to_le_bytes());
    out[8..10].copy_from_slice(&index.to_le_bytes());
    out[10..12].copy_from_slice(&(part.records.len() as u16).to_le_bytes());
    out[12..20].copy_from_slice(&part.lsn.to_le_bytes());
    for (i, (&slot, &version)) in part.records.iter().enumerate() {
        let at = IMAGE_HEADER_BYTES + i * 8;
        out[at..at + 4].copy_from_slice(&slot.to_le_bytes());
        out[at + 4..at + 8].copy_from_slice(&version.to_le_bytes());
    }
    let owners = part.pending_owners();
    out[end..end + 2].copy_from_slice(&(part.pending.len() as u16).to_le_bytes());
    for (i, (&slot, p)) in part.pending.iter().enumerate() {
        let at = end + 2 + i * PENDING_BYTES;
        let entry = owners.binary_search(&p.owner).expect("an owner listed") as u8;
        out[at..at + 4].copy_from_slice(&slot.to_le_bytes());
        out[at + 4] = entry;
        out[at + 5..at + 9].copy_from_slice(&p.under.to_le_bytes());
    }
    let end = end + 2 + part.pending.len() * PENDING_BYTES;
    let c = crc(&[&out[0..20], &out[IMAGE_HEADER_BYTES..end]]);
    out[20..24].copy_from_slice(&c.to_le_bytes());
    true
}

/// Bytes of a pending record in an image.
const PENDING_BYTES: usize = 9;

/// Flash page `index` of DB page `page` read back; None if it is not that
/// (torn, garbage, another page's).
pub fn decode_image(b: &[u8], page: u32, index: u16) -> Option<ImagePart> {
    if &b[0..4] != IMAGE_MAGIC || u32_at(b, 4) != page || u16::from_le_bytes([b[8], b[9]]) != index {
        return None;
    }
    let n = u16::from_le_bytes([b[10], b[11]]) as usize;
    if n > image_capacity(b.len()) {
        return None;
    }
    let records_end = IMAGE_HEADER_BYTES + n * 8;
    let np = u16::from_le_bytes([b[records_end], b[records_end + 1]]) as usize;
    let end = records_end + 2 + np * PENDING_BYTES;
    if end > b.len() || crc(&[&b[0..20], &b[IMAGE_HEADER_BYTES..end]]) != u32_at(b, 20) {
        return None;
    }
    let records = (0..n)
        .map(|i| {
            let at = IMAGE_HEADER_BYTES + i * 8;
            (u32_at(b, at), u32_at(b, at + 4))
        })
        .collect();
    let pending = (0..np)
        .map(|i| {
            let at = records_end + 2 + i * PENDING_BYTES;
            let p = Pending {
                owner: b[at + 4] as u32,
                under: u32_at(b, at + 5),
            };
            (u32_at(b, at), p)
        })
        .collect();
    Some(ImagePart {
        lsn: u64_at(b, 12),
        records,
        pending,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(seq: u64, i: usize) -> LogRecord {
        LogRecord {
            lsn: lsn(seq, i),
            xid: 7 + i as u32,
            page: 3,
            slot: 11,
            op: Op::Update,
            before: 2,
            after: 7,
            prev: lsn(seq, i.saturating_sub(1)),
            undo_next: 0,
        }
    }

    #[test]
    fn a_2_kib_log_page_holds_40_records_and_reads_back() {
        assert_eq!(records_per_page(2048), 40);
        let records: Vec<LogRecord> = (0..40).map(|i| rec(9, i)).collect();
        let mut page = vec![0xAA; 2048];
        encode_log_page(&mut page, 9, 2, &records);
        assert_eq!(decode_log_page(&page), Some((9, 2, records)));
        // One flipped bit anywhere in the used part: not a log page.
        page[LOG_HEADER_BYTES + 7 * RECORD_BYTES + 3] ^= 1;
        assert_eq!(decode_log_page(&page), None);
        assert_eq!(decode_log_page(&[0xFF; 2048]), None);
    }

    #[test]
    fn the_master_and_an_image_read_back_and_refuse_damage() {
        let m = Master {
            epoch: 3,
            checkpoint: lsn(40, 2),
            previous: lsn(20, 5),
        };
        let mut b = [0u8; 512];
        m.encode(&mut b);
        assert_eq!(Master::decode(&b), Some(m));
        b[9] ^= 4;
        assert_eq!(Master::decode(&b), None);

        let mut part = ImagePart {
            lsn: lsn(5, 1),
            records: [(0, 4), (9, 12)].into_iter().collect(),
            pending: BTreeMap::new(),
        };
        assert!(encode_image(&mut b, 6, 1, &part));
        assert_eq!(decode_image(&b, 6, 1), Some(part.clone()));
        // Pending records read back with their entry index for an owner.
        part.pending.insert(9, Pending { owner: 77, under: 3 });
        part.pending.insert(0, Pending { owner: 12, under: 0 });
        assert!(encode_image(&mut b, 6, 1, &part));
        let back = decode_image(&b, 6, 1).unwrap();
        assert_eq!(back.pending[&9], Pending { owner: 1, under: 3 });
        assert_eq!(back.pending[&0], Pending { owner: 0, under: 0 });
        assert_eq!(decode_image(&b, 6, 0), None, "another flash page of the DB page");
        assert_eq!(decode_image(&b, 7, 1), None, "another DB page");
        let full = ImagePart {
            lsn: 1,
            records: (0..image_capacity(512) as u32 + 1).map(|s| (s, 1)).collect(),
            pending: BTreeMap::new(),
        };
        assert!(!encode_image(&mut b, 6, 1, &full), "one entry too many");
    }
}
