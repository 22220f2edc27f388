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
use txftl_protocols::{ProtocolEntry, SqlJournal};

// A file beside this one (the loadable extension includes this file by path).
#[path = "group.rs"]
mod group;
#[path = "memfile.rs"]
mod memfile;
#[path = "walmap.rs"]
mod walmap;

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

/// A registered VFS. Unregisters on drop (close every connection first).
pub struct Vfs {
    name: CString,
    raw: *mut ffi::sqlite3_vfs,
    state: *mut VfsState,
}

// The raw pointers are owned by this handle and only touched under SQLite's or our locks.
unsafe impl Send for Vfs {}

impl Vfs {
    /// Registers a VFS named `name` over `fs` (not the default VFS). `mapping`
    /// matters only on a transactional file system.
    pub fn register(name: &str, fs: SharedFs, api: Api, mapping: TxMapping) -> Result<Vfs, String> {
        Self::register_with_canary(name, fs, api, mapping, Canary::None)
    }

    /// [`Vfs::register`], with a deliberate bug switched on (crash-checker canaries).
    pub fn register_with_canary(name: &str, fs: SharedFs, api: Api, mapping: TxMapping, canary: Canary) -> Result<Vfs, String> {
        let (transactional, entry) = {
            let fs = fs.lock().map_err(|_| "file system lock poisoned")?;
            (fs.mode() == FsMode::Transactional, fs.device().entry())
        };
        let cname = CString::new(name).map_err(|_| format!("VFS name `{name}` contains a NUL byte"))?;
        let state = Box::into_raw(Box::new(VfsState {
            api,
            fs,
            transactional,
            entry,
            mapping,
            shm: Mutex::new(BTreeMap::new()),
            random: Mutex::new(0x5EED),
            temp_names: Mutex::new(0),
            temp: Mutex::new(TempStats::default()),
            last_error: Mutex::new(None),
            canary,
            // Off unless the host asks (`Stack` does, for journal_mode=OFF):
            // a VFS whose host may use any journal mode never groups.
            normal_group_pages: AtomicU32::new(0),
            remaps: entry.extensions.contains(&Extension::Remap),
            ends: entry.extensions.contains(&Extension::TxEnd),
            frame_read: Mutex::new(None),
        }));
        let vfs = Box::new(ffi::sqlite3_vfs {
            iVersion: 2,
            szOsFile: std::mem::size_of::<TxFile>() as c_int,
            mxPathname: 512,
            pNext: std::ptr::null_mut(),
            zName: cname.as_ptr(),
            pAppData: state as *mut c_void,
            xOpen: Some(x_open),
            xDelete: Some(x_delete),
            xAccess: Some(x_access),
            xFullPathname: Some(x_full_pathname),
            xDlOpen: None,
            xDlError: None,
            xDlSym: None,
            xDlClose: None,
            xRandomness: Some(x_randomness),
            xSleep: Some(x_sleep),
            xCurrentTime: Some(x_current_time),
            xGetLastError: Some(x_get_last_error),
            xCurrentTimeInt64: Some(x_current_time_int64),
            xSetSystemCall: None,
            xGetSystemCall: None,
            xNextSystemCall: None,
        });
        let raw = Box::into_raw(vfs);
        let rc = unsafe { (api.vfs_register)(raw, 0) };
        if rc != ffi::SQLITE_OK {
            unsafe {
                drop(Box::from_raw(raw));
                drop(Box::from_raw(state));
            }
            return Err(format!("sqlite3_vfs_register failed with code {rc}"));
        }
        Ok(Vfs { name: cname, raw, state })
    }

    pub fn name(&self) -> &str {
        self.name.to_str().unwrap_or("txftl")
    }

    pub fn fs(&self) -> SharedFs {
        unsafe { (*self.state).fs.clone() }
    }

    /// Why the last failing call failed (also in SQLite's error log).
    pub fn last_error(&self) -> Option<String> {
        let state = unsafe { &*self.state };
        state.last_error.lock().ok()?.as_ref().map(|(_, m)| m.clone())
    }

    /// What SQLite's temporary files, kept in host memory (`vfs/memfile.rs`),
    /// hold and have held.
    pub fn temp_stats(&self) -> TempStats {
        let state = unsafe { &*self.state };
        state.temp.lock().map(|t| *t).unwrap_or_default()
    }

    /// Bounds the bytes SQLite's temporary files in host memory hold together
    /// ([`TEMP_BUDGET_DEFAULT`] unless set): past it a write fails with
    /// `SQLITE_FULL`. Lowering it below what they hold refuses only growth.
    pub fn set_temp_budget(&self, bytes: u64) {
        let state = unsafe { &*self.state };
        if let Ok(mut t) = state.temp.lock() {
            t.budget = bytes;
        }
    }

    /// Database page writes per device transaction under `synchronous=NORMAL`
    /// for connections opened from now on (`vfs/group.rs`; 0: one device
    /// transaction per SQLite transaction). The protocol entry's by default.
    pub fn set_normal_group_pages(&self, pages: u32) {
        unsafe { (*self.state).normal_group_pages.store(pages, Ordering::Relaxed) }
    }

    pub fn normal_group_pages(&self) -> u32 {
        unsafe { (*self.state).normal_group_pages.load(Ordering::Relaxed) }
    }

    /// Keeps the VFS registered for the rest of the process (a loadable
    /// extension's VFS outlives the connection that loaded it).
    pub fn leak(self) {
        std::mem::forget(self);
    }
}

