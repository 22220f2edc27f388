//! The handle's device transaction: begun at the first change of the database, committed, aborted, and a hot journal's playback that writes nothing.

use super::*;

/// Commits the handle's open device transaction; `None` if none is open. On
/// failure the transaction stays open (SQLite's unlock aborts it).
pub(super) fn commit_open_tx(state: &VfsState, st: &mut FileState, fs: &mut Fs, io: c_int) -> Option<c_int> {
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
pub(super) fn abort_open_tx(state: &VfsState, st: &mut FileState, fs: &mut Fs) -> c_int {
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

/// Opens the handle's device transaction if this mapping begins one at the
/// first change of the main database file.
pub(super) fn begin_at_first_change(state: &VfsState, st: &mut FileState, fs: &mut Fs, io: c_int) -> c_int {
    let wal_mode = st.wal_mode && state.canary != Canary::WalCheckpointInTransaction;
    if st.main_db && state.maps(TxMapping::FirstWrite) && st.tx.is_none() && !wal_mode {
        match fs.begin() {
            Ok(tid) => st.tx = Some(tid),
            Err(e) => return fs_code(state, &st.name, &e, io),
        }
    }
    ffi::SQLITE_OK
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
pub(super) fn drops_hot_playback(state: &VfsState, st: &FileState) -> bool {
    st.main_db && state.transactional && state.maps(TxMapping::FirstWrite) && !st.wal_mode
}
