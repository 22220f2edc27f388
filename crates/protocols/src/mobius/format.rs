//! Möbius's on-flash format: the atom inode (one page of the atom log area,
//! the protocol's log ring 0), the protocol bytes of a transaction's data
//! pages, the root and the checkpoint section. Little-endian throughout.
//!
//! The paper (§III-C, Fig. 3) gives the inode's contents (at most 500
//! mapping items of a 4 KiB page, the transaction's info, up to 8 commit
//! flags of earlier transactions) but no layout; this is ours.
//!
//! ```text
//! atom inode: the data of one ALA page (its OOB is the framework's log
//! record: kind Protocol, ring index 0, sequence number, CRC of the data)
//!   0  [u8; 4]  magic "MBAI"
//!   4  u8       version 1
//!   5  u8       kind: 1 static transaction, 2 dynamic transaction (written
//!               after its REAR page), 3 writes outside transactions (logged
//!               at a flush, or when an inode's items fill), 4 flags only,
//!               5 dynamic transaction aborted (no items), 6 a part of a
//!               dynamic transaction's items, 7 a part of a static
//!               transaction's items (a transaction whose items more than
//!               one inode holds: its parts come right before its kind-2 or
//!               kind-1 inode, which binds them)
//!   6  u16      n: mapping items (at most items-max)
//!   8  u32      transaction id (internal, never reused; a dynamic one's is
//!               its chain's; 0 for flags only and writes outside transactions)
//!  12  u32      host transaction id (informational)
//!  16  u8       f: commit flags (at most 8)
//!  17  u8       S_max as formatted
//!  18  u16      parts: kinds 1 and 2, the inodes that list the
//!               transaction's items (its parts right before it, then
//!               itself; 0 and 1 both mean itself alone); kinds 6 and 7,
//!               this part's index (0 for the first); 0 for other kinds
//!  20  [u32; 8] flags: ids of earlier transactions now committed (the
//!               edges of the DAG of Fig. 4); an id with bit 31 set
//!               (`VOID`) marks that transaction void instead: a program of
//!               it failed and it was written again under a new id, or a
//!               recovery found it aborted (not committed, and a later
//!               recovery does not count it as an earlier transaction
//!               lost); unused slots 0. Ids stay below 2^31.
//!  52  [u8; 40] reserved, 0
//!  92  u32      CRC-32 of bytes 0..92 and of the items
//!  96  n x { u32 lpn, u32 ppn }: where each page of the transaction lies
//!  ..  0xFF to the end of the page
//!
//! data page of a static transaction, OOB protocol bytes (the rest 0):
//!   0  u8   1
//!   1  u32  transaction id
//!   5  u32  logical page (the OOB's own `lpn` too; here for the verify read)
//! data page of a dynamic transaction (a chain), OOB protocol bytes:
//!   0  u8   2
//!   1  u32  transaction (chain) id
//!   5  u32  logical page
//!   9  u32  next: the physical page the chain's next page is programmed
//!           at; at the REAR page, the HEAD's (the cycle closed: committed)
//! a page written outside a transaction, or a GC copy of committed data: 0
//!
//! head record: the data of one page of the head list (the protocol's log
//! ring 1), written before the HEAD page of each dynamic transaction
//!   0  [u8; 4]  magic "MBHL"
//!   4  u8       version 1
//!   5  [u8; 3]  reserved, 0
//!   8  u32      transaction (chain) id
//!  12  u32      physical page of its HEAD
//!  16  0xFF to the end of the page
//!
//! root (in every superblock):
//!   0  u8   version 1
//!   1  u8   S_max
//!   2  u16  items-max
//!   4  u32  ALA ring blocks
//!
//! checkpoint section:
//!   0  u32  the next transaction id
//!   4  u32  the dynamic transaction open at the checkpoint, if its chain
//!           is still walkable (0: none, or GC moved one of its pages: the
//!           checkpoint releases the source's block, and a recovery that
//!           finds none of its inodes aborts it): its head record may be
//!           older than the checkpoint
//! ```

use txftl_ftl::{DeviceError, Lpn, Ppn, Result, PROTOCOL_BYTES};

const MAGIC: [u8; 4] = *b"MBAI";
const VERSION: u8 = 1;
/// Bytes before the items.
pub const HEADER: usize = 96;
/// A flag with this bit set names a void transaction (the layout above).
pub const VOID: u32 = 1 << 31;

/// Commit flags one inode carries at most (§III-C).
pub const FLAGS_MAX: usize = 8;
const CRC_AT: usize = 92;

