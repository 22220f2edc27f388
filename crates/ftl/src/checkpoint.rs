//! The mapping checkpoint, persisted incrementally: the L2P and the block
//! table are split into *table pages*; a checkpoint writes only the table pages
//! that changed since the previous one (plus those its ring must move, see
//! `persist.rs`), then a *record* whose directory names where every table page
//! lies. Recovery loads the record, reads the table pages it names, then rolls
//! forward from the OOB of pages written after it.
//!
//! Table pages (`T = M + B` of them), each in one flash page of the checkpoint
//! ring, its OOB a `Map` record (`oob.rs`) with the table page index in `lpn`,
//! the checkpoint's sequence number and a CRC of the data:
//!
//! ```text
//! L2P page t (0 <= t < M, M = ceil(L / E), E = page_size / 4 entries):
//!   u32 x E   physical page of logical pages t*E .. t*E+E-1, 0xFFFF_FFFF if
//!             unmapped (and past the last logical page)
//! block-table page M + j (0 <= j < B, B = ceil(N / R), R = page_size / 8):
//!   R x 8     block records of blocks j*R .. j*R+R-1: u32 erase count,
//!             u16 write pointer, u8 state, u8 reserved (0); state: 0 free,
//!             1 open (write pointer valid), 2 used, 3 bad, 4 metadata;
//!             bytes past the last block are 0xFF
//! ```
//!
//! The record (split over as many consecutive ring pages as needed; each
//! page's OOB is a `Checkpoint` record with the page index in `lpn` and the
//! checkpoint's sequence number; the superblock keeps the record's place, byte
//! length and a CRC of the whole), integers little-endian:
//!
//! ```text
//!  0  [u8; 8]   magic "TXFTLCK2"
//!  8  u64       checkpoint sequence number: every data page programmed before
//!               the checkpoint has a smaller sequence number, every one after a larger
//! 16  u32       logical pages L
//! 20  u32       block count N
//! 24  u32       L2P pages M
//! 28  u32       block-table pages B
//! 32  u32       protocol section length P
//! 36  u32       flags: bit 0, the allocation window: until the next checkpoint
//!               the device allocates data blocks only from the blocks this one
//!               records ready (and the GC stream, past them, from any free
//!               block: see `Ftl::checkpoint`), so recovery reads no block
//!               recorded free; other bits 0
//! 40  T x 8     directory, by table page: u32 physical page, u32 CRC-32 of the
//!               page's data; physical page 0xFFFF_FFFF: an L2P page never
//!               written because none of its logical pages is mapped
//!               (block-table pages are always written)
//!  .  [u8; P]   protocol section
//! ```

pub const UNMAPPED: u32 = u32::MAX;
const MAGIC: &[u8; 8] = b"TXFTLCK2";
/// Bytes of the record before its directory.
pub const RECORD_HEADER: usize = 40;
/// Bytes of one block record in a block-table page.
pub const BLOCK_RECORD_SIZE: usize = 8;
/// Bytes of one directory entry.
pub const DIR_ENTRY_SIZE: usize = 8;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum RecordState {
    Free = 0,
    Open = 1,
    Used = 2,
    Bad = 3,
    Meta = 4,
    /// Free, and in the allocation window the record's flag bit 0 announces.
    Ready = 5,
}

