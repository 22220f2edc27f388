//! txftl-fs: a small file system on the logical pages of a txftl device.
//!
//! Directories and files up to the size of the device: an inode table sized
//! at format from the device (one inode per 8 logical pages, 64 to 65,536),
//! each file a list of extents (16 in its inode, the rest in a chain of
//! extent overflow pages in the data area), each inode naming its parent
//! directory and its name, with no directory data blocks (the root is inode
//! 0; an index of (parent, name) is built at mount, so a lookup costs the
//! depth of the path, not a scan of the inodes). A bitmap allocator:
//! long-lived files grow from the low end of the data area, journals and WAL
//! files from the high end, so a database stays contiguous. Creating,
//! looking up and deleting a file stay fast with tens of thousands of files
//! (a set of free inodes, the name index, allocation hints). The on-flash
//! format (2, `TXFTLFS2`) is documented byte by byte in `layout.rs` and
//! `journal.rs`; a format-1 image is refused by name.
//!
//! Paths use `/` between components (a leading `/` is allowed); a component
//! is 1 to 60 bytes, neither `.` nor `..`. [`Fs::create`] needs the parent
//! directory to exist; [`Fs::mkdir`], [`Fs::rmdir`] (empty directories only),
//! [`Fs::list_dir`]. Errors are typed ([`FsError::NotFound`],
//! [`FsError::NotADirectory`], [`FsError::NotEmpty`], [`FsError::Exists`], ...).
//!
//! File data is written into a host page cache, as an OS's page cache keeps
//! it ([`CachePolicy`], `cache.rs`): a dirty page reaches the device once, at
//! `fsync` of its file, at its transaction's commit, before a metadata commit
//! (ordered mode), or when the cache outgrows its bound; a power cut loses
//! what was not fsynced (the POSIX contract). [`CachePolicy::WriteThrough`]
//! keeps the model without a cache (every write to the device as it comes).
//! Metadata (inodes, overflow pages, bitmap) is kept in memory and made
//! durable at `fsync`, or at once for namespace changes (create, delete,
//! mkdir, rmdir, a truncate outside a transaction), in one of two ways:
//!
//! - [`FsMode::Journaled`], for devices without transactions: like ext4's ordered
//!   mode. A flush makes the data durable first, then the dirty metadata pages go
//!   to the journal area with a descriptor and a commit record, a flush (the write
//!   barrier), then the pages are written in place. Mount replays a committed
//!   journal transaction (idempotently). Non-transactional changes are committed
//!   early, between two steps of an operation, before they would outgrow the
//!   journal area (see `journal.rs`).
//! - [`FsMode::Transactional`], on X-FTL: the file system hands out transaction
//!   ids, and several transactions can be open at once (the SQLite VFS opens one
//!   per database file handle). Every file operation names its context: a
//!   transaction (its page writes carry its id, its reads see its own writes)
//!   or none. A transaction's commit makes its data and metadata (its files'
//!   inode and overflow pages, the bitmap) durable atomically, with no
//!   journal; an abort drops both. Non-transactional metadata changes (and
//!   namespace changes) are made durable in a transaction of their own. How
//!   concurrent transactions share the metadata pages without losing each
//!   other's changes: `txn.rs`. With [`FsyncPolicy::OneTransaction`] a
//!   non-transactional fsync sends the file's pages and the metadata naming
//!   them as one device transaction (`fsync_tx.rs`).
//!
//! Metadata writes are counted apart from data writes, and data writes by the
//! class of file (database, rollback journal, WAL).

mod alloc;
mod cache;
mod check;
mod dir;
mod fsync_tx;
mod hostlog;
mod inode;
mod journal;
mod layout;
mod readcache;
mod remap;
pub use remap::REMAPS_WAITING_MAX;
mod txn;

pub use cache::{CachePolicy, DEFAULT_MAX_DIRTY_PAGES};
pub use check::CheckReport;
pub use dir::DirEntry;
pub use fsync_tx::FsyncPolicy;
pub use hostlog::{host_log_path, pending_host_log, HostLogStats, WRITEBACK_BYTES};
pub use layout::{Layout, EXTENTS_INLINE, INODE_COUNT_MAX, INODE_COUNT_MIN, NAME_MAX, PAGES_PER_INODE, ROOT, STEP_PAGES_MAX};

