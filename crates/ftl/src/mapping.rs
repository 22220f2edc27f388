//! The mapping table (L2P) behind a small trait: where the table lives,
//! what a lookup costs, and what a checkpoint makes of it. A protocol picks
//! one with `Hooks::Mapping`; the framework's code is the same for all.
//!
//! - [`Dense`]: the whole table in DRAM, persisted by checkpoints as table
//!   pages (the L2P pages of the checkpoint ring, named by its directory),
//!   rolled forward from the pages' spare areas after the last one.
//! - [`Unpersisted`]: the whole table in DRAM, never written: checkpoints
//!   write no L2P page, recovery starts from an empty table and the protocol
//!   rebuilds every mapping from the pages it scans (TxFlash's SCC and BPCC,
//!   which keep no mapping table on flash), and trims are refused (a trim is
//!   made durable only by a checkpoint's L2P).
//! - [`Cached`]: DFTL's demand-paged table (Gupta, Kim, Urgaonkar; ASPLOS
//!   2009), which Möbius builds on. The checkpoint's L2P pages are the
//!   translation pages and its directory the global translation directory;
//!   the device's DRAM caches a bounded number of them, least recently used
//!   first out. A host read, write or trim of an entry whose page is not
//!   cached first reads that page from flash and takes its entries from it
//!   ([`Mapping::fetch`]; the framework's `Ftl::fetch_mapping`). A page
//!   that changed since it was last written cannot simply be dropped from
//!   the cache: when one must go to make room, the framework writes it back
//!   alone to the checkpoint ring and names the new copy in the directory
//!   it keeps in DRAM (DFTL's write-back; the directory is persisted by the
//!   next checkpoint), or, with [`Eviction::Checkpoint`], takes a checkpoint
//!   (every changed page at once).
//!
//! Entries are physical page numbers, [`UNMAPPED`] for none, held in
//! [`Entries`].

use crate::checkpoint::UNMAPPED;
use crate::device::Lpn;
use crate::error::Result;
use std::collections::BTreeMap;
use std::ops::Range;
use txftl_nand::Ppn;

/// A logical-to-physical table.
pub trait Mapping: Clone + Send + Sized {
    /// Whether checkpoints persist the table. If not, recovery starts from
    /// an empty table and the protocol must rebuild every mapping from the
    /// pages it scans (`Capabilities::scans_pages`; the framework refuses
    /// the one without the other), and trims are refused.
    const PERSISTED: bool;

    /// A table of `logical_pages` entries, all unmapped. The largest
    /// allocation of a device: an allocation the machine refuses is
    /// `DeviceError::Memory`, never an abort.
    fn unmapped(logical_pages: u32) -> Result<Self>;

    fn len(&self) -> u32;

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The physical page of `lpn`, or [`UNMAPPED`].
    fn get(&self, lpn: Lpn) -> Ppn;

    fn set(&mut self, lpn: Lpn, ppn: Ppn);

    /// Every entry, in logical order (checkers, recovery's rebuilds, table
    /// pages as they are encoded).
    fn entries(&self) -> &Entries;

    /// Every entry, to change (a checkpoint's table page, as it is decoded).
    fn entries_mut(&mut self) -> &mut Entries;

    /// Whether only some table pages are in the device's DRAM: the
    /// framework then asks [`Mapping::fetch`] before a host lookup.
    const CACHED: bool = false;

    /// Before a host read, write or trim looks up an entry of table page
    /// `page`: whether the device's DRAM holds the page. On a miss the page
    /// enters the cache (the framework reads it from flash), and `victim`
    /// is the page that leaves to make room, if the cache was full.
    fn fetch(&mut self, _page: u32) -> Fetch {
        Fetch::Hit
    }

    /// How a victim that changed leaves the cache.
    fn eviction(&self) -> Eviction {
        Eviction::Checkpoint
    }

