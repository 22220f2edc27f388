//! The `sqlite3_io_methods` of a file: close, read, write, truncate, sync, size, sector size and device characteristics.

use super::*;

pub(super) static IO_METHODS: ffi::sqlite3_io_methods = ffi::sqlite3_io_methods {
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

pub(super) unsafe extern "C" fn x_close(file: *mut ffi::sqlite3_file) -> c_int {
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

pub(super) unsafe extern "C" fn x_read(file: *mut ffi::sqlite3_file, buf: *mut c_void, amt: c_int, off: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_READ, || {
        let st = file_state(file);
        let state = &*st.vfs;
        state.host.syscall(amt.max(0) as u64);
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

pub(super) unsafe extern "C" fn x_write(file: *mut ffi::sqlite3_file, buf: *const c_void, amt: c_int, off: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_WRITE, || {
        let st = file_state(file);
        let state = &*st.vfs;
        state.host.syscall(amt.max(0) as u64);
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

pub(super) unsafe extern "C" fn x_truncate(file: *mut ffi::sqlite3_file, size: ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_TRUNCATE, || {
        let st = file_state(file);
        let state = &*st.vfs;
        state.host.syscall(0);
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

pub(super) unsafe extern "C" fn x_sync(file: *mut ffi::sqlite3_file, _flags: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_FSYNC, || {
        let st = file_state(file);
        let state = &*st.vfs;
        state.host.syscall(0);
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

pub(super) unsafe extern "C" fn x_file_size(file: *mut ffi::sqlite3_file, out: *mut ffi::sqlite3_int64) -> c_int {
    guard(ffi::SQLITE_IOERR_FSTAT, || {
        let st = file_state(file);
        let state = &*st.vfs;
        state.host.syscall(0);
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

pub(super) unsafe extern "C" fn x_sector_size(_file: *mut ffi::sqlite3_file) -> c_int {
    512
}

pub(super) unsafe extern "C" fn x_device_characteristics(file: *mut ffi::sqlite3_file) -> c_int {
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
