//! The host page cache: file data pages written and not yet sent to the
//! device, kept in host DRAM as an OS's page cache keeps them (Linux's dirty
//! pages under ext4).
//!
//! A write to a file page lands here (a partial page is read-modify-written
//! here, its old contents read once from the device); a read sees it. A dirty
//! page reaches the device, once however often it was written, when a kernel
//! would force it out:
//!
//! - at `fsync` of its file (in a transaction: with the transaction's id, so
//!   the device transaction carries it exactly as a write-through write did);
//! - at a transaction's commit, for whatever of it is still here;
//! - before a non-transactional metadata commit (journal commit, or the
//!   metadata transaction on X-FTL): every non-transactional dirty page first,
//!   as ext4's ordered mode writes a file's data before the metadata that
//!   names it, so a file's size never covers pages the device never got;
//! - before a transaction claims a file with non-transactional dirty pages
//!   (they were written first, so they reach the device first);
//! - when the cache holds more than its bound ([`CachePolicy::WriteBack`]):
//!   the oldest dirty page of the writer's own context (or of the
//!   non-transactional one) is written back, as a kernel's flusher does;
//! - [`crate::Fs::sync`] (an unmount).
//!
//! A page the file drops (truncate, delete) or whose transaction aborts is
//! forgotten without a write. At a power cut the cache is gone with the rest
//! of the host's DRAM: what was not fsynced may be lost, exactly the POSIX
//! contract SQLite is written against. Closing a file forces nothing (Linux
//! does not either). Only dirty pages are kept: a read of a page that is not
//! dirty goes to the device (no clean-page cache).
//!
//! Pages are kept per context ([`Ctx`]): a transaction's dirty pages are its
//! own (a transaction reads its own, then the non-transactional ones, then the
//! device, as `read_tx` sees its own writes over the committed state), and
//! nobody else sees them.

use crate::txn::Ctx;
use crate::{FileClass, Ino};
use std::collections::BTreeMap;
use txftl_ftl::Lpn;

/// Default bound of the write-back cache, in pages (32 MiB of 8 KiB pages).
pub const DEFAULT_MAX_DIRTY_PAGES: usize = 4096;

/// How the file system sends file data to the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CachePolicy {
    /// Every write goes to the device as it comes (no host page cache; a page
    /// written twice before its fsync reaches the device twice).
    WriteThrough,
    /// A write-back cache of at most this many dirty pages (at least 1).
    WriteBack { max_dirty_pages: usize },
}

impl Default for CachePolicy {
    fn default() -> Self {
        CachePolicy::WriteBack {
            max_dirty_pages: DEFAULT_MAX_DIRTY_PAGES,
        }
    }
}

/// Which page: the context that wrote it, the file, the page's index in the file.
pub(crate) type Key = (Ctx, Ino, u32);

/// One dirty page.
#[derive(Debug)]
pub(crate) struct Dirty {
    /// The device page it goes to (stable while cached: a truncate below it drops it).
    pub lpn: Lpn,
    pub class: FileClass,
    /// When it was first dirtied (eviction order).
    seq: u64,
    pub data: Vec<u8>,
}

#[derive(Debug, Default)]
pub(crate) struct PageCache {
    pages: BTreeMap<Key, Dirty>,
    /// First-dirtied order: seq -> key.
    order: BTreeMap<u64, Key>,
    next_seq: u64,
}

impl PageCache {
    pub fn len(&self) -> usize {
        self.pages.len()
    }

    pub fn get(&self, key: &Key) -> Option<&Dirty> {
        self.pages.get(key)
    }

    /// Stores a page image; true if the page was dirty already (a rewrite the cache absorbed).
    pub fn put(&mut self, key: Key, lpn: Lpn, class: FileClass, data: &[u8]) -> bool {
        if let Some(d) = self.pages.get_mut(&key) {
            debug_assert_eq!(d.lpn, lpn, "a cached page moved");
            d.data.copy_from_slice(data);
            return true;
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        self.order.insert(seq, key);
        self.pages.insert(
            key,
            Dirty {
                lpn,
                class,
                seq,
                data: data.to_vec(),
            },
        );
        false
    }

    pub fn take(&mut self, key: &Key) -> Option<Dirty> {
        let d = self.pages.remove(key)?;
        self.order.remove(&d.seq);
        Some(d)
    }

    /// The keys of `ctx`'s dirty pages of `ino` from file page `from` on, in file order.
    pub fn keys_of_file(&self, ctx: Ctx, ino: Ino, from: u32) -> Vec<Key> {
        self.pages.range((ctx, ino, from)..=(ctx, ino, u32::MAX)).map(|(k, _)| *k).collect()
    }

    /// The keys of every dirty page of `ctx`, in file order.
    pub fn keys_of_ctx(&self, ctx: Ctx) -> Vec<Key> {
        self.pages.range((ctx, 0, 0)..=(ctx, Ino::MAX, u32::MAX)).map(|(k, _)| *k).collect()
    }

    /// The oldest dirty page of `ctx` or of the non-transactional context.
    pub fn oldest_for(&self, ctx: Ctx) -> Option<Key> {
        self.order.values().find(|k| k.0 == ctx || k.0.is_none()).copied()
    }
}
