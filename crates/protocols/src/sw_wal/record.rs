//! SW-WAL's remap record: what a flush made durable without a checkpoint
//! (NoLgn-FTL §5: SW-WAL "inscrib[es] transaction information directly
//! into the OOB area of flash pages"; the tagged pages' spare areas name
//! their target, and this record says which of them a flush remapped).
//!
//! A flush appends one group of record pages to the protocol's log ring
//! (ring 0), one page after another, each done before the next starts; the
//! group is durable when its last page is. Each page's data:
//!
//! | bytes | field | meaning |
//! |---|---|---|
//! | 0..4 | magic, `SWRR` | a record page |
//! | 4..6 | position, u16 LE | this page's place in its group, 0 first |
//! | 6..8 | pages, u16 LE | pages in the group |
//! | 8..12 | entries, u32 LE | entries in this page |
//! | 12..16 | zero | reserved |
//! | 16.. | entries, 12 bytes each | in the order the flush applied them |
//!
//! An entry, three u32 LE: `from`, `to`, `ppn`. A remap: logical page `to`
//! takes physical page `ppn`, which `from` (a WAL page whose spare area
//! names `to`) mapped; `from` is unmapped. A trim: `from` and `ppn` are
//! `UNMAPPED` (u32::MAX); `to` is unmapped.
//!
//! The rest of the page is zero. The framework's OOB record around the page
//! (kind `Protocol`, the ring, a fresh sequence number, the data's CRC) tells
//! an intact page from a torn one. Recovery reads the ring newest first
//! back to the checkpoint and applies every whole group (positions
//! `pages - 1` down to 0 in a row) at its last page's sequence number, its
//! entries in order: data pages rolled forward around it, older or newer,
//! fall before or after it.

use txftl_ftl::checkpoint::UNMAPPED;
use txftl_ftl::{LogSource, Lpn, Ppn, RecoveredUpdate, Result};

const MAGIC: &[u8; 4] = b"SWRR";
const HEADER: usize = 16;
const ENTRY: usize = 12;

/// One change a flush made durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// `to` took physical page `ppn`, which `from` mapped; `from` unmapped.
    Remap { from: Lpn, to: Lpn, ppn: Ppn },
    /// `lpn` unmapped.
    Trim { lpn: Lpn },
}

impl Change {
    fn encode(&self, out: &mut [u8]) {
        let (from, to, ppn) = match *self {
            Change::Remap { from, to, ppn } => (from, to, ppn),
            Change::Trim { lpn } => (UNMAPPED, lpn, UNMAPPED),
        };
        out[0..4].copy_from_slice(&from.to_le_bytes());
        out[4..8].copy_from_slice(&to.to_le_bytes());
        out[8..12].copy_from_slice(&ppn.to_le_bytes());
    }

    fn decode(b: &[u8]) -> Change {
        let u = |i: usize| u32::from_le_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let (from, to, ppn) = (u(0), u(4), u(8));
        if from == UNMAPPED {
            Change::Trim { lpn: to }
        } else {
            Change::Remap { from, to, ppn }
        }
    }

    /// The L2P updates the change makes, at sequence number `seq`.
    fn updates(&self, seq: u64, out: &mut Vec<RecoveredUpdate>) {
        match *self {
            Change::Remap { from, to, ppn } => {
                // `from` first: the page has one owner once both are applied.
                out.push(RecoveredUpdate { seq, lpn: from, ppn: UNMAPPED });
                out.push(RecoveredUpdate { seq, lpn: to, ppn });
            }
            Change::Trim { lpn } => out.push(RecoveredUpdate { seq, lpn, ppn: UNMAPPED }),
        }
    }
}

/// Entries one record page of `page_size` bytes holds at most.
pub fn per_page(page_size: usize) -> usize {
    (page_size - HEADER) / ENTRY
}

/// Pages a group of `changes` entries takes at `per` entries a page.
pub fn pages_for(changes: usize, per: usize) -> usize {
    changes.div_ceil(per).max(1)
}

/// The group's pages, in order, each `page_size` bytes holding `per`
/// entries at most (`per_page` or fewer).
pub fn encode(changes: &[Change], page_size: usize, per: usize) -> Vec<Vec<u8>> {
    assert!(per >= 1 && per <= per_page(page_size), "{per} entries a page of {page_size} bytes");
    let pages = pages_for(changes.len(), per);
    assert!(pages <= u16::MAX as usize, "a record group of {pages} pages");
    let mut out = Vec::with_capacity(pages);
    for position in 0..pages {
        let chunk = &changes[(position * per).min(changes.len())..((position + 1) * per).min(changes.len())];
        let mut page = vec![0u8; page_size];
        page[0..4].copy_from_slice(MAGIC);
        page[4..6].copy_from_slice(&(position as u16).to_le_bytes());
        page[6..8].copy_from_slice(&(pages as u16).to_le_bytes());
        page[8..12].copy_from_slice(&(chunk.len() as u32).to_le_bytes());
        for (i, c) in chunk.iter().enumerate() {
            c.encode(&mut page[HEADER + i * ENTRY..HEADER + (i + 1) * ENTRY]);
        }
        out.push(page);
    }
    out
}

