//! `xFileControl`: batch atomic writes, commit phase two, the pragmas the VFS watches, and the rest.

use super::*;

pub(super) unsafe extern "C" fn x_file_control(file: *mut ffi::sqlite3_file, op: c_int, arg: *mut c_void) -> c_int {
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