use inode::{Inode, Kind};
use layout::INODE_BYTES;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use txftl_ftl::AnyDevice;
use txftl_ftl::{DeviceError, Lpn, Tid};
use txn::{Ctx, Pending};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    #[error("device: {0}")]
    Device(#[from] DeviceError),
    #[error("{0}")]
    Format(String),
    #[error("no file or directory named `{0}`")]
    NotFound(String),
    #[error("`{0}` is not a directory")]
    NotADirectory(String),
    #[error("`{0}` is a directory")]
    IsADirectory(String),
    #[error("directory `{0}` is not empty")]
    NotEmpty(String),
    #[error("`{0}` exists already")]
    Exists(String),
    #[error("a name component of `{0}` is longer than {NAME_MAX} bytes")]
    NameTooLong(String),
    #[error("`{0}` is not a valid path (empty component, `.`, `..` or NUL)")]
    InvalidName(String),
    #[error("all {count} inodes are in use")]
    NoInodes { count: u32 },
    #[error("the file system is full")]
    NoSpace,
    #[error("bad file handle {0}")]
    BadHandle(u32),
    #[error("transactions need a transactional device (mount in journaled mode on this one)")]
    NotTransactional,
    /// Another open transaction is changing this file (one writer per file).
    #[error("file `{name}` is being changed by open transaction {tid}")]
    Busy { name: String, tid: Tid },
    #[error("journal corrupted: {0}")]
    Journal(String),
    /// One metadata journal transaction would hold more pages than the area.
    #[error("a metadata journal transaction of {pages} pages does not fit the journal area ({capacity} pages)")]
    JournalFull { pages: usize, capacity: u32 },
    #[error("a write-back page cache needs a bound of at least one page")]
    EmptyCache,
    #[error("the clean-page cache changes only while no transaction is open ({0} open)")]
    ReadCacheBusy(usize),
    /// The host log (what the host keeps across a process's death) cannot be
    /// read, written, or does not belong to this file system.
    #[error("host log: {0}")]
    HostLog(String),
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
    /// Device writes of a database, journal or WAL page already written to
    /// the device since the last fsync (counted in the page writes above too):
    /// what a write-through file system sends twice. Near zero with the
    /// write-back cache (only a page evicted and dirtied again before its fsync).
    pub rewrites_before_fsync: u64,
    /// Writes of a file page already dirty in the host page cache: absorbed
    /// there, never sent to the device (not counted in the page writes above).
    pub cache_absorbed_writes: u64,
    /// Durability points [`FsyncPolicy::OneTransaction`] sent the ordered
    /// way because the device's transaction could not hold them.
    pub one_tx_fallbacks: u64,
    /// WAL pages written naming their database page (`Fs::write_for`;
    /// counted in `wal_page_writes` too), and database pages written by
    /// remapping one (`Fs::write_remapping`: no page programmed, not in
    /// `database_page_writes`).
    pub remappable_writes: u64,
    pub remapped_pages: u64,
    /// WAL header pages trimmed with a complete checkpoint's remaps
    /// ([`Fs::discard_with_remaps`]).
    pub discarded_pages: u64,
    /// File page reads served by the clean-page cache ([`Fs::set_read_cache`]),
    /// not counted in `page_reads`.
    pub cached_reads: u64,
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

/// A file or directory, by inode number.
pub type Ino = u32;

/// Choices made at format.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FormatOptions {
    /// Inodes (rounded up to whole pages of the inode table); `None`: one per
    /// [`PAGES_PER_INODE`] logical pages, [`INODE_COUNT_MIN`] to [`INODE_COUNT_MAX`].
    pub inode_count: Option<u32>,
}