/// What an inode records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum InodeKind {
    /// A static transaction: its items, written before its data.
    Static = 1,
    /// A dynamic transaction: its items, written after its REAR page.
    Dynamic = 2,
    /// Writes outside transactions since the last such inode: their
    /// mappings, durable from then on (written at a flush, or when full).
    Normal = 3,
    /// Commit flags only (no transaction followed to carry them).
    FlagsOnly = 4,
    /// A dynamic transaction aborted: recovery leaves its chain alone.
    DynamicAborted = 5,
    /// A part of a dynamic transaction's items, when more than one inode
    /// holds them: it counts only with its kind-2 inode and the parts
    /// before it all in the active ALA (`recovery::decide`).
    DynamicPart = 6,
    /// A part of a static transaction's items (§IV-E: a transaction larger
    /// than one inode, its inodes bound by the last): it counts only with
    /// its kind-1 inode and the parts before it all in the active ALA.
    StaticPart = 7,
}

impl InodeKind {
    /// The kind of the parts before an inode of this kind, if it has any.
    pub fn part_kind(self) -> Option<InodeKind> {
        match self {
            InodeKind::Static => Some(InodeKind::StaticPart),
            InodeKind::Dynamic => Some(InodeKind::DynamicPart),
            _ => None,
        }
    }
}

/// One atom inode, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Inode {
    pub kind: InodeKind,
    pub tx: u32,
    pub host_tid: u32,
    pub s_max: u8,
    /// [`InodeKind::Static`], [`InodeKind::Dynamic`]: the inodes listing
    /// its items (itself and the parts right before it; 0 means 1); a
    /// part: its index among them; 0 otherwise.
    pub parts: u16,
    /// Ids of earlier transactions whose commit this inode records.
    pub flags: Vec<u32>,
    pub items: Vec<(Lpn, Ppn)>,
}

impl Inode {
    /// Items a page of `page_size` bytes holds: the paper's 500 per 4 KiB
    /// (§III-C; 1,000 per 8 KiB, §IV-E), at most what fits after the header.
    pub fn items_max(page_size: u32) -> u32 {
        let paper = 500 * page_size / 4096;
        let fits = (page_size - HEADER as u32) / 8;
        paper.min(fits).max(1)
    }

    /// A transaction's inodes: its items `items_max` to an inode, every
    /// inode but the last a part (kind 6 or 7, numbered from 0), the last of
    /// kind `last` (static or dynamic) naming how many there are. Flags are
    /// the writer's to add.
    pub fn split(last: InodeKind, tx: u32, host_tid: u32, items: Vec<(Lpn, Ppn)>, items_max: u32, s_max: u8) -> Vec<Inode> {
        let part = last.part_kind().expect("a transaction's inode");
        let chunks: Vec<&[(Lpn, Ppn)]> = items.chunks(items_max.max(1) as usize).collect();
        let n = chunks.len().max(1);
        assert!(n <= u16::MAX as usize, "a transaction of {} items needs {n} inodes", items.len());
        (0..n)
            .map(|i| Inode {
                kind: if i + 1 == n { last } else { part },
                tx,
                host_tid,
                parts: if i + 1 == n { n as u16 } else { i as u16 },
                s_max,
                flags: Vec::new(),
                items: chunks.get(i).map_or(Vec::new(), |c| c.to_vec()),
            })
            .collect()
    }

    /// Encodes into `page` (a whole page, at least `HEADER + 8 n` bytes).
    pub fn encode(&self, page: &mut [u8]) {
        debug_assert!(self.flags.len() <= FLAGS_MAX);
        debug_assert!(HEADER + 8 * self.items.len() <= page.len());
        page.fill(0xFF);
        page[..HEADER].fill(0);
        page[0..4].copy_from_slice(&MAGIC);
        page[4] = VERSION;
        page[5] = self.kind as u8;
        page[6..8].copy_from_slice(&(self.items.len() as u16).to_le_bytes());
        page[8..12].copy_from_slice(&self.tx.to_le_bytes());
        page[12..16].copy_from_slice(&self.host_tid.to_le_bytes());
        page[16] = self.flags.len() as u8;
        page[17] = self.s_max;
        page[18..20].copy_from_slice(&self.parts.to_le_bytes());
        for (i, f) in self.flags.iter().enumerate() {
            page[20 + 4 * i..24 + 4 * i].copy_from_slice(&f.to_le_bytes());
        }
        for (i, &(lpn, ppn)) in self.items.iter().enumerate() {
            let at = HEADER + 8 * i;
            page[at..at + 4].copy_from_slice(&lpn.to_le_bytes());
            page[at + 4..at + 8].copy_from_slice(&ppn.to_le_bytes());
        }
        let crc = Self::crc(page, self.items.len());
        page[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_le_bytes());
    }

