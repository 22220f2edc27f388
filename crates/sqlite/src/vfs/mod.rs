//! A SQLite VFS over a txftl file system, written against SQLite's C VFS
//! interface (`sqlite3_vfs`, `sqlite3_io_methods` version 2).
//!
//! On a journaled file system (a `plain` device) it is an ordinary VFS: the
//! rollback journal and the WAL are real files on the same device, and the WAL
//! index lives in memory (`xShmMap`).
//!
//! On a transactional file system (X-FTL), SQLite's transactions map to the
//! device's in one of two ways ([`TxMapping`]).
//!
//! Each open database file handle (each connection) has its own device
//! transaction: the file system keeps several open at once, each with its own
//! writes and metadata (`txftl_fs`'s `txn` module says how they share metadata
//! pages), so one connection's commit never carries another's uncommitted pages.
//!
//! [`TxMapping::FirstWrite`], for `journal_mode=OFF` or `MEMORY` (the paper's way):
//! - a device transaction begins at the first write to the main database file
//!   through this handle (or its first truncate);
//! - reads of the database inside it see its own writes (SQLite re-reads pages
//!   it spilled and evicted);
//! - it commits at SQLite's commit point, `SQLITE_FCNTL_COMMIT_PHASETWO` (sent
//!   even with `synchronous=OFF`);
//! - it aborts when SQLite drops its lock to SHARED or NONE with the transaction
//!   still open (a ROLLBACK, even after the cache spilled uncommitted pages),
//!   and at close;
//! - `PRAGMA locking_mode=EXCLUSIVE` is refused: it hides ROLLBACK from the VFS;
//! - a hot journal's playback (a rollback-journal mode beside it) writes
//!   nothing: the device already holds the database it would restore
//!   ([`drops_hot_playback`]).
//!
//! [`TxMapping::BatchAtomic`], for the rollback-journal modes (`DELETE`, the
//! default): the VFS reports `SQLITE_IOCAP_BATCH_ATOMIC` on the database file,
//! and SQLite (built with `SQLITE_ENABLE_BATCH_ATOMIC_WRITE`) brackets a commit's
//! page writes with `SQLITE_FCNTL_BEGIN_ATOMIC_WRITE`, `..._COMMIT_ATOMIC_WRITE`
//! or `..._ROLLBACK_ATOMIC_WRITE`: device begin, commit, abort. SQLite only does
//! so while the rollback journal is still in memory; a transaction whose cache
//! spilled has already written its journal to a file, and commits through it as
//! usual (non-transactional writes and flushes). A batch that does not fit the
//! X-L2P table fails with `SQLITE_IOERR_WRITE`, or `SQLITE_IOERR_COMMIT_ATOMIC`
//! when the file system's page cache held its pages until the commit, which
//! makes SQLite abort it and fall back to the journal.
//!
//! That fallback is not crash-safe as SQLite does it (3.50.2,
//! `sqlite3PagerCommitPhaseOne`): its journal was in memory during the batch,
//! so the journal sync before the batch did nothing; after
//! `ROLLBACK_ATOMIC_WRITE` SQLite writes the journal to its file
//! (`sqlite3JournalCreate`) and overwrites the database pages right away,
//! with no sync between the two. A power cut in those overwrites leaves a
//! journal whose size is not durable yet (not hot, so not rolled back) and a
//! half-overwritten database: `txftl sqlcrash --modes xftl-batch` found it
//! (80 torn restarts at `synchronous=FULL`). So the VFS makes the journal
//! durable itself (file-system fsync: its pages, its size, a device flush)
//! before the first database write after an aborted batch.
//!
//! Locks: SQLite's file locks (NONE, SHARED, RESERVED, PENDING, EXCLUSIVE) are
//! kept across the connections of the process per file, with the unix VFS's
//! rules (see `FileLocks` below): `SQLITE_BUSY` when another connection's lock
//! precludes the one asked for, and `xCheckReservedLock` true while any
//! connection holds RESERVED or more. The WAL index's locks (`xShmLock`) are
//! kept the same way. Locks are per process: another process opening the
//! same device image is not excluded (an image belongs to one process).
//!
//! Temporary files (statement journals, sort spills, temporary tables and
//! indexes: every file SQLite opens without a name or deletes at close) live
//! in host memory (`vfs/memfile.rs`), as on a tmpfs `/tmp`: they never reach
//! the device nor take a device transaction, on any protocol, within a budget
//! of bytes ([`Vfs::set_temp_budget`]; `SQLITE_FULL` past it).
//!
//! Why a call failed: `SQLITE_FULL` alone does not say whether the X-L2P table,
//! the inodes, the metadata journal or the device ran out. Each failure's
//! reason goes to SQLite's error log (`sqlite3_log`, as the unix VFS logs the
//! errno behind an I/O error) and is kept for `xGetLastError` and
//! [`Vfs::last_error`].
//!
//! Nothing panics across the FFI boundary: every callback catches unwinding and
//! maps errors to SQLite codes (`SQLITE_IOERR_*`, `SQLITE_FULL`, `SQLITE_CANTOPEN`).
//! Time and randomness are deterministic (a fixed clock, a counter).
//! With `TXFTL_VFS_DEBUG` set in the environment, the file-system error behind
//! each failing callback is also printed to stderr.

