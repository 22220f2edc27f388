//! The OOB (spare area) record every page carries: what recovery needs to know
//! about the page without any DRAM state.
//!
//! The record fills the first 64 bytes of the OOB (the rest stays 0xFF).
//! Integers little-endian:
//!
//! ```text
//!  0  u8      kind: 0x01 data, 0x02 checkpoint record, 0x03 superblock,
//!             0x04 table page of the mapping checkpoint (L2P or block table),
//!             0x05 summary page of a data block (`summary.rs`),
//!             0x10.. protocol metadata (0xFF: the OOB is erased)
//!  1  u8      record version (2)
//!  2  u16     flags: bit 0 = `data_crc` is valid (the data area was stored);
//!             bit 1 = lost: GC copied this page although ECC could not
//!             correct its source's data area, so its data is not the page's
//!             (a read reports the loss; the page keeps its place as the
//!             newest version so recovery cannot bring an older one back);
//!             bit 2 = relocated: written by GC from a source page that holds the
//!             same data until the next checkpoint (recovery may skip an
//!             unreadable relocated page: its source is still there)
//!  4  u32     lpn (data pages) / table page index (table pages) / page index
//!             within its record (other metadata pages)
//!  8  u64     sequence number: every program gets a fresh, larger one
//! 16  u32     erase count of the block, as the FTL knew it when programming
//! 20  u32     CRC-32 of the data area (when flag bit 0 is set; metadata pages
//!             leave it clear: their records carry a CRC of their own)
//! 24  [u8;32] protocol bytes (transaction id, status, links...; zero when unused)
//! 56  [u8;4]  flag bytes, outside the CRC: programmed with the record (0xFF
//!             unless the protocol sets them), afterwards only ever cleared,
//!             bit by bit, by a partial program of the page
//!             (`Ftl::program_flags`): a commit flag set in place
//! 60  u32     CRC-32 of bytes 0..56
//! ```
//!
//! A torn program leaves a record whose CRC fails (or a data area whose CRC
//! fails), so recovery never mistakes half a page for a page. A torn partial
//! program clears some of the flag bits it was clearing and nothing else
//! (the NAND's rule), so the record stays valid with either flag value: the
//! protocol reads a flag a bit at a time. The flag bytes took the word the
//! record kept in reserve: a 64-byte spare area (Flag Commit's 2 KiB pages)
//! holds the whole record, flags included.

use txftl_nand::{PackedSpare, ReadFields, SpareCodec};

// A packed spare area's protocol and flag bytes are the record's.
const _: () = assert!(PROTOCOL_BYTES == PackedSpare::PROTOCOL_MAX && FLAG_BYTES == SpareCodec::FLAGS_MAX);

pub const OOB_RECORD_SIZE: usize = 64;
pub const PROTOCOL_BYTES: usize = 32;
/// Flag bytes of a record, and where they lie in it.
pub const FLAG_BYTES: usize = 4;
pub const FLAGS_AT: usize = 56;
/// Bytes the record's CRC covers.
const CRC_COVERS: usize = 56;
const VERSION: u8 = 2;
const FLAG_DATA_CRC: u16 = 1;
const FLAG_LOST: u16 = 2;
const FLAG_RELOCATED: u16 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum PageKind {
    Data = 0x01,
    Checkpoint = 0x02,
    Superblock = 0x03,
    /// A table page of the mapping checkpoint: a page of the L2P or of the
    /// block table (`checkpoint.rs`).
    Map = 0x04,
    /// The last page of a data block, holding the OOB records of the block's
    /// other pages (`summary.rs`), when the protocol asks for summary pages.
    Summary = 0x05,
    /// A protocol's own metadata page (X-FTL's X-L2P table, Möbius's atom log...).
    Protocol = 0x10,
}