impl RecordState {
    fn from_u8(v: u8) -> Option<RecordState> {
        match v {
            0 => Some(RecordState::Free),
            1 => Some(RecordState::Open),
            2 => Some(RecordState::Used),
            3 => Some(RecordState::Bad),
            4 => Some(RecordState::Meta),
            5 => Some(RecordState::Ready),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockRecord {
    pub erase_count: u32,
    pub write_ptr: u16,
    pub state: RecordState,
}

/// Where a table page lies: its physical page and the CRC of its data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DirEntry {
    /// [`UNMAPPED`]: an L2P page with no mapping, never written.
    pub ppn: u32,
    pub crc: u32,
}

impl DirEntry {
    pub const NONE: DirEntry = DirEntry { ppn: UNMAPPED, crc: 0 };
}

/// How the tables of a device are paged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TableLayout {
    pub logical_pages: u32,
    pub block_count: u32,
    /// L2P entries per table page.
    pub entries_per_page: u32,
    /// Block records per table page.
    pub records_per_page: u32,
}

impl TableLayout {
    pub fn new(logical_pages: u32, block_count: u32, page_size: u32) -> TableLayout {
        TableLayout {
            logical_pages,
            block_count,
            entries_per_page: page_size / 4,
            records_per_page: page_size / BLOCK_RECORD_SIZE as u32,
        }
    }
    /// L2P pages, M.
    pub fn map_pages(&self) -> u32 {
        self.logical_pages.div_ceil(self.entries_per_page)
    }
    /// Block-table pages, B.
    pub fn block_pages(&self) -> u32 {
        self.block_count.div_ceil(self.records_per_page)
    }
    /// Table pages, T = M + B.
    pub fn table_pages(&self) -> u32 {
        self.map_pages() + self.block_pages()
    }
    /// The L2P page holding logical page `lpn`.
    pub fn map_page_of(&self, lpn: u32) -> u32 {
        lpn / self.entries_per_page
    }
    /// Logical pages `t` covers (an L2P page).
    pub fn lpns_of(&self, t: u32) -> std::ops::Range<usize> {
        let start = (t * self.entries_per_page) as usize;
        start..(start + self.entries_per_page as usize).min(self.logical_pages as usize)
    }
    /// Blocks block-table page `t` (M <= t < T) covers.
    pub fn blocks_of(&self, t: u32) -> std::ops::Range<usize> {
        let start = ((t - self.map_pages()) * self.records_per_page) as usize;
        start..(start + self.records_per_page as usize).min(self.block_count as usize)
    }
}

/// Writes an L2P page: `entries` (little-endian u32 each) then 0xFF to the
/// end of `page`.
pub fn encode_map_page(entries: &[u32], page: &mut [u8]) {
    encode_map_entries(entries.iter().copied(), page);
}

/// [`encode_map_page`] from any sequence of entries (the L2P's own
/// `mapping::Entries`).
pub fn encode_map_entries(entries: impl ExactSizeIterator<Item = u32>, page: &mut [u8]) {
    let n = entries.len();
    for (chunk, e) in page.chunks_exact_mut(4).zip(entries) {
        chunk.copy_from_slice(&e.to_le_bytes());
    }
    page[4 * n..].fill(0xFF);
}

/// Reads an L2P page into `out` (one entry per element).
pub fn decode_map_page(page: &[u8], out: &mut [u32]) {
    for (e, ppn) in out.iter_mut().zip(map_page_entries(page)) {
        *e = ppn;
    }
}

/// The entries of an L2P page, in order ([`decode_map_page`] into any
/// store: the L2P's own `mapping::Entries`).
pub fn map_page_entries(page: &[u8]) -> impl Iterator<Item = u32> + '_ {
    page.chunks_exact(4)
        .map(|chunk| u32::from_le_bytes(chunk.try_into().expect("4 bytes")))
}

/// Writes a block-table page: `records` then 0xFF to the end of `page`.
pub fn encode_block_page(records: &[BlockRecord], page: &mut [u8]) {
    for (chunk, r) in page.chunks_exact_mut(BLOCK_RECORD_SIZE).zip(records) {
        chunk[0..4].copy_from_slice(&r.erase_count.to_le_bytes());
        chunk[4..6].copy_from_slice(&r.write_ptr.to_le_bytes());
        chunk[6] = r.state as u8;
        chunk[7] = 0;
    }
    page[BLOCK_RECORD_SIZE * records.len()..].fill(0xFF);
}

/// Reads the first `out.len()` records of a block-table page; `first` is the
/// block id of the first (for error messages).
pub fn decode_block_page(page: &[u8], first: usize, out: &mut [BlockRecord]) -> Result<(), String> {
    for (i, (r, chunk)) in out.iter_mut().zip(page.chunks_exact(BLOCK_RECORD_SIZE)).enumerate() {
        let state = RecordState::from_u8(chunk[6]).ok_or_else(|| format!("block {} has unknown state {}", first + i, chunk[6]))?;
        *r = BlockRecord {
            erase_count: u32::from_le_bytes(chunk[0..4].try_into().expect("4 bytes")),
            write_ptr: u16::from_le_bytes([chunk[4], chunk[5]]),
            state,
        };
    }
    Ok(())
}

/// The checkpoint record: where every table page lies, and the protocol's section.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub seq: u64,
    pub logical_pages: u32,
    pub block_count: u32,
    pub map_pages: u32,
    pub block_pages: u32,
    /// One entry per table page: L2P pages, then block-table pages.
    pub directory: Vec<DirEntry>,
    pub protocol: Vec<u8>,
    /// Flag bit 0: allocation is confined to the blocks recorded ready.
    pub window: bool,
}