use crate::ffi;
use group::{AtUnlock, Group};
pub use memfile::TempStats;
use std::collections::BTreeMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use txftl_fs::{FileClass, Fs, FsError, FsMode, Ino};
use txftl_ftl::{DeviceError, Extension, Tid};
use txftl_ftl::{ProtocolEntry, SqlJournal};

// One file per part of the VFS. The loadable extension (`crates/sqlite-ext`,
// its own workspace: it links no SQLite) includes this folder by path.
mod calls;
mod control;
mod errors;
mod group;
mod host_counts;
mod io;
mod locks;
mod memfile;
mod register;
mod remap;
mod shm;
mod tx;
mod walmap;

use calls::*;
use control::*;
use errors::*;
pub use host_counts::HostCounters;
use io::*;
use locks::*;
pub use register::Vfs;
use remap::*;
use shm::*;
use tx::*;

/// The bytes SQLite's temporary files in host memory (`vfs/memfile.rs`) may
/// hold together, per VFS, unless set otherwise ([`Vfs::set_temp_budget`]):
/// 256 MiB, far more than the statement journals and sort spills of this
/// project's workloads need, and little enough that a runaway query fails
/// with `SQLITE_FULL` instead of exhausting the host.
pub const TEMP_BUDGET_DEFAULT: u64 = 256 << 20;

/// The file system a VFS serves, shared with whoever registered it.
pub type SharedFs = Arc<Mutex<Fs>>;

/// The SQLite functions the VFS calls. A program linked with SQLite uses
/// [`Api::linked`]; a loadable extension takes them from the host's
/// `sqlite3_api_routines`, so it works on hosts of any version that has them.
#[derive(Clone, Copy)]
pub struct Api {
    pub vfs_register: unsafe extern "C" fn(*mut ffi::sqlite3_vfs, c_int) -> c_int,
    pub vfs_unregister: unsafe extern "C" fn(*mut ffi::sqlite3_vfs) -> c_int,
    pub mprintf: unsafe extern "C" fn(*const c_char, ...) -> *mut c_char,
    /// `sqlite3_log`, where failures say why (optional: a host may lack it).
    pub log: Option<unsafe extern "C" fn(c_int, *const c_char, ...)>,
}

/// How SQLite's transactions map to the device's on a transactional file system.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TxMapping {
    /// Begin at the first database write, commit at `SQLITE_FCNTL_COMMIT_PHASETWO`,
    /// abort at unlock or close (`journal_mode=OFF` or `MEMORY`).
    FirstWrite,
    /// `SQLITE_IOCAP_BATCH_ATOMIC`: SQLite's atomic-write file controls
    /// (rollback-journal modes).
    BatchAtomic,
}

