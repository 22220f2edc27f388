//! txftl-fs: a small file system on the logical pages of a txftl device.
//!
//! One flat directory of at most 64 files, each a list of at most 16 extents;
//! a bitmap allocator (long-lived files grow from the low end of the data area,
//! journals and WAL files from the high end, so a database stays contiguous).
//! Data goes to the device as it is written; metadata (inodes, bitmap) is kept
//! in memory and made durable at `fsync`, or at once for namespace changes
//! (create, delete, truncate), in one of two ways:
//!
//! - [`FsMode::Journaled`], for devices without transactions: like ext4's ordered
//!   mode. A flush makes the data durable first, then the dirty metadata pages go
//!   to the journal area with a descriptor and a commit record, a flush (the write
//!   barrier), then the pages are written in place. Mount replays a committed
//!   journal transaction (idempotently).
//! - [`FsMode::Transactional`], on X-FTL: the file system hands out transaction
//!   ids. While a transaction is open every page write (data and metadata) carries
//!   its id, and its commit makes data and metadata durable atomically, with no
//!   journal; an abort drops both. Namespace changes outside a transaction run in
//!   a transaction of their own.
//!
//! Metadata writes are counted apart from data writes, and data writes by the
//! class of file (database, rollback journal, WAL).

mod layout;

pub use layout::{Layout, EXTENTS_MAX, INODE_COUNT, NAME_MAX};

use layout::INODE_BYTES;
use serde::Serialize;
use std::collections::BTreeSet;
use txftl_ftl::{DeviceError, Lpn, Tid};
use txftl_protocols::AnyDevice;

#[derive(Debug, thiserror::Error)]
pub enum FsError {
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    #[error("{0}")]
    Format(String),
    #[error("no file named `{0}`")]
    NotFound(String),
    #[error("file name `{0}` is longer than {NAME_MAX} bytes")]
    NameTooLong(String),
    #[error("all {INODE_COUNT} inodes are in use")]
    NoInodes,
    #[error("the file system is full")]
    NoSpace,
    #[error("file `{0}` would need more than {EXTENTS_MAX} extents")]
    TooFragmented(String),
    #[error("bad file handle {0}")]
    BadHandle(u32),
    #[error("transactions need a transactional device (mount in journaled mode on this one)")]
    NotTransactional,
    #[error("a transaction is already open")]
    TransactionOpen,
    #[error("journal corrupted: {0}")]
    Journal(String),
}

pub type Result<T> = std::result::Result<T, FsError>;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FsMode {
    Journaled,
    Transactional,
}

/// What a file is for (counted apart).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FileClass {
    Other = 0,
    Database = 1,
    Journal = 2,
    Wal = 3,
}

impl FileClass {
    fn from_u8(v: u8) -> FileClass {
        match v {
            1 => FileClass::Database,
            2 => FileClass::Journal,
            3 => FileClass::Wal,
            _ => FileClass::Other,
        }
    }
}

/// Host-side counters of the file system.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct FsStats {
    /// Page writes of database files.
    pub database_page_writes: u64,
    /// Page writes of rollback journal files.
    pub journal_page_writes: u64,
    /// Page writes of WAL files.
    pub wal_page_writes: u64,
    pub other_page_writes: u64,
    /// Metadata pages written in place.
    pub metadata_page_writes: u64,
    /// Metadata pages written to the metadata journal (descriptor and commit records included).
    pub metadata_journal_writes: u64,
    /// fsync calls from the host.
    pub fsyncs: u64,
    /// Device flushes (write barriers) the file system issued.
    pub flushes: u64,
    /// Transactions committed / aborted on the device.
    pub tx_commits: u64,
    pub tx_aborts: u64,
    pub page_reads: u64,
}

impl FsStats {
    pub fn host_page_writes(&self) -> u64 {
        self.database_page_writes
            + self.journal_page_writes
            + self.wal_page_writes
            + self.other_page_writes
            + self.metadata_page_writes
            + self.metadata_journal_writes
    }
}

/// A file, by inode number.
pub type Ino = u32;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Inode {
    used: bool,
    class: u8,
    name: String,
    size: u64,
    extents: Vec<(u32, u32)>,
}