impl PageKind {
    fn from_u8(v: u8) -> Option<PageKind> {
        match v {
            0x01 => Some(PageKind::Data),
            0x02 => Some(PageKind::Checkpoint),
            0x03 => Some(PageKind::Superblock),
            0x04 => Some(PageKind::Map),
            0x05 => Some(PageKind::Summary),
            0x10 => Some(PageKind::Protocol),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oob {
    pub kind: PageKind,
    /// Logical page (data) or page index within the record (metadata).
    pub lpn: u32,
    pub seq: u64,
    pub erase_count: u32,
    /// CRC-32 of the data area, if it was stored.
    pub data_crc: Option<u32>,
    /// The data area was lost to bit errors before this copy (flag bit 1).
    pub lost: bool,
    /// Written by GC (flag bit 2).
    pub relocated: bool,
    pub protocol: [u8; PROTOCOL_BYTES],
    /// The flag bytes as they read now: as programmed, with any bits later
    /// partial programs cleared (all 0xFF unless the protocol sets them).
    pub flag_bytes: [u8; FLAG_BYTES],
}

/// The bytes of a page's OOB record a protocol chooses when it programs the
/// page: its protocol bytes, and its flag bytes (0xFF: none cleared).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpareBytes {
    pub protocol: [u8; PROTOCOL_BYTES],
    pub flags: [u8; FLAG_BYTES],
}

impl SpareBytes {
    /// `protocol` with no flag bit cleared.
    pub const fn unflagged(protocol: [u8; PROTOCOL_BYTES]) -> SpareBytes {
        SpareBytes {
            protocol,
            flags: [0xFF; FLAG_BYTES],
        }
    }

    /// A page's bytes as its record holds them (a copy's, unchanged).
    pub const fn of(oob: &Oob) -> SpareBytes {
        SpareBytes {
            protocol: oob.protocol,
            flags: oob.flag_bytes,
        }
    }
}

/// What an OOB area holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OobState {
    /// All 0xFF (the data area may still be programmed: check it before programming).
    Erased,
    /// A record whose CRC fails: a torn program or torn erase.
    Garbage,
    Valid(Oob),
}

impl std::fmt::Display for PageKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PageKind::Data => "data",
            PageKind::Checkpoint => "checkpoint",
            PageKind::Superblock => "superblock",
            PageKind::Map => "mapping table",
            PageKind::Summary => "block summary",
            PageKind::Protocol => "protocol record",
        })
    }
}

/// For error messages a user reads (not Rust structs).
impl std::fmt::Display for OobState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OobState::Erased => f.write_str("erased"),
            OobState::Garbage => f.write_str("unreadable (its OOB record fails its checksum)"),
            OobState::Valid(o) => write!(f, "a {} page (index {}, sequence number {})", o.kind, o.lpn, o.seq),
        }
    }
}

impl Oob {
    #[inline]
    pub fn new(kind: PageKind, lpn: u32, seq: u64, erase_count: u32, data: &[u8]) -> Oob {
        let data_crc = if data.is_empty() { None } else { Some(crc32fast::hash(data)) };
        Oob {
            kind,
            lpn,
            seq,
            erase_count,
            data_crc,
            lost: false,
            relocated: false,
            protocol: [0; PROTOCOL_BYTES],
            flag_bytes: [0xFF; FLAG_BYTES],
        }
    }

    /// Writes the record into `oob` (which must be at least 64 bytes; the rest is set to 0xFF).
    pub fn encode(&self, oob: &mut [u8]) {
        // Every byte of the record is written below; the fill covers only
        // the rest (not the record too: the CRC's loads would then wait on
        // the fill's wide stores).
        oob[OOB_RECORD_SIZE..].fill(0xFF);
        let r = &mut oob[..OOB_RECORD_SIZE];
        r[0] = self.kind as u8;
        r[1] = VERSION;
        let flags = if self.data_crc.is_some() { FLAG_DATA_CRC } else { 0 }
            | if self.lost { FLAG_LOST } else { 0 }
            | if self.relocated { FLAG_RELOCATED } else { 0 };
        r[2..4].copy_from_slice(&flags.to_le_bytes());
        r[4..8].copy_from_slice(&self.lpn.to_le_bytes());
        r[8..16].copy_from_slice(&self.seq.to_le_bytes());
        r[16..20].copy_from_slice(&self.erase_count.to_le_bytes());
        r[20..24].copy_from_slice(&self.data_crc.unwrap_or(0).to_le_bytes());
        r[24..56].copy_from_slice(&self.protocol);
        r[FLAGS_AT..FLAGS_AT + FLAG_BYTES].copy_from_slice(&self.flag_bytes);
        let crc = record_crc(&r[..CRC_COVERS]);
        r[60..64].copy_from_slice(&crc.to_le_bytes());
    }

