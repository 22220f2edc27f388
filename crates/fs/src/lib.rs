//! txftl-fs: a small file system on the logical pages of a txftl device.
//!
//! One flat directory of at most 64 files, each a list of at most 16 extents;
//! a bitmap allocator (long-lived files grow from the low end of the data area,
//! journals and WAL files from the high end, so a database stays contiguous).
//! Data goes to the device as it is written; metadata (inodes, bitmap) is kept
//! in memory and made durable at `fsync`, or at once for namespace changes
//! (create, delete, a truncate outside a transaction), in one of two ways:
//!
//! - [`FsMode::Journaled`], for devices without transactions: like ext4's ordered
//!   mode. A flush makes the data durable first, then the dirty metadata pages go
//!   to the journal area with a descriptor and a commit record, a flush (the write
//!   barrier), then the pages are written in place. Mount replays a committed
//!   journal transaction (idempotently).
//! - [`FsMode::Transactional`], on X-FTL: the file system hands out transaction
//!   ids, and several transactions can be open at once (the SQLite VFS opens one
//!   per database file handle). Every file operation names its context: a
//!   transaction (its page writes carry its id, its reads see its own writes)
//!   or none. A transaction's commit makes its data and metadata durable
//!   atomically, with no journal; an abort drops both. Non-transactional
//!   metadata changes (and namespace changes) are made durable in a
//!   transaction of their own. How concurrent transactions share the metadata
//!   pages without losing each other's changes: `txn.rs`.
//!
//! Metadata writes are counted apart from data writes, and data writes by the
//! class of file (database, rollback journal, WAL).

mod alloc;
mod inode;
mod journal;
mod layout;
mod txn;

pub use layout::{Layout, EXTENTS_MAX, INODE_COUNT, NAME_MAX};

use inode::Inode;
use layout::INODE_BYTES;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::{DeviceError, Lpn, Tid};
use txftl_protocols::AnyDevice;
use txn::{Ctx, Pending};

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
    /// Another open transaction is changing this file (one writer per file).
    #[error("file `{name}` is being changed by open transaction {tid}")]
    Busy { name: String, tid: Tid },
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

pub struct Fs {
    dev: Box<dyn AnyDevice>,
    mode: FsMode,
    layout: Layout,
    /// The committed (durable) inodes.
    inodes: Vec<Inode>,
    /// The committed allocation bitmap: one bit per data page (set: allocated).
    bitmap: Vec<u8>,
    /// Changes not durable yet, per context (`txn.rs`).
    pending: BTreeMap<Ctx, Pending>,
    /// Data pages some context allocated and has not committed yet.
    reserved: BTreeSet<u32>,
    /// Open transactions.
    open: BTreeSet<Tid>,
    journal_seq: u64,
    next_tid: Tid,
    stats: FsStats,
    buf: Vec<u8>,
}

