//! The WAL index in host memory (`xShmMap`) and its locks.

use super::*;

pub(super) unsafe extern "C" fn x_shm_map(
    file: *mut ffi::sqlite3_file,
    region: c_int,
    size: c_int,
    extend: c_int,
    out: *mut *mut c_void,
) -> c_int {
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
pub(super) unsafe extern "C" fn x_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
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
pub(super) fn release_shm_locks(st: &mut FileState) {
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

pub(super) unsafe extern "C" fn x_shm_barrier(_file: *mut ffi::sqlite3_file) {
    std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
}

pub(super) unsafe extern "C" fn x_shm_unmap(file: *mut ffi::sqlite3_file, delete: c_int) -> c_int {
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