impl Inode {
    fn encode(&self, out: &mut [u8]) {
        out.fill(0);
        if !self.used {
            return;
        }
        out[0] = 1;
        out[1] = self.class;
        out[2..4].copy_from_slice(&(self.name.len() as u16).to_le_bytes());
        out[4..4 + self.name.len()].copy_from_slice(self.name.as_bytes());
        out[64..72].copy_from_slice(&self.size.to_le_bytes());
        out[72..76].copy_from_slice(&(self.extents.len() as u32).to_le_bytes());
        for (i, (start, len)) in self.extents.iter().enumerate() {
            out[80 + 8 * i..84 + 8 * i].copy_from_slice(&start.to_le_bytes());
            out[84 + 8 * i..88 + 8 * i].copy_from_slice(&len.to_le_bytes());
        }
    }

    fn decode(b: &[u8]) -> Result<Inode> {
        if b[0] == 0 {
            return Ok(Inode::default());
        }
        let u = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        let name_len = u16::from_le_bytes([b[2], b[3]]) as usize;
        let n = u(72) as usize;
        if name_len > NAME_MAX || n > EXTENTS_MAX {
            return Err(FsError::Format("corrupted inode".into()));
        }
        Ok(Inode {
            used: true,
            class: b[1],
            name: String::from_utf8_lossy(&b[4..4 + name_len]).into_owned(),
            size: u64::from_le_bytes(b[64..72].try_into().expect("8 bytes")),
            extents: (0..n).map(|i| (u(80 + 8 * i), u(84 + 8 * i))).collect(),
        })
    }

    fn pages(&self) -> u32 {
        self.extents.iter().map(|e| e.1).sum()
    }

    /// Device page of file page `index`.
    fn page(&self, mut index: u32) -> Option<Lpn> {
        for &(start, len) in &self.extents {
            if index < len {
                return Some(start + index);
            }
            index -= len;
        }
        None
    }
}

pub struct Fs {
    dev: Box<dyn AnyDevice>,
    mode: FsMode,
    layout: Layout,
    inodes: Vec<Inode>,
    /// One bit per data page (bit set: allocated).
    bitmap: Vec<u8>,
    /// Metadata pages changed since they were last made durable.
    dirty: BTreeSet<Lpn>,
    journal_seq: u64,
    next_tid: Tid,
    tx: Option<Tid>,
    stats: FsStats,
    buf: Vec<u8>,
}

const JOURNAL_MAGIC: &[u8; 8] = b"TXFTLFJ1";
/// Longest free run a journal or WAL file is started at the bottom of.
const RUN_MAX: u32 = 4096;
const COMMIT_MAGIC: &[u8; 8] = b"TXFTLFC1";

impl Fs {
    /// Creates an empty file system on the device (all logical pages).
    pub fn format(mut dev: Box<dyn AnyDevice>, mode: FsMode) -> Result<Fs> {
        if mode == FsMode::Transactional && !dev.transactional() {
            return Err(FsError::NotTransactional);
        }
        let info = dev.info();
        let layout = Layout::new(info.page_size, info.logical_pages)?;
        let mut page = vec![0u8; info.page_size as usize];
        layout.encode(&mut page);
        dev.write(0, &page)?;
        let mut fs = Fs::empty(dev, mode, layout);
        fs.dirty.extend(layout.meta_pages());
        fs.make_meta_durable()?;
        fs.dev.flush()?;
        fs.stats = FsStats::default();
        Ok(fs)
    }

    /// Mounts the file system: replays a committed metadata journal transaction
    /// (journaled mode), then loads the metadata.
    pub fn mount(mut dev: Box<dyn AnyDevice>, mode: FsMode) -> Result<Fs> {
        if mode == FsMode::Transactional && !dev.transactional() {
            return Err(FsError::NotTransactional);
        }
        let info = dev.info();
        let mut page = vec![0u8; info.page_size as usize];
        dev.read(0, &mut page)?;
        let layout = Layout::decode(&page)?;
        if layout.page_size != info.page_size || layout.total_pages != info.logical_pages {
            return Err(FsError::Format("file system geometry does not match the device".into()));
        }
        let mut fs = Fs::empty(dev, mode, layout);
        fs.replay_journal()?;
        fs.load_meta()?;
        Ok(fs)
    }

