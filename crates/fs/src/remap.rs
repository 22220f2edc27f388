//! The `Remap` device extension at the file level (SW-WAL): a WAL page
//! written naming the database page it holds a version of, and a database
//! page written by remapping that WAL page onto it (SQLite's checkpoint
//! copies a frame into the database: the VFS sees the frame read and the
//! same bytes written back). Both fall back to plain writes where the device
//! has no remap, the database page is not allocated yet, or the device
//! refuses (it forgot the page's target at a mount): the host copies.
//!
//! A remap waits in the file system until the database's `fsync` has made
//! its metadata durable, and goes to the device only then, followed by a
//! flush. Sent at once, it would be durable at the first device flush of
//! that fsync, the one that orders data before metadata: a cut before the
//! metadata commit then leaves the database's pages checkpointed, the WAL's
//! frames gone (a remapped WAL page reads unwritten) and the database's size
//! as before the checkpoint, which grew it: SQLite finds it malformed
//! (`txftl sqlcrash --modes sw-wal --workload tpcc` found it). Waiting, a
//! cut before the remaps are durable finds the WAL whole and SQLite
//! checkpoints again. Until then a read of the database page reads the WAL
//! page; a write of it drops the remap; a write, truncate or delete of the
//! WAL page sends the remap first.
//!
//! A remap empties its WAL page, and SQLite's WAL is read from its first
//! frame: the frames a checkpoint left (superseded by a later frame of the
//! same page) stay valid up to the first remapped one, and a restart would
//! replay that old prefix over the checkpointed database. A complete
//! checkpoint therefore discards the WAL's header page in the flush that
//! makes its remaps durable ([`Fs::discard_with_remaps`]): the device makes
//! the remaps and the trim durable together (one remap record), and a
//! WAL with no valid header is an empty one to SQLite.
//!
//! Everything else stays `write`'s: the file's size and allocation, the
//! host log (a remap is logged as the write it stands for, so a process
//! death replays it as a copy).

use crate::{Fs, FsError, Ino, Result};
use txftl_ftl::{Call, DeviceError, Extension, Lpn};

/// The most remaps the file system holds for their files' fsyncs, by
/// default ([`Fs::set_remaps_waiting_max`]): past it a checkpoint's page
/// is copied. As many as the SW-WAL device's pending remaps by default.
pub const REMAPS_WAITING_MAX: usize = 65_536;

/// A file page: (inode, page index).
pub(crate) type FilePage = (Ino, u32);

impl Fs {
    /// Writes whole page `idx` of `ino` (a WAL file) naming page `target.1`
    /// of file `target.0` (the database). The page goes to the device at
    /// once with its tag, past the page cache (a WAL page is written once
    /// per WAL generation: the cache would absorb nothing). A plain
    /// [`Fs::write`] where the tag cannot be given.
    pub fn write_for(&mut self, ino: Ino, idx: u32, data: &[u8], target: (Ino, u32)) -> Result<()> {
        let ps = self.page_size();
        self.write(None, ino, idx as u64 * ps as u64, data)?;
        let target_lpn = self.inode(None, target.0).ok().and_then(|i| i.page(target.1));
        let (Some(target_lpn), true) = (target_lpn, data.len() == ps && self.dev.offers(Extension::Remap)) else {
            return Ok(());
        };
        // Still in the cache under write-back (write-through sent it untagged).
        let Some(d) = self.cache.take(&(None, ino, idx)) else {
            return Ok(());
        };
        let call = Call::WriteRemappable {
            lpn: d.lpn,
            data: &d.data,
            target: target_lpn,
        };
        if let Err(e) = self.dev.call(call) {
            self.cache.put((None, ino, idx), d.lpn, d.class, &d.data);
            return Err(e.into());
        }
        self.read_cache.wrote(None, d.lpn, &d.data);
        self.unflushed = true;
        self.stats.wal_page_writes += 1;
        self.stats.remappable_writes += 1;
        self.unsynced.insert((ino, d.lpn));
        Ok(())
    }

    /// Writes whole page `idx` of `ino` (the database) with `data`, the
    /// contents of page `from.1` of file `from.0` (a WAL page written with
    /// [`Fs::write_for`]): by a remap of that page onto it, sent to the
    /// device at the file's next `fsync` (see the module doc), else as
    /// [`Fs::write`]. Returns whether it will remap.
    pub fn write_remapping(&mut self, ino: Ino, idx: u32, data: &[u8], from: (Ino, u32)) -> Result<bool> {
        let ps = self.page_size();
        let offset = idx as u64 * ps as u64;
        let src = self.inode(None, from.0).ok().and_then(|i| i.page(from.1));
        let dst = self.inode(None, ino)?.page(idx);
        let src_on_device = self.cache.get(&(None, from.0, from.1)).is_none();
        let room = self.remaps_waiting.len() < self.remaps_waiting_max || self.remaps_waiting.contains_key(&(ino, idx));
        if src.is_none() || dst.is_none() || data.len() != ps || !src_on_device || !room || !self.dev.offers(Extension::Remap) {
            self.write(None, ino, offset, data)?;
            return Ok(false);
        }
        // As `write`: room in the metadata journal for the size it may
        // change, and the file claimed for the non-transactional context.
        self.make_room(None, crate::STEP_PAGES_MAX)?;
        self.claim(None, ino)?;
        // The WAL page may be the source of a remap not sent yet, or this
        // page the target of one: this one replaces it.
        self.settle_remaps(|d, s| s == from || d == (ino, idx), |d, _| d == (ino, idx))?;
        // A dirty copy of the database page is older than this.
        self.cache.take(&(None, ino, idx));
        self.remaps_waiting.insert((ino, idx), from);
        assert!(self.remaps_waiting.len() <= self.remaps_waiting_max);
        if offset + ps as u64 > self.inode(None, ino)?.size {
            self.inode_mut(None, ino)?.size = offset + ps as u64;
        }
        self.host_log(|fs| {
            Ok(crate::hostlog::Record::Write {
                ctx: None,
                path: fs.path_of(ino)?,
                offset,
                data: data.to_vec(),
            })
        })?;
        Ok(true)
    }