impl Record {
    pub fn encoded_len(table_pages: u32, protocol_len: usize) -> usize {
        RECORD_HEADER + DIR_ENTRY_SIZE * table_pages as usize + protocol_len
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(Self::encoded_len(self.directory.len() as u32, self.protocol.len()));
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.seq.to_le_bytes());
        for v in [
            self.logical_pages,
            self.block_count,
            self.map_pages,
            self.block_pages,
            self.protocol.len() as u32,
            self.window as u32,
        ] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        for e in &self.directory {
            out.extend_from_slice(&e.ppn.to_le_bytes());
            out.extend_from_slice(&e.crc.to_le_bytes());
        }
        out.extend_from_slice(&self.protocol);
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Record, String> {
        if bytes.len() < RECORD_HEADER {
            return Err(format!("checkpoint record truncated at {} bytes", bytes.len()));
        }
        if &bytes[0..8] != MAGIC {
            return Err("checkpoint magic missing".into());
        }
        let u32_at = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        let seq = u64::from_le_bytes(bytes[8..16].try_into().expect("8 bytes"));
        let (logical_pages, block_count, map_pages, block_pages, p) = (u32_at(16), u32_at(20), u32_at(24), u32_at(28), u32_at(32));
        let t = map_pages as usize + block_pages as usize;
        let need = RECORD_HEADER + DIR_ENTRY_SIZE * t + p as usize;
        if bytes.len() < need {
            return Err(format!(
                "checkpoint record truncated: {} bytes, its header asks for {need}",
                bytes.len()
            ));
        }
        let directory = (0..t)
            .map(|i| {
                let at = RECORD_HEADER + DIR_ENTRY_SIZE * i;
                DirEntry {
                    ppn: u32_at(at),
                    crc: u32_at(at + 4),
                }
            })
            .collect();
        let p_at = RECORD_HEADER + DIR_ENTRY_SIZE * t;
        Ok(Record {
            seq,
            logical_pages,
            block_count,
            map_pages,
            block_pages,
            directory,
            protocol: bytes[p_at..p_at + p as usize].to_vec(),
            window: u32_at(36) & 1 != 0,
        })
    }
}

/// A checkpoint as recovery assembles it: the record and the tables it names
/// (`M`: the protocol's mapping table).
#[derive(Clone, Debug)]
pub struct Checkpoint<M> {
    pub seq: u64,
    pub l2p: M,
    pub blocks: Vec<BlockRecord>,
    pub directory: Vec<DirEntry>,
    pub protocol: Vec<u8>,
    /// The record's allocation-window flag: blocks recorded free were not
    /// allocated before the next checkpoint; only the ready ones may hold data.
    pub window: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_round_trip() {
        let r = Record {
            seq: 5,
            logical_pages: 300,
            block_count: 70,
            map_pages: 3,
            block_pages: 2,
            directory: vec![
                DirEntry { ppn: 9, crc: 1 },
                DirEntry::NONE,
                DirEntry { ppn: 11, crc: 2 },
                DirEntry { ppn: 12, crc: 3 },
                DirEntry { ppn: 13, crc: 4 },
            ],
            protocol: vec![1, 2],
            window: true,
        };
        let bytes = r.encode();
        assert_eq!(bytes.len(), Record::encoded_len(5, 2));
        assert_eq!(Record::decode(&bytes).unwrap(), r);
        assert!(Record::decode(&bytes[..bytes.len() - 1]).is_err());
        assert!(Record::decode(&bytes[..20]).is_err());
    }

    #[test]
    fn table_pages_round_trip() {
        let layout = TableLayout::new(300, 70, 512);
        assert_eq!((layout.map_pages(), layout.block_pages(), layout.table_pages()), (3, 2, 5));
        assert_eq!(layout.lpns_of(2), 256..300);
        assert_eq!(layout.blocks_of(4), 64..70);
        let mut page = vec![0u8; 512];
        let entries: Vec<u32> = (0..44).map(|i| if i % 3 == 0 { UNMAPPED } else { i * 7 }).collect();
        encode_map_page(&entries, &mut page);
        assert!(page[4 * 44..].iter().all(|&b| b == 0xFF));
        let mut back = vec![0u32; 44];
        decode_map_page(&page, &mut back);
        assert_eq!(back, entries);
        let records: Vec<BlockRecord> = (0..6)
            .map(|i| BlockRecord {
                erase_count: i * 3,
                write_ptr: i as u16,
                state: RecordState::Used,
            })
            .collect();
        encode_block_page(&records, &mut page);
        let mut back = vec![records[0]; 6];
        decode_block_page(&page, 64, &mut back).unwrap();
        assert_eq!(back, records);
        page[6] = 9;
        assert!(decode_block_page(&page, 64, &mut back).is_err());
    }
}
