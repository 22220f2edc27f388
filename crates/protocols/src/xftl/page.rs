//! The X-L2P table on flash: the table is cut into pages of whole entries, and
//! each page is written to X-FTL's log ring when it changed (a commit writes
//! only the table pages it touched; with 500 entries the table is one 8 KiB
//! page, the paper's setting). The pages one commit writes form a *group*; the
//! group is the commit's atomic unit: recovery uses a group only if every page
//! of it is intact. Pages are self-describing, so no superblock is written per
//! commit.
//!
//! Page layout (data area), integers little-endian:
//!
//! ```text
//!  0  [u8; 8]  magic "TXFTLXP1"
//!  8  u32      table capacity C (entries)
//! 12  u32      table page index k (entries k*E .. (k+1)*E, E entries a page)
//! 16  u32      table pages P
//! 20  u16      position of this page in its group (0-based)
//! 22  u16      pages in the group
//! 24  u64      group id (counts up; consecutive pages of one group share it)
//! 32  u64      content sequence number: 0 if this group commits the content;
//!              else the sequence number of the commit it copies (a page moved
//!              ahead in the ring keeps the order of the commit that wrote it)
//! 40  E x 16   entries: u32 tid, u32 logical page, u32 physical page,
//!              u8 status (0 free slot, 1 active, 2 committed, 3 aborted), 3 bytes 0
//! ```
//! The rest of the page is zero. The page's OOB record (kind `Protocol`) has the
//! page's sequence number and a CRC of these bytes, so a torn page is skipped;
//! a group missing a page is then incomplete and ignored.
//!
//! A commit whose transaction spilled entries out of the DRAM table
//! (`spill.rs`) puts *spill index pages* first in its group: the same header
//! with magic "TXFTLXI1", where bytes 12..20 count the commit's index pages
//! instead of the table's pages (see [`encode_index`]).

pub const HEADER_BYTES: usize = 40;
const MAGIC: &[u8; 8] = b"TXFTLXP1";
const INDEX_MAGIC: &[u8; 8] = b"TXFTLXI1";
/// Spill index page bytes before its references: the header, tid, count.
const INDEX_HEADER_BYTES: usize = HEADER_BYTES + 8;

/// What a page of a commit group is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// A page of the DRAM table's image.
    Table,
    /// A list of the committing transaction's spill pages.
    SpillIndex,
}

/// Spill pages one spill index page names.
pub fn refs_per_index_page(page_size: u32) -> u32 {
    (page_size.saturating_sub(INDEX_HEADER_BYTES as u32) / 8).max(1)
}

/// Entries one table page holds.
pub fn entries_per_page(page_size: u32) -> u32 {
    (page_size.saturating_sub(HEADER_BYTES as u32)) / super::table::ENTRY_BYTES as u32
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageHeader {
    pub kind: Kind,
    pub capacity: u32,
    pub index: u32,
    pub pages: u32,
    pub position: u16,
    pub group_len: u16,
    pub group: u64,
    pub content_seq: u64,
}

/// Writes a table page: the header, then `entries` (their on-flash bytes).
pub fn encode(h: &PageHeader, entries: &[u8], page: &mut [u8]) {
    page.fill(0);
    page[0..8].copy_from_slice(match h.kind {
        Kind::Table => MAGIC,
        Kind::SpillIndex => INDEX_MAGIC,
    });
    page[8..12].copy_from_slice(&h.capacity.to_le_bytes());
    page[12..16].copy_from_slice(&h.index.to_le_bytes());
    page[16..20].copy_from_slice(&h.pages.to_le_bytes());
    page[20..22].copy_from_slice(&h.position.to_le_bytes());
    page[22..24].copy_from_slice(&h.group_len.to_le_bytes());
    page[24..32].copy_from_slice(&h.group.to_le_bytes());
    page[32..40].copy_from_slice(&h.content_seq.to_le_bytes());
    page[HEADER_BYTES..HEADER_BYTES + entries.len()].copy_from_slice(entries);
}

/// Reads a table page's header; `None` if the page is not one.
pub fn decode_header(page: &[u8]) -> Option<PageHeader> {
    if page.len() < HEADER_BYTES {
        return None;
    }
    let kind = match &page[0..8] {
        m if m == MAGIC => Kind::Table,
        m if m == INDEX_MAGIC => Kind::SpillIndex,
        _ => return None,
    };
    let u32_at = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().expect("4 bytes"));
    let u64_at = |at: usize| u64::from_le_bytes(page[at..at + 8].try_into().expect("8 bytes"));
    let h = PageHeader {
        kind,
        capacity: u32_at(8),
        index: u32_at(12),
        pages: u32_at(16),
        position: u16::from_le_bytes([page[20], page[21]]),
        group_len: u16::from_le_bytes([page[22], page[23]]),
        group: u64_at(24),
        content_seq: u64_at(32),
    };
    (h.index < h.pages && h.position < h.group_len).then_some(h)
}