    pub fn decode(oob: &[u8]) -> OobState {
        Oob::decode_with(oob, record_crc)
    }

    /// [`Oob::decode`] of the spare area of `ppn` as the cells hold it (read
    /// without an error, or inspected), with the record's CRC the array
    /// remembers where it does (`Nand::remembered_spare_crc`).
    pub fn decode_stored(oob: &[u8], nand: &txftl_nand::Nand, ppn: txftl_nand::Ppn) -> OobState {
        Oob::decode_with(oob, |covered| {
            nand.remembered_spare_crc(ppn, CRC_COVERS).unwrap_or_else(|| record_crc(covered))
        })
    }

    /// `covered_crc`: the CRC-32 of `oob[..CRC_COVERS]`, asked only of a
    /// spare area that is not erased (a scan meets many erased pages).
    fn decode_with(oob: &[u8], covered_crc: impl FnOnce(&[u8]) -> u32) -> OobState {
        let r = &oob[..OOB_RECORD_SIZE];
        if txftl_nand::is_erased(r) {
            return OobState::Erased;
        }
        let crc = u32::from_le_bytes(r[60..64].try_into().expect("4 bytes"));
        if covered_crc(&r[..CRC_COVERS]) != crc || r[1] != VERSION {
            return OobState::Garbage;
        }
        let Some(kind) = PageKind::from_u8(r[0]) else {
            return OobState::Garbage;
        };
        let flags = u16::from_le_bytes([r[2], r[3]]);
        let data_crc = u32::from_le_bytes(r[20..24].try_into().expect("4 bytes"));
        let mut protocol = [0u8; PROTOCOL_BYTES];
        protocol.copy_from_slice(&r[24..56]);
        let mut flag_bytes = [0u8; FLAG_BYTES];
        flag_bytes.copy_from_slice(&r[FLAGS_AT..FLAGS_AT + FLAG_BYTES]);
        OobState::Valid(Oob {
            kind,
            lpn: u32::from_le_bytes(r[4..8].try_into().expect("4 bytes")),
            seq: u64::from_le_bytes(r[8..16].try_into().expect("8 bytes")),
            erase_count: u32::from_le_bytes(r[16..20].try_into().expect("4 bytes")),
            data_crc: (flags & FLAG_DATA_CRC != 0).then_some(data_crc),
            lost: flags & FLAG_LOST != 0,
            relocated: flags & FLAG_RELOCATED != 0,
            protocol,
            flag_bytes,
        })
    }

    /// What [`spare_codec`]`(protocol_bytes, flag_bytes)` packs this
    /// record's encoding to, found from the record itself: `Some` exactly
    /// when its `pack` would (the conditions of `pack_spare`, which the
    /// bytes [`Oob::encode`] writes always meet otherwise: version, CRC,
    /// 0xFF past the record). Lets a program hand the array the fields
    /// (`Nand::program_fields`) instead of having them unpacked from bytes;
    /// the array checks them against the bytes in debug builds, and a unit
    /// test against `pack_spare` over random records.
    ///
    /// Inlined: every program of a metadata-only array asks it, and a call
    /// hands the fields back through memory that the caller then reloads
    /// in wider pieces than were stored (a stalled store forward: perf put
    /// a fifth of `program_stream`'s samples on that reload).
    #[inline]
    pub fn packed(&self, protocol_bytes: usize, flag_bytes: usize) -> Option<PackedSpare> {
        let common = self.kind == PageKind::Data
            && self.data_crc.is_none()
            && !self.lost
            && zero_from(&self.protocol, protocol_bytes)
            && self.flag_bytes[flag_bytes.min(FLAG_BYTES)..].iter().all(|&b| b == 0xFF);
        common.then_some(PackedSpare {
            lpn: self.lpn,
            seq: self.seq,
            erase_count: self.erase_count,
            flag: self.relocated,
        })
    }

