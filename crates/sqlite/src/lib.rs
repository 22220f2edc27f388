//! txftl-sqlite: real, unmodified SQLite on a txftl device.
//!
//! The stack: a device of any protocol, the txftl file system on its logical
//! pages, and a SQLite VFS over the file system ([`vfs`]). A [`Mode`] is a
//! journal mode on a protocol: rollback journal (`DELETE`) and `WAL` on a
//! device without transactions; `OFF` (the X-FTL paper's setting) or
//! `MEMORY` on a transactional one, where the device's transactions replace
//! the journal, or `DELETE` through SQLite's batch atomic writes.

pub mod crash;
mod digest;
pub mod heavy;
pub mod host_cost;
mod mode;
pub mod sqlitebench;
pub mod tpcc;
pub mod vfs;
pub mod workload;
pub mod ycsb;

pub use mode::Mode;
pub(crate) use rusqlite::ffi;
use rusqlite::{Connection, OpenFlags};
use serde::Serialize;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use txftl_fs::{Fs, FsError};
use txftl_ftl::AnyDevice;
pub use vfs::{Api, Canary, SharedFs, TxMapping, Vfs};

impl Api {
    /// The SQLite this program is linked with (rusqlite's bundled one).
    pub fn linked() -> Api {
        Api {
            vfs_register: ffi::sqlite3_vfs_register,
            vfs_unregister: ffi::sqlite3_vfs_unregister,
            mprintf: ffi::sqlite3_mprintf,
            log: Some(ffi::sqlite3_log),
        }
    }
}

/// `PRAGMA synchronous`: how often SQLite syncs, and so what a COMMIT that
/// returned promises after a power cut (see the `crash` module).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Synchronous {
    Off,
    Normal,
    #[default]
    Full,
}

impl Synchronous {
    pub const ALL: [Synchronous; 3] = [Synchronous::Off, Synchronous::Normal, Synchronous::Full];