    fn empty(dev: Box<dyn AnyDevice>, mode: FsMode, layout: Layout) -> Fs {
        let ps = layout.page_size as usize;
        Fs {
            dev,
            mode,
            inodes: vec![Inode::default(); INODE_COUNT as usize],
            bitmap: vec![0; layout.bitmap_pages as usize * ps],
            dirty: BTreeSet::new(),
            journal_seq: 0,
            next_tid: 1,
            tx: None,
            stats: FsStats::default(),
            buf: vec![0; ps],
            layout,
        }
    }

    pub fn device(&self) -> &dyn AnyDevice {
        &*self.dev
    }
    pub fn device_mut(&mut self) -> &mut dyn AnyDevice {
        &mut *self.dev
    }
    /// Hands the device back (a power cut drops the file system's DRAM state with it).
    pub fn into_device(self) -> Box<dyn AnyDevice> {
        self.dev
    }
    pub fn stats(&self) -> FsStats {
        self.stats
    }
    pub fn reset_stats(&mut self) {
        self.stats = FsStats::default();
    }
    pub fn mode(&self) -> FsMode {
        self.mode
    }
    pub fn page_size(&self) -> usize {
        self.layout.page_size as usize
    }
    pub fn in_transaction(&self) -> Option<Tid> {
        self.tx
    }

    // ---- metadata pages ---------------------------------------------------------

    /// The bytes of metadata page `lpn` as they are in memory.
    fn meta_image(&self, lpn: Lpn, out: &mut [u8]) {
        let l = &self.layout;
        let ps = self.page_size();
        if (l.inode_start..l.inode_start + l.inode_pages).contains(&lpn) {
            out.fill(0);
            let per_page = ps / INODE_BYTES;
            let first = (lpn - l.inode_start) as usize * per_page;
            for i in 0..per_page {
                if let Some(inode) = self.inodes.get(first + i) {
                    inode.encode(&mut out[i * INODE_BYTES..(i + 1) * INODE_BYTES]);
                }
            }
        } else {
            let i = (lpn - l.bitmap_start) as usize;
            out.copy_from_slice(&self.bitmap[i * ps..(i + 1) * ps]);
        }
    }

    fn load_meta(&mut self) -> Result<()> {
        let l = self.layout;
        let ps = self.page_size();
        let per_page = ps / INODE_BYTES;
        let mut page = vec![0u8; ps];
        for p in 0..l.inode_pages {
            self.read_dev(l.inode_start + p, &mut page)?;
            for i in 0..per_page {
                let ino = p as usize * per_page + i;
                if ino < INODE_COUNT as usize {
                    self.inodes[ino] = Inode::decode(&page[i * INODE_BYTES..(i + 1) * INODE_BYTES])?;
                }
            }
        }
        for p in 0..l.bitmap_pages {
            self.read_dev(l.bitmap_start + p, &mut page)?;
            self.bitmap[p as usize * ps..(p as usize + 1) * ps].copy_from_slice(&page);
        }
        self.dirty.clear();
        Ok(())
    }