impl Drop for Vfs {
    fn drop(&mut self) {
        unsafe {
            ((*self.state).api.vfs_unregister)(self.raw);
            drop(Box::from_raw(self.raw));
            drop(Box::from_raw(self.state));
        }
    }
}

/// Why a file-system call failed, in words a SQLite user can act on
/// (`protocol`: the device's).
fn reason(protocol: &str, e: &FsError, file: &str) -> String {
    match e {
        FsError::Device(DeviceError::TableFull { capacity }) => format!(
            "txftl: the `{protocol}` device's transaction table is full ({capacity} entries, all uncommitted): \
             a transaction on `{file}` writes more pages than the table holds"
        ),
        FsError::NoSpace => format!("txftl: the file system is full (writing `{file}`)"),
        FsError::NoInodes { count } => format!("txftl: all {count} inodes are in use (creating `{file}`)"),
        FsError::Device(DeviceError::NoSpace) => format!("txftl: the device is full (writing `{file}`)"),
        e => format!("txftl: `{file}`: {e}"),
    }
}

/// Records why a call failed (for `xGetLastError`, [`Vfs::last_error`]) and
/// logs it through `sqlite3_log`.
fn note_error(state: &VfsState, code: c_int, msg: String) {
    if std::env::var_os("TXFTL_VFS_DEBUG").is_some() {
        eprintln!("txftl vfs: {msg}");
    }
    if let Some(log) = state.api.log {
        if let Ok(c) = CString::new(msg.replace('\0', " ")) {
            unsafe { log(code, c"%s".as_ptr(), c.as_ptr()) };
        }
    }
    if let Ok(mut last) = state.last_error.lock() {
        *last = Some((code, msg));
    }
}

/// The SQLite code for a file-system error, with the reason noted:
/// `SQLITE_FULL` whenever something ran out (the device's free space, its
/// transaction table, the file system's space or inodes, the metadata
/// journal's area for one transaction), `SQLITE_IOERR_NOMEM` when the device
/// could not get host memory, else `io`, the callback's own code
/// (`SQLITE_IOERR_*` for a device operation that failed, `SQLITE_CANTOPEN`
/// at open).
fn fs_code(state: &VfsState, file: &str, e: &FsError, io: c_int) -> c_int {
    let code = match e {
        FsError::NoSpace | FsError::NoInodes { .. } | FsError::JournalFull { .. } => ffi::SQLITE_FULL,
        FsError::Device(DeviceError::NoSpace | DeviceError::TableFull { .. }) => ffi::SQLITE_FULL,
        FsError::Device(DeviceError::Memory(_)) => ffi::SQLITE_IOERR_NOMEM,
        _ => io,
    };
    note_error(state, code, reason(state.entry.name, e, file));
    code
}

/// Runs a callback body, turning a panic into `err` (never unwinds into C).
fn guard(err: c_int, f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(err)
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

static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    iVersion: 2,
    xClose: Some(x_close),
    xRead: Some(x_read),
    xWrite: Some(x_write),
    xTruncate: Some(x_truncate),
    xSync: Some(x_sync),
    xFileSize: Some(x_file_size),
    xLock: Some(x_lock),
    xUnlock: Some(x_unlock),
    xCheckReservedLock: Some(x_check_reserved_lock),
    xFileControl: Some(x_file_control),
    xSectorSize: Some(x_sector_size),
    xDeviceCharacteristics: Some(x_device_characteristics),
    xShmMap: Some(x_shm_map),
    xShmLock: Some(x_shm_lock),
    xShmBarrier: Some(x_shm_barrier),
    xShmUnmap: Some(x_shm_unmap),
    xFetch: None,
    xUnfetch: None,
};

