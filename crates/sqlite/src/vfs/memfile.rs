//! SQLite's temporary files, kept in host memory as an operating system's
//! tmpfs keeps `/tmp`.
//!
//! SQLite opens a temporary file for a temporary database or table
//! (`SQLITE_OPEN_TEMP_DB`), a sort that outgrows its memory or a temporary
//! database's journal (`SQLITE_OPEN_TEMP_JOURNAL`), a statement journal that
//! outgrows `SQLITE_STMTJRNL_SPILL` (`SQLITE_OPEN_SUBJOURNAL`), and the
//! ephemeral tables of `DISTINCT`, `IN (...)`, views and `VACUUM`
//! (`SQLITE_OPEN_TRANSIENT_DB`), always with `SQLITE_OPEN_DELETEONCLOSE` and
//! no name. None of them is read after a crash, so none needs the device:
//! on a protocol that runs one device transaction at a time (Atomic-Write),
//! the file system could not even make such a file's creation and deletion
//! durable (each in a device transaction of its own) while the database's
//! transaction is open. Here they never touch the device, on every
//! protocol, and never take a device transaction. The unix VFS does the same
//! in effect: it unlinks such a file at open and never syncs it, so on a
//! tmpfs `/tmp` it never leaves memory either.
//!
//! Memory is bounded: the memory files of one VFS together hold at most
//! their budget ([`TEMP_BUDGET_DEFAULT`] unless set with
//! `Vfs::set_temp_budget`). A write or truncate past it fails with
//! `SQLITE_FULL`, the reason noted for `xGetLastError` and `Vfs::last_error`,
//! as a full tmpfs answers `ENOSPC`.

use super::{guard, note_error, TxFile, VfsState, TEMP_BUDGET_DEFAULT};
use crate::ffi;
use std::ffi::{c_int, c_void};

/// A memory file keeps its bytes in chunks of this size, allocated when first
/// written: a file grows without copying what it holds, and a hole costs nothing.
const CHUNK: usize = 64 << 10;

/// The temporary-file flags (`SQLITE_OPEN_*`) of the files kept in memory.
const TEMP_KINDS: c_int =
    ffi::SQLITE_OPEN_TEMP_DB | ffi::SQLITE_OPEN_TEMP_JOURNAL | ffi::SQLITE_OPEN_SUBJOURNAL | ffi::SQLITE_OPEN_TRANSIENT_DB;

/// What the memory files of a VFS hold and have held (`Vfs::temp_stats`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct TempStats {
    /// Memory files opened since the VFS was registered.
    pub files_opened: u64,
    /// Of those, statement journals (`SQLITE_OPEN_SUBJOURNAL`).
    pub subjournals_opened: u64,
    /// Memory files open now.
    pub files_open: u64,
    /// Bytes the open memory files hold now (the sum of their sizes).
    pub bytes: u64,
    /// The most `bytes` has been.
    pub bytes_peak: u64,
    /// Bytes written to memory files, in all.
    pub bytes_written: u64,
    /// Writes and truncates refused at the budget (`SQLITE_FULL`).
    pub refusals: u64,
    /// The bound on `bytes`.
    pub budget: u64,
}

impl Default for TempStats {
    fn default() -> TempStats {
        TempStats {
            files_opened: 0,
            subjournals_opened: 0,
            files_open: 0,
            bytes: 0,
            bytes_peak: 0,
            bytes_written: 0,
            refusals: 0,
            budget: TEMP_BUDGET_DEFAULT,
        }
    }
}

/// Is a file SQLite opens with `flags` (`unnamed`: a NULL name) kept in
/// memory? Every unnamed file, and every temporary one SQLite deletes at
/// close. (SQLite opens none without `DELETEONCLOSE`; a named one that it
/// would reopen by name stays in the file system, where a later open finds it.)
pub(super) fn serves(flags: c_int, unnamed: bool) -> bool {
    unnamed || (flags & TEMP_KINDS != 0 && flags & ffi::SQLITE_OPEN_DELETEONCLOSE != 0)
}

/// A memory file's handle: the same layout as the VFS's own (`TxFile`), so
/// it fits the `szOsFile` bytes SQLite allocates.
#[repr(C)]
struct MemFile {
    base: ffi::sqlite3_file,
    state: *mut MemState,
}

const _: () = assert!(std::mem::size_of::<MemFile>() <= std::mem::size_of::<TxFile>());

struct MemState {
    vfs: *const VfsState,
    /// What the file is, for messages ("statement journal 3").
    name: String,
    /// Invariant: every byte of an allocated chunk at or past `size` is zero,
    /// so a file that grows over them (a write past its end, a truncate up)
    /// reads zeros there, as a file system's hole does.
    chunks: Vec<Option<Box<[u8]>>>,
    size: u64,
}

