//! A checkpoint's database writes by remapping WAL pages (SW-WAL), and when a checkpoint may remap.

use super::*;

/// A checkpoint's write of a database page with the bytes of the frame
/// SQLite just read from a remapping WAL: the file system remaps the frame's
/// page onto it (or copies, if the device refuses). `None`: not such a write.
pub(super) fn write_by_remap(state: &VfsState, st: &FileState, fs: &mut Fs, off: u64, data: &[u8]) -> Option<c_int> {
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
pub(super) fn checkpoint_may_remap(state: &VfsState, st: &FileState) -> bool {
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