/// A deliberate, plausible VFS bug, for proving the crash checker catches it.
/// Never on unless asked for ([`Vfs::register_with_canary`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Canary {
    #[default]
    None,
    /// [`TxMapping::FirstWrite`] commits the device transaction at `xSync` of
    /// the database file ("fsync becomes commit") instead of at
    /// `SQLITE_FCNTL_COMMIT_PHASETWO`. Indistinguishable while SQLite syncs at
    /// every commit (`synchronous=NORMAL` or `FULL`); with `synchronous=OFF`
    /// SQLite never syncs, so no transaction ever commits on the device.
    CommitAtSync,
    /// [`TxMapping::BatchAtomic`] trusts SQLite's fallback after an aborted
    /// batch and does not sync the journal before the database is overwritten
    /// (see the module doc). Visible only when a batch is aborted (larger than
    /// the X-L2P table) and the power is cut inside the overwrites.
    NoSyncAfterBatchAbort,
    /// `xSync` of a WAL file does nothing (as if the WAL's checksummed frames
    /// made its syncs unnecessary): the frames' pages may reach the device,
    /// but the WAL's size, file-system metadata durable only at fsync, does
    /// not. With `synchronous=FULL` a COMMIT that returned is then lost at a
    /// power cut, which `wal` FULL promises it is not.
    WalSkipsSync,
    /// [`TxMapping::FirstWrite`] ignores WAL mode: a checkpoint's first
    /// database write begins a device transaction (as for `OFF`), which
    /// commits only at a later SQLite commit's phase two, or is aborted at
    /// close. SQLite resets the WAL once the checkpoint is synced, so a power
    /// cut between the reset and that commit loses the checkpointed
    /// transactions (and a close loses them outright).
    WalCheckpointInTransaction,
}

struct VfsState {
    api: Api,
    fs: SharedFs,
    transactional: bool,
    /// The protocol's registry entry: the journal modes it carries.
    entry: &'static ProtocolEntry,
    /// Meaningful only when `transactional`; see [`VfsState::maps`].
    mapping: TxMapping,
    /// WAL index regions and their locks, per file name (in memory, as SQLite allows).
    shm: Mutex<BTreeMap<String, Shm>>,
    random: Mutex<u64>,
    /// Numbers SQLite's temporary files (`memfile.rs`), for messages.
    temp_names: Mutex<u64>,
    /// What the temporary files in host memory hold, and their budget.
    temp: Mutex<TempStats>,
    /// The last failure: the SQLite code returned and why.
    last_error: Mutex<Option<(c_int, String)>>,
    canary: Canary,
    /// Database page writes per device transaction under `synchronous=NORMAL`
    /// (`vfs/group.rs`; 0: none, the default: the `Stack` sets the protocol
    /// entry's for `journal_mode=OFF`).
    normal_group_pages: AtomicU32,
    /// The device remaps (SW-WAL): WAL files are laid out for it
    /// (`vfs/walmap.rs`) and checkpoints remap their frames.
    remaps: bool,
    /// The device commits on its transaction's end-flagged last page
    /// (NoLgn: `Extension::TxEnd`): the sync inside one is left to the commit.
    ends: bool,
    /// The last frame SQLite read from such a WAL.
    frame_read: Mutex<Option<walmap::FrameRead>>,
    /// The host's work: the calls a kernel VFS makes system calls for, and
    /// the bytes they copy (`host_cost.rs`).
    host: std::sync::Arc<HostCounters>,
}

/// A WAL index: its regions and the locks on its SQLITE_SHM_NLOCK slots.
#[derive(Default)]
struct Shm {
    regions: Vec<Box<[u8]>>,
    /// Handles holding each slot shared.
    shared: [u32; SHM_SLOTS],
    /// The handle holding each slot exclusively.
    exclusive: [Option<usize>; SHM_SLOTS],
}

const SHM_SLOTS: usize = ffi::SQLITE_SHM_NLOCK as usize;