/// Writes a spill index page: header `h` (kind `SpillIndex`; `index` is
/// this page's number among the commit's index pages, `pages` their count,
/// `content_seq` 0: index pages are never moved), then:
///
/// ```text
/// 40  u32      transaction id t (the committing one)
/// 44  u32      references R on this page
/// 48  R x 8    u32 physical page of a spill page of t, u32 CRC-32 (IEEE)
///              of that page's whole data area
/// ```
/// The rest of the page is zero.
pub fn encode_index(h: &PageHeader, tid: u32, refs: &[(u32, u32)], page: &mut [u8]) {
    assert!(INDEX_HEADER_BYTES + 8 * refs.len() <= page.len(), "spill index page overflows");
    encode(h, &[], page);
    page[40..44].copy_from_slice(&tid.to_le_bytes());
    page[44..48].copy_from_slice(&(refs.len() as u32).to_le_bytes());
    for (i, (ppn, crc)) in refs.iter().enumerate() {
        let at = INDEX_HEADER_BYTES + 8 * i;
        page[at..at + 4].copy_from_slice(&ppn.to_le_bytes());
        page[at + 4..at + 8].copy_from_slice(&crc.to_le_bytes());
    }
}

/// Reads a spill index page's transaction and references.
pub fn decode_index(page: &[u8]) -> Result<(u32, Vec<(u32, u32)>), String> {
    let u32_at = |at: usize| u32::from_le_bytes(page[at..at + 4].try_into().expect("4 bytes"));
    let count = u32_at(44) as usize;
    if INDEX_HEADER_BYTES + 8 * count > page.len() {
        return Err(format!("spill index page claims {count} references"));
    }
    let refs = (0..count).map(|i| (u32_at(INDEX_HEADER_BYTES + 8 * i), u32_at(INDEX_HEADER_BYTES + 8 * i + 4)));
    Ok((u32_at(40), refs.collect()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_sizes_and_round_trip() {
        assert!(entries_per_page(8192) >= 500, "500 entries fit one 8 KiB page, as in the paper");
        let h = PageHeader {
            kind: Kind::Table,
            capacity: 500,
            index: 0,
            pages: 1,
            position: 0,
            group_len: 1,
            group: 7,
            content_seq: 0,
        };
        let mut page = vec![0xAAu8; 8192];
        encode(&h, &[1, 2, 3], &mut page);
        assert_eq!(decode_header(&page), Some(h));
        assert_eq!(&page[40..43], &[1, 2, 3]);
        assert!(page[43..].iter().all(|&b| b == 0));
        page[0] ^= 1;
        assert_eq!(decode_header(&page), None);
        let ih = PageHeader {
            kind: Kind::SpillIndex,
            pages: 2,
            ..h
        };
        encode_index(&ih, 9, &[(5, 0xDEAD), (6, 7)], &mut page);
        assert_eq!(decode_header(&page), Some(ih));
        assert_eq!(decode_index(&page), Ok((9, vec![(5, 0xDEAD), (6, 7)])));
        assert_eq!(refs_per_index_page(8192), 1018);
    }
}