    /// What the framework did for victim `page` as it left.
    fn evicted(&mut self, _page: u32, _how: Evicted) {}

    /// Counts of the cache, for its protocol's report.
    fn cache_counts(&self) -> CacheCounts {
        CacheCounts::default()
    }

    /// Forgets the counts (the device's `reset_stats`).
    fn reset_cache_counts(&mut self) {}
}

/// What [`Mapping::fetch`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fetch {
    /// The page is in DRAM.
    Hit,
    /// It is not: read it from flash, after `victim` left the cache.
    Miss { victim: Option<u32> },
}

/// How a cached table's changed victim leaves the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Eviction {
    /// DFTL's: the one page is written back to the checkpoint ring, named by
    /// the directory in DRAM until the next checkpoint persists it; when the
    /// ring's room for write-backs between checkpoints is used up, a
    /// checkpoint instead (`Ftl::write_back_table_page`).
    WriteBack,
    /// A checkpoint (every changed page, the block table, a record and a
    /// superblock) before the victim leaves.
    Checkpoint,
    /// Möbius's Resident Area: the victim leaves unwritten, its changed
    /// entries stay in DRAM (resident) until the next checkpoint writes the
    /// page, and a later miss reads its flash copy for the other entries.
    /// For a protocol whose own log holds every change since the checkpoint
    /// (Möbius's active ALA) or that recovery rolls forward.
    Resident,
}

/// What happened to a victim as it left the cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Evicted {
    /// It had not changed since it was last written: dropped.
    Clean,
    /// Written back alone.
    WrittenBack,
    /// Written by a checkpoint.
    Checkpointed,
    /// Left unwritten, its changed entries resident.
    Resident,
}

/// A cached table's counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounts {
    /// Host lookups whose table page was not cached.
    pub misses: u64,
    /// Changed victims written back alone.
    pub written_back: u64,
    /// Changed victims written by a checkpoint.
    pub checkpointed: u64,
    /// Changed victims left unwritten, their changed entries resident.
    pub resident: u64,
}

/// An L2P's entries in DRAM, one per logical page. Each is stored inverted
/// (`!ppn`), so that [`UNMAPPED`] (all ones) is a zero word: a new table is
/// the kernel's zeroed pages, which take no memory and no time until an
/// entry is set, and set-up costs what a run maps, not the capacity.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entries {
    stored: Vec<u32>,
}

impl Entries {
    /// `n` entries, all unmapped; a refused allocation is
    /// `DeviceError::Memory`.
    pub fn unmapped(n: usize) -> Result<Entries> {
        const { assert!(!UNMAPPED == 0, "UNMAPPED is stored as zero") };
        Ok(Entries {
            stored: crate::memory::filled(n, 0u32)?,
        })
    }

    pub fn len(&self) -> usize {
        self.stored.len()
    }

    pub fn is_empty(&self) -> bool {
        self.stored.is_empty()
    }

    /// The physical page of `lpn`, or [`UNMAPPED`].
    #[inline]
    pub fn get(&self, lpn: usize) -> Ppn {
        !self.stored[lpn]
    }

    #[inline]
    pub fn set(&mut self, lpn: usize, ppn: Ppn) {
        self.stored[lpn] = !ppn;
    }

    /// The entries of `lpns`, in order.
    pub fn range(&self, lpns: Range<usize>) -> impl ExactSizeIterator<Item = Ppn> + '_ {
        self.stored[lpns].iter().map(|&s| !s)
    }

    /// Every entry, in logical order.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = Ppn> + '_ {
        self.range(0..self.len())
    }

    /// Whether any of `lpns` is mapped.
    pub fn any_mapped(&self, lpns: Range<usize>) -> bool {
        self.stored[lpns].iter().any(|&s| s != !UNMAPPED)
    }

    /// Every entry as a plain vector (checkers).
    pub fn to_vec(&self) -> Vec<Ppn> {
        self.iter().collect()
    }

    /// Writes the entries of `lpns` as an L2P page (the checkpoint's
    /// format: `checkpoint::encode_map_page`).
    pub fn encode_page(&self, lpns: Range<usize>, page: &mut [u8]) {
        crate::checkpoint::encode_map_entries(self.range(lpns), page);
    }

    /// Takes the entries of `lpns` from an L2P page.
    pub fn decode_page(&mut self, lpns: Range<usize>, page: &[u8]) {
        for (s, ppn) in self.stored[lpns].iter_mut().zip(crate::checkpoint::map_page_entries(page)) {
            *s = !ppn;
        }
    }
}

