//! The `Remap` device extension at the file level (SW-WAL): a WAL page
//! written naming the database page it holds a version of, and a database
//! page written by remapping that WAL page onto it (SQLite's checkpoint
//! copies a frame into the database: the VFS sees the frame read and the
//! same bytes written back). Both fall back to plain writes where the device
//! has no remap, the database page is not allocated yet, or the device
//! refuses (it forgot the page's target at a mount): the host copies.
//!
//! Everything else stays `write`'s: the file's size and allocation, the
//! host log (a remap is logged as the write it stands for, so a process
//! death replays it as a copy), durability at `fsync`.

use crate::{Fs, FsError, Ino, Result};
use txftl_ftl::{DeviceError, Extension};

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
        let calls = self.dev.remap_calls().expect("offered");
        if let Err(e) = calls.write_remappable(d.lpn, &d.data, target_lpn) {
            self.cache.put((None, ino, idx), d.lpn, d.class, &d.data);
            return Err(e.into());
        }
        self.unflushed = true;
        self.stats.wal_page_writes += 1;
        self.stats.remappable_writes += 1;
        self.unsynced.insert((ino, d.lpn));
        Ok(())
    }

    /// Writes whole page `idx` of `ino` (the database) with `data`, the
    /// contents of page `from.1` of file `from.0` (a WAL page written with
    /// [`Fs::write_for`]): by remapping that page onto it if the device
    /// takes it (nothing programmed), else as [`Fs::write`]. Returns whether
    /// it remapped.
    pub fn write_remapping(&mut self, ino: Ino, idx: u32, data: &[u8], from: (Ino, u32)) -> Result<bool> {
        let ps = self.page_size();
        let offset = idx as u64 * ps as u64;
        let src = self.inode(None, from.0).ok().and_then(|i| i.page(from.1));
        let dst = self.inode(None, ino)?.page(idx);
        let src_on_device = self.cache.get(&(None, from.0, from.1)).is_none();
        if let (Some(src), Some(dst), true) = (src, dst, data.len() == ps && src_on_device && self.dev.offers(Extension::Remap)) {
            // As `write`: room in the metadata journal for the size it may
            // change, and the file claimed for the non-transactional context.
            self.make_room(None, crate::STEP_PAGES_MAX)?;
            self.claim(None, ino)?;
            match self.dev.remap_calls().expect("offered").remap(src, dst) {
                Ok(_) => {
                    // A dirty copy of the database page is older than this.
                    self.cache.take(&(None, ino, idx));
                    self.unflushed = true;
                    self.stats.remapped_pages += 1;
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
                    return Ok(true);
                }
                Err(DeviceError::Unsupported { .. }) => {}
                Err(e) => return Err(FsError::Device(e)),
            }
        }
        self.write(None, ino, offset, data)?;
        Ok(false)
    }
}