    /// Does `data` match the CRC recorded here? (Pages stored without data always match.)
    pub fn data_matches(&self, data: &[u8]) -> bool {
        self.data_crc.is_none_or(|crc| crc32fast::hash(data) == crc)
    }

    /// [`Oob::data_matches`] given the data's CRC-32 (as `Nand::read_crc`
    /// returns it with the data).
    pub fn crc_matches(&self, data_crc: u32) -> bool {
        self.data_crc.is_none_or(|crc| crc == data_crc)
    }
}

/// The record's codec for the NAND's metadata-only mode (`txftl-nand`'s
/// `spare.rs`): a data page with no data CRC, not lost, and no protocol bytes
/// past the first `protocol_bytes` (what the host and GC write when no data is
/// stored) packs into its logical page, sequence number, erase count,
/// relocated flag and those protocol bytes; the NAND keeps any other spare
/// area whole. `protocol_bytes`: the protocol's
/// [`crate::PersistHooks::packed_protocol_bytes`]; `flag_bytes`: its
/// [`crate::PersistHooks::flag_bytes`], kept per page beside the packed
/// fields (the others must read 0xFF for the page to pack).
pub fn spare_codec(protocol_bytes: usize, flag_bytes: usize) -> SpareCodec {
    let flag_bytes = flag_bytes.min(FLAG_BYTES);
    SpareCodec {
        pack: [pack_spare::<0>, pack_spare::<1>, pack_spare::<2>, pack_spare::<3>, pack_spare::<4>][flag_bytes],
        unpack: unpack_spare,
        protocol_bytes: protocol_bytes.min(PackedSpare::PROTOCOL_MAX),
        flag_bytes,
        flags_at: FLAGS_AT,
        crc_span: CRC_COVERS,
    }
}

/// Packs a record whose first `FLAGS` flag bytes the NAND keeps beside the
/// packed fields (so they are not looked at here) and whose other flag
/// bytes read 0xFF (what [`unpack_spare`] writes).
fn pack_spare<const FLAGS: usize>(oob: &[u8], protocol: &mut [u8]) -> Option<PackedSpare> {
    let r = &oob[..OOB_RECORD_SIZE];
    let flags = u16::from_le_bytes([r[2], r[3]]);
    let kept = protocol.len();
    // Every byte is checked, so the record `unpack_spare` writes is this one
    // (folds over fixed lengths rather than early exits: they vectorise).
    let common = r[0] == PageKind::Data as u8
        && r[1] == VERSION
        && flags & !FLAG_RELOCATED == 0
        && r[20..24].iter().fold(0, |a, &b| a | b) == 0
        && zero_from(r[24..56].try_into().expect("32 bytes"), kept)
        && r[FLAGS_AT + FLAGS..FLAGS_AT + FLAG_BYTES].iter().fold(0xFF, |a, &b| a & b) == 0xFF
        && oob[OOB_RECORD_SIZE..].iter().fold(0xFF, |a, &b| a & b) == 0xFF
        && record_crc(&r[..CRC_COVERS]).to_le_bytes() == r[60..64];
    common.then(|| {
        if kept > 0 {
            protocol.copy_from_slice(&r[24..24 + kept]);
        }
        PackedSpare {
            lpn: u32::from_le_bytes(r[4..8].try_into().expect("4 bytes")),
            seq: u64::from_le_bytes(r[8..16].try_into().expect("8 bytes")),
            erase_count: u32::from_le_bytes(r[16..20].try_into().expect("4 bytes")),
            flag: flags & FLAG_RELOCATED != 0,
        }
    })
}

/// The CRC-32 (IEEE, as `crc32fast` computes it) of a record's first 56
/// bytes. Most records (a data page with no data CRC and no protocol bytes)
/// have only their first 20 bytes set; CRC-32 is affine in the message for a
/// fixed length, so theirs is a constant XOR one table entry per set byte:
/// 20 lookups instead of the 60-byte computation, which was a fifth of a
/// metadata-only run (every program and every GC read computes two). Other
/// records take `crc32fast`. The tables are computed with `crc32fast` itself
/// (the unit test checks both paths agree on random records).
fn record_crc(r: &[u8]) -> u32 {
    debug_assert_eq!(r.len(), CRC_COVERS);
    if !zero_from(r[24..CRC_COVERS].try_into().expect("32 bytes"), 0) || r[20..24] != [0; 4] {
        return crc32fast::hash(r);
    }
    let t = crc_tables();
    r[..SHORT]
        .iter()
        .enumerate()
        .fold(t.zeros, |acc, (i, &b)| acc ^ t.byte[i][b as usize])
}