/// The whole table in DRAM. `PERSISTED`: checkpoints write it.
#[derive(Clone, Debug, Default)]
pub struct DenseTable<const PERSISTED: bool> {
    ppns: Entries,
}

/// Today's FTL table: whole in DRAM, persisted by checkpoints.
pub type Dense = DenseTable<true>;
/// Whole in DRAM and never written: the protocol rebuilds it at every mount.
pub type Unpersisted = DenseTable<false>;

impl<const P: bool> Mapping for DenseTable<P> {
    const PERSISTED: bool = P;

    fn unmapped(logical_pages: u32) -> Result<Self> {
        Ok(DenseTable {
            ppns: Entries::unmapped(logical_pages as usize)?,
        })
    }

    fn len(&self) -> u32 {
        self.ppns.len() as u32
    }

    #[inline]
    fn get(&self, lpn: Lpn) -> Ppn {
        self.ppns.get(lpn as usize)
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, ppn: Ppn) {
        self.ppns.set(lpn as usize, ppn);
    }

    fn entries(&self) -> &Entries {
        &self.ppns
    }

    fn entries_mut(&mut self) -> &mut Entries {
        &mut self.ppns
    }
}

/// DFTL's demand-paged table: the whole table in the emulator's memory (the
/// entries of a page not cached are those its flash copy holds, since a
/// changed page is written before it leaves the cache), and which table
/// pages the device's DRAM holds, least recently used first out.
#[derive(Clone, Debug)]
pub struct Cached {
    table: Entries,
    /// Table pages the device's DRAM holds at most.
    capacity: u32,
    eviction: Eviction,
    /// Per table page: when it was last used, if cached.
    last_use: Vec<Option<u64>>,
    /// Cached pages by last use.
    lru: BTreeMap<u64, u32>,
    tick: u64,
    counts: CacheCounts,
}

impl Cached {
    /// A table of `logical_pages` entries whose DRAM holds `capacity` table
    /// pages of `entries_per_page` entries (at least one); changed victims
    /// are written back alone.
    pub fn new(logical_pages: u32, entries_per_page: u32, capacity: u32) -> Result<Cached> {
        let pages = logical_pages.div_ceil(entries_per_page.max(1)) as usize;
        Ok(Cached {
            table: Entries::unmapped(logical_pages as usize)?,
            capacity: capacity.max(1),
            eviction: Eviction::WriteBack,
            last_use: vec![None; pages],
            lru: BTreeMap::new(),
            tick: 0,
            counts: CacheCounts::default(),
        })
    }

    /// The same table with changed victims leaving by `eviction`.
    pub fn with_eviction(mut self, eviction: Eviction) -> Cached {
        self.eviction = eviction;
        self
    }

    pub fn capacity(&self) -> u32 {
        self.capacity
    }

    /// Table pages cached now.
    pub fn cached_pages(&self) -> usize {
        self.lru.len()
    }
}

impl Mapping for Cached {
    const PERSISTED: bool = true;
    const CACHED: bool = true;

    /// Room for one cached page; a protocol sizes its cache with [`Cached::new`].
    fn unmapped(logical_pages: u32) -> Result<Self> {
        Cached::new(logical_pages, logical_pages.max(1), 1)
    }

