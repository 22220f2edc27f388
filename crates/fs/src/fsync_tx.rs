//! One device transaction per durability point of the non-transactional
//! context ([`FsyncPolicy::OneTransaction`]): what Möbius's paper ran
//! Filebench on ("a revised jbd layer for ext3", its sec. V-B), where a
//! journal commit is one device transaction.
//!
//! Under the default [`FsyncPolicy::Ordered`], an fsync on a transactional
//! device sends the dirty data pages as plain writes, then the metadata that
//! names them in a device transaction of its own (ext4's ordered mode, the
//! journal replaced by the device's atomicity). Under `OneTransaction` the
//! file system knows every page of the durability point before it sends
//! any, so it sends them together: every non-transactional dirty page and
//! every touched metadata page in one device transaction (one SWRITE on
//! `mobius`, one atomic write on `atomic-write`). Data and metadata become
//! durable together or not at all, so no ordering between them is needed.
//!
//! The dirty pages leave the page cache only when the device commit
//! succeeds. A device whose transaction cannot hold them all refuses with
//! `TableFull` (Möbius's inode holds at most 500 mappings of 4 KiB pages):
//! the transaction is aborted and the same durability point goes the
//! ordered way, counted in [`crate::FsStats::one_tx_fallbacks`]. Pages the
//! cache evicts past its bound still go out as plain writes, as a kernel's
//! flusher writes them (they are durable only at the next durability point,
//! as before).

use crate::{Fs, FsError, Result};
use txftl_ftl::DeviceError;

/// How the non-transactional context's durability points (fsync, sync,
/// namespace changes) reach a transactional device.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FsyncPolicy {
    /// Data pages as plain writes, then the metadata in a device transaction.
    #[default]
    Ordered,
    /// Data and metadata pages in one device transaction.
    OneTransaction,
}

impl Fs {
    /// Sets how durability points reach the device; `OneTransaction` needs
    /// transactional mode ([`FsError::NotTransactional`] otherwise). Pending
    /// changes are made durable first, under the policy in force.
    pub fn set_fsync_policy(&mut self, policy: FsyncPolicy) -> Result<()> {
        if policy == FsyncPolicy::OneTransaction && self.mode != crate::FsMode::Transactional {
            return Err(FsError::NotTransactional);
        }
        self.sync()?;
        self.fsync_policy = policy;
        Ok(())
    }

    pub fn fsync_policy(&self) -> FsyncPolicy {
        self.fsync_policy
    }

    /// Does a durability point go to the device as one transaction?
    pub(crate) fn one_transaction(&self) -> bool {
        self.fsync_policy == FsyncPolicy::OneTransaction && self.mode == crate::FsMode::Transactional
    }

    /// Every non-transactional dirty page and touched metadata page in one
    /// device transaction; the ordered way if the device's transaction is full.
    pub(crate) fn durable_in_one_transaction(&mut self) -> Result<()> {
        let keys = self.cache.keys_of_ctx(None);
        if keys.is_empty() && self.touched_count(None) == 0 {
            self.fold(None); // claims without changes: nothing to write
            return Ok(());
        }
        let tid = self.new_tid();
        self.dev.begin(tid)?;
        let r = (|| {
            // The transaction's last page is its last metadata page, or
            // its last data page if it has none (`Fs::write_last_tx`).
            let data_last = self.touched_count(None) == 0;
            for (i, key) in keys.iter().enumerate() {
                let Some((lpn, class, data)) = self.cache.get(key).map(|d| (d.lpn, d.class, d.data.clone())) else {
                    continue;
                };
                self.write_page_dev(Some(tid), key.1, lpn, class, &data, data_last && i + 1 == keys.len())?;
            }
            self.write_pending(None, tid, !data_last)?;
            self.dev.commit(tid)?;
            Ok(())
        })();
        match r {
            Ok(()) => {
                for key in &keys {
                    self.cache.take(key);
                }
                self.fold(None);
                self.read_cache.committed(tid);
                self.stats.tx_commits += 1;
                Ok(())
            }
            Err(e) => {
                // Nothing of it is durable: the pages are still dirty, the
                // metadata still pending.
                let _ = self.dev.abort(tid);
                self.read_cache.dropped(tid);
                match e {
                    FsError::Device(DeviceError::TableFull { .. }) => {
                        self.stats.one_tx_fallbacks += 1;
                        self.durable_ordered()
                    }
                    e => Err(e),
                }
            }
        }
    }
}