    fn crc(page: &[u8], n: usize) -> u32 {
        let mut h = crc32fast::Hasher::new();
        h.update(&page[..CRC_AT]);
        h.update(&page[HEADER..HEADER + 8 * n]);
        h.finalize()
    }

    /// Decodes an ALA page. The framework already checked the page's data
    /// CRC; a page that is not an inode of this version is corruption.
    pub fn decode(page: &[u8]) -> Result<Inode> {
        let bad = |why: &str| DeviceError::Corrupted(format!("Möbius atom inode: {why}"));
        if page.len() < HEADER || page[0..4] != MAGIC || page[4] != VERSION {
            return Err(bad("bad magic or version"));
        }
        let kind = match page[5] {
            1 => InodeKind::Static,
            2 => InodeKind::Dynamic,
            3 => InodeKind::Normal,
            4 => InodeKind::FlagsOnly,
            5 => InodeKind::DynamicAborted,
            6 => InodeKind::DynamicPart,
            7 => InodeKind::StaticPart,
            k => return Err(bad(&format!("unknown kind {k}"))),
        };
        let n = u16::from_le_bytes([page[6], page[7]]) as usize;
        let f = page[16] as usize;
        if HEADER + 8 * n > page.len() || f > FLAGS_MAX {
            return Err(bad("counts out of range"));
        }
        let crc = u32::from_le_bytes(page[CRC_AT..CRC_AT + 4].try_into().expect("4 bytes"));
        if crc != Self::crc(page, n) {
            return Err(bad("CRC mismatch"));
        }
        let u32_at = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().expect("4 bytes"));
        Ok(Inode {
            kind,
            tx: u32_at(8),
            host_tid: u32_at(12),
            s_max: page[17],
            parts: u16::from_le_bytes([page[18], page[19]]),
            flags: (0..f).map(|i| u32_at(20 + 4 * i)).collect(),
            items: (0..n).map(|i| (u32_at(HEADER + 8 * i), u32_at(HEADER + 8 * i + 4))).collect(),
        })
    }
}

/// The protocol bytes of a static transaction's data page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TxPage {
    pub tx: u32,
    pub lpn: Lpn,
}

const TX_PAGE: u8 = 1;
const CHAIN_PAGE: u8 = 2;
/// Bytes of the widest protocol bytes a data page carries ([`ChainPage`]'s;
/// what a metadata-only array packs).
pub const PAGE_TAG_BYTES: usize = 13;

impl TxPage {
    pub fn encode(self) -> [u8; PROTOCOL_BYTES] {
        let mut b = [0u8; PROTOCOL_BYTES];
        b[0] = TX_PAGE;
        b[1..5].copy_from_slice(&self.tx.to_le_bytes());
        b[5..9].copy_from_slice(&self.lpn.to_le_bytes());
        b
    }

    /// The page's transaction, if it is a transaction's page.
    pub fn decode(b: &[u8; PROTOCOL_BYTES]) -> Option<TxPage> {
        (b[0] == TX_PAGE).then(|| TxPage {
            tx: u32::from_le_bytes(b[1..5].try_into().expect("4 bytes")),
            lpn: u32::from_le_bytes(b[5..9].try_into().expect("4 bytes")),
        })
    }
}

/// The protocol bytes of a dynamic transaction's data page: a link of its
/// chain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChainPage {
    pub tx: u32,
    pub lpn: Lpn,
    /// Where the chain's next page is programmed; the HEAD's at the REAR.
    pub next: Ppn,
}

impl ChainPage {
    pub fn encode(self) -> [u8; PROTOCOL_BYTES] {
        let mut b = [0u8; PROTOCOL_BYTES];
        b[0] = CHAIN_PAGE;
        b[1..5].copy_from_slice(&self.tx.to_le_bytes());
        b[5..9].copy_from_slice(&self.lpn.to_le_bytes());
        b[9..13].copy_from_slice(&self.next.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8; PROTOCOL_BYTES]) -> Option<ChainPage> {
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        (b[0] == CHAIN_PAGE).then(|| ChainPage {
            tx: u32_at(1),
            lpn: u32_at(5),
            next: u32_at(9),
        })
    }
}

/// A head record of the head list: where a dynamic transaction's chain
/// starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HeadRecord {
    pub tx: u32,
    pub head: Ppn,
}

const HEAD_MAGIC: [u8; 4] = *b"MBHL";