unsafe extern "C" fn x_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: *const c_char,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    guard(ffi::SQLITE_CANTOPEN, || {
        (*file).pMethods = std::ptr::null();
        let state = vfs_state(vfs);
        let name = (!name.is_null()).then(|| CStr::from_ptr(name).to_string_lossy().into_owned());
        // Temporary files need no durability: host memory, as a tmpfs (`memfile.rs`).
        if memfile::serves(flags, name.is_none()) {
            return memfile::open(state, name, file, flags, out_flags);
        }
        let Some(name) = name else { return ffi::SQLITE_CANTOPEN };
        let class = if flags & ffi::SQLITE_OPEN_MAIN_DB != 0 {
            FileClass::Database
        } else if flags & ffi::SQLITE_OPEN_MAIN_JOURNAL != 0 {
            FileClass::Journal
        } else if flags & ffi::SQLITE_OPEN_WAL != 0 {
            FileClass::Wal
        } else {
            FileClass::Other
        };
        if let Some(why) = state.open_refusal(class) {
            note_error(state, ffi::SQLITE_CANTOPEN, why);
            return ffi::SQLITE_CANTOPEN;
        }
        let Some(mut fs) = lock(state) else { return ffi::SQLITE_CANTOPEN };
        let ino = match fs.lookup(&name) {
            Some(ino) if fs.is_dir(ino).unwrap_or(true) => {
                note_error(state, ffi::SQLITE_CANTOPEN, format!("txftl: `{name}` is a directory"));
                return ffi::SQLITE_CANTOPEN;
            }
            Some(ino) => ino,
            None if flags & ffi::SQLITE_OPEN_CREATE != 0 => match fs.create(&name, class) {
                Ok(ino) => ino,
                Err(e) => return fs_code(state, &name, &e, ffi::SQLITE_CANTOPEN),
            },
            None => {
                note_error(
                    state,
                    ffi::SQLITE_CANTOPEN,
                    format!("txftl: no file `{name}` (opened without SQLITE_OPEN_CREATE)"),
                );
                return ffi::SQLITE_CANTOPEN;
            }
        };
        let wal_file = (class == FileClass::Wal && state.remaps)
            .then(|| walmap::WalFile::new(fs.page_size(), name.strip_suffix("-wal").and_then(|db| fs.lookup(db))));
        drop(fs);
        let fstate = Box::new(FileState {
            vfs: state,
            ino,
            name,
            main_db: class == FileClass::Database,
            wal: class == FileClass::Wal,
            lock: ffi::SQLITE_LOCK_NONE,
            delete_on_close: flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0,
            tx: None,
            journal_unsynced: false,
            group: Group::default(),
            wal_mode: false,
            shm_shared: 0,
            shm_exclusive: 0,
            reserved_taken: false,
            hot_playback: false,
            wal_file,
        });
        (*(file as *mut TxFile)).state = Box::into_raw(fstate);
        (*file).pMethods = &IO_METHODS;
        if !out_flags.is_null() {
            *out_flags = flags;
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, _sync_dir: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_DELETE, || {
        let state = vfs_state(vfs);
        let name = CStr::from_ptr(name).to_string_lossy();
        let Some(mut fs) = lock(state) else {
            return ffi::SQLITE_IOERR_DELETE;
        };
        match fs.delete(&name) {
            Ok(()) => ffi::SQLITE_OK,
            Err(FsError::NotFound(_)) => ffi::SQLITE_IOERR_DELETE_NOENT,
            Err(e) => fs_code(state, &name, &e, ffi::SQLITE_IOERR_DELETE),
        }
    })
}

unsafe extern "C" fn x_access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, _flags: c_int, res: *mut c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_ACCESS, || {
        let state = vfs_state(vfs);
        let name = CStr::from_ptr(name).to_string_lossy();
        let Some(fs) = lock(state) else { return ffi::SQLITE_IOERR_ACCESS };
        *res = fs.lookup(&name).is_some() as c_int;
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_full_pathname(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, n: c_int, out: *mut c_char) -> c_int {
    guard(ffi::SQLITE_CANTOPEN, || {
        // Paths are relative to the file system's root: a name is its own full path.
        let bytes = CStr::from_ptr(name).to_bytes_with_nul();
        if bytes.len() > n as usize {
            return ffi::SQLITE_CANTOPEN;
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr() as *const c_char, out, bytes.len());
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    guard(0, || {
        // Deterministic: SplitMix64 from a counter.
        let state = vfs_state(vfs);
        let Ok(mut x) = state.random.lock() else { return 0 };
        for i in 0..n as usize {
            *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = *x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            *out.add(i) = (z ^ (z >> 31)) as c_char;
        }
        n
    })
}

unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    micros // simulated: no wall-clock sleep
}

/// A fixed clock (2026-01-01T00:00:00Z as a Julian day): deterministic runs.
const FIXED_JULIAN_MS: i64 = 212_633_985_600_000;

unsafe extern "C" fn x_current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    *out = FIXED_JULIAN_MS as f64 / 86_400_000.0;
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_current_time_int64(_vfs: *mut ffi::sqlite3_vfs, out: *mut ffi::sqlite3_int64) -> c_int {
    *out = FIXED_JULIAN_MS;
    ffi::SQLITE_OK
}

/// Copies the last failure's reason into `out` (`n` bytes, NUL-terminated) and
/// returns its SQLite code (0: none). SQLite itself asks with `n` 0 for
/// `sqlite3_system_errno`; a caller can ask for the text through
/// `sqlite3_vfs_find(name)->xGetLastError`.
unsafe extern "C" fn x_get_last_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
    guard(0, || {
        let state = vfs_state(vfs);
        let Ok(last) = state.last_error.lock() else { return 0 };
        let Some((code, msg)) = last.as_ref() else { return 0 };
        if n > 0 && !out.is_null() {
            let len = msg.len().min(n as usize - 1);
            std::ptr::copy_nonoverlapping(msg.as_ptr() as *const c_char, out, len);
            *out.add(len) = 0;
        }
        *code
    })
}

/// Commits the handle's open device transaction; `None` if none is open. On
/// failure the transaction stays open (SQLite's unlock aborts it).
fn commit_open_tx(state: &VfsState, st: &mut FileState, fs: &mut Fs, io: c_int) -> Option<c_int> {
    let tid = st.tx?;
    Some(match fs.commit(tid) {
        Ok(()) => {
            st.tx = None;
            st.group.closed();
            ffi::SQLITE_OK
        }
        Err(e) => fs_code(state, &st.name, &e, io),
    })
}

/// Aborts the handle's open device transaction (ROLLBACK, or close).
fn abort_open_tx(state: &VfsState, st: &mut FileState, fs: &mut Fs) -> c_int {
    st.group.closed();
    match st.tx.take() {
        // The file system forgets the transaction even when this fails.
        Some(tid) => match fs.abort(tid) {
            Ok(()) => ffi::SQLITE_OK,
            // The device already ended it (a protocol drops a transaction
            // whose commit failed): nothing to abort, and the failure that
            // ended it stays the one `xGetLastError` reports.
            Err(FsError::Device(DeviceError::UnknownTransaction(_))) => ffi::SQLITE_OK,
            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR),
        },
        None => ffi::SQLITE_OK,
    }
}

unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
    guard(ffi::SQLITE_IOERR_CLOSE, || {
        let mut st = Box::from_raw((*(file as *mut TxFile)).state);
        (*file).pMethods = std::ptr::null();
        let state = &*st.vfs;
        release_lock(&mut st, ffi::SQLITE_LOCK_NONE);
        release_shm_locks(&mut st);
        let Some(mut fs) = lock(state) else {
            return ffi::SQLITE_IOERR_CLOSE;
        };
        // A group holding SQLite's commits (and nothing since) commits.
        let mut rc = match st.group.commit_at_close() {
            true => commit_open_tx(state, &mut st, &mut fs, ffi::SQLITE_IOERR_CLOSE).unwrap_or(ffi::SQLITE_OK),
            false => abort_open_tx(state, &mut st, &mut fs),
        };
        // A group whose commit failed is aborted: the handle goes, and its
        // transaction must not stay open in the file system.
        if st.tx.is_some() {
            let _ = abort_open_tx(state, &mut st, &mut fs);
        }
        if st.delete_on_close {
            if let Err(e) = fs.delete(&st.name) {
                rc = fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_CLOSE);
            }
        }
        rc
    })
}

unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amt: c_int, off: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_READ, || {
        let st = file_state(file);
        let state = &*st.vfs;
        let Some(mut fs) = lock(state) else {
            return ffi::SQLITE_IOERR_READ;
        };
        let out = std::slice::from_raw_parts_mut(buf as *mut u8, amt as usize);
        if let Some(w) = &st.wal_file {
            return match walmap::read(&mut fs, w.map, st.ino, off as u64, out, &state.frame_read) {
                Ok(true) => ffi::SQLITE_OK,
                Ok(false) => ffi::SQLITE_IOERR_SHORT_READ,
                Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_READ),
            };
        }
        match fs.read(st.tx, st.ino, off as u64, out) {
            Ok(n) if n == out.len() => ffi::SQLITE_OK,
            Ok(n) => {
                out[n..].fill(0);
                ffi::SQLITE_IOERR_SHORT_READ
            }
            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_READ),
        }
    })
}

/// Opens the handle's device transaction if this mapping begins one at the
/// first change of the main database file.
fn begin_at_first_change(state: &VfsState, st: &mut FileState, fs: &mut Fs, io: c_int) -> c_int {
    let wal_mode = st.wal_mode && state.canary != Canary::WalCheckpointInTransaction;
    if st.main_db && state.maps(TxMapping::FirstWrite) && st.tx.is_none() && !wal_mode {
        match fs.begin() {
            Ok(tid) => st.tx = Some(tid),
            Err(e) => return fs_code(state, &st.name, &e, io),
        }
    }
    ffi::SQLITE_OK
}

/// A checkpoint's write of a database page with the bytes of the frame
/// SQLite just read from a remapping WAL: the file system remaps the frame's
/// page onto it (or copies, if the device refuses). `None`: not such a write.
fn write_by_remap(state: &VfsState, st: &FileState, fs: &mut Fs, off: u64, data: &[u8]) -> Option<c_int> {
    if !state.remaps || !st.main_db || st.tx.is_some() {
        return None;
    }
    let frame = state.frame_read.lock().ok()?.take()?;
    let ps = fs.page_size() as u64;
    // A remap empties its WAL page: only a checkpoint of the whole WAL that
    // no other connection reads may remap.
    if frame.data != data || !off.is_multiple_of(ps) || !checkpoint_may_remap(state, st) {
        return None;
    }
    Some(match fs.write_remapping(st.ino, (off / ps) as u32, data, (frame.wal, frame.page)) {
        Ok(remaps) => {
            if remaps {
                // What the remaps leave of the WAL must not be replayed.
                fs.discard_with_remaps(st.ino, (frame.wal, 0));
            }
            ffi::SQLITE_OK
        }
        Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_WRITE),
    })
}

/// Whether the checkpoint under way through handle `st` may remap: it
/// backfills every frame of the WAL, and no other connection reads from
/// the WAL (a reader holding a read mark reads its snapshot's pages from
/// their frames, which a remap empties). SQLite's wal.c sets
/// `nBackfillAttempted` to the last frame it will backfill before it writes
/// any; a reader can hold it short of `mxFrame`, the WAL's last commit
/// frame. Both are read from the WAL index this VFS hosts: `mxFrame` at
/// byte 16 of the first header copy, `nBackfillAttempted` at byte 128 (the
/// checkpoint information after the two 48-byte header copies:
/// `nBackfill`, 5 read marks, 8 lock bytes), native-endian `u32`s. The read
/// locks are slots 3 to 7; slot 3 (read mark 0) reads the database only.
fn checkpoint_may_remap(state: &VfsState, st: &FileState) -> bool {
    let Ok(shm) = state.shm.lock() else { return false };
    let Some(shm) = shm.get(&st.name) else { return false };
    let Some(region) = shm.regions.first().filter(|r| r.len() >= 132) else {
        return false;
    };
    // SQLite writes the index through the pointer `x_shm_map` gave it.
    let at = |off: usize| unsafe { std::ptr::read_volatile(region.as_ptr().add(off) as *const [u8; 4]) };
    let (mx_frame, attempted) = (u32::from_ne_bytes(at(16)), u32::from_ne_bytes(at(128)));
    let wal_readers = (4..8).any(|slot| shm.shared[slot] > (st.shm_shared >> slot & 1) as u32);
    mx_frame > 0 && attempted == mx_frame && !wal_readers
}

unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amt: c_int, off: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_WRITE, || {
        let st = file_state(file);
        let state = &*st.vfs;
        if st.hot_playback {
            return ffi::SQLITE_OK;
        }
        let Some(mut fs) = lock(state) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        let rc = begin_at_first_change(state, st, &mut fs, ffi::SQLITE_IOERR_WRITE);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        if st.journal_unsynced && st.tx.is_none() {
            st.journal_unsynced = false;
            if state.canary != Canary::NoSyncAfterBatchAbort {
                if let Err(e) = fs.fsync(None, st.ino) {
                    return fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_WRITE);
                }
            }
        }
        let data = std::slice::from_raw_parts(buf as *const u8, amt as usize);
        if let Some(w) = &mut st.wal_file {
            return match w.write(&mut fs, st.ino, off as u64, data) {
                Ok(()) => ffi::SQLITE_OK,
                Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_WRITE),
            };
        }
        if let Some(rc) = write_by_remap(state, st, &mut fs, off as u64, data) {
            return rc;
        }
        match fs.write(st.tx, st.ino, off as u64, data) {
            Ok(()) => {
                if st.main_db && st.tx.is_some() {
                    st.group.wrote();
                }
                ffi::SQLITE_OK
            }
            // Inside a batch, an I/O error (not SQLITE_FULL) makes SQLite roll the
            // batch back and commit through its rollback journal instead.
            Err(e @ FsError::Device(DeviceError::TableFull { .. })) if state.maps(TxMapping::BatchAtomic) => {
                let why = format!(
                    "{}; the batch falls back to the rollback journal",
                    reason(state.entry.name, &e, &st.name)
                );
                note_error(state, ffi::SQLITE_IOERR_WRITE, why);
                ffi::SQLITE_IOERR_WRITE
            }
            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_WRITE),
        }
    })
}

unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_TRUNCATE, || {
        let st = file_state(file);
        let state = &*st.vfs;
        if st.hot_playback {
            return ffi::SQLITE_OK;
        }
        let Some(mut fs) = lock(state) else {
            return ffi::SQLITE_IOERR_TRUNCATE;
        };
        // A truncate outside a transaction would be durable at once: on the
        // paper's mapping it belongs to the transaction like a write.
        let rc = begin_at_first_change(state, st, &mut fs, ffi::SQLITE_IOERR_TRUNCATE);
        if rc != ffi::SQLITE_OK {
            return rc;
        }
        let size = st.wal_file.as_ref().map_or(size as u64, |w| w.map.file_len(size as u64));
        match fs.truncate(st.tx, st.ino, size) {
            Ok(()) => {
                if st.main_db && st.tx.is_some() {
                    st.group.wrote();
                }
                ffi::SQLITE_OK
            }
            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_TRUNCATE),
        }
    })
}

unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_FSYNC, || {
        let st = file_state(file);
        let state = &*st.vfs;
        let Some(mut fs) = lock(state) else {
            return ffi::SQLITE_IOERR_FSYNC;
        };
        if state.canary == Canary::CommitAtSync && st.main_db && state.maps(TxMapping::FirstWrite) {
            if let Some(rc) = commit_open_tx(state, st, &mut fs, ffi::SQLITE_IOERR_FSYNC) {
                return rc;
            }
        }
        if state.canary == Canary::WalSkipsSync && st.wal {
            return ffi::SQLITE_OK;
        }
        if st.main_db && st.tx.is_some() && (st.group.grouping() || state.ends) {
            // A device transaction is durable only at its commit, which
            // sends whatever is still dirty (SQLite's commit follows its
            // sync at once, or, grouped, at the group's end: `group.rs`). A
            // sync inside it would only send SQLite's pages early: grouped,
            // it keeps the page cache from merging the group's rewrites of a
            // page (the NoLgn-FTL paper syncs once a group, its sec. 4.1).
            // On a device that commits on an end-flagged last page, the
            // commit then sends that page with its flag (`write_end`), as
            // the paper's commit rides on the fsync, instead of the device
            // holding it back for the commit to program: the same flash
            // operations, in the same order.
            return ffi::SQLITE_OK;
        }
        match fs.fsync(st.tx, st.ino) {
            Ok(()) => ffi::SQLITE_OK,
            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_FSYNC),
        }
    })
}

unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, out: *mut ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_FSTAT, || {
        let st = file_state(file);
        let state = &*st.vfs;
        let Some(fs) = lock(state) else { return ffi::SQLITE_IOERR_FSTAT };
        match fs.size(st.tx, st.ino) {
            Ok(s) => {
                *out = st.wal_file.as_ref().map_or(s, |w| w.map.sqlite_len(s)) as ffi::sqlite3_int64;
                ffi::SQLITE_OK
            }
            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_FSTAT),
        }
    })
}