/// Bytes of a record that may be set on the fast path of [`record_crc`].
const SHORT: usize = 20;

struct CrcTables {
    /// The CRC of 56 zero bytes.
    zeros: u32,
    /// `byte[i][b]`: the CRC of 56 bytes, all 0 but byte `i` = `b`, XOR `zeros`.
    byte: Vec<[u32; 256]>,
}

fn crc_tables() -> &'static CrcTables {
    static T: std::sync::OnceLock<CrcTables> = std::sync::OnceLock::new();
    T.get_or_init(|| {
        let zeros = crc32fast::hash(&[0u8; CRC_COVERS]);
        let mut msg = [0u8; CRC_COVERS];
        let byte = (0..SHORT)
            .map(|i| {
                let mut row = [0u32; 256];
                for (b, slot) in row.iter_mut().enumerate() {
                    msg[i] = b as u8;
                    *slot = crc32fast::hash(&msg) ^ zeros;
                }
                msg[i] = 0;
                row
            })
            .collect();
        CrcTables { zeros, byte }
    })
}

/// Are the bytes of `bytes` (the protocol bytes) from `from` on all 0? Four
/// words, masked, no loop: this runs for every page programmed and read in
/// metadata-only mode, and for every record's CRC.
#[inline]
fn zero_from(bytes: &[u8; PROTOCOL_BYTES], from: usize) -> bool {
    let word = |i: usize| {
        let w = u64::from_le_bytes(bytes[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
        match from.saturating_sub(i * 8) {
            0 => w,
            k if k >= 8 => 0,
            k => w & (u64::MAX << (8 * k)),
        }
    };
    word(0) | word(1) | word(2) | word(3) == 0
}

fn unpack_spare(p: &PackedSpare, kept: &[u8], oob: &mut [u8]) {
    let mut protocol = [0u8; PROTOCOL_BYTES];
    if !kept.is_empty() {
        protocol[..kept.len()].copy_from_slice(kept);
    }
    packed_record(p, protocol, [0xFF; FLAG_BYTES]).encode(oob);
}

/// The record a packed spare area holds: the one [`unpack_spare`] encodes.
fn packed_record(p: &PackedSpare, protocol: [u8; PROTOCOL_BYTES], flag_bytes: [u8; FLAG_BYTES]) -> Oob {
    Oob {
        kind: PageKind::Data,
        lpn: p.lpn,
        seq: p.seq,
        erase_count: p.erase_count,
        data_crc: None,
        lost: false,
        relocated: p.flag,
        protocol,
        flag_bytes,
    }
}

impl Oob {
    /// The record of a spare area a read handed up packed
    /// (`Nand::read_fields`): what [`Oob::decode`] makes of the bytes
    /// [`unpack_spare`] writes from the same fields, with the page's flag
    /// bytes over them (a unit test checks both over random records).
    pub fn from_read_fields(f: &ReadFields) -> Oob {
        packed_record(&f.fields, f.protocol, f.flags)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_torn_detection() {
        let data = vec![7u8; 512];
        let mut o = Oob::new(PageKind::Data, 42, 9, 3, &data);
        o.protocol[0] = 5;
        let mut buf = vec![0u8; 128];
        o.encode(&mut buf);
        assert!(buf[64..].iter().all(|&b| b == 0xFF));
        assert_eq!(Oob::decode(&buf), OobState::Valid(o));
        assert!(o.data_matches(&data));
        let lost = Oob {
            lost: true,
            relocated: true,
            ..o
        };
        lost.encode(&mut buf);
        assert_eq!(Oob::decode(&buf), OobState::Valid(lost));
        o.encode(&mut buf);
        assert!(!o.data_matches(&vec![8u8; 512]));
        buf[10] ^= 0x40;
        assert_eq!(Oob::decode(&buf), OobState::Garbage);
        assert_eq!(Oob::decode(&[0xFF; 64]), OobState::Erased);
        let meta = Oob::new(PageKind::Data, 1, 1, 0, &[]);
        assert!(meta.data_matches(&[1, 2, 3]));
    }

    /// `Oob::packed` answers what the codec's `pack` answers on the
    /// record's bytes, fields and protocol bytes alike, for every codec
    /// width, over random records near and off the common form.
    #[test]
    fn packed_fields_from_a_record_are_those_its_bytes_pack_to() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut buf = vec![0u8; 128];
        let (mut packed, mut some) = (0, 0);
        for _ in 0..20_000 {
            let kind = [PageKind::Data, PageKind::Data, PageKind::Map, PageKind::Protocol][rng.gen_range(0..4)];
            let data: &[u8] = if rng.gen_range(0..8) == 0 { &[1, 2, 3] } else { &[] };
            let mut o = Oob::new(kind, rng.gen(), rng.gen(), rng.gen(), data);
            o.lost = rng.gen_range(0..8) == 0;
            o.relocated = rng.gen();
            for _ in 0..rng.gen_range(0..3) {
                o.protocol[rng.gen_range(0..PROTOCOL_BYTES)] = rng.gen();
            }
            if rng.gen_range(0..4) == 0 {
                o.flag_bytes[rng.gen_range(0..FLAG_BYTES)] = rng.gen();
            }
            o.encode(&mut buf);
            let (p, f) = (rng.gen_range(0..=PROTOCOL_BYTES), rng.gen_range(0..=FLAG_BYTES));
            let mut kept = [0u8; PROTOCOL_BYTES];
            let by_bytes = (spare_codec(p, f).pack)(&buf, &mut kept[..p]);
            assert_eq!(o.packed(p, f), by_bytes, "{o:?}, widths {p}, {f}");
            if by_bytes.is_some() {
                assert_eq!(kept[..p], o.protocol[..p]);
                packed += 1;
            }
            some += 1;
        }
        assert!(packed > some / 10, "{packed} of {some} records packed");
    }

    #[test]
    fn the_spare_codec_packs_exactly_the_common_form() {
        let mut buf = vec![0u8; 128];
        let mut back = vec![0u8; 128];
        let codec = spare_codec(12, 0);
        let mut kept = [0u8; 12];
        let relocated = Oob {
            relocated: true,
            ..Oob::new(PageKind::Data, 42, 1 << 40, 7, &[])
        };
        let mut with_tx = relocated;
        with_tx.protocol[..12].copy_from_slice(&[9; 12]);
        for (o, width) in [
            (Oob::new(PageKind::Data, 42, 9, 3, &[]), 0),
            (relocated, 0),
            (relocated, 12),
            (with_tx, 12),
        ] {
            o.encode(&mut buf);
            let p = (codec.pack)(&buf, &mut kept[..width]).expect("the common form packs");
            (codec.unpack)(&p, &kept[..width], &mut back);
            assert_eq!(back, buf);
        }
        let with_crc = Oob::new(PageKind::Data, 1, 2, 3, &[5; 16]);
        let lost = Oob { lost: true, ..relocated };
        let mut protocol = relocated;
        protocol.protocol[3] = 1;
        let mut past = relocated;
        past.protocol[12] = 1;
        let map = Oob::new(PageKind::Map, 1, 2, 3, &[]);
        for (o, width) in [(with_crc, 12), (lost, 12), (protocol, 0), (past, 12), (map, 12)] {
            o.encode(&mut buf);
            assert!((codec.pack)(&buf, &mut kept[..width]).is_none(), "{o:?}");
        }
        // A flipped byte anywhere is not the common form any more (the flag
        // bytes too, for a codec that keeps none of them).
        for at in [1, 2, 5, 22, 40, 58, 61, 100] {
            relocated.encode(&mut buf);
            buf[at] ^= 0x08;
            assert!((codec.pack)(&buf, &mut []).is_none(), "byte {at}");
        }
        assert!((codec.pack)(&[0xFF; 128], &mut kept).is_none());
    }

    /// A spare area read as its fields is the record its bytes decode to:
    /// random fields, protocol widths and flag bytes, unpacked as the NAND
    /// does (flag bytes laid over the record) and decoded.
    #[test]
    fn a_record_read_as_fields_is_the_one_its_bytes_decode_to() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let mut buf = vec![0u8; 224];
        for _ in 0..10_000 {
            let codec = spare_codec(rng.gen_range(0..=PROTOCOL_BYTES), rng.gen_range(0..=FLAG_BYTES));
            let mut f = ReadFields {
                fields: PackedSpare {
                    lpn: rng.gen_range(0..PackedSpare::LPN_LIMIT),
                    seq: rng.gen(),
                    erase_count: rng.gen(),
                    flag: rng.gen(),
                },
                protocol: [0; PROTOCOL_BYTES],
                flags: [0xFF; FLAG_BYTES],
            };
            rng.fill(&mut f.protocol[..codec.protocol_bytes]);
            rng.fill(&mut f.flags[..codec.flag_bytes]);
            f.unpack(&codec, &mut buf);
            match Oob::decode(&buf) {
                OobState::Valid(o) => assert_eq!(Oob::from_read_fields(&f), o, "{f:?}"),
                other => panic!("{f:?} unpacks to {other}"),
            }
        }
    }

    /// Flag bytes lie outside the CRC: clearing their bits (a partial
    /// program) leaves the record valid, with the flags as they now read;
    /// a codec keeping them leaves them to the NAND.
    #[test]
    fn flag_bytes_are_outside_the_crc() {
        let mut buf = vec![0u8; 64];
        let mut o = Oob::new(PageKind::Data, 7, 8, 9, &[]);
        o.flag_bytes = [0xFE, 0xFF, 0xFF, 0xFF];
        o.encode(&mut buf);
        assert_eq!(Oob::decode(&buf), OobState::Valid(o));
        buf[FLAGS_AT] &= 0x7E; // a partial program clears one more bit
        let OobState::Valid(got) = Oob::decode(&buf) else {
            panic!("the record is still valid")
        };
        assert_eq!(got.flag_bytes, [0x7E, 0xFF, 0xFF, 0xFF]);
        assert_eq!(
            Oob {
                flag_bytes: o.flag_bytes,
                ..got
            },
            o,
            "nothing else changed"
        );
        // Byte 55 (the last protocol byte) is inside the CRC.
        buf[55] ^= 1;
        assert_eq!(Oob::decode(&buf), OobState::Garbage);
        // A codec keeping one flag byte packs flagged pages; without it they stay whole.
        let mut kept = [0u8; 0];
        got.encode(&mut buf);
        assert!((spare_codec(0, 1).pack)(&buf, &mut kept).is_some());
        assert!((spare_codec(0, 0).pack)(&buf, &mut kept).is_none());
        let mut two = got;
        two.flag_bytes[1] = 0x00;
        two.encode(&mut buf);
        assert!(
            (spare_codec(0, 1).pack)(&buf, &mut kept).is_none(),
            "byte 57 is not kept by a 1-byte codec"
        );
        assert!((spare_codec(0, 2).pack)(&buf, &mut kept).is_some());
    }

    #[test]
    fn zero_from_checks_exactly_the_bytes_from_its_start() {
        for from in 0..=32 {
            for at in 0..32 {
                let mut b = [0u8; 32];
                assert!(zero_from(&b, from));
                b[at] = 0x10;
                assert_eq!(zero_from(&b, from), at < from, "byte {at}, from {from}");
            }
        }
    }

    #[test]
    fn the_record_crc_is_crc32_on_both_paths() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        for n in 0..20_000 {
            let mut r = [0u8; CRC_COVERS];
            // Short records (the fast path), and some with later bytes set.
            for b in r.iter_mut().take(SHORT) {
                if rng.gen_bool(0.7) {
                    *b = rng.gen();
                }
            }
            if n % 4 == 0 {
                let at = rng.gen_range(SHORT..CRC_COVERS);
                r[at] = rng.gen::<u8>() | 1;
            }
            assert_eq!(record_crc(&r), crc32fast::hash(&r), "record {n}");
        }
    }
}