    fn len(&self) -> u32 {
        self.table.len() as u32
    }

    #[inline]
    fn get(&self, lpn: Lpn) -> Ppn {
        self.table.get(lpn as usize)
    }

    #[inline]
    fn set(&mut self, lpn: Lpn, ppn: Ppn) {
        self.table.set(lpn as usize, ppn);
    }

    fn entries(&self) -> &Entries {
        &self.table
    }

    fn entries_mut(&mut self) -> &mut Entries {
        &mut self.table
    }

    fn fetch(&mut self, page: u32) -> Fetch {
        self.tick += 1;
        let slot = &mut self.last_use[page as usize];
        if let Some(t) = slot.replace(self.tick) {
            self.lru.remove(&t);
            self.lru.insert(self.tick, page);
            return Fetch::Hit;
        }
        self.counts.misses += 1;
        let victim = if self.lru.len() as u32 >= self.capacity {
            self.lru.pop_first().map(|(_, v)| {
                self.last_use[v as usize] = None;
                v
            })
        } else {
            None
        };
        self.lru.insert(self.tick, page);
        Fetch::Miss { victim }
    }

    fn eviction(&self) -> Eviction {
        self.eviction
    }

    fn evicted(&mut self, _page: u32, how: Evicted) {
        match how {
            Evicted::Clean => {}
            Evicted::WrittenBack => self.counts.written_back += 1,
            Evicted::Checkpointed => self.counts.checkpointed += 1,
            Evicted::Resident => self.counts.resident += 1,
        }
    }

    fn cache_counts(&self) -> CacheCounts {
        self.counts
    }

    fn reset_cache_counts(&mut self) {
        self.counts = CacheCounts::default();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_start_unmapped_and_read_back_what_is_set_and_decoded() {
        let mut e = Entries::unmapped(10).unwrap();
        assert!(e.iter().all(|p| p == UNMAPPED));
        assert!(!e.any_mapped(0..10));
        e.set(3, 0);
        e.set(7, 12345);
        assert_eq!((e.get(3), e.get(7), e.get(4)), (0, 12345, UNMAPPED));
        assert!(e.any_mapped(3..4) && !e.any_mapped(4..7));
        // Through an L2P page and back, as the plain encoder writes it.
        let mut page = vec![0u8; 64];
        e.encode_page(2..9, &mut page);
        let plain: Vec<Ppn> = (2..9).map(|l| e.get(l)).collect();
        let mut same = vec![0u8; 64];
        crate::checkpoint::encode_map_page(&plain, &mut same);
        assert_eq!(page, same);
        let mut back = Entries::unmapped(10).unwrap();
        back.decode_page(2..9, &page);
        assert_eq!(back, e);
        back.set(7, UNMAPPED);
        assert_eq!(back.to_vec().iter().filter(|&&p| p != UNMAPPED).count(), 1);
    }

    #[test]
    fn the_cache_holds_its_capacity_and_lets_the_least_recently_used_go() {
        let mut c = Cached::new(40, 10, 2).unwrap();
        assert_eq!(c.fetch(0), Fetch::Miss { victim: None });
        assert_eq!(c.fetch(1), Fetch::Miss { victim: None });
        assert_eq!(c.fetch(0), Fetch::Hit);
        assert_eq!(c.fetch(2), Fetch::Miss { victim: Some(1) });
        assert_eq!(c.fetch(3), Fetch::Miss { victim: Some(0) });
        assert_eq!(c.fetch(2), Fetch::Hit);
        assert_eq!(c.cached_pages(), 2);
        c.evicted(0, Evicted::WrittenBack);
        c.evicted(1, Evicted::Checkpointed);
        c.evicted(2, Evicted::Clean);
        let counts = CacheCounts {
            misses: 4,
            written_back: 1,
            checkpointed: 1,
            resident: 0,
        };
        assert_eq!(c.cache_counts(), counts);
    }
}