static MEM_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
    // Version 1: no shared memory (a temporary database is never in WAL mode)
    // and no memory mapping.
    iVersion: 1,
    xClose: Some(mem_close),
    xRead: Some(mem_read),
    xWrite: Some(mem_write),
    xTruncate: Some(mem_truncate),
    xSync: Some(mem_sync),
    xFileSize: Some(mem_file_size),
    xLock: Some(mem_lock),
    xUnlock: Some(mem_lock),
    xCheckReservedLock: Some(mem_check_reserved_lock),
    xFileControl: Some(mem_file_control),
    xSectorSize: Some(mem_sector_size),
    xDeviceCharacteristics: Some(mem_device_characteristics),
    xShmMap: None,
    xShmLock: None,
    xShmBarrier: None,
    xShmUnmap: None,
    xFetch: None,
    xUnfetch: None,
};

/// What SQLite opens with `flags`, in words.
fn kind(flags: c_int) -> &'static str {
    if flags & ffi::SQLITE_OPEN_SUBJOURNAL != 0 {
        "statement journal"
    } else if flags & ffi::SQLITE_OPEN_TEMP_JOURNAL != 0 {
        "sort spill or temporary journal"
    } else if flags & ffi::SQLITE_OPEN_TEMP_DB != 0 {
        "temporary database"
    } else if flags & ffi::SQLITE_OPEN_TRANSIENT_DB != 0 {
        "transient table"
    } else {
        "temporary file"
    }
}

/// Opens a memory file into `file` (the VFS's `xOpen` for the files [`serves`] takes).
pub(super) unsafe fn open(
    state: &VfsState,
    name: Option<String>,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    let number = state.temp_names.lock().map(|mut n| {
        *n += 1;
        *n
    });
    let Ok(mut stats) = state.temp.lock() else {
        return ffi::SQLITE_CANTOPEN;
    };
    stats.files_opened += 1;
    stats.files_open += 1;
    if flags & ffi::SQLITE_OPEN_SUBJOURNAL != 0 {
        stats.subjournals_opened += 1;
    }
    drop(stats);
    let name = name.unwrap_or_else(|| format!("{} {}", kind(flags), number.unwrap_or(0)));
    let mem = Box::new(MemState {
        vfs: state,
        name,
        chunks: Vec::new(),
        size: 0,
    });
    (*(file as *mut MemFile)).state = Box::into_raw(mem);
    (*file).pMethods = &MEM_METHODS;
    if !out_flags.is_null() {
        *out_flags = flags;
    }
    ffi::SQLITE_OK
}

unsafe fn mem_state<'a>(file: *mut ffi::sqlite3_file) -> &'a mut MemState {
    &mut *(*(file as *mut MemFile)).state
}

impl MemState {
    fn vfs(&self) -> &VfsState {
        unsafe { &*self.vfs }
    }

    /// Takes `bytes` more of the VFS's budget for this file, or says why not
    /// (`SQLITE_FULL`, the reason noted).
    fn reserve(&self, bytes: u64) -> Result<(), c_int> {
        let state = self.vfs();
        let Ok(mut stats) = state.temp.lock() else {
            return Err(ffi::SQLITE_IOERR);
        };
        if stats.bytes.saturating_add(bytes) > stats.budget {
            stats.refusals += 1;
            let why = format!(
                "txftl: temporary files in host memory are at their budget of {} bytes ({} in use; the {} asks for {} more): \
                 Vfs::set_temp_budget raises it",
                stats.budget, stats.bytes, self.name, bytes
            );
            drop(stats);
            note_error(state, ffi::SQLITE_FULL, why);
            return Err(ffi::SQLITE_FULL);
        }
        stats.bytes += bytes;
        stats.bytes_peak = stats.bytes_peak.max(stats.bytes);
        Ok(())
    }

    /// Gives `bytes` of the budget back.
    fn release(&self, bytes: u64) {
        if let Ok(mut stats) = self.vfs().temp.lock() {
            stats.bytes = stats.bytes.saturating_sub(bytes);
        }
    }

    /// Copies the file's bytes from `off` into `out` (zeros in holes); the
    /// caller has checked they are inside the file.
    fn copy_out(&self, off: u64, out: &mut [u8]) {
        let mut done = 0;
        while done < out.len() {
            let at = off as usize + done;
            let (chunk, within) = (at / CHUNK, at % CHUNK);
            let n = (CHUNK - within).min(out.len() - done);
            match self.chunks.get(chunk).and_then(|c| c.as_deref()) {
                Some(c) => out[done..done + n].copy_from_slice(&c[within..within + n]),
                None => out[done..done + n].fill(0),
            }
            done += n;
        }
    }

