//! Why a call failed: the SQLite code for a file-system error, the reason in words, SQLite's error log and `xGetLastError`; and the guard that keeps panics out of C.

use super::*;

/// Why a file-system call failed, in words a SQLite user can act on
/// (`protocol`: the device's).
pub(super) fn reason(protocol: &str, e: &FsError, file: &str) -> String {
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
pub(super) fn note_error(state: &VfsState, code: c_int, msg: String) {
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
pub(super) fn fs_code(state: &VfsState, file: &str, e: &FsError, io: c_int) -> c_int {
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
pub(super) fn guard(err: c_int, f: impl FnOnce() -> c_int) -> c_int {
    catch_unwind(AssertUnwindSafe(f)).unwrap_or(err)
}

/// Copies the last failure's reason into `out` (`n` bytes, NUL-terminated) and
/// returns its SQLite code (0: none). SQLite itself asks with `n` 0 for
/// `sqlite3_system_errno`; a caller can ask for the text through
/// `sqlite3_vfs_find(name)->xGetLastError`.
pub(super) unsafe extern "C" fn x_get_last_error(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
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
