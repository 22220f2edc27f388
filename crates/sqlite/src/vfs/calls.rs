//! The `sqlite3_vfs` methods: open, delete, access, full path name, randomness, sleep and the clock.

use super::*;

pub(super) unsafe extern "C" fn x_open(
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
        state.host.syscall(0);
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

pub(super) unsafe extern "C" fn x_delete(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, _sync_dir: c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_DELETE, || {
        let state = vfs_state(vfs);
        state.host.syscall(0);
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

pub(super) unsafe extern "C" fn x_access(vfs: *mut ffi::sqlite3_vfs, name: *const c_char, _flags: c_int, res: *mut c_int) -> c_int {
    guard(ffi::SQLITE_IOERR_ACCESS, || {
        let state = vfs_state(vfs);
        state.host.syscall(0);
        let name = CStr::from_ptr(name).to_string_lossy();
        let Some(fs) = lock(state) else { return ffi::SQLITE_IOERR_ACCESS };
        *res = fs.lookup(&name).is_some() as c_int;
        ffi::SQLITE_OK
    })
}

pub(super) unsafe extern "C" fn x_full_pathname(_vfs: *mut ffi::sqlite3_vfs, name: *const c_char, n: c_int, out: *mut c_char) -> c_int {
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

pub(super) unsafe extern "C" fn x_randomness(vfs: *mut ffi::sqlite3_vfs, n: c_int, out: *mut c_char) -> c_int {
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

pub(super) unsafe extern "C" fn x_sleep(_vfs: *mut ffi::sqlite3_vfs, micros: c_int) -> c_int {
    micros // simulated: no wall-clock sleep
}

/// A fixed clock (2026-01-01T00:00:00Z as a Julian day): deterministic runs.
pub(super) const FIXED_JULIAN_MS: i64 = 212_633_985_600_000;

pub(super) unsafe extern "C" fn x_current_time(_vfs: *mut ffi::sqlite3_vfs, out: *mut f64) -> c_int {
    *out = FIXED_JULIAN_MS as f64 / 86_400_000.0;
    ffi::SQLITE_OK
}

pub(super) unsafe extern "C" fn x_current_time_int64(_vfs: *mut ffi::sqlite3_vfs, out: *mut ffi::sqlite3_int64) -> c_int {
    *out = FIXED_JULIAN_MS;
    ffi::SQLITE_OK
}