    fn read_dev(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<()> {
        self.stats.page_reads += 1;
        match self.tx {
            Some(tid) => self.dev.read_tx(tid, lpn, buf)?,
            None => self.dev.read(lpn, buf)?,
        };
        Ok(())
    }

    fn write_dev(&mut self, lpn: Lpn, data: &[u8]) -> Result<()> {
        match self.tx {
            Some(tid) => self.dev.write_tx(tid, lpn, data)?,
            None => self.dev.write(lpn, data)?,
        };
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.dev.flush()?;
        self.stats.flushes += 1;
        Ok(())
    }

    /// Makes the dirty metadata durable, as the mode says.
    fn make_meta_durable(&mut self) -> Result<()> {
        if self.dirty.is_empty() {
            return Ok(());
        }
        match self.mode {
            FsMode::Journaled => self.journal_commit(),
            FsMode::Transactional => {
                if self.tx.is_some() {
                    // Written with the open transaction at its commit.
                    return Ok(());
                }
                let tid = self.begin()?;
                self.commit(tid)
            }
        }
    }

    /// Writes the dirty metadata pages with the current transaction (or none).
    fn write_dirty_in_place(&mut self) -> Result<()> {
        let mut page = vec![0u8; self.page_size()];
        for lpn in std::mem::take(&mut self.dirty) {
            self.meta_image(lpn, &mut page);
            self.write_dev(lpn, &page)?;
            self.stats.metadata_page_writes += 1;
        }
        Ok(())
    }

    /// Ordered-mode journal commit: data first, then the metadata to the
    /// journal, a barrier, then in place.
    fn journal_commit(&mut self) -> Result<()> {
        self.flush()?;
        let l = self.layout;
        let ps = self.page_size();
        let homes: Vec<Lpn> = self.dirty.iter().copied().collect();
        self.journal_seq += 1;
        let mut images = Vec::with_capacity(homes.len());
        let mut page = vec![0u8; ps];
        let mut crc = crc32fast::Hasher::new();
        for &h in &homes {
            self.meta_image(h, &mut page);
            crc.update(&page);
            images.push(page.clone());
        }
        let crc = crc.finalize();
        // Descriptor: magic, sequence, count, CRC of the images, home pages.
        let mut desc = vec![0u8; ps];
        desc[0..8].copy_from_slice(JOURNAL_MAGIC);
        desc[8..16].copy_from_slice(&self.journal_seq.to_le_bytes());
        desc[16..20].copy_from_slice(&(homes.len() as u32).to_le_bytes());
        desc[20..24].copy_from_slice(&crc.to_le_bytes());
        for (i, h) in homes.iter().enumerate() {
            desc[24 + 4 * i..28 + 4 * i].copy_from_slice(&h.to_le_bytes());
        }
        self.dev.write(l.journal_start, &desc)?;
        for (i, img) in images.iter().enumerate() {
            self.dev.write(l.journal_start + 1 + i as u32, img)?;
        }
        let mut commit = vec![0u8; ps];
        commit[0..8].copy_from_slice(COMMIT_MAGIC);
        commit[8..16].copy_from_slice(&self.journal_seq.to_le_bytes());
        commit[16..20].copy_from_slice(&crc.to_le_bytes());
        self.dev.write(l.journal_start + 1 + homes.len() as u32, &commit)?;
        self.stats.metadata_journal_writes += homes.len() as u64 + 2;
        self.flush()?;
        for (h, img) in homes.iter().zip(&images) {
            self.dev.write(*h, img)?;
            self.stats.metadata_page_writes += 1;
        }
        self.dirty.clear();
        Ok(())
    }

    /// Mount: if the journal holds a committed transaction, write it in place again.
    fn replay_journal(&mut self) -> Result<()> {
        let l = self.layout;
        let ps = self.page_size();
        let mut desc = vec![0u8; ps];
        self.dev.read(l.journal_start, &mut desc)?;
        if &desc[0..8] != JOURNAL_MAGIC {
            return Ok(());
        }
        let seq = u64::from_le_bytes(desc[8..16].try_into().expect("8 bytes"));
        let count = u32::from_le_bytes(desc[16..20].try_into().expect("4 bytes"));
        let crc = u32::from_le_bytes(desc[20..24].try_into().expect("4 bytes"));
        if count + 2 > l.journal_pages || 24 + 4 * count as usize > ps {
            return Err(FsError::Journal(format!("descriptor names {count} pages")));
        }
        let mut commit = vec![0u8; ps];
        self.dev.read(l.journal_start + 1 + count, &mut commit)?;
        let committed = &commit[0..8] == COMMIT_MAGIC
            && u64::from_le_bytes(commit[8..16].try_into().expect("8 bytes")) == seq
            && u32::from_le_bytes(commit[16..20].try_into().expect("4 bytes")) == crc;
        self.journal_seq = seq;
        if !committed {
            return Ok(()); // torn journal transaction: its metadata never went in place
        }
        let mut images = Vec::with_capacity(count as usize);
        let mut hasher = crc32fast::Hasher::new();
        for i in 0..count {
            let mut img = vec![0u8; ps];
            self.dev.read(l.journal_start + 1 + i, &mut img)?;
            hasher.update(&img);
            images.push(img);
        }
        if hasher.finalize() != crc {
            return Ok(()); // the commit record of an older transaction over newer pages
        }
        for (i, img) in images.iter().enumerate() {
            let home = u32::from_le_bytes(desc[24 + 4 * i..28 + 4 * i].try_into().expect("4 bytes"));
            if !l.meta_pages().contains(&home) {
                return Err(FsError::Journal(format!("journal names page {home}, not a metadata page")));
            }
            self.dev.write(home, img)?;
        }
        self.dev.flush()?;
        Ok(())
    }

    // ---- transactions (transactional mode) -------------------------------------

    /// Opens a transaction: every page written until commit or abort carries its id.
    pub fn begin(&mut self) -> Result<Tid> {
        if self.mode != FsMode::Transactional {
            return Err(FsError::NotTransactional);
        }
        if self.tx.is_some() {
            return Err(FsError::TransactionOpen);
        }
        let tid = self.next_tid;
        self.next_tid = self.next_tid.wrapping_add(1).max(1);
        self.dev.begin(tid)?;
        self.tx = Some(tid);
        Ok(tid)
    }

    /// Commits: the metadata changed inside the transaction joins it, then the
    /// device commits data and metadata atomically.
    pub fn commit(&mut self, tid: Tid) -> Result<()> {
        if self.tx != Some(tid) {
            return Err(FsError::Device(DeviceError::UnknownTransaction(tid)));
        }
        self.write_dirty_in_place()?;
        self.dev.commit(tid)?;
        self.tx = None;
        self.stats.tx_commits += 1;
        Ok(())
    }

    /// Aborts: the device drops the transaction's pages; in-memory metadata is
    /// reloaded from the device (the last committed state).
    pub fn abort(&mut self, tid: Tid) -> Result<()> {
        if self.tx != Some(tid) {
            return Err(FsError::Device(DeviceError::UnknownTransaction(tid)));
        }
        self.dev.abort(tid)?;
        self.tx = None;
        self.stats.tx_aborts += 1;
        self.load_meta()
    }

    // ---- files ------------------------------------------------------------------

    pub fn lookup(&self, name: &str) -> Option<Ino> {
        self.inodes.iter().position(|i| i.used && i.name == name).map(|i| i as Ino)
    }

    pub fn class(&self, ino: Ino) -> Result<FileClass> {
        Ok(FileClass::from_u8(self.inode(ino)?.class))
    }

    fn inode(&self, ino: Ino) -> Result<&Inode> {
        self.inodes.get(ino as usize).filter(|i| i.used).ok_or(FsError::BadHandle(ino))
    }

    fn mark_inode_dirty(&mut self, ino: Ino) {
        let per_page = (self.page_size() / INODE_BYTES) as u32;
        self.dirty.insert(self.layout.inode_start + ino / per_page);
    }

    /// Creates an empty file; durable when this returns.
    pub fn create(&mut self, name: &str, class: FileClass) -> Result<Ino> {
        if name.len() > NAME_MAX {
            return Err(FsError::NameTooLong(name.into()));
        }
        if let Some(ino) = self.lookup(name) {
            return Ok(ino);
        }
        let ino = self.inodes.iter().position(|i| !i.used).ok_or(FsError::NoInodes)? as Ino;
        self.inodes[ino as usize] = Inode {
            used: true,
            class: class as u8,
            name: name.into(),
            size: 0,
            extents: Vec::new(),
        };
        self.mark_inode_dirty(ino);
        self.make_meta_durable()?;
        Ok(ino)
    }

    /// Deletes a file; durable when this returns.
    pub fn delete(&mut self, name: &str) -> Result<()> {
        let ino = self.lookup(name).ok_or_else(|| FsError::NotFound(name.into()))?;
        self.free_pages_from(ino, 0);
        self.inodes[ino as usize] = Inode::default();
        self.mark_inode_dirty(ino);
        self.make_meta_durable()
    }

    pub fn size(&self, ino: Ino) -> Result<u64> {
        Ok(self.inode(ino)?.size)
    }

    /// Sets the file size; durable when this returns.
    pub fn truncate(&mut self, ino: Ino, size: u64) -> Result<()> {
        let ps = self.page_size() as u64;
        let old = self.inode(ino)?.size;
        if size < old {
            self.free_pages_from(ino, size.div_ceil(ps) as u32);
            // Zero the tail of the last page so a later growth reads zeros.
            if !size.is_multiple_of(ps) {
                let idx = (size / ps) as u32;
                if let Some(lpn) = self.inode(ino)?.page(idx) {
                    let mut page = vec![0u8; ps as usize];
                    self.read_dev(lpn, &mut page)?;
                    page[(size % ps) as usize..].fill(0);
                    self.write_page(ino, lpn, &page)?;
                }
            }
        } else if size > old {
            self.ensure_pages(ino, size.div_ceil(ps) as u32)?;
        }
        self.inodes[ino as usize].size = size;
        self.mark_inode_dirty(ino);
        self.make_meta_durable()
    }

    fn bit(&self, i: u32) -> bool {
        self.bitmap[i as usize / 8] & (1 << (i % 8)) != 0
    }

    fn set_bit(&mut self, i: u32, on: bool) {
        let byte = &mut self.bitmap[i as usize / 8];
        if on {
            *byte |= 1 << (i % 8);
        } else {
            *byte &= !(1 << (i % 8));
        }
        let ps = self.page_size() as u32;
        self.dirty.insert(self.layout.bitmap_start + i / (8 * ps));
    }

    fn free_pages_from(&mut self, ino: Ino, keep: u32) {
        let extents = std::mem::take(&mut self.inodes[ino as usize].extents);
        let mut kept = Vec::new();
        let mut seen = 0;
        for (start, len) in extents {
            let keep_here = keep.saturating_sub(seen).min(len);
            if keep_here > 0 {
                kept.push((start, keep_here));
            }
            for p in start + keep_here..start + len {
                self.set_bit(p - self.layout.data_start, false);
            }
            seen += len;
        }
        self.inodes[ino as usize].extents = kept;
        self.mark_inode_dirty(ino);
    }

    /// Allocates one data page for `ino`: right after its last page if free,
    /// else the first free page from the low end (databases) or high end (others).
    fn allocate(&mut self, ino: Ino) -> Result<Lpn> {
        let l = self.layout;
        let inode = &self.inodes[ino as usize];
        if let Some(&(start, len)) = inode.extents.last() {
            let next = start + len;
            if next < l.total_pages && !self.bit(next - l.data_start) {
                self.set_bit(next - l.data_start, true);
                self.inodes[ino as usize].extents.last_mut().expect("last extent").1 += 1;
                return Ok(next);
            }
        }
        if inode.extents.len() >= EXTENTS_MAX {
            return Err(FsError::TooFragmented(inode.name.clone()));
        }
        // Journals and WAL files come and go: they live at the high end so the
        // long-lived files (databases, others) stay contiguous at the low end.
        let low = !matches!(FileClass::from_u8(inode.class), FileClass::Journal | FileClass::Wal);
        let i = if low {
            (0..l.data_pages).find(|&i| !self.bit(i)).ok_or(FsError::NoSpace)?
        } else {
            // The bottom of the highest free run (up to RUN_MAX pages long), so
            // the file then grows upward into the run, one extent.
            let top = (0..l.data_pages).rev().find(|&i| !self.bit(i)).ok_or(FsError::NoSpace)?;
            let mut bottom = top;
            while bottom > 0 && top - bottom < RUN_MAX && !self.bit(bottom - 1) {
                bottom -= 1;
            }
            bottom
        };
        self.set_bit(i, true);
        self.inodes[ino as usize].extents.push((l.data_start + i, 1));
        Ok(l.data_start + i)
    }

    /// Makes sure the file has `pages` pages; new pages are written with zeros
    /// (so they never show stale contents).
    fn ensure_pages(&mut self, ino: Ino, pages: u32) -> Result<()> {
        let zeros = vec![0u8; self.page_size()];
        while self.inodes[ino as usize].pages() < pages {
            let lpn = self.allocate(ino)?;
            self.write_page(ino, lpn, &zeros)?;
        }
        self.mark_inode_dirty(ino);
        Ok(())
    }

    fn write_page(&mut self, ino: Ino, lpn: Lpn, data: &[u8]) -> Result<()> {
        self.write_dev(lpn, data)?;
        match FileClass::from_u8(self.inodes[ino as usize].class) {
            FileClass::Database => self.stats.database_page_writes += 1,
            FileClass::Journal => self.stats.journal_page_writes += 1,
            FileClass::Wal => self.stats.wal_page_writes += 1,
            FileClass::Other => self.stats.other_page_writes += 1,
        }
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at `offset`; returns the bytes read (short at EOF).
    pub fn read(&mut self, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let size = self.inode(ino)?.size;
        if offset >= size {
            return Ok(0);
        }
        let n = (buf.len() as u64).min(size - offset) as usize;
        let ps = self.page_size() as u64;
        let mut done = 0;
        let mut page = std::mem::take(&mut self.buf);
        let result: Result<usize> = (|| {
            while done < n {
                let pos = offset + done as u64;
                let idx = (pos / ps) as u32;
                let within = (pos % ps) as usize;
                let take = (ps as usize - within).min(n - done);
                match self.inode(ino)?.page(idx) {
                    // A whole page: straight into the caller's buffer.
                    Some(lpn) if take == ps as usize => self.read_dev(lpn, &mut buf[done..done + take])?,
                    Some(lpn) => {
                        self.read_dev(lpn, &mut page)?;
                        buf[done..done + take].copy_from_slice(&page[within..within + take]);
                    }
                    None => buf[done..done + take].fill(0),
                }
                done += take;
            }
            Ok(n)
        })();
        self.buf = page;
        result
    }

    /// Writes `data` at `offset`, growing the file as needed. The data goes to
    /// the device now; the size and allocation become durable at `fsync` (or
    /// with the transaction).
    pub fn write(&mut self, ino: Ino, offset: u64, data: &[u8]) -> Result<()> {
        let ps = self.page_size() as u64;
        let old_size = self.inode(ino)?.size;
        let end = offset + data.len() as u64;
        // Pages between the old end and this write: allocated and zeroed.
        let first_page = (offset / ps) as u32;
        if first_page > self.inode(ino)?.pages() {
            self.ensure_pages(ino, first_page)?;
        }
        let mut done = 0usize;
        let mut page = std::mem::take(&mut self.buf);
        let result: Result<()> = (|| {
            while done < data.len() {
                let pos = offset + done as u64;
                let idx = (pos / ps) as u32;
                let within = (pos % ps) as usize;
                let take = (ps as usize - within).min(data.len() - done);
                if take == ps as usize {
                    // A whole page: straight from the caller's buffer.
                    let lpn = match self.inode(ino)?.page(idx) {
                        Some(lpn) => lpn,
                        None => self.allocate(ino)?,
                    };
                    self.write_page(ino, lpn, &data[done..done + take])?;
                    done += take;
                    continue;
                }
                let lpn = match self.inode(ino)?.page(idx) {
                    Some(lpn) => {
                        if take < ps as usize {
                            // Read-modify-write of a partial page.
                            let page_start = idx as u64 * ps;
                            if page_start < old_size {
                                self.read_dev(lpn, &mut page)?;
                            } else {
                                page.fill(0);
                            }
                        }
                        lpn
                    }
                    None => {
                        page.fill(0);
                        self.allocate(ino)?
                    }
                };
                page[within..within + take].copy_from_slice(&data[done..done + take]);
                self.write_page(ino, lpn, &page)?;
                done += take;
            }
            Ok(())
        })();
        self.buf = page;
        result?;
        if end > old_size {
            self.inodes[ino as usize].size = end;
            self.mark_inode_dirty(ino);
        }
        Ok(())
    }

    /// fsync: data and metadata of the file system durable. In transactional
    /// mode inside a transaction, a no-op (the commit is the durability point).
    pub fn fsync(&mut self, _ino: Ino) -> Result<()> {
        self.stats.fsyncs += 1;
        if self.mode == FsMode::Transactional && self.tx.is_some() {
            return Ok(());
        }
        if self.dirty.is_empty() {
            return self.flush();
        }
        self.make_meta_durable()?;
        if self.mode == FsMode::Transactional {
            self.flush()?;
        }
        Ok(())
    }

    /// Names of the files.
    pub fn list(&self) -> Vec<(String, u64)> {
        self.inodes.iter().filter(|i| i.used).map(|i| (i.name.clone(), i.size)).collect()
    }
}