    /// Bounds the remaps waiting for their files' fsyncs (a DRAM table of
    /// the host's): past `max`, a checkpoint's page is copied.
    pub fn set_remaps_waiting_max(&mut self, max: usize) {
        assert!(max > 0, "a bound of no remap: a device without remaps copies already");
        self.remaps_waiting_max = max;
    }

    /// File page `page` (the header page of `db`'s WAL) is trimmed in the
    /// flush that sends `db`'s waiting remaps, if one does: after a complete
    /// checkpoint the WAL holds nothing SQLite needs, and what the remaps
    /// left of it must not be replayed (see the module doc). Forgotten if
    /// `db` has no remap waiting when it syncs.
    pub fn discard_with_remaps(&mut self, db: Ino, page: FilePage) {
        self.discard_with_remaps.insert(db, page);
    }

    /// Trims file page `page` on the device (it reads as zeros until written
    /// again; the file keeps its page and size), logged as the zeros it reads.
    fn discard(&mut self, page: FilePage) -> Result<()> {
        let Some(lpn) = self.inode(None, page.0)?.page(page.1) else {
            return Ok(());
        };
        assert!(
            !self.remaps_waiting.values().any(|&s| s == page),
            "discarding page {page:?}, the source of a waiting remap"
        );
        self.cache.take(&(None, page.0, page.1));
        self.read_cache.forget(lpn);
        self.dev.trim(lpn)?;
        self.stats.discarded_pages += 1;
        self.unflushed = true;
        let ps = self.page_size();
        self.host_log(|fs| {
            Ok(crate::hostlog::Record::Write {
                ctx: None,
                path: fs.path_of(page.0)?,
                offset: page.1 as u64 * ps as u64,
                data: vec![0; ps],
            })
        })
    }

    /// The device page a read of file page `page` must read: the WAL page
    /// of a remap waiting for it, if any.
    pub(crate) fn remapped_source(&self, page: FilePage) -> Option<Lpn> {
        let &(ino, idx) = self.remaps_waiting.get(&page)?;
        self.inode(None, ino).ok()?.page(idx)
    }

    /// The waiting remaps `hit(target, source)` selects, because one of
    /// their pages is about to change: those `drop(target, source)` names
    /// are forgotten (their database page is written anew), the others go
    /// to the device now (with `synchronous=OFF` SQLite never syncs, and
    /// its next WAL generation rewrites the WAL pages: a crash promises
    /// nothing there).
    pub(crate) fn settle_remaps(
        &mut self,
        hit: impl Fn(FilePage, FilePage) -> bool,
        drop: impl Fn(FilePage, FilePage) -> bool,
    ) -> Result<()> {
        let chosen: Vec<(FilePage, FilePage)> = self
            .remaps_waiting
            .iter()
            .filter(|&(&d, &s)| hit(d, s))
            .map(|(&d, &s)| (d, s))
            .collect();
        for (d, s) in chosen {
            self.remaps_waiting.remove(&d);
            if !drop(d, s) {
                self.send_remap(d, s)?;
            }
        }
        Ok(())
    }

    /// After file `ino`'s fsync made its metadata durable: its waiting
    /// remaps go to the device, with the discard it asked for, then a flush
    /// makes them durable together.
    pub(crate) fn send_remaps(&mut self, ino: Ino) -> Result<()> {
        let before = self.remaps_waiting.len();
        let discard = self.discard_with_remaps.remove(&ino);
        self.settle_remaps(|d, _| d.0 == ino, |_, _| false)?;
        if self.remaps_waiting.len() == before {
            return Ok(());
        }
        if let Some(page) = discard {
            self.discard(page)?;
        }
        self.flush()
    }

    /// One remap of WAL page `s` onto database page `d` to the device; if
    /// the device refuses it, the page is copied.
    fn send_remap(&mut self, d: FilePage, s: FilePage) -> Result<()> {
        let (Some(src), Some(dst)) = (self.inode(None, s.0)?.page(s.1), self.inode(None, d.0)?.page(d.1)) else {
            return Ok(());
        };
        match self.dev.call(Call::Remap { from: src, to: dst }) {
            Ok(_) => {
                // The database page now holds the WAL page's contents, and
                // the WAL page nothing.
                self.read_cache.moved(src, dst);
                self.stats.remapped_pages += 1;
            }
            // Refused (the page was not written for that target since the
            // device's mount, or its pending remaps are full): copied.
            Err(DeviceError::Unsupported { .. } | DeviceError::TableFull { .. }) => {
                let mut page = vec![0u8; self.page_size()];
                self.read_dev(None, src, &mut page)?;
                self.write_dev(None, dst, &page, false)?;
                self.stats.database_page_writes += 1;
            }
            Err(e) => return Err(FsError::Device(e)),
        }
        self.unflushed = true;
        Ok(())
    }
}
