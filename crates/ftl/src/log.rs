//! Protocol log rings: a protocol's own metadata pages (X-FTL's X-L2P table
//! pages), appended to a ring of blocks without a superblock write per append.
//!
//! Every log page is self-describing: its OOB record has kind `Protocol`, the
//! ring index in its `lpn` field, a fresh sequence number and a CRC of the data,
//! so recovery tells an intact page from a torn one by itself. The protocol
//! puts whatever it needs to group pages (X-FTL: a commit group id and count)
//! in the page data, or, when the data fills the page (Atomic-Write's copies
//! of L2P table pages), in the record's protocol bytes
//! ([`Ftl::append_log_tagged`]). The superblock only names each ring's blocks.
//!
//! The framework erases a ring block when the ring enters it; the protocol must
//! first move (append again) any page it still needs out of the blocks the next
//! appends would enter: [`Ftl::log_blocks_entered`] says which. Recovery hands
//! the protocol the ring's intact pages newest first ([`LogSource`]), and the
//! protocol reads as far back as it needs.

use crate::error::{DeviceError, Result};
use crate::ftl::Ftl;
use crate::hooks::Hooks;
use crate::oob::{Oob, OobState, PageKind, PROTOCOL_BYTES};
use crate::persist::Ring;
use txftl_nand::{BlockId, Geometry, Nand, Ppn};

/// One intact page of a protocol log ring, as recovery reads it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogPage {
    pub seq: u64,
    pub ppn: Ppn,
    pub bytes: Vec<u8>,
    /// The OOB record's protocol bytes (zeros unless the page was tagged).
    pub tag: [u8; PROTOCOL_BYTES],
}

/// Recovery's view of the protocol log rings: intact pages, newest first.
pub trait LogSource {
    /// The next older intact page of ring `ring`, or None past its oldest page.
    fn prev_page(&mut self, ring: usize) -> Result<Option<LogPage>>;

    /// Physical page `ppn` outside the rings (a page the protocol wrote to
    /// the data pool and names in its log pages, such as X-FTL's spilled
    /// table pages), if it is intact: its OOB record decodes and its CRC
    /// matches the data. Timed on the device clock like the ring reads.
    fn read_page(&mut self, ppn: Ppn) -> Result<Option<LogPage>>;

    /// [`LogSource::read_page`] of every page of `ppns`, issued together:
    /// the dies and channels overlap them (Möbius verifies a transaction's
    /// pages, spread over the dies, at once). The default reads them one
    /// after another.
    fn read_pages(&mut self, ppns: &[Ppn]) -> Result<Vec<Option<LogPage>>> {
        ppns.iter().map(|&p| self.read_page(p)).collect()
    }
}

impl<H: Hooks> Ftl<H> {
    /// Appends one page to protocol log ring `ring`, synchronously (the device
    /// clock moves to the end of the program). Returns its physical page and
    /// sequence number. If entering a block swapped a worn ring block for a
    /// fresh one, a superblock naming the new ring is written before this
    /// returns, so recovery finds the page.
    pub fn append_log(&mut self, ring: usize, data: &[u8]) -> Result<(Ppn, u64)> {
        self.append_log_tagged(ring, data, &[0; PROTOCOL_BYTES])
    }

    /// [`Ftl::append_log`] with `tag` as the OOB record's protocol bytes, for
    /// a log page whose data has no room for the protocol's own header;
    /// recovery hands it back in [`LogPage::tag`].
    pub fn append_log_tagged(&mut self, ring: usize, data: &[u8], tag: &[u8; PROTOCOL_BYTES]) -> Result<(Ppn, u64)> {
        self.check_writable("protocol log append")?;
        if ring >= self.proto_rings.len() {
            return Err(DeviceError::Config(format!("protocol ring {ring} does not exist")));
        }
        let seq = self.seq;
        self.seq += 1;
        let swaps = self.ring_swaps;
        let (idx, page) = self.append(
            Ring::Protocol(ring),
            &[],
            (PageKind::Protocol, tag),
            ring as u32,
            seq,
            data,
            true,
            None,
            true,
        )?;
        self.counters.protocol_meta_writes += 1;
        if self.ring_swaps != swaps {
            let (ckpt, prev) = (self.ckpt, self.prev_ckpt);
            self.write_superblock(&ckpt, &prev)?;
        }
        let ppn = self.geo.ppn(self.proto_rings[ring].blocks[idx], page);
        Ok((ppn, seq))
    }