    /// Copies `data` into the file at `off`, allocating chunks as needed.
    fn copy_in(&mut self, off: u64, data: &[u8]) {
        let mut done = 0;
        while done < data.len() {
            let at = off as usize + done;
            let (chunk, within) = (at / CHUNK, at % CHUNK);
            let n = (CHUNK - within).min(data.len() - done);
            if self.chunks.len() <= chunk {
                self.chunks.resize_with(chunk + 1, || None);
            }
            let c = self.chunks[chunk].get_or_insert_with(|| vec![0u8; CHUNK].into_boxed_slice());
            c[within..within + n].copy_from_slice(&data[done..done + n]);
            done += n;
        }
    }

    /// Shrinks the file to `size`: frees the chunks wholly past it and zeroes
    /// the rest of the last one (the invariant on `chunks`).
    fn shrink(&mut self, size: u64) {
        let keep = (size as usize).div_ceil(CHUNK);
        self.chunks.truncate(keep);
        let within = size as usize % CHUNK;
        if within != 0 {
            if let Some(Some(last)) = self.chunks.last_mut() {
                last[within..].fill(0);
            }
        }
        self.release(self.size - size);
        self.size = size;
    }
}

unsafe extern "C" fn mem_close(file: *mut ffi::sqlite3_file) -> c_int {
    guard(ffi::SQLITE_IOERR_CLOSE, || {
        // Every memory file is deleted at close: SQLite opens them all with
        // DELETEONCLOSE (an unnamed file could not be opened again anyway).
        let mut mem = Box::from_raw((*(file as *mut MemFile)).state);
        (*file).pMethods = std::ptr::null();
        mem.shrink(0);
        if let Ok(mut stats) = mem.vfs().temp.lock() {
            stats.files_open = stats.files_open.saturating_sub(1);
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn mem_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amt: c_int, off: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_READ, || {
        let mem = mem_state(file);
        let out = std::slice::from_raw_parts_mut(buf as *mut u8, amt.max(0) as usize);
        let off = off.max(0) as u64;
        let have = mem.size.saturating_sub(off).min(out.len() as u64) as usize;
        mem.copy_out(off, &mut out[..have]);
        if have == out.len() {
            return ffi::SQLITE_OK;
        }
        // SQLite requires the rest zeroed on a short read.
        out[have..].fill(0);
        ffi::SQLITE_IOERR_SHORT_READ
    })
}

unsafe extern "C" fn mem_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amt: c_int, off: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_WRITE, || {
        let mem = mem_state(file);
        let data = std::slice::from_raw_parts(buf as *const u8, amt.max(0) as usize);
        let off = off.max(0) as u64;
        let Some(end) = off.checked_add(data.len() as u64) else {
            return ffi::SQLITE_IOERR_WRITE;
        };
        if end > mem.size {
            if let Err(rc) = mem.reserve(end - mem.size) {
                return rc;
            }
            mem.size = end;
        }
        mem.copy_in(off, data);
        if let Ok(mut stats) = mem.vfs().temp.lock() {
            stats.bytes_written += data.len() as u64;
        }
        ffi::SQLITE_OK
    })
}

unsafe extern "C" fn mem_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_TRUNCATE, || {
        let mem = mem_state(file);
        let size = size.max(0) as u64;
        if size < mem.size {
            mem.shrink(size);
        } else if size > mem.size {
            // Growing by truncate (as ftruncate does): a hole, zeros.
            if let Err(rc) = mem.reserve(size - mem.size) {
                return rc;
            }
            mem.size = size;
        }
        ffi::SQLITE_OK
    })
}

/// Nothing to make durable: a temporary file is not read after a crash
/// (SQLite does not sync one either: its pager sets `noSync` for them).
unsafe extern "C" fn mem_sync(_file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn mem_file_size(file: *mut ffi::sqlite3_file, out: *mut ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_FSTAT, || {
        *out = mem_state(file).size as ffi::sqlite3_int64;
        ffi::SQLITE_OK
    })
}

/// Locks and unlocks succeed at once: a memory file has one handle, its
/// connection's (SQLite opens temporary files exclusively).
unsafe extern "C" fn mem_lock(_file: *mut ffi::sqlite3_file, _level: c_int) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn mem_check_reserved_lock(_file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    *out = 0;
    ffi::SQLITE_OK
}

/// No file control applies (size and mmap hints included: SQLite goes on without).
unsafe extern "C" fn mem_file_control(_file: *mut ffi::sqlite3_file, _op: c_int, _arg: *mut c_void) -> c_int {
    ffi::SQLITE_NOTFOUND
}

/// The VFS's own sector size, so a temporary database's journal is laid out
/// as the main database's is.
unsafe extern "C" fn mem_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    512
}

/// A write leaves the bytes around it as they were (SQLite need not pad), as
/// the unix VFS reports by default.
unsafe extern "C" fn mem_device_characteristics(_file: *mut ffi::sqlite3_file) -> c_int {
    ffi::SQLITE_IOCAP_POWERSAFE_OVERWRITE
}