pub struct Fs {
    dev: Box<dyn AnyDevice>,
    mode: FsMode,
    layout: Layout,
    /// The committed (durable) inodes.
    inodes: Vec<Inode>,
    /// Inodes free in the committed state (a create takes the lowest one no
    /// context has pending changes to).
    free_inodes: BTreeSet<Ino>,
    /// (parent, name) -> inode, as the non-transactional context sees the
    /// namespace (namespace changes are durable when they return; a
    /// transaction never changes a name).
    names: BTreeMap<(Ino, String), Ino>,
    /// No data page below this one is free (`alloc.rs`).
    low_hint: u32,
    /// No data page from this one on is free.
    high_hint: u32,
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
    /// Database, journal and WAL pages written since the last fsync (only
    /// to count `rewrites_before_fsync`); emptied by fsync, delete, truncate.
    unsynced: BTreeSet<(Ino, Lpn)>,
    /// The host page cache (`cache.rs`) and its policy.
    cache: cache::PageCache,
    /// The host's clean-page cache (`readcache.rs`; off unless set).
    read_cache: readcache::ReadCache,
    cache_policy: CachePolicy,
    /// How durability points reach a transactional device (`fsync_tx.rs`).
    fsync_policy: FsyncPolicy,
    /// Non-transactional device writes since the last flush.
    unflushed: bool,
    /// What the host keeps across a process's death, if attached (`hostlog`).
    hostlog: Option<hostlog::HostLog>,
    /// Remaps waiting for their file's fsync (`remap.rs`): database page ->
    /// the WAL page it takes.
    remaps_waiting: BTreeMap<remap::FilePage, remap::FilePage>,
    /// The most `remaps_waiting` holds.
    remaps_waiting_max: usize,
    /// A page to discard in the flush that sends a file's remaps (`remap.rs`):
    /// database -> its WAL's header page.
    discard_with_remaps: BTreeMap<Ino, remap::FilePage>,
}

impl Fs {
    /// Creates an empty file system on the device (all logical pages), with
    /// the default layout.
    pub fn format(dev: Box<dyn AnyDevice>, mode: FsMode) -> Result<Fs> {
        Fs::format_with(dev, mode, FormatOptions::default())
    }

    /// Creates an empty file system with the given choices.
    pub fn format_with(dev: Box<dyn AnyDevice>, mode: FsMode, opts: FormatOptions) -> Result<Fs> {
        if mode == FsMode::Transactional && !dev.transactional() {
            return Err(FsError::NotTransactional);
        }
        let info = dev.info();
        let layout = match opts.inode_count {
            Some(n) => Layout::with_inodes(info.page_size, info.logical_pages, n)?,
            None => Layout::new(info.page_size, info.logical_pages)?,
        };
        // Like mkfs: the empty metadata (the root directory, and an empty
        // journal descriptor, so no older journal is replayed) as plain
        // writes, a flush, and only then the superblock, after any older one
        // was wiped first. A cut before the last flush leaves no file system,
        // never a half-formatted one. Plain writes, not one device
        // transaction: the inode table alone may be larger than X-FTL's table.
        let mut fs = Fs::empty(dev, mode, layout);
        fs.inodes[ROOT as usize] = Inode {
            kind: Kind::Dir,
            parent: ROOT,
            ..Inode::default()
        };
        let mut page = vec![0u8; info.page_size as usize];
        fs.dev.write(0, &page)?;
        let per_page = layout.inodes_per_page() as usize;
        for lpn in layout.meta_pages().chain([layout.journal_start]) {
            page.fill(0);
            if lpn == layout.inode_start {
                for (i, inode) in fs.inodes[..per_page].iter().enumerate() {
                    inode.encode(&mut page[i * INODE_BYTES..(i + 1) * INODE_BYTES]);
                }
            }
            fs.dev.write(lpn, &page)?;
        }
        fs.dev.flush()?;
        layout.encode(&mut page);
        fs.dev.write(0, &page)?;
        fs.dev.flush()?;
        fs.index()?;
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
        fs.index()?;
        Ok(fs)
    }

    fn empty(dev: Box<dyn AnyDevice>, mode: FsMode, layout: Layout) -> Fs {
        let ps = layout.page_size as usize;
        Fs {
            dev,
            mode,
            inodes: vec![Inode::default(); layout.inode_count as usize],
            free_inodes: BTreeSet::new(),
            names: BTreeMap::new(),
            low_hint: 0,
            high_hint: layout.data_pages,
            bitmap: vec![0; layout.bitmap_pages as usize * ps],
            pending: BTreeMap::new(),
            reserved: BTreeSet::new(),
            open: BTreeSet::new(),
            journal_seq: 0,
            next_tid: 1,
            stats: FsStats::default(),
            buf: vec![0; ps],
            unsynced: BTreeSet::new(),
            cache: cache::PageCache::default(),
            read_cache: readcache::ReadCache::default(),
            cache_policy: CachePolicy::default(),
            fsync_policy: FsyncPolicy::default(),
            unflushed: false,
            hostlog: None,
            remaps_waiting: BTreeMap::new(),
            remaps_waiting_max: remap::REMAPS_WAITING_MAX,
            discard_with_remaps: BTreeMap::new(),
            layout,
        }
    }

