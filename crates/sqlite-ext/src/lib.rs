//! `txftl` as a SQLite loadable extension: loading it mounts a device image
//! (through FTL recovery), mounts the file system on it, and registers a VFS
//! named `txftl`, so any SQLite host (the `sqlite3` shell, Python's `sqlite3`)
//! can open `file:NAME?vfs=txftl`; and `txftl-batch` over the same file system,
//! which maps SQLite's batch atomic writes to device transactions (`DELETE`
//! mode; the host must be built with `SQLITE_ENABLE_BATCH_ATOMIC_WRITE`).
//!
//! Configuration, from the environment of the loading process:
//! - `TXFTL_IMAGE`: the device image (made with `txftl format --fs --image PATH`);
//! - `TXFTL_PROTOCOL`: the protocol the image was formatted for (default: the
//!   one its superblock records; another is refused). On a transactional protocol the file
//!   system hands out device transactions: `PRAGMA journal_mode=OFF` or
//!   `MEMORY` puts each SQLite transaction in one (the X-FTL paper's way),
//!   the `txftl-batch` VFS runs `DELETE` as SQLite's batch atomic writes; a
//!   journal mode the protocol does not carry is refused at its PRAGMA (or,
//!   for the default `DELETE`, when SQLite opens the journal);
//! - `TXFTL_SYNC`: when the image file reaches the host's disk: `close`
//!   (default), `flush` (also at every device flush and commit) or `always`
//!   (after every flash program and erase), as `txftl --sync` says.
//!
//! A process that ends or dies (kill -9) with the image open loses nothing
//! it wrote: the file system's host log, `<image>.host`, keeps what the
//! operating system would keep (its page cache, its pending metadata) and the
//! next load replays it (`txftl_fs`'s `hostlog` module). Only a power cut,
//! which the crash tests inject, loses what was not made durable.
//!
//! The entry points, `sqlite3_txftl_init` and the default `sqlite3_extension_init`, take only `vfs_register`,
//! `vfs_unregister` and `mprintf` from the host's API routines (and `log`, if
//! the host has it, for the reasons behind failures), and check nothing else, so hosts older than the Rust bindings (Debian's SQLite 3.40)
//! can load it. It returns `SQLITE_OK_LOAD_PERMANENTLY`: the VFS outlives the
//! connection that loaded it.

use std::ffi::{c_char, c_int, CString};
use std::sync::{Arc, Mutex};

mod ffi {
    pub use libsqlite3_sys::*;
}

#[path = "../../sqlite/src/vfs/mod.rs"]
#[allow(dead_code)]
mod vfs;

use txftl_fs::{Fs, FsMode};
use txftl_nand::{ImageSync, Nand, ViolationPolicy};

const SQLITE_OK_LOAD_PERMANENTLY: c_int = 256;

fn mount() -> Result<Fs, String> {
    let image = std::env::var("TXFTL_IMAGE").map_err(|_| "TXFTL_IMAGE is not set: the path of a txftl device image".to_string())?;
    let sync = match std::env::var("TXFTL_SYNC") {
        Ok(v) => ImageSync::parse(&v).ok_or_else(|| format!("TXFTL_SYNC `{v}` is not one of {}", ImageSync::NAMES.join(", ")))?,
        Err(_) => ImageSync::default(),
    };
    let mut nand = Nand::open_image(image.as_ref(), ViolationPolicy::Error).map_err(|e| format!("{image}: {e}"))?;
    nand.set_image_sync(sync);
    // The image knows its protocol (its superblock records it); one given
    // that differs is refused by the mount.
    let (protocol, nand) = match std::env::var("TXFTL_PROTOCOL") {
        Ok(p) => (p, nand),
        Err(_) => match txftl_ftl::formatted_protocol(nand) {
            (Ok(p), nand) => (p, nand),
            (Err(e), _) => return Err(format!("mounting {image}: {e}")),
        },
    };
    let entry = txftl_protocols::entry(&protocol).map_err(|e| format!("TXFTL_PROTOCOL: {e}"))?;
    let mode = if entry.transactional {
        FsMode::Transactional
    } else {
        FsMode::Journaled
    };
    let opts = txftl_protocols::ProtocolOptions::default();
    let dev =
        txftl_protocols::mount(&protocol, nand, txftl_ftl::FtlConfig::default(), &opts).map_err(|e| format!("mounting {image}: {e}"))?;
    let mut fs = Fs::mount(dev, mode).map_err(|e| format!("{image}: file system: {e}"))?;
    // The file system lives in this process, the host's page cache and
    // metadata with it; the VFS lives until the process exits or dies, and
    // nothing unmounts it then. The host log (`<image>.host`) keeps what a
    // kernel would keep across the process's end: replayed here, after the
    // device's recovery, then appended to as the file system changes.
    let log = txftl_fs::host_log_path(image.as_ref());
    fs.attach_host_log(&log).map_err(|e| format!("{image}: {e}"))?;
    Ok(fs)
}

/// The extension's entry point (`.load PATH sqlite3_txftl_init`).
///
/// # Safety
/// Called by SQLite with a valid `sqlite3_api_routines` pointer.
#[no_mangle]
pub unsafe extern "C" fn sqlite3_txftl_init(_db: *mut ffi::sqlite3, err: *mut *mut c_char, api: *const ffi::sqlite3_api_routines) -> c_int {
    let result = std::panic::catch_unwind(|| {
        let routines = unsafe { api.as_ref() }.ok_or("no API routines")?;
        let (Some(vfs_register), Some(vfs_unregister), Some(mprintf)) = (routines.vfs_register, routines.vfs_unregister, routines.mprintf)
        else {
            return Err("the host lacks vfs_register, vfs_unregister or mprintf".to_string());
        };
        let api = vfs::Api {
            vfs_register,
            vfs_unregister,
            mprintf,
            // Optional: without it failures are only kept for xGetLastError.
            log: routines.log,
        };
        let fs = mount()?;
        let fs = Arc::new(Mutex::new(fs));
        // `txftl`: journal_mode OFF or MEMORY on a transactional protocol (and
        // any mode on one without transactions); `txftl-batch`: SQLite's batch
        // atomic writes (DELETE mode on a transactional protocol; the host
        // SQLite must be built with SQLITE_ENABLE_BATCH_ATOMIC_WRITE).
        vfs::Vfs::register("txftl", fs.clone(), api, vfs::TxMapping::FirstWrite)?.leak();
        vfs::Vfs::register("txftl-batch", fs, api, vfs::TxMapping::BatchAtomic)?.leak();
        Ok::<_, String>(api)
    });
    match result {
        Ok(Ok(_)) => SQLITE_OK_LOAD_PERMANENTLY,
        Ok(Err(msg)) => {
            if !err.is_null() && !api.is_null() {
                if let Some(mprintf) = (*api).mprintf {
                    let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
                    *err = mprintf(c"txftl: %s".as_ptr(), c.as_ptr());
                }
            }
            ffi::SQLITE_ERROR
        }
        Err(_) => ffi::SQLITE_ERROR,
    }
}

/// The default entry point SQLite looks for when none is named (Python 3.11's
/// `load_extension(path)`, `.load path` without an entry point).
///
/// # Safety
/// As [`sqlite3_txftl_init`].
#[no_mangle]
pub unsafe extern "C" fn sqlite3_extension_init(
    db: *mut ffi::sqlite3,
    err: *mut *mut c_char,
    api: *const ffi::sqlite3_api_routines,
) -> c_int {
    sqlite3_txftl_init(db, err, api)
}