    /// The ring blocks the next `pages` appends to `ring` would enter (and
    /// erase), in order. A protocol moves what it still needs out of them first.
    pub fn log_blocks_entered(&self, ring: usize, pages: u32) -> Vec<BlockId> {
        let ppb = self.geo.pages_per_block;
        let area = &self.proto_rings[ring];
        let (mut idx, mut page) = (area.head_index, area.head_page);
        let mut entered = Vec::new();
        for _ in 0..pages {
            if page >= ppb {
                idx = (idx + 1) % area.blocks.len();
                entered.push(area.blocks[idx]);
                page = 0;
            }
            page += 1;
        }
        entered
    }

    /// The `k` ring blocks after the one being written, nearest first: the
    /// blocks the next appends will enter, in that order.
    pub fn log_next_blocks(&self, ring: usize, k: u32) -> Vec<BlockId> {
        let area = &self.proto_rings[ring];
        (1..=k as usize)
            .map(|i| area.blocks[(area.head_index + i) % area.blocks.len()])
            .collect()
    }

    /// Blocks in protocol ring `ring`.
    pub fn log_ring_blocks(&self, ring: usize) -> usize {
        self.proto_rings[ring].blocks.len()
    }

    /// The block holding physical page `ppn`.
    pub fn block_of(&self, ppn: Ppn) -> BlockId {
        self.geo.block_of(ppn)
    }
}

/// One ring, ordered for reading newest first.
struct RingCursor {
    /// (block, pages programmed), newest block first.
    blocks: Vec<(BlockId, u32)>,
    /// Position: index into `blocks`, and the next page to read below.
    at: usize,
    page: u32,
}

/// Reads protocol log rings newest first during recovery, timed on the device clock.
pub(crate) struct LogReader<'a> {
    nand: &'a mut Nand,
    geo: Geometry,
    rings: Vec<RingCursor>,
    pub t: u64,
    pub pages_read: u64,
    /// Largest sequence number on any ring page (new programs must exceed it).
    pub max_seq: u64,
    /// Per ring: ring index of its newest block (appends resume after it).
    pub newest_index: Vec<Option<usize>>,
}