    pub fn device(&self) -> &dyn AnyDevice {
        &*self.dev
    }
    pub fn device_mut(&mut self) -> &mut dyn AnyDevice {
        &mut *self.dev
    }
    /// Hands the device back as it is: a power cut, which drops the file
    /// system's DRAM state with it (pending metadata, the dirty pages of the
    /// page cache). [`Fs::unmount`] is the clean way.
    pub fn into_device(self) -> Box<dyn AnyDevice> {
        self.dev
    }

    /// A clean unmount: [`Fs::sync`], then the device. Open transactions are
    /// not committed (their pages go with them, as with a power cut).
    pub fn unmount(mut self) -> Result<Box<dyn AnyDevice>> {
        self.sync()?;
        Ok(self.dev)
    }

    /// Like `sync(2)`: every non-transactional dirty page and pending
    /// metadata change durable, then a device flush. Open transactions keep theirs.
    pub fn sync(&mut self) -> Result<()> {
        self.write_back_all()?;
        let waiting: BTreeSet<Ino> = self.remaps_waiting.keys().map(|&(ino, _)| ino).collect();
        for ino in waiting {
            self.send_remaps(ino)?;
        }
        self.settle_host_log()
    }

    fn write_back_all(&mut self) -> Result<()> {
        if !self.one_transaction() {
            self.write_back_ctx(None)?;
        }
        self.make_plain_durable()?;
        self.flush()
    }

    pub fn cache_policy(&self) -> CachePolicy {
        self.cache_policy
    }

    /// Sets the page cache policy. The dirty pages the new policy does not
    /// keep (all of them for write-through, the oldest beyond a smaller bound)
    /// are written back first, each with its context.
    pub fn set_cache_policy(&mut self, policy: CachePolicy) -> Result<()> {
        if policy == (CachePolicy::WriteBack { max_dirty_pages: 0 }) {
            return Err(FsError::EmptyCache);
        }
        self.cache_policy = policy;
        let ctxs: BTreeSet<Ctx> = self
            .pending
            .keys()
            .copied()
            .chain([None])
            .chain(self.open.iter().map(|&t| Some(t)))
            .collect();
        for ctx in ctxs {
            match policy {
                CachePolicy::WriteThrough => self.write_back_ctx(ctx)?,
                CachePolicy::WriteBack { .. } => self.evict(ctx)?,
            }
        }
        Ok(())
    }

    /// Dirty pages in the host page cache now.
    /// Keeps up to `pages` clean file pages in host DRAM, as an OS's page
    /// cache does, so that a page read (or written) again is read from there,
    /// not the device (`readcache.rs`); 0 (the default): every read of a page
    /// that is not dirty goes to the device. Refused while a transaction is
    /// open (the cache would not know what it wrote).
    pub fn set_read_cache(&mut self, pages: usize) -> Result<()> {
        if !self.open.is_empty() {
            return Err(FsError::ReadCacheBusy(self.open.len()));
        }
        self.read_cache.set_bound(pages);
        Ok(())
    }

    pub fn read_cache_pages(&self) -> usize {
        self.read_cache.bound()
    }