    /// The pragma's value.
    pub fn name(self) -> &'static str {
        match self {
            Synchronous::Off => "OFF",
            Synchronous::Normal => "NORMAL",
            Synchronous::Full => "FULL",
        }
    }
    pub fn parse(s: &str) -> Option<Synchronous> {
        Synchronous::ALL.into_iter().find(|x| x.name().eq_ignore_ascii_case(s))
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StackError {
    #[error("file system: {0}")]
    Fs(#[from] FsError),
    #[error("SQLite: {0}")]
    Sql(#[from] rusqlite::Error),
    #[error("{0}")]
    Other(String),
}

static VFS_COUNTER: AtomicU64 = AtomicU64::new(0);

/// A stack's counters at one moment ([`Stack::snapshot`]).
#[derive(Clone, Copy, Debug)]
pub struct Snapshot {
    pub fs: txftl_fs::FsStats,
    pub dev: txftl_ftl::DeviceStats,
    /// The host's own work so far (`host_cost`).
    pub host: host_cost::HostWork,
    /// The device clock, ns.
    pub now_ns: u64,
}

/// A device with the file system on it and a VFS registered over it.
pub struct Stack {
    pub vfs: Vfs,
    pub mode: Mode,
    /// Set on every connection [`Stack::open`] opens (`FULL` unless changed).
    pub synchronous: Synchronous,
}

impl Stack {
    /// Formats a file system on the device and registers a VFS over it.
    pub fn format(dev: Box<dyn AnyDevice>, mode: Mode) -> Result<Stack, StackError> {
        Self::format_with_canary(dev, mode, Canary::None)
    }

    /// [`Stack::format`] with a deliberate VFS bug (crash-checker canaries).
    pub fn format_with_canary(dev: Box<dyn AnyDevice>, mode: Mode, canary: Canary) -> Result<Stack, StackError> {
        Self::with_fs(Fs::format(dev, mode.fs_mode())?, mode, canary)
    }

    /// Mounts the file system already on the device (after a power cut: the
    /// device has been remounted through recovery).
    pub fn mount(dev: Box<dyn AnyDevice>, mode: Mode) -> Result<Stack, StackError> {
        Self::mount_with_canary(dev, mode, Canary::None)
    }

    /// [`Stack::mount`] with a deliberate VFS bug (crash-checker canaries).
    pub fn mount_with_canary(dev: Box<dyn AnyDevice>, mode: Mode, canary: Canary) -> Result<Stack, StackError> {
        Self::with_fs(Fs::mount(dev, mode.fs_mode())?, mode, canary)
    }

    fn with_fs(fs: Fs, mode: Mode, canary: Canary) -> Result<Stack, StackError> {
        let name = format!("txftl-{}", VFS_COUNTER.fetch_add(1, Ordering::Relaxed));
        let vfs = Vfs::register_with_canary(&name, Arc::new(Mutex::new(fs)), Api::linked(), mode.tx_mapping(), canary)
            .map_err(StackError::Other)?;
        // Grouping is for journal_mode=OFF only (`vfs/group.rs`).
        if mode.journal() == txftl_ftl::SqlJournal::Off {
            vfs.set_normal_group_pages(mode.entry().sql_normal_group_pages.unwrap_or(0));
        }
        Ok(Stack {
            vfs,
            mode,
            synchronous: Synchronous::Full,
        })
    }

    /// Opens a connection to `db` with the mode's journal mode.
    /// `page_size`: the database page size (the paper matches the flash page).
    pub fn open(&self, db: &str, page_size: usize) -> Result<Connection, StackError> {
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let conn = Connection::open_with_flags_and_vfs(db, flags, self.vfs.name())?;
        host_cost::attach(&conn, &self.vfs.host_counters())?;
        conn.pragma_update(None, "page_size", page_size as i64)?;
        let mode: String = conn.query_row(&format!("PRAGMA journal_mode={}", self.mode.journal_mode()), [], |r| r.get(0))?;
        if !mode.eq_ignore_ascii_case(self.mode.journal_mode()) {
            return Err(StackError::Other(format!(
                "SQLite refused journal_mode={} (got {mode})",
                self.mode.journal_mode()
            )));
        }
        conn.pragma_update(None, "synchronous", self.synchronous.name())?;
        if self.groups_commits() {
            // SQLite then writes nothing before its commit point, so a ROLLBACK
            // never aborts a group's earlier commits (`group.rs`).
            conn.pragma_update(None, "cache_spill", "OFF")?;
        }
        Ok(conn)
    }

    /// Do connections opened now group SQLite's transactions into device
    /// transactions (`synchronous=NORMAL`, `journal_mode=OFF`, a protocol whose
    /// entry asks for it: `group.rs`)?
    pub fn groups_commits(&self) -> bool {
        self.synchronous == Synchronous::Normal
            && self.mode.transactional()
            && self.mode.journal() == txftl_ftl::SqlJournal::Off
            && self.vfs.normal_group_pages() > 0
    }

    /// Why the last failing VFS call failed (also in SQLite's error log).
    pub fn last_error(&self) -> Option<String> {
        self.vfs.last_error()
    }

    /// The counters at this moment: file system, device, device clock
    /// (a measurement is the difference of two).
    pub fn snapshot(&self) -> Result<Snapshot, StackError> {
        let host = self.host_work();
        self.with_fs_mut(|fs| Snapshot {
            fs: fs.stats(),
            dev: fs.device().stats(),
            host,
            now_ns: fs.device().now_ns(),
        })
    }

    /// The host's own work so far: the statements of every connection
    /// [`Stack::open`] opened, and the VFS's calls (`host_cost`).
    pub fn host_work(&self) -> host_cost::HostWork {
        self.vfs.host_counters().work()
    }

    /// The device clock, ns.
    pub fn now_ns(&self) -> Result<u64, StackError> {
        self.with_fs_mut(|fs| fs.device().now_ns())
    }

    pub fn with_fs_mut<T>(&self, f: impl FnOnce(&mut Fs) -> T) -> Result<T, StackError> {
        let fs = self.vfs.fs();
        let mut guard = fs.lock().map_err(|_| StackError::Other("file system lock poisoned".into()))?;
        Ok(f(&mut guard))
    }

    /// Unregisters the VFS and hands the file system back (close connections first).
    pub fn into_fs(self) -> Result<Fs, StackError> {
        let fs = self.vfs.fs();
        drop(self.vfs);
        Arc::try_unwrap(fs)
            .map_err(|_| StackError::Other("a connection still holds the file system".into()))?
            .into_inner()
            .map_err(|_| StackError::Other("file system lock poisoned".into()))
    }
}