impl<'a> LogReader<'a> {
    /// Orders every ring's blocks by the sequence number of their first page
    /// (a ring enters its blocks in order, and a block's first program follows
    /// its erase), and finds how far each block is programmed. The blocks of a
    /// ring sit on different dies: their reads are issued together, each
    /// block's in order, and OOB-only (a page whose OOB reads erased over torn
    /// data could only be the last one programmed, and is torn anyway).
    pub fn new(nand: &'a mut Nand, geo: Geometry, rings: &[Vec<BlockId>], at_ns: u64) -> Result<LogReader<'a>> {
        let mut r = LogReader {
            nand,
            geo,
            rings: Vec::new(),
            t: at_ns,
            pages_read: 0,
            max_seq: 0,
            newest_index: Vec::new(),
        };
        let mut oob = vec![0u8; geo.oob_size as usize];
        let issue = at_ns;
        for blocks in rings {
            let mut ordered = Vec::new();
            for (index, &b) in blocks.iter().enumerate() {
                let mut t = issue;
                let done = crate::ecc::read_lenient(r.nand, geo.ppn(b, 0), t, None, &mut oob)?;
                t = t.max(done);
                let first_seq = match Oob::decode(&oob) {
                    OobState::Valid(o) if o.kind == PageKind::Protocol => o.seq,
                    // A torn first program: nothing after it in this block.
                    OobState::Garbage => 0,
                    _ => {
                        r.t = r.t.max(t);
                        continue;
                    }
                };
                let programmed = r.programmed_prefix(b, &mut t)?;
                r.t = r.t.max(t);
                ordered.push((first_seq, index, b, programmed));
            }
            ordered.sort_by_key(|&(seq, ..)| std::cmp::Reverse(seq));
            r.newest_index.push(ordered.first().map(|&(_, index, ..)| index));
            // The newest page of the ring bounds every sequence number on it.
            if let Some(&(_, _, b, programmed)) = ordered.first() {
                for page in (0..programmed).rev() {
                    let done = crate::ecc::read_lenient(r.nand, geo.ppn(b, page), r.t, None, &mut oob)?;
                    r.t = r.t.max(done);
                    if let OobState::Valid(o) = Oob::decode(&oob) {
                        r.max_seq = r.max_seq.max(o.seq);
                        break;
                    }
                }
            }
            let blocks: Vec<(BlockId, u32)> = ordered.iter().map(|&(_, _, b, n)| (b, n)).collect();
            let page = blocks.first().map_or(0, |&(_, n)| n);
            r.rings.push(RingCursor { blocks, at: 0, page });
        }
        Ok(r)
    }

    /// Pages programmed at the start of `block` (a prefix: binary search over
    /// OOB-only reads from `t`, which moves to when the search is done).
    fn programmed_prefix(&mut self, block: BlockId, t: &mut u64) -> Result<u32> {
        let (mut lo, mut hi) = (0, self.geo.pages_per_block);
        let mut oob = vec![0u8; self.geo.oob_size as usize];
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let done = crate::ecc::read_lenient(self.nand, self.geo.ppn(block, mid), *t, None, &mut oob)?;
            *t = (*t).max(done);
            if !txftl_nand::is_erased(&oob) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        Ok(lo)
    }
}

impl LogSource for LogReader<'_> {
    fn prev_page(&mut self, ring: usize) -> Result<Option<LogPage>> {
        let geo = self.geo;
        let Some(cur) = self.rings.get_mut(ring) else { return Ok(None) };
        let mut buf = vec![0u8; geo.page_size as usize];
        let mut oob = vec![0u8; geo.oob_size as usize];
        loop {
            let Some(&(block, _)) = cur.blocks.get(cur.at) else {
                return Ok(None);
            };
            if cur.page == 0 {
                cur.at += 1;
                cur.page = cur.blocks.get(cur.at).map_or(0, |&(_, n)| n);
                continue;
            }
            cur.page -= 1;
            let ppn = geo.ppn(block, cur.page);
            let done = crate::ecc::read_lenient(self.nand, ppn, self.t, Some(&mut buf), &mut oob)?;
            self.t = self.t.max(done);
            self.pages_read += 1;
            match Oob::decode(&oob) {
                OobState::Valid(o) if o.kind == PageKind::Protocol && o.lpn == ring as u32 && o.data_matches(&buf) => {
                    return Ok(Some(LogPage {
                        seq: o.seq,
                        ppn,
                        bytes: buf,
                        tag: o.protocol,
                    }))
                }
                // Torn or foreign: skipped; the protocol's own grouping notices a gap.
                _ => continue,
            }
        }
    }

    fn read_page(&mut self, ppn: Ppn) -> Result<Option<LogPage>> {
        let (page, done) = self.read_at(ppn, self.t)?;
        self.t = self.t.max(done);
        Ok(page)
    }

    fn read_pages(&mut self, ppns: &[Ppn]) -> Result<Vec<Option<LogPage>>> {
        let issue = self.t;
        let mut out = Vec::with_capacity(ppns.len());
        for &ppn in ppns {
            let (page, done) = self.read_at(ppn, issue)?;
            self.t = self.t.max(done);
            out.push(page);
        }
        Ok(out)
    }
}

impl LogReader<'_> {
    /// Reads `ppn` issued at `at_ns`: the page if intact, and when the read
    /// finished (`at_ns` for a page out of range, which is not read).
    fn read_at(&mut self, ppn: Ppn, at_ns: u64) -> Result<(Option<LogPage>, u64)> {
        let geo = self.geo;
        if ppn >= geo.page_count() {
            return Ok((None, at_ns));
        }
        let mut buf = vec![0u8; geo.page_size as usize];
        let mut oob = vec![0u8; geo.oob_size as usize];
        let done = crate::ecc::read_lenient(self.nand, ppn, at_ns, Some(&mut buf), &mut oob)?;
        self.pages_read += 1;
        let page = match Oob::decode(&oob) {
            OobState::Valid(o) if o.data_matches(&buf) => Some(LogPage {
                seq: o.seq,
                ppn,
                bytes: buf,
                tag: o.protocol,
            }),
            _ => None,
        };
        Ok((page, done))
    }
}
