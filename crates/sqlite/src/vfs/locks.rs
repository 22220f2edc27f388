//! SQLite's file locks across the connections of the process, by the unix VFS's rules.

use super::*;

/// Raises the handle's lock to `level`, by the unix VFS's rules inside one
/// process: SHARED unless someone holds PENDING or EXCLUSIVE; RESERVED unless
/// another handle holds RESERVED or more; EXCLUSIVE through PENDING (which
/// stays, keeping new readers out, when other readers remain: `SQLITE_BUSY`).
pub(super) fn acquire_lock(st: &mut FileState, level: c_int) -> c_int {
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
pub(super) fn release_lock(st: &mut FileState, level: c_int) {
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

pub(super) unsafe extern "C" fn x_lock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_LOCK, || {
        let st = file_state(file);
        (*st.vfs).host.syscall(0);
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

pub(super) unsafe extern "C" fn x_unlock(file: *mut ffi::sqlite3_file, level: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_UNLOCK, || {
        let st = file_state(file);
        release_lock(st, level);
        let state = &*st.vfs;
        state.host.syscall(0);
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
pub(super) unsafe extern "C" fn x_check_reserved_lock(file: *mut ffi::sqlite3_file, out: *mut c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_CHECKRESERVEDLOCK, || {
        let st = file_state(file);
        let Ok(table) = LOCKS.lock() else {
            return ffi::SQLITE_IOERR_CHECKRESERVEDLOCK;
        };
        *out = table.get(&st.lock_key()).is_some_and(|l| l.writer.is_some()) as c_int;
        ffi::SQLITE_OK
    })
}