/// Raises the handle's lock to `level`, by the unix VFS's rules inside one
/// process: SHARED unless someone holds PENDING or EXCLUSIVE; RESERVED unless
/// another handle holds RESERVED or more; EXCLUSIVE through PENDING (which
/// stays, keeping new readers out, when other readers remain: `SQLITE_BUSY`).
fn acquire_lock(st: &mut FileState, level: c_int) -> c_int {
    if st.lock >= level {
        return ffi::SQLITE_OK;
    }
    let me = st.id();
    let Ok(mut table) = LOCKS.lock() else {
        return ffi::SQLITE_IOERR_LOCK;
    };
    let locks = table.entry(st.lock_key()).or_default();
    let other_writer = locks.writer.filter(|&(h, _)| h != me);
    match level {
        ffi::SQLITE_LOCK_SHARED => {
            if other_writer.is_some_and(|(_, l)| l >= ffi::SQLITE_LOCK_PENDING) {
                return ffi::SQLITE_BUSY;
            }
            locks.shared += 1;
            st.lock = ffi::SQLITE_LOCK_SHARED;
            ffi::SQLITE_OK
        }
        ffi::SQLITE_LOCK_RESERVED => {
            if st.lock < ffi::SQLITE_LOCK_SHARED {
                return ffi::SQLITE_MISUSE; // SQLite asks for SHARED first
            }
            if other_writer.is_some() {
                return ffi::SQLITE_BUSY;
            }
            locks.writer = Some((me, ffi::SQLITE_LOCK_RESERVED));
            st.lock = ffi::SQLITE_LOCK_RESERVED;
            ffi::SQLITE_OK
        }
        ffi::SQLITE_LOCK_PENDING | ffi::SQLITE_LOCK_EXCLUSIVE => {
            if st.lock < ffi::SQLITE_LOCK_SHARED {
                return ffi::SQLITE_MISUSE;
            }
            if other_writer.is_some() {
                return ffi::SQLITE_BUSY;
            }
            locks.writer = Some((me, ffi::SQLITE_LOCK_PENDING));
            st.lock = ffi::SQLITE_LOCK_PENDING;
            if level == ffi::SQLITE_LOCK_PENDING {
                return ffi::SQLITE_OK;
            }
            if locks.shared > 1 {
                return ffi::SQLITE_BUSY; // readers remain; PENDING keeps new ones out
            }
            locks.writer = Some((me, ffi::SQLITE_LOCK_EXCLUSIVE));
            st.lock = ffi::SQLITE_LOCK_EXCLUSIVE;
            ffi::SQLITE_OK
        }
        _ => ffi::SQLITE_MISUSE,
    }
}

/// Lowers the handle's lock to `level` (SHARED or NONE).
fn release_lock(st: &mut FileState, level: c_int) {
    if st.lock <= level {
        return;
    }
    // SHARED or NONE: SQLite's transaction, or its hot journal's playback, is over.
    (st.reserved_taken, st.hot_playback) = (false, false);
    let me = st.id();
    let key = st.lock_key();
    let Ok(mut table) = LOCKS.lock() else { return };
    if let Some(locks) = table.get_mut(&key) {
        if st.lock > ffi::SQLITE_LOCK_SHARED && locks.writer.is_some_and(|(h, _)| h == me) {
            locks.writer = None;
        }
        if level < ffi::SQLITE_LOCK_SHARED {
            locks.shared = locks.shared.saturating_sub(1);
        }
        if locks.shared == 0 && locks.writer.is_none() {
            table.remove(&key);
        }
    }
    st.lock = level;
}

unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_LOCK, || {
        let st = file_state(file);
        let rc = acquire_lock(st, level);
        if rc == ffi::SQLITE_OK {
            match level {
                ffi::SQLITE_LOCK_RESERVED => st.reserved_taken = true,
                ffi::SQLITE_LOCK_EXCLUSIVE if !st.reserved_taken => st.hot_playback = drops_hot_playback(&*st.vfs, st),
                _ => {}
            }
        }
        rc
    })
}

/// Whether SQLite, taking EXCLUSIVE on `st` straight from SHARED (which it
/// does only to play a hot journal back, outside WAL mode), plays it into
/// nothing. Under [`TxMapping::FirstWrite`] every write of the database
/// is in a device transaction, and the device already holds what a hot
/// journal would restore: the transaction it belongs to either never
/// committed on the device (its pages were never the database's), or
/// committed after SQLite finalized the journal, whose deletion (not synced
/// by SQLite below `synchronous=EXTRA`) a cut then lost, and playing it back
/// would undo a committed transaction. So the playback's writes and
/// truncates are acknowledged and dropped, as if written into a device
/// transaction aborted at the unlock that follows, without the room such a
/// transaction takes: a journal larger than the device can hold beside the
/// database (a VACUUM's) rolls back too.
fn drops_hot_playback(state: &VfsState, st: &FileState) -> bool {
    st.main_db && state.transactional && state.maps(TxMapping::FirstWrite) && !st.wal_mode
}

unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_UNLOCK, || {
        let st = file_state(file);
        release_lock(st, level);
        let state = &*st.vfs;
        // Dropping to SHARED or NONE with the device transaction still open: the
        // transaction did not commit (ROLLBACK): abort it on the device. A
        // group holding SQLite's commits with nothing since stays open.
        if st.tx.is_some() && level <= ffi::SQLITE_LOCK_SHARED {
            let AtUnlock::Abort { lost_commits } = st.group.at_unlock(true) else {
                return ffi::SQLITE_OK;
            };
            let Some(mut fs) = lock(state) else {
                return ffi::SQLITE_IOERR_UNLOCK;
            };
            if lost_commits {
                let why = format!(
                    "{}: a ROLLBACK after a cache spill aborts the grouped device transaction, with the SQLite commits it held",
                    st.name
                );
                note_error(state, ffi::SQLITE_IOERR_UNLOCK, why);
            }
            return abort_open_tx(state, st, &mut fs);
        }
        ffi::SQLITE_OK
    })
}