    pub fn dirty_pages(&self) -> usize {
        self.cache.len()
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
    /// Where the file system's areas are.
    pub fn layout(&self) -> Layout {
        self.layout
    }

    /// Loads the committed metadata from the device (at mount): the inode
    /// table, every overflow chain, the bitmap.
    fn load_meta(&mut self) -> Result<()> {
        let l = self.layout;
        let ps = self.page_size();
        let per_page = l.inodes_per_page() as usize;
        let per_overflow = l.extents_per_overflow_page();
        let mut page = vec![0u8; ps];
        let mut overflow = vec![0u8; ps];
        for p in 0..l.inode_pages {
            self.read_dev(None, l.inode_start + p, &mut page)?;
            for i in 0..per_page {
                let ino = (p as usize * per_page + i) as Ino;
                if ino >= l.inode_count {
                    break;
                }
                let (mut inode, chain) = Inode::decode(ino, &page[i * INODE_BYTES..(i + 1) * INODE_BYTES], per_overflow)?;
                let mut extents = inode.extents.as_slice().to_vec();
                let mut next = chain.first;
                for k in 0..chain.pages as usize {
                    if !l.in_data(next) {
                        return Err(FsError::Format(format!(
                            "inode {ino}: overflow page {k} at {next}, outside the data area"
                        )));
                    }
                    self.read_dev(None, next, &mut overflow)?;
                    let (more, after) = Inode::decode_overflow(ino, k, next, &overflow, per_overflow)?;
                    inode.overflow.push(next);
                    extents.extend(more);
                    next = after;
                }
                if next != 0 || extents.len() != inode.extents.len() + chain.extents {
                    return Err(FsError::Format(format!(
                        "inode {ino}: its overflow chain does not hold its {} extents",
                        inode.extents.len() + chain.extents
                    )));
                }
                if extents
                    .iter()
                    .any(|&(start, len)| len == 0 || !l.in_data(start) || !l.in_data(start + len - 1))
                {
                    return Err(FsError::Format(format!("inode {ino}: an extent outside the data area")));
                }
                inode.extents = inode::Extents::from_list(extents);
                self.inodes[ino as usize] = inode;
            }
        }
        for p in 0..l.bitmap_pages {
            self.read_dev(None, l.bitmap_start + p, &mut page)?;
            self.bitmap[p as usize * ps..(p as usize + 1) * ps].copy_from_slice(&page);
        }
        Ok(())
    }

    /// Builds the free-inode set and the name index from the committed
    /// inodes, and checks the tree (the root a directory, every parent a
    /// directory, no name twice in one directory).
    fn index(&mut self) -> Result<()> {
        if !self.inodes[ROOT as usize].is_dir() {
            return Err(FsError::Format("inode 0 is not the root directory".into()));
        }
        self.free_inodes.clear();
        self.names.clear();
        for (ino, inode) in self.inodes.iter().enumerate() {
            let ino = ino as Ino;
            if !inode.used() {
                self.free_inodes.insert(ino);
                continue;
            }
            if ino == ROOT {
                continue;
            }
            if !self.inodes.get(inode.parent as usize).is_some_and(|p| p.is_dir()) || inode.parent == ino {
                return Err(FsError::Format(format!(
                    "inode {ino} (`{}`) names inode {} as its directory, which is not one",
                    inode.name, inode.parent
                )));
            }
            if inode.name.is_empty() || self.names.insert((inode.parent, inode.name.clone()), ino).is_some() {
                return Err(FsError::Format(format!(
                    "directory inode {} holds `{}` twice, or an empty name",
                    inode.parent, inode.name
                )));
            }
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

    /// A file page from the clean-page cache, or the device (kept there).
    fn read_file_dev(&mut self, ctx: Ctx, lpn: Lpn, buf: &mut [u8]) -> Result<()> {
        if self.read_cache.get(ctx, lpn, buf) {
            self.stats.cached_reads += 1;
            return Ok(());
        }
        self.read_dev(ctx, lpn, buf)?;
        self.read_cache.read(ctx, lpn, buf);
        Ok(())
    }

    fn write_dev(&mut self, ctx: Ctx, lpn: Lpn, data: &[u8], last: bool) -> Result<()> {
        match ctx {
            Some(tid) if last => self.write_last_tx(tid, lpn, data)?,
            Some(tid) => {
                self.dev.write_tx(tid, lpn, data)?;
            }
            None => {
                self.dev.write(lpn, data)?;
                self.unflushed = true;
            }
        }
        self.read_cache.wrote(ctx, lpn, data);
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        self.dev.flush()?;
        self.stats.flushes += 1;
        self.unflushed = false;
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

    pub fn class(&self, ino: Ino) -> Result<FileClass> {
        Ok(FileClass::from_u8(self.inode(None, ino)?.class))
    }

    fn inode(&self, ctx: Ctx, ino: Ino) -> Result<&Inode> {
        self.view(ctx, ino).filter(|i| i.used()).ok_or(FsError::BadHandle(ino))
    }

    /// The inode of a file (not a directory) as `ctx` sees it.
    fn file(&self, ctx: Ctx, ino: Ino) -> Result<&Inode> {
        let inode = self.inode(ctx, ino)?;
        if inode.is_dir() {
            return Err(FsError::IsADirectory(inode.name.clone()));
        }
        Ok(inode)
    }

    /// Creates an empty file in an existing directory (or returns the file
    /// that exists under that path); durable when this returns.
    pub fn create(&mut self, path: &str, class: FileClass) -> Result<Ino> {
        let (parent, name) = self.parent_of(path)?;
        if let Some(&ino) = self.names.get(&(parent, name.to_string())) {
            return match self.inode(None, ino)?.is_dir() {
                true => Err(FsError::IsADirectory(path.into())),
                false => Ok(ino),
            };
        }
        let ino = self.new_inode(parent, name, Kind::File, class)?;
        self.host_log(|_| Ok(hostlog::Record::Create { path: path.into(), class }))?;
        Ok(ino)
    }

    /// Deletes a file; durable when this returns.
    pub fn delete(&mut self, path: &str) -> Result<()> {
        let ino = self.resolve(path)?;
        if self.inode(None, ino)?.is_dir() {
            return Err(FsError::IsADirectory(path.into()));
        }
        // Freeing touches the inode page and up to every bitmap page.
        self.make_room(None, self.layout.bitmap_pages + STEP_PAGES_MAX)?;
        self.unsynced.retain(|&(i, _)| i != ino);
        self.free_pages_from(None, ino, 0)?;
        let (parent, name) = {
            let inode = self.inode(None, ino)?;
            (inode.parent, inode.name.clone())
        };
        *self.inode_mut(None, ino)? = Inode::default();
        self.names.remove(&(parent, name));
        self.make_plain_durable()?;
        self.host_log(|_| Ok(hostlog::Record::Delete { path: path.into() }))
    }

    /// The file's size as `tx` sees it.
    pub fn size(&self, tx: Option<Tid>, ino: Ino) -> Result<u64> {
        Ok(self.inode(tx, ino)?.size)
    }

    /// Sets the file size: durable when this returns (`tx` `None`), or with the transaction.
    pub fn truncate(&mut self, tx: Option<Tid>, ino: Ino, size: u64) -> Result<()> {
        let ctx = self.context(tx)?;
        self.unsynced.retain(|&(i, _)| i != ino);
        let ps = self.page_size() as u64;
        let old = self.file(ctx, ino)?.size;
        if size.div_ceil(ps) > self.layout.data_pages as u64 {
            return Err(FsError::NoSpace);
        }
        self.make_room(ctx, self.layout.bitmap_pages + STEP_PAGES_MAX)?;
        self.claim(ctx, ino)?;
        if size < old {
            self.free_pages_from(ctx, ino, size.div_ceil(ps) as u32)?;
            // Zero the tail of the last page so a later growth reads zeros.
            if !size.is_multiple_of(ps) {
                let idx = (size / ps) as u32;
                if let Some(lpn) = self.inode(ctx, ino)?.page(idx) {
                    let mut page = vec![0u8; ps as usize];
                    self.read_page(ctx, ino, idx, lpn, &mut page)?;
                    page[(size % ps) as usize..].fill(0);
                    self.write_page(ctx, ino, idx, lpn, &page)?;
                }
            }
        } else if size > old {
            self.ensure_pages(ctx, ino, size.div_ceil(ps) as u32)?;
        }
        self.inode_mut(ctx, ino)?.size = size;
        if ctx.is_none() {
            self.make_plain_durable()?;
        }
        self.host_log(|fs| {
            Ok(hostlog::Record::Truncate {
                ctx,
                path: fs.path_of(ino)?,
                size,
            })
        })
    }

    /// Writes file page `idx` of `ino` (device page `lpn`): into the page
    /// cache, or to the device at once (write-through).
    fn write_page(&mut self, ctx: Ctx, ino: Ino, idx: u32, lpn: Lpn, data: &[u8]) -> Result<()> {
        if !self.remaps_waiting.is_empty() {
            let page = (ino, idx);
            self.settle_remaps(|d, s| d == page || s == page, |d, _| d == page)?;
        }
        let class = FileClass::from_u8(self.inode(ctx, ino)?.class);
        match self.cache_policy {
            CachePolicy::WriteThrough => self.write_page_dev(ctx, ino, lpn, class, data, false),
            CachePolicy::WriteBack { .. } => {
                if self.cache.put((ctx, ino, idx), lpn, class, data) {
                    self.stats.cache_absorbed_writes += 1;
                }
                self.evict(ctx)
            }
        }
    }

    /// While the cache is over its bound, writes back the oldest dirty page
    /// of `ctx` or of the non-transactional context (never another open
    /// transaction's: its writes carry its id and its errors are its own).
    fn evict(&mut self, ctx: Ctx) -> Result<()> {
        let CachePolicy::WriteBack { max_dirty_pages } = self.cache_policy else {
            return Ok(());
        };
        while self.cache.len() > max_dirty_pages {
            let Some(key) = self.cache.oldest_for(ctx) else { break };
            self.write_back(key)?;
        }
        Ok(())
    }

    /// Sends one dirty page to the device (with its context).
    fn write_back(&mut self, key: cache::Key) -> Result<()> {
        self.write_back_as(key, false)
    }

    /// [`Fs::write_back`]; `last`: the transaction's last page before its
    /// commit ([`Fs::write_last_tx`]).
    fn write_back_as(&mut self, key: cache::Key, last: bool) -> Result<()> {
        let Some(d) = self.cache.take(&key) else { return Ok(()) };
        let (ctx, ino, _) = key;
        if let Err(e) = self.write_page_dev(ctx, ino, d.lpn, d.class, &d.data, last) {
            // Still dirty: a retried commit or fsync writes it again, an abort drops it.
            self.cache.put(key, d.lpn, d.class, &d.data);
            return Err(e);
        }
        Ok(())
    }

    /// Writes back `ctx`'s dirty pages of `ino`.
    pub(crate) fn write_back_file(&mut self, ctx: Ctx, ino: Ino) -> Result<()> {
        for key in self.cache.keys_of_file(ctx, ino, 0) {
            self.write_back(key)?;
        }
        Ok(())
    }

    /// Writes back every dirty page of `ctx`.
    pub(crate) fn write_back_ctx(&mut self, ctx: Ctx) -> Result<()> {
        self.write_back_ctx_ending(ctx, false)
    }

    /// [`Fs::write_back_ctx`]; with `end`, the last page goes as the
    /// transaction's last ([`Fs::write_last_tx`]).
    pub(crate) fn write_back_ctx_ending(&mut self, ctx: Ctx, end: bool) -> Result<()> {
        let keys = self.cache.keys_of_ctx(ctx);
        let n = keys.len();
        for (i, key) in keys.into_iter().enumerate() {
            self.write_back_as(key, end && i + 1 == n)?;
        }
        Ok(())
    }

    /// Forgets `ctx`'s dirty pages of `ino` from file page `from` on (the file dropped them).
    pub(crate) fn drop_cached(&mut self, ctx: Ctx, ino: Ino, from: u32) {
        for key in self.cache.keys_of_file(ctx, ino, from) {
            self.cache.take(&key);
        }
    }

    /// Reads file page `idx` of `ino` (device page `lpn`) as `ctx` sees it:
    /// its dirty page, else (a transaction) the non-transactional one, else the device.
    fn read_page(&mut self, ctx: Ctx, ino: Ino, idx: u32, lpn: Lpn, buf: &mut [u8]) -> Result<()> {
        let cached = self.cache.get(&(ctx, ino, idx)).or_else(|| match ctx {
            Some(_) => self.cache.get(&(None, ino, idx)),
            None => None,
        });
        match cached {
            Some(d) => {
                buf.copy_from_slice(&d.data);
                Ok(())
            }
            None => {
                let lpn = self.remapped_source((ino, idx)).unwrap_or(lpn);
                self.read_file_dev(ctx, lpn, buf)
            }
        }
    }

    /// A file data page to the device now, counted by class (`last`: see
    /// [`Fs::write_back_as`]).
    fn write_page_dev(&mut self, ctx: Ctx, ino: Ino, lpn: Lpn, class: FileClass, data: &[u8], last: bool) -> Result<()> {
        self.write_dev(ctx, lpn, data, last)?;
        match class {
            FileClass::Database => self.stats.database_page_writes += 1,
            FileClass::Journal => self.stats.journal_page_writes += 1,
            FileClass::Wal => self.stats.wal_page_writes += 1,
            FileClass::Other => {
                self.stats.other_page_writes += 1;
                return Ok(());
            }
        }
        if !self.unsynced.insert((ino, lpn)) {
            self.stats.rewrites_before_fsync += 1;
        }
        Ok(())
    }

    /// Reads up to `buf.len()` bytes at `offset` as `tx` sees the file
    /// (a transaction sees its own writes); returns the bytes read (short at EOF).
    pub fn read(&mut self, tx: Option<Tid>, ino: Ino, offset: u64, buf: &mut [u8]) -> Result<usize> {
        let ctx = self.context(tx)?;
        let size = self.file(ctx, ino)?.size;
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
                    Some(lpn) if take == ps as usize => self.read_page(ctx, ino, idx, lpn, &mut buf[done..done + take])?,
                    Some(lpn) => {
                        self.read_page(ctx, ino, idx, lpn, &mut page)?;
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
    /// The data goes to the page cache (or the device, write-through); data,
    /// size and allocation become durable at `fsync` (`tx` `None`) or with the transaction. The first write claims
    /// the file for its context ([`FsError::Busy`] if another transaction holds it).
    pub fn write(&mut self, tx: Option<Tid>, ino: Ino, offset: u64, data: &[u8]) -> Result<()> {
        let ctx = self.context(tx)?;
        let ps = self.page_size() as u64;
        let old_size = self.file(ctx, ino)?.size;
        let end = offset + data.len() as u64;
        if end.div_ceil(ps) > self.layout.data_pages as u64 {
            return Err(FsError::NoSpace);
        }
        self.make_room(ctx, STEP_PAGES_MAX)?;
        self.claim(ctx, ino)?;
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
                    self.write_page(ctx, ino, idx, lpn, &data[done..done + take])?;
                    done += take;
                    continue;
                }
                let lpn = match self.inode(ctx, ino)?.page(idx) {
                    Some(lpn) => {
                        // Read-modify-write of a partial page.
                        let page_start = idx as u64 * ps;
                        if page_start < old_size {
                            self.read_page(ctx, ino, idx, lpn, &mut page)?;
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
                self.write_page(ctx, ino, idx, lpn, &page)?;
                done += take;
            }
            Ok(())
        })();
        self.buf = page;
        result?;
        if end > old_size {
            self.inode_mut(ctx, ino)?.size = end;
        }
        self.host_log(|fs| {
            Ok(hostlog::Record::Write {
                ctx,
                path: fs.path_of(ino)?,
                offset,
                data: data.to_vec(),
            })
        })
    }

    /// fsync: the file's dirty pages go to the device, then the
    /// non-transactional data and metadata are made durable. Inside a
    /// transaction, the file's dirty pages go to the device with the
    /// transaction's id and nothing more (its commit is the durability point).
    pub fn fsync(&mut self, tx: Option<Tid>, ino: Ino) -> Result<()> {
        let ctx = self.context(tx)?;
        self.stats.fsyncs += 1;
        if ctx.is_none() && self.one_transaction() {
            // Its pages go with the metadata, in one device transaction.
            self.unsynced.clear();
            self.make_plain_durable()?;
            self.flush()?;
            return self.fsync_done(ctx, ino);
        }
        self.write_back_file(ctx, ino)?;
        self.unsynced.clear();
        if ctx.is_some() {
            return Ok(());
        }
        if self.touched_count(None) == 0 {
            self.fold(None);
            self.flush()?;
            return self.fsync_done(ctx, ino);
        }
        self.make_plain_durable()?;
        if self.mode == FsMode::Transactional {
            self.flush()?;
        }
        self.fsync_done(ctx, ino)
    }

    /// The end of an fsync: the file's waiting remaps go to the device
    /// (after its metadata: `remap.rs`), and the host log is settled.
    fn fsync_done(&mut self, ctx: Ctx, ino: Ino) -> Result<()> {
        if ctx.is_none() {
            self.send_remaps(ino)?;
        }
        self.settle_host_log()
    }
}