/// SQLite's lock on one file, across the handles of this process (the unix
/// VFS keeps the same per inode, over POSIX locks): how many handles hold
/// SHARED or more, and the one handle, if any, above SHARED.
#[derive(Debug, Default)]
struct FileLocks {
    shared: u32,
    /// (handle, RESERVED | PENDING | EXCLUSIVE)
    writer: Option<(usize, c_int)>,
}

/// Locks per (file system, inode): a file system can be served by several
/// VFSes (the extension registers two over one), which must see one lock.
static LOCKS: Mutex<BTreeMap<(usize, Ino), FileLocks>> = Mutex::new(BTreeMap::new());

#[repr(C)]
struct TxFile {
    base: ffi::sqlite3_file,
    state: *mut FileState,
}

struct FileState {
    vfs: *const VfsState,
    ino: Ino,
    name: String,
    main_db: bool,
    /// A WAL file (SQLITE_OPEN_WAL).
    wal: bool,
    lock: c_int,
    delete_on_close: bool,
    /// This handle's open device transaction (main database files only).
    tx: Option<Tid>,
    /// A batch was aborted and SQLite's journal of it is not durable yet: sync
    /// it before the database is written (main database files only).
    journal_unsynced: bool,
    /// Grouped device commits under `synchronous=NORMAL` (`vfs/group.rs`).
    group: Group,
    /// SQLite has mapped the WAL index through this (main database) handle:
    /// the database is in WAL mode, where SQLite writes it only to checkpoint
    /// the WAL (and syncs it before it resets the WAL). Those writes are not
    /// a transaction of SQLite's: on a transactional file system they go to
    /// the device outside any device transaction, durable at `xSync`, as on
    /// a journaled one. (A device transaction begun at a checkpoint's first
    /// write would never see a commit point and be aborted at close, taking
    /// the checkpointed pages with it after the WAL was deleted.)
    wal_mode: bool,
    /// WAL index slots this handle holds shared / exclusive (bit per slot).
    shm_shared: u8,
    shm_exclusive: u8,
    /// A WAL laid out for a remapping device, and its database's inode.
    wal_file: Option<walmap::WalFile>,
    /// SQLite took RESERVED since it last held SHARED or less: an EXCLUSIVE
    /// lock without it is a hot journal's playback (`hot_playback`).
    reserved_taken: bool,
    /// SQLite is playing a hot journal back into the database, under
    /// [`TxMapping::FirstWrite`] outside WAL mode: its writes and truncates
    /// are dropped (see [`drops_hot_playback`]). Cleared when SQLite lowers
    /// the lock to SHARED or NONE.
    hot_playback: bool,
}

impl FileState {
    /// This handle's identity in the lock tables.
    fn id(&self) -> usize {
        self as *const FileState as usize
    }
    fn lock_key(&self) -> (usize, Ino) {
        let state = unsafe { &*self.vfs };
        (Arc::as_ptr(&state.fs) as *const () as usize, self.ino)
    }
}

impl VfsState {
    /// Is this a transactional file system whose transactions map this way?
    fn maps(&self, mapping: TxMapping) -> bool {
        self.transactional && self.mapping == mapping
    }