/// A record page's header and entries; `None` for a page that is not one
/// (or whose counts do not fit the page).
fn decode(page: &[u8]) -> Option<(u16, u16, Vec<Change>)> {
    if page.len() < HEADER || &page[0..4] != MAGIC {
        return None;
    }
    let position = u16::from_le_bytes([page[4], page[5]]);
    let pages = u16::from_le_bytes([page[6], page[7]]);
    let n = u32::from_le_bytes([page[8], page[9], page[10], page[11]]) as usize;
    if position >= pages || n > per_page(page.len()) {
        return None;
    }
    let changes = (0..n).map(|i| Change::decode(&page[HEADER + i * ENTRY..])).collect();
    Some((position, pages, changes))
}

/// What the ring since checkpoint `ckpt_seq` makes durable: every whole
/// group's changes as L2P updates, and the groups found whole and not.
#[derive(Debug, Default)]
pub struct RingRead {
    pub updates: Vec<RecoveredUpdate>,
    pub groups: u64,
    pub partial_pages: u64,
}

/// Reads ring 0 newest first back to the checkpoint (`recover`'s step).
pub fn read(ckpt_seq: u64, logs: &mut dyn LogSource) -> Result<RingRead> {
    let mut out = RingRead::default();
    // The group being read, newest page first: its last page's sequence
    // number, the position read last, its page count, and its pages' changes.
    let mut run: Option<(u64, u16, u16)> = None;
    let mut pages: Vec<Vec<Change>> = Vec::new();
    while let Some(p) = logs.prev_page(0)? {
        if p.seq <= ckpt_seq {
            break;
        }
        let Some((position, count, changes)) = decode(&p.bytes) else {
            out.partial_pages += pages.len() as u64 + 1;
            (run, pages) = (None, Vec::new());
            continue;
        };
        run = match run {
            Some((seq, pos, n)) if n == count && position + 1 == pos => Some((seq, position, n)),
            // A group's last page starts a run; any other page outside a
            // run belongs to a group whose later pages a cut lost.
            _ if position + 1 == count => {
                out.partial_pages += pages.len() as u64;
                pages.clear();
                Some((p.seq, position, count))
            }
            _ => {
                out.partial_pages += pages.len() as u64 + 1;
                pages.clear();
                None
            }
        };
        let Some((seq, pos, _)) = run else { continue };
        pages.push(changes);
        if pos == 0 {
            // Whole: its changes in the order the flush applied them.
            let mut group = Vec::new();
            for c in pages.iter().rev().flatten() {
                c.updates(seq, &mut group);
            }
            // Read newest first, applied in sequence order: the framework
            // sorts by sequence number, stably, so a group's order stands.
            out.updates.extend(group);
            out.groups += 1;
            (run, pages) = (None, Vec::new());
        }
    }
    out.partial_pages += pages.len() as u64;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use txftl_ftl::LogPage;

    struct Ring(Vec<LogPage>);
    impl LogSource for Ring {
        fn prev_page(&mut self, _ring: usize) -> Result<Option<LogPage>> {
            Ok(self.0.pop())
        }
        fn read_page(&mut self, _ppn: Ppn) -> Result<Option<LogPage>> {
            Ok(None)
        }
    }

    fn ring(groups: &[(u64, Vec<Vec<u8>>)]) -> Ring {
        let mut pages = Vec::new();
        for (first_seq, g) in groups {
            for (i, bytes) in g.iter().enumerate() {
                pages.push(LogPage {
                    seq: first_seq + i as u64,
                    ppn: 0,
                    bytes: bytes.clone(),
                    tag: [0; txftl_ftl::PROTOCOL_BYTES],
                });
            }
        }
        Ring(pages)
    }

    #[test]
    fn a_whole_group_gives_its_changes_in_order_and_a_cut_one_nothing() {
        let size = 64;
        assert_eq!(per_page(size), 4);
        let changes: Vec<Change> = (0..6)
            .map(|i| if i == 2 { Change::Trim { lpn: 9 } } else { Change::Remap { from: 100 + i, to: i, ppn: 50 + i } })
            .collect();
        let g = encode(&changes, size, per_page(size));
        assert_eq!(g.len(), 2);
        let r = read(0, &mut ring(&[(10, g.clone())])).unwrap();
        assert_eq!(r.groups, 1);
        assert!(r.updates.iter().all(|u| u.seq == 11), "the last page's sequence number");
        assert_eq!(r.updates.len(), 11);
        assert_eq!((r.updates[0].lpn, r.updates[0].ppn), (100, UNMAPPED));
        assert_eq!((r.updates[1].lpn, r.updates[1].ppn), (0, 50));
        assert_eq!((r.updates[4].lpn, r.updates[4].ppn), (9, UNMAPPED));
        assert_eq!((r.updates[10].lpn, r.updates[10].ppn), (5, 55));
        // Its last page lost: nothing, then the older whole group behind it.
        let older = encode(&[Change::Trim { lpn: 7 }], size, 2);
        let r = read(0, &mut ring(&[(5, older.clone()), (10, g[..1].to_vec())])).unwrap();
        assert_eq!((r.groups, r.partial_pages, r.updates.len()), (1, 1, 1));
        // Its first page lost (a torn page is not handed over).
        let r = read(0, &mut ring(&[(5, older), (11, g[1..].to_vec())])).unwrap();
        assert_eq!((r.groups, r.partial_pages, r.updates.len()), (1, 1, 1));
        // At or before the checkpoint: not read.
        let r = read(11, &mut ring(&[(10, g)])).unwrap();
        assert_eq!((r.groups, r.updates.len()), (0, 0));
    }
}