impl HeadRecord {
    /// Encodes into `page` (a whole page).
    pub fn encode(self, page: &mut [u8]) {
        page.fill(0xFF);
        page[..16].fill(0);
        page[0..4].copy_from_slice(&HEAD_MAGIC);
        page[4] = VERSION;
        page[8..12].copy_from_slice(&self.tx.to_le_bytes());
        page[12..16].copy_from_slice(&self.head.to_le_bytes());
    }

    /// Decodes a head-list page (its data CRC already checked).
    pub fn decode(page: &[u8]) -> Result<HeadRecord> {
        if page.len() < 16 || page[0..4] != HEAD_MAGIC || page[4] != VERSION {
            return Err(DeviceError::Corrupted("Möbius head record: bad magic or version".into()));
        }
        Ok(HeadRecord {
            tx: u32::from_le_bytes(page[8..12].try_into().expect("4 bytes")),
            head: u32::from_le_bytes(page[12..16].try_into().expect("4 bytes")),
        })
    }
}

/// What the root records: fixed at format.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Root {
    pub s_max: u8,
    pub items_max: u16,
    pub ala_blocks: u32,
}

pub const ROOT_LEN: usize = 8;

impl Root {
    pub fn encode(self) -> Vec<u8> {
        let mut b = vec![VERSION, self.s_max];
        b.extend_from_slice(&self.items_max.to_le_bytes());
        b.extend_from_slice(&self.ala_blocks.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Root> {
        if b.len() != ROOT_LEN || b[0] != VERSION {
            return Err(DeviceError::Corrupted("Möbius root: bad length or version".into()));
        }
        Ok(Root {
            s_max: b[1],
            items_max: u16::from_le_bytes([b[2], b[3]]),
            ala_blocks: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
        })
    }
}

/// The checkpoint section.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Section {
    pub next_tx: u32,
    /// The dynamic transaction open at the checkpoint, 0 if none.
    pub open_chain: u32,
}

pub const SECTION_LEN: usize = 8;

impl Section {
    pub fn encode(self) -> Vec<u8> {
        let mut b = self.next_tx.to_le_bytes().to_vec();
        b.extend_from_slice(&self.open_chain.to_le_bytes());
        b
    }

    pub fn decode(b: &[u8]) -> Result<Section> {
        if b.len() != SECTION_LEN {
            return Err(DeviceError::Corrupted("Möbius checkpoint section: bad length".into()));
        }
        Ok(Section {
            next_tx: u32::from_le_bytes(b[0..4].try_into().expect("4 bytes")),
            open_chain: u32::from_le_bytes(b[4..8].try_into().expect("4 bytes")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_inode_round_trips_and_a_flipped_bit_is_refused() {
        let inode = Inode {
            kind: InodeKind::Static,
            tx: 7,
            host_tid: 3,
            parts: 0,
            s_max: 8,
            flags: vec![5, 6],
            items: vec![(1, 100), (9, 101)],
        };
        let mut page = vec![0u8; 512];
        inode.encode(&mut page);
        assert_eq!(Inode::decode(&page).unwrap(), inode);
        page[HEADER + 3] ^= 1;
        assert!(Inode::decode(&page).is_err());
        assert_eq!(Inode::items_max(4096), 500);
        assert_eq!(Inode::items_max(8192), 1000);
        assert_eq!(Inode::items_max(512), 52);
    }

    #[test]
    fn protocol_bytes_root_and_section_round_trip() {
        let p = TxPage { tx: 9, lpn: 44 };
        assert_eq!(TxPage::decode(&p.encode()), Some(p));
        assert_eq!(TxPage::decode(&[0; PROTOCOL_BYTES]), None);
        let r = Root {
            s_max: 8,
            items_max: 500,
            ala_blocks: 50,
        };
        assert_eq!(Root::decode(&r.encode()).unwrap(), r);
        let sec = Section {
            next_tx: 12,
            open_chain: 11,
        };
        assert_eq!(Section::decode(&sec.encode()).unwrap(), sec);
        assert!(Section::decode(&[0; 4]).is_err());
        let c = ChainPage { tx: 9, lpn: 44, next: 70 };
        assert_eq!(ChainPage::decode(&c.encode()), Some(c));
        assert_eq!(TxPage::decode(&c.encode()), None);
        assert_eq!(ChainPage::decode(&p.encode()), None);
        let h = HeadRecord { tx: 9, head: 123 };
        let mut page = vec![0u8; 512];
        h.encode(&mut page);
        assert_eq!(HeadRecord::decode(&page).unwrap(), h);
        page[0] = b'X';
        assert!(HeadRecord::decode(&page).is_err());
    }
}