    /// Why `PRAGMA journal_mode=<value>` (lower case) cannot run here, if it
    /// cannot. On a journaled file system every mode runs. On a transactional
    /// one a mode runs if the protocol's entry carries it (`ProtocolEntry::sql`)
    /// and this VFS's mapping runs it: the batch VFS runs `DELETE` as SQLite's
    /// batch atomic writes, and WAL; the other VFS every mode but the batch.
    /// The refusal says what this VFS runs and what the other one does, apart.
    fn journal_refusal(&self, value: &str) -> Option<String> {
        use SqlJournal::*;
        if !self.transactional {
            return None;
        }
        let batch = self.mapping == TxMapping::BatchAtomic;
        let asked = match value {
            "delete" => Delete,
            "truncate" => Truncate,
            "persist" => Persist,
            "wal" => Wal,
            "off" => Off,
            "memory" => Memory,
            _ => return None, // not a journal mode: SQLite's own error
        };
        // The protocol's modes each VFS runs: the batch VFS its batches (as
        // DELETE) and WAL, the other VFS the rest.
        let runs_batch = |j: &SqlJournal| matches!(j, Batch | Wal);
        let (here, there): (Vec<SqlJournal>, Vec<SqlJournal>) = match batch {
            true => (
                self.entry.sql.iter().copied().filter(runs_batch).collect(),
                self.entry.sql.iter().copied().filter(|j| *j != Batch).collect(),
            ),
            false => (
                self.entry.sql.iter().copied().filter(|j| *j != Batch).collect(),
                self.entry.sql.iter().copied().filter(|j| *j == Batch).collect(),
            ),
        };
        let as_here = if batch && asked == Delete { Batch } else { asked };
        if here.contains(&as_here) {
            return None;
        }
        let as_there = if !batch && asked == Delete { Batch } else { asked };
        let (this_vfs, other_vfs) = match batch {
            true => ("the batch VFS", "the `txftl` VFS"),
            false => ("this VFS", "the batch VFS (`txftl-batch`)"),
        };
        let name = self.entry.name;
        let mode = value.to_uppercase();
        let mut msg = match there.contains(&as_there) {
            true => format!("txftl: protocol `{name}` does not carry journal_mode={mode} through {this_vfs} (docs/protocols/{name}.md): "),
            false => format!("txftl: protocol `{name}` does not carry journal_mode={mode} (docs/protocols/{name}.md): "),
        };
        msg += &match here.is_empty() {
            true => format!("{this_vfs} runs none of its modes"),
            false => format!("{this_vfs} runs {}", journal_names(&here)),
        };
        if !there.is_empty() {
            msg += &format!("; {other_vfs} runs {}", journal_names(&there));
        }
        Some(msg)
    }

    /// Why SQLite may not open a file of `class` here, if it may not: a
    /// rollback journal or a WAL in a journal mode this device does not carry
    /// ([`VfsState::journal_refusal`]). A database whose header says WAL, or
    /// the default `DELETE` mode with no PRAGMA, meet it here.
    fn open_refusal(&self, class: FileClass) -> Option<String> {
        match class {
            FileClass::Wal => self.journal_refusal("wal"),
            FileClass::Journal if self.mapping == TxMapping::BatchAtomic => self.journal_refusal("delete"),
            FileClass::Journal => {
                let refusals: Vec<String> = ["delete", "truncate", "persist"]
                    .iter()
                    .filter_map(|m| self.journal_refusal(m))
                    .collect();
                (refusals.len() == 3).then(|| refusals[0].clone())
            }
            _ => None,
        }
    }
}

/// Journal modes as a refusal lists them (`OFF, MEMORY`).
fn journal_names(modes: &[SqlJournal]) -> String {
    let names: Vec<&str> = modes
        .iter()
        .map(|j| match j {
            SqlJournal::Delete => "DELETE",
            SqlJournal::Truncate => "TRUNCATE",
            SqlJournal::Persist => "PERSIST",
            SqlJournal::Wal => "WAL",
            SqlJournal::Off => "OFF",
            SqlJournal::Memory => "MEMORY",
            SqlJournal::Batch => "DELETE (as SQLite's batch atomic writes)",
        })
        .collect();
    names.join(", ")
}

unsafe fn vfs_state<'a>(vfs: *mut ffi::sqlite3_vfs) -> &'a VfsState {
    &*((*vfs).pAppData as *const VfsState)
}

unsafe fn file_state<'a>(file: *mut ffi::sqlite3_file) -> &'a mut FileState {
    &mut *(*(file as *mut TxFile)).state
}

/// The file system, or `None` (the reason noted) if a call panicked holding it.
fn lock(state: &VfsState) -> Option<MutexGuard<'_, Fs>> {
    let fs = state.fs.lock().ok();
    if fs.is_none() {
        note_error(
            state,
            ffi::SQLITE_IOERR,
            "txftl: the file system's lock is poisoned: an earlier call panicked".into(),
        );
    }
    fs
}