impl Fs {
    /// Creates an empty file system on the device (all logical pages).
    pub fn format(mut dev: Box<dyn AnyDevice>, mode: FsMode) -> Result<Fs> {
        if mode == FsMode::Transactional && !dev.transactional() {
            return Err(FsError::NotTransactional);
        }
        let info = dev.info();
        let layout = Layout::new(info.page_size, info.logical_pages)?;
        // Like mkfs: the empty metadata (and an empty journal descriptor, so no
        // older journal is replayed) as plain writes, a flush, and only then
        // the superblock, after any older one was wiped first. A cut before
        // the last flush leaves no file system, never a half-formatted one.
        // Plain writes, not one device transaction: the inode table alone
        // (32 pages at 512-byte pages) may be larger than X-FTL's table.
        let mut page = vec![0u8; info.page_size as usize];
        dev.write(0, &page)?;
        for lpn in layout.meta_pages().chain([layout.journal_start]) {
            dev.write(lpn, &page)?;
        }
        dev.flush()?;
        layout.encode(&mut page);
        dev.write(0, &page)?;
        dev.flush()?;
        Ok(Fs::empty(dev, mode, layout))
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
            pending: BTreeMap::new(),
            reserved: BTreeSet::new(),
            open: BTreeSet::new(),
            journal_seq: 0,
            next_tid: 1,
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

    /// Loads the committed metadata from the device (at mount).
    fn load_meta(&mut self) -> Result<()> {
        let l = self.layout;
        let ps = self.page_size();
        let per_page = ps / INODE_BYTES;
        let mut page = vec![0u8; ps];
        for p in 0..l.inode_pages {
            self.read_dev(None, l.inode_start + p, &mut page)?;
            for i in 0..per_page {
                let ino = p as usize * per_page + i;
                if ino < INODE_COUNT as usize {
                    self.inodes[ino] = Inode::decode(&page[i * INODE_BYTES..(i + 1) * INODE_BYTES])?;
                }
            }
        }
        for p in 0..l.bitmap_pages {
            self.read_dev(None, l.bitmap_start + p, &mut page)?;
            self.bitmap[p as usize * ps..(p as usize + 1) * ps].copy_from_slice(&page);
        }
        Ok(())
    }

    fn read_dev(&mut self, ctx: Ctx, lpn: Lpn, buf: &mut [u8]) -> Result<()> {
        self.stats.page_reads += 1;
        match ctx {
            Some(tid) => self.dev.read_tx(tid, lpn, buf)?,
            None => self.dev.read(lpn, buf)?,
        };
        Ok(())
    }

    fn write_dev(&mut self, ctx: Ctx, lpn: Lpn, data: &[u8]) -> Result<()> {
        match ctx {
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

    /// Checks `tx` names an open transaction (`None`: non-transactional).
    fn context(&self, tx: Option<Tid>) -> Result<Ctx> {
        match tx {
            Some(tid) if !self.open.contains(&tid) => Err(FsError::Device(DeviceError::UnknownTransaction(tid))),
            _ => Ok(tx),
        }
    }

    // ---- files ------------------------------------------------------------------

    pub fn lookup(&self, name: &str) -> Option<Ino> {
        (0..INODE_COUNT).find(|&ino| self.view(None, ino).is_some_and(|i| i.used && i.name == name))
    }

    pub fn class(&self, ino: Ino) -> Result<FileClass> {
        Ok(FileClass::from_u8(self.inode(None, ino)?.class))
    }

    fn inode(&self, ctx: Ctx, ino: Ino) -> Result<&Inode> {
        self.view(ctx, ino).filter(|i| i.used).ok_or(FsError::BadHandle(ino))
    }

    /// Creates an empty file; durable when this returns.
    pub fn create(&mut self, name: &str, class: FileClass) -> Result<Ino> {
        if name.len() > NAME_MAX {
            return Err(FsError::NameTooLong(name.into()));
        }
        if let Some(ino) = self.lookup(name) {
            return Ok(ino);
        }
        // A free inode no context has pending changes to.
        let ino = (0..INODE_COUNT)
            .find(|&ino| !self.view(None, ino).is_some_and(|i| i.used) && !self.pending.values().any(|p| p.inodes.contains_key(&ino)))
            .ok_or(FsError::NoInodes)?;
        *self.inode_mut(None, ino)? = Inode {
            used: true,
            class: class as u8,
            name: name.into(),
            size: 0,
            extents: Vec::new(),
        };
        self.make_plain_durable()?;
        Ok(ino)
    }

    /// Deletes a file; durable when this returns.
    pub fn delete(&mut self, name: &str) -> Result<()> {
        let ino = self.lookup(name).ok_or_else(|| FsError::NotFound(name.into()))?;
        self.free_pages_from(None, ino, 0)?;
        *self.inode_mut(None, ino)? = Inode::default();
        self.make_plain_durable()
    }

    /// The file's size as `tx` sees it.
    pub fn size(&self, tx: Option<Tid>, ino: Ino) -> Result<u64> {
        Ok(self.inode(tx, ino)?.size)
    }

    /// Sets the file size: durable when this returns (`tx` `None`), or with the transaction.
    pub fn truncate(&mut self, tx: Option<Tid>, ino: Ino, size: u64) -> Result<()> {
        let ctx = self.context(tx)?;
        let ps = self.page_size() as u64;
        let old = self.inode(ctx, ino)?.size;
        self.claim(ctx, ino)?;
        if size < old {
            self.free_pages_from(ctx, ino, size.div_ceil(ps) as u32)?;
            // Zero the tail of the last page so a later growth reads zeros.
            if !size.is_multiple_of(ps) {
                let idx = (size / ps) as u32;
                if let Some(lpn) = self.inode(ctx, ino)?.page(idx) {
                    let mut page = vec![0u8; ps as usize];
                    self.read_dev(ctx, lpn, &mut page)?;
                    page[(size % ps) as usize..].fill(0);
                    self.write_page(ctx, ino, lpn, &page)?;
                }
            }
        } else if size > old {
            self.ensure_pages(ctx, ino, size.div_ceil(ps) as u32)?;
        }
        self.inode_mut(ctx, ino)?.size = size;
        if ctx.is_none() {
            self.make_plain_durable()?;
        }
        Ok(())
    }

    fn write_page(&mut self, ctx: Ctx, ino: Ino, lpn: Lpn, data: &[u8]) -> Result<()> {
        self.write_dev(ctx, lpn, data)?;
        match FileClass::from_u8(self.inode(ctx, ino)?.class) {
            FileClass::Database => self.stats.database_page_writes += 1,
            FileClass::Journal => self.stats.journal_page_writes += 1,
            FileClass::Wal => self.stats.wal_page_writes += 1,
            FileClass::Other => self.stats.other_page_writes += 1,
        }
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at `offset` as `tx` sees the file
    /// (a transaction sees its own writes); returns the bytes read (short at EOF).
    pub fn read(&mut self, tx: Option<Tid>, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let ctx = self.context(tx)?;
        let size = self.inode(ctx, ino)?.size;
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
                match self.inode(ctx, ino)?.page(idx) {
                    // A whole page: straight into the caller's buffer.
                    Some(lpn) if take == ps as usize => self.read_dev(ctx, lpn, &mut buf[done..done + take])?,
                    Some(lpn) => {
                        self.read_dev(ctx, lpn, &mut page)?;
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

    /// Writes `data` at `offset` in `tx` (or none), growing the file as needed.
    /// The data goes to the device now; the size and allocation become durable
    /// at `fsync` (`tx` `None`) or with the transaction. The first write claims
    /// the file for its context ([`FsError::Busy`] if another transaction holds it).
    pub fn write(&mut self, tx: Option<Tid>, ino: Ino, offset: u64, data: &[u8]) -> Result<()> {
        let ctx = self.context(tx)?;
        let ps = self.page_size() as u64;
        let old_size = self.inode(ctx, ino)?.size;
        self.claim(ctx, ino)?;
        let end = offset + data.len() as u64;
        // Pages between the old end and this write: allocated and zeroed.
        let first_page = (offset / ps) as u32;
        if first_page > self.inode(ctx, ino)?.pages() {
            self.ensure_pages(ctx, ino, first_page)?;
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
                    let lpn = match self.inode(ctx, ino)?.page(idx) {
                        Some(lpn) => lpn,
                        None => self.allocate(ctx, ino)?,
                    };
                    self.write_page(ctx, ino, lpn, &data[done..done + take])?;
                    done += take;
                    continue;
                }
                let lpn = match self.inode(ctx, ino)?.page(idx) {
                    Some(lpn) => {
                        // Read-modify-write of a partial page.
                        let page_start = idx as u64 * ps;
                        if page_start < old_size {
                            self.read_dev(ctx, lpn, &mut page)?;
                        } else {
                            page.fill(0);
                        }
                        lpn
                    }
                    None => {
                        page.fill(0);
                        self.allocate(ctx, ino)?
                    }
                };
                page[within..within + take].copy_from_slice(&data[done..done + take]);
                self.write_page(ctx, ino, lpn, &page)?;
                done += take;
            }
            Ok(())
        })();
        self.buf = page;
        result?;
        if end > old_size {
            self.inode_mut(ctx, ino)?.size = end;
        }
        Ok(())
    }

    /// fsync: the non-transactional data and metadata durable. Inside a
    /// transaction, a no-op (its commit is the durability point).
    pub fn fsync(&mut self, tx: Option<Tid>, _ino: Ino) -> Result<()> {
        let ctx = self.context(tx)?;
        self.stats.fsyncs += 1;
        if ctx.is_some() {
            return Ok(());
        }
        if self.touched_pages(None).is_empty() {
            self.fold(None);
            return self.flush();
        }
        self.make_plain_durable()?;
        if self.mode == FsMode::Transactional {
            self.flush()?;
        }
        Ok(())
    }

    /// Names and sizes of the files (as committed, with non-transactional changes).
    pub fn list(&self) -> Vec<(String, u64)> {
        (0..INODE_COUNT)
            .filter_map(|ino| self.view(None, ino))
            .filter(|i| i.used)
            .map(|i| (i.name.clone(), i.size))
            .collect()
    }
}