/// True while any handle of the process holds RESERVED or more on the file.
unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, || {
        let st = file_state(file);
        let Ok(table) = LOCKS.lock() else {
            return ffi::SQLITE_IOERR_CHECKRESERVEDLOCK;
        };
        *out = table.get(&st.lock_key()).is_some_and(|l| l.writer.is_some()) as c_int;
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
    guard(ffi::SQLITE_IOERR, || {
        let st = file_state(file);
        let state = &*st.vfs;
        let batch = state.maps(TxMapping::BatchAtomic);
        match op {
            ffi::SQLITE_FCNTL_BEGIN_ATOMIC_WRITE if st.main_db && batch => {
                let Some(mut fs) = lock(state) else { return ffi::SQLITE_IOERR };
                if st.tx.is_some() {
                    return ffi::SQLITE_IOERR_BEGIN_ATOMIC; // a batch is already open
                }
                match fs.begin() {
                    Ok(tid) => {
                        st.tx = Some(tid);
                        ffi::SQLITE_OK
                    }
                    Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_BEGIN_ATOMIC),
                }
            }
            ffi::SQLITE_FCNTL_COMMIT_ATOMIC_WRITE if st.main_db && batch => {
                let Some(mut fs) = lock(state) else { return ffi::SQLITE_IOERR };
                let Some(tid) = st.tx else { return ffi::SQLITE_IOERR_COMMIT_ATOMIC };
                match fs.commit(tid) {
                    Ok(()) => {
                        st.tx = None;
                        ffi::SQLITE_OK
                    }
                    // The host page cache holds the batch's pages until its
                    // commit, so a batch larger than the X-L2P table is refused
                    // here rather than at a write: as there, an I/O error (not
                    // SQLITE_FULL) makes SQLite roll the batch back and commit
                    // through its rollback journal.
                    Err(e @ FsError::Device(DeviceError::TableFull { .. })) => {
                        let why = format!(
                            "{}; the batch falls back to the rollback journal",
                            reason(state.entry.name, &e, &st.name)
                        );
                        note_error(state, ffi::SQLITE_IOERR_COMMIT_ATOMIC, why);
                        ffi::SQLITE_IOERR_COMMIT_ATOMIC
                    }
                    Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR_COMMIT_ATOMIC),
                }
            }
            ffi::SQLITE_FCNTL_ROLLBACK_ATOMIC_WRITE if st.main_db && batch => {
                let Some(mut fs) = lock(state) else { return ffi::SQLITE_IOERR };
                // SQLite now writes its journal to a file and the database in
                // place, without a sync between them (see the module doc).
                st.journal_unsynced = true;
                match abort_open_tx(state, st, &mut fs) {
                    ffi::SQLITE_OK => ffi::SQLITE_OK,
                    _ => ffi::SQLITE_IOERR_ROLLBACK_ATOMIC,
                }
            }
            // The canary moved the commit to xSync: phase two does nothing.
            ffi::SQLITE_FCNTL_COMMIT_PHASETWO if st.main_db && state.transactional && state.canary == Canary::CommitAtSync => {
                ffi::SQLITE_OK
            }
            ffi::SQLITE_FCNTL_COMMIT_PHASETWO if st.main_db && state.transactional => {
                let Some(mut fs) = lock(state) else { return ffi::SQLITE_IOERR };
                if let Some(tid) = st.tx {
                    if !st.group.commit_now() {
                        // The group stays open (`vfs/group.rs`); the host
                        // keeps SQLite's commit if the process dies.
                        return match fs.commit_point(tid) {
                            Ok(()) => ffi::SQLITE_OK,
                            Err(e) => fs_code(state, &st.name, &e, ffi::SQLITE_IOERR),
                        };
                    }
                }
                commit_open_tx(state, st, &mut fs, ffi::SQLITE_IOERR).unwrap_or(ffi::SQLITE_OK)
            }
            ffi::SQLITE_FCNTL_PRAGMA if state.transactional && st.main_db => {
                // arg: char*[3] = { error message out, pragma name, value or NULL }
                let args = arg as *mut *mut c_char;
                let name = *args.add(1);
                let value = *args.add(2);
                if name.is_null() || value.is_null() {
                    return ffi::SQLITE_NOTFOUND;
                }
                let name = CStr::from_ptr(name).to_string_lossy().to_ascii_lowercase();
                let value = CStr::from_ptr(value).to_string_lossy().to_ascii_lowercase();
                if name == "synchronous" && state.maps(TxMapping::FirstWrite) {
                    st.group.set_synchronous(&value, state.normal_group_pages.load(Ordering::Relaxed));
                }
                // Groups are for journal_mode=OFF: another mode (a WAL's
                // checkpoints, a journal's playback) must not write into one.
                // The group holding SQLite's commits commits first.
                if name == "journal_mode" && value == "off" {
                    st.group.resume();
                }
                if name == "journal_mode" && value != "off" {
                    st.group.stop();
                    if st.group.commit_at_close() {
                        let Some(mut fs) = lock(state) else { return ffi::SQLITE_IOERR };
                        if let Some(rc) = commit_open_tx(state, st, &mut fs, ffi::SQLITE_IOERR).filter(|&rc| rc != ffi::SQLITE_OK) {
                            return rc;
                        }
                    }
                }
                let refusal = match name.as_str() {
                    "locking_mode" if value == "exclusive" => Some(
                        "txftl: locking_mode=EXCLUSIVE hides ROLLBACK from the VFS; it is refused on a transactional device".to_string(),
                    ),
                    "journal_mode" => state.journal_refusal(&value),
                    _ => None,
                };
                match refusal.and_then(|m| CString::new(m).ok()) {
                    Some(msg) => {
                        *args = (state.api.mprintf)(c"%s".as_ptr(), msg.as_ptr());
                        ffi::SQLITE_ERROR
                    }
                    None => ffi::SQLITE_NOTFOUND,
                }
            }
            _ => ffi::SQLITE_NOTFOUND,
        }
    })
}

unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    512
}

unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
    guard(0, || {
        let st = file_state(file);
        let state = &*st.vfs;
        if st.main_db && state.maps(TxMapping::BatchAtomic) {
            ffi::SQLITE_IOCAP_BATCH_ATOMIC
        } else if st.main_db || st.wal {
            // SQLite (asking the database file, wal.c's sqlite3WalOpen) pads
            // a commit's last frame to a sector boundary, under
            // synchronous=FULL, with whole extra frames, unless a write
            // leaves the bytes around it intact at a power cut. Here it
            // does, on every device: the file system writes whole pages,
            // the FTL programs each out of place, and a torn program leaves
            // the page's last version (the crash sets check it). SQLite's
            // unix VFS reports the same by default
            // (SQLITE_POWERSAFE_OVERWRITE), so SQLite
            // on a real file system does not pad. On a remapping device the
            // padding would also split a frame's page data, which could
            // then not be tagged.
            ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
        } else {
            0
        }
    })
}

unsafe extern "C" fn x_shm_map(file: *mut ffi::sqlite3_file, region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int {
    guard(ffi::SQLITE_IOERR_SHMMAP, || {
        let st = file_state(file);
        st.wal_mode = true;
        let Ok(mut shm) = (*st.vfs).shm.lock() else {
            return ffi::SQLITE_IOERR_SHMMAP;
        };
        let regions = &mut shm.entry(st.name.clone()).or_default().regions;
        let region = region as usize;
        if regions.len() <= region {
            if extend == 0 {
                *out = std::ptr::null_mut();
                return ffi::SQLITE_OK;
            }
            while regions.len() <= region {
                regions.push(vec![0u8; size as usize].into_boxed_slice());
            }
        }
        *out = regions[region].as_mut_ptr() as *mut c_void;
        ffi::SQLITE_OK
    })
}

/// The WAL index's locks, across the connections of the process, as the unix
/// VFS keeps them: a slot is held shared by any number of handles or
/// exclusively by one; a request that conflicts gets `SQLITE_BUSY`.
unsafe extern "C" fn x_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_SHMLOCK, || {
        let st = file_state(file);
        if offset < 0 || n < 1 || (offset + n) as usize > SHM_SLOTS {
            return ffi::SQLITE_MISUSE;
        }
        let Ok(mut shm) = (*st.vfs).shm.lock() else {
            return ffi::SQLITE_IOERR_SHMLOCK;
        };
        let shm = shm.entry(st.name.clone()).or_default();
        let me = st.id();
        let slots = offset as usize..(offset + n) as usize;
        let mask = |slot: usize| 1u8 << slot;
        if flags & ffi::SQLITE_SHM_UNLOCK != 0 {
            for slot in slots {
                if st.shm_shared & mask(slot) != 0 {
                    shm.shared[slot] = shm.shared[slot].saturating_sub(1);
                    st.shm_shared &= !mask(slot);
                }
                if st.shm_exclusive & mask(slot) != 0 {
                    shm.exclusive[slot] = None;
                    st.shm_exclusive &= !mask(slot);
                }
            }
            return ffi::SQLITE_OK;
        }
        if flags & ffi::SQLITE_SHM_SHARED != 0 {
            for slot in slots.clone() {
                if shm.exclusive[slot].is_some_and(|h| h != me) {
                    return ffi::SQLITE_BUSY;
                }
            }
            for slot in slots {
                if st.shm_shared & mask(slot) == 0 {
                    shm.shared[slot] += 1;
                    st.shm_shared |= mask(slot);
                }
            }
            return ffi::SQLITE_OK;
        }
        // Exclusive: nobody else may hold any of the slots.
        for slot in slots.clone() {
            let mine_shared = (st.shm_shared & mask(slot) != 0) as u32;
            if shm.exclusive[slot].is_some_and(|h| h != me) || shm.shared[slot] > mine_shared {
                return ffi::SQLITE_BUSY;
            }
        }
        for slot in slots {
            shm.exclusive[slot] = Some(me);
            st.shm_exclusive |= mask(slot);
        }
        ffi::SQLITE_OK
    })
}

/// Drops every WAL-index lock the handle holds (at unmap and close).
fn release_shm_locks(st: &mut FileState) {
    if st.shm_shared == 0 && st.shm_exclusive == 0 {
        return;
    }
    let state = unsafe { &*st.vfs };
    if let Ok(mut shm) = state.shm.lock() {
        if let Some(shm) = shm.get_mut(&st.name) {
            for slot in 0..SHM_SLOTS {
                if st.shm_shared & (1 << slot) != 0 {
                    shm.shared[slot] = shm.shared[slot].saturating_sub(1);
                }
                if st.shm_exclusive & (1 << slot) != 0 {
                    shm.exclusive[slot] = None;
                }
            }
        }
    }
    st.shm_shared = 0;
    st.shm_exclusive = 0;
}

unsafe extern "C" fn x_shm_barrier(_file: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_SHMMAP, || {
        let st = file_state(file);
        st.wal_mode = false;
        release_shm_locks(st);
        if delete != 0 {
            if let Ok(mut shm) = (*st.vfs).shm.lock() {
                shm.remove(&st.name);
            }
        }
        ffi::SQLITE_OK
    })
}
