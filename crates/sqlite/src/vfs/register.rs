//! The VFS object: registration, the handle that unregisters it, and what it tells its user (last error, temporary files).

use super::*;

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
        // The device says which extension calls it has (a wrapper, such as
        // the trace recorder, may offer fewer than the protocol's entry).
        let (transactional, entry, remaps, ends) = {
            let mut fs = fs.lock().map_err(|_| "file system lock poisoned")?;
            let dev = fs.device_mut();
            let (remaps, ends) = (dev.offers(Extension::Remap), dev.offers(Extension::TxEnd));
            (fs.mode() == FsMode::Transactional, fs.device().entry(), remaps, ends)
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
            remaps,
            ends,
            frame_read: Mutex::new(None),
            host: Default::default(),
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

    /// The host work counted through this VFS (`host_cost.rs`).
    pub fn host_counters(&self) -> std::sync::Arc<super::HostCounters> {
        unsafe { (*self.state).host.clone() }
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
