//! Why a write failed reaches the SQLite caller: `SQLITE_FULL` alone does not
//! say whether the device or the file system ran out, so the VFS logs
//! the reason through `sqlite3_log` (SQLite's error log, the channel its own
//! unix VFS uses for the errno behind an I/O error) and keeps it for
//! `xGetLastError` and `Stack::last_error`. (SQLite's own message for the
//! statement stays "database or disk is full": a VFS cannot change it.)
//!
//! SQLite's log callback can only be installed before SQLite initializes,
//! i.e. before any test opens a connection: every test calls [`install_log`]
//! first. Only `sqlite_full_says_why` reads (and clears) the log.

use rusqlite::ffi;
use rusqlite::{Connection, ErrorCode};
use std::ffi::{c_char, c_int, c_void, CStr};
use std::sync::{Mutex, Once};
use txftl_ftl::FtlConfig;
use txftl_nand::{preset, DataMode, Nand, ViolationPolicy};
use txftl_protocols::PROTOCOLS;
use txftl_protocols::{format, ProtocolOptions};
use txftl_sqlite::{Mode, Stack};

static LOG: Mutex<Vec<(c_int, String)>> = Mutex::new(Vec::new());

unsafe extern "C" fn log_callback(_arg: *mut c_void, code: c_int, msg: *const c_char) {
    let msg = unsafe { CStr::from_ptr(msg) }.to_string_lossy().into_owned();
    if let Ok(mut log) = LOG.lock() {
        log.push((code, msg));
    }
}

/// Installs the log callback, once, before any test opens a connection.
fn install_log() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        let rc = unsafe {
            ffi::sqlite3_config(
                ffi::SQLITE_CONFIG_LOG,
                log_callback as unsafe extern "C" fn(*mut c_void, c_int, *const c_char),
                std::ptr::null_mut::<c_void>(),
            )
        };
        assert_eq!(rc, ffi::SQLITE_OK, "the log callback goes in before SQLite initializes");
    });
}

fn take_log() -> Vec<(c_int, String)> {
    std::mem::take(&mut *LOG.lock().unwrap())
}

fn stack(xl2p_entries: u32) -> Stack {
    stack_of(512, xl2p_entries)
}

fn stack_of(blocks_per_plane: u32, xl2p_entries: u32) -> Stack {
    mode_stack("xftl", blocks_per_plane, &ProtocolOptions::new().with("xl2p-entries", xl2p_entries))
}

/// `mode` on `tiny` with `blocks_per_plane` blocks a plane and 4 KiB pages.
fn mode_stack(mode: &str, blocks_per_plane: u32, opts: &ProtocolOptions) -> Stack {
    let mode = Mode::parse(PROTOCOLS, mode).unwrap();
    let mut p = preset("tiny").unwrap();
    p.geometry.blocks_per_plane = blocks_per_plane;
    p.geometry.page_size = 4096;
    let nand = Nand::new(p.config(DataMode::Full, ViolationPolicy::Panic)).unwrap();
    let dev = format(mode.protocol(), nand, FtlConfig::default(), opts).unwrap();
    Stack::format(dev, mode).unwrap()
}

/// `xGetLastError` of the stack's VFS with a buffer of `n` bytes: its code and text.
fn x_get_last_error(s: &Stack, n: usize) -> (c_int, Vec<u8>) {
    let mut buf = vec![b'#' as c_char; n.max(1)];
    let name = std::ffi::CString::new(s.vfs.name()).unwrap();
    let code = unsafe {
        let vfs = ffi::sqlite3_vfs_find(name.as_ptr());
        assert!(!vfs.is_null());
        ((*vfs).xGetLastError.unwrap())(vfs, n as c_int, buf.as_mut_ptr())
    };
    (code, buf.iter().map(|&c| c as u8).collect())
}

fn is_full<T>(r: &rusqlite::Result<T>) -> bool {
    matches!(r, Err(rusqlite::Error::SqliteFailure(e, _)) if e.code == ErrorCode::DiskFull)
}

#[test]
fn sqlite_full_says_why() {
    install_log();

    // The X-L2P table: 16 entries, a transaction of about 60 pages: the
    // table spills to flash and the transaction commits.
    let s = stack(16);
    let conn = s.open("t.db", 4096).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)").unwrap();
    conn.execute_batch(
        "BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1000) \
         INSERT INTO t SELECT i, printf('%0200d', i) FROM n; COMMIT;",
    )
    .unwrap();
    let n: i64 = conn.query_row("SELECT count(*) FROM t", [], |r| r.get(0)).unwrap();
    assert_eq!(n, 1000);
    drop(conn);
    drop(s);

    // A transaction larger than the device's free space: a table filling the
    // file system, rewritten whole in one transaction (its new copies and the
    // committed ones must both stay). The device answers `NoSpace`, SQLite
    // `SQLITE_FULL`, and the database is as before.
    let s = stack_of(32, 16);
    let conn = s.open("big.db", 4096).unwrap();
    conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    let mut rows = 0;
    while conn.execute("INSERT INTO t VALUES (?1, zeroblob(3500))", [rows]).is_ok() {
        rows += 1;
        assert!(rows < 100_000, "the file system never filled");
    }
    take_log();
    let r = conn.execute_batch("BEGIN; UPDATE t SET v = zeroblob(3400); COMMIT;");
    assert!(is_full(&r), "{r:?}");
    let log = take_log();
    assert!(
        log.iter()
            .any(|(code, m)| *code == ffi::SQLITE_FULL && m.contains("txftl") && m.contains("device is full")),
        "the log says the device is full: {log:?}"
    );
    for (code, m) in log.iter().filter(|(_, m)| m.starts_with("txftl")) {
        eprintln!("sqlite3_log({code}): {m}");
    }
    let kept = s.last_error().unwrap();
    assert!(kept.contains("device is full"), "{kept}");
    let mut buf = [0 as c_char; 256];
    let name = std::ffi::CString::new(s.vfs.name()).unwrap();
    let code = unsafe {
        let vfs = ffi::sqlite3_vfs_find(name.as_ptr());
        assert!(!vfs.is_null());
        ((*vfs).xGetLastError.unwrap())(vfs, buf.len() as c_int, buf.as_mut_ptr())
    };
    let text = unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy();
    assert_eq!(code, ffi::SQLITE_FULL);
    assert!(kept.starts_with(&*text) && text.contains("device is full"), "{text}");
    let _ = conn.execute_batch("ROLLBACK");
    let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
    let (n, long): (i64, i64) = conn
        .query_row("SELECT count(*), sum(length(v) = 3500) FROM t", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap();
    assert_eq!(
        (ok.as_str(), n, long),
        ("ok", rows, rows),
        "the database is whole, as before the failed transaction"
    );
    drop(conn);
    drop(s);

    // A full file system: two databases growing in turn (their pages
    // interleave, so each grows far past the 16 extents of its inode) until
    // the device's data area is used up.
    let s = stack_of(64, 500);
    let x = s.open("x.db", 4096).unwrap();
    let y = s.open("y.db", 4096).unwrap();
    for c in [&x, &y] {
        c.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
    }
    take_log();
    let mut failed = None;
    'grow: for i in 0..2000 {
        for (name, c) in [("x.db", &x), ("y.db", &y)] {
            let r = c.execute("INSERT INTO t VALUES (?1, zeroblob(3500))", [i]);
            if r.is_err() {
                failed = Some((name, r));
                break 'grow;
            }
        }
    }
    let Some((name, r)) = failed else {
        panic!("2000 interleaved growths never filled the file system");
    };
    assert!(is_full(&r), "{r:?}");
    let log = take_log();
    assert!(
        log.iter()
            .any(|(code, m)| *code == ffi::SQLITE_FULL && m.contains("txftl") && m.contains(name) && m.contains("file system is full")),
        "the log says the file system is full writing {name}: {log:?}"
    );
    for (code, m) in log.iter().filter(|(_, m)| m.starts_with("txftl")) {
        eprintln!("sqlite3_log({code}): {m}");
    }
    let extents = s
        .with_fs_mut(|fs| ["x.db", "y.db"].map(|n| fs.lookup(n).and_then(|ino| fs.extent_count(None, ino).ok()).unwrap_or(0)))
        .unwrap();
    assert!(extents.iter().all(|&e| e > 16), "both databases grew past 16 extents: {extents:?}");
    let _: (Connection, Connection) = (x, y);
}

/// On every transactional protocol, a transaction larger than the device's
/// free space fails with `SQLITE_FULL`, and the client reads the device's
/// own reason (`Stack::last_error`, `xGetLastError`), not a later
/// failure's (the abort of a transaction the device already dropped).
#[test]
fn a_transaction_larger_than_the_free_space_names_the_device_reason() {
    install_log();
    for mode in ["xftl", "atomic-write", "lighttx", "scc", "nolgn", "mobius"] {
        let s = mode_stack(mode, 32, &ProtocolOptions::new());
        let conn = s.open("big.db", 4096).unwrap();
        conn.execute_batch("CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)").unwrap();
        let mut rows = 0;
        while conn.execute("INSERT INTO t VALUES (?1, zeroblob(3500))", [rows]).is_ok() {
            rows += 1;
            assert!(rows < 100_000, "{mode}: the file system never filled");
        }
        let r = conn.execute_batch("BEGIN; UPDATE t SET v = zeroblob(3400); COMMIT;");
        assert!(is_full(&r), "{mode}: {r:?}");
        let _ = conn.execute_batch("ROLLBACK");
        let why = s.last_error().unwrap();
        assert_eq!(why, "txftl: the device is full (writing `big.db`)", "{mode}");

        // xGetLastError: the code, and the text NUL-terminated within `n` bytes.
        let (code, whole) = x_get_last_error(&s, 256);
        assert_eq!(code, ffi::SQLITE_FULL, "{mode}");
        assert_eq!(&whole[..why.len() + 1], format!("{why}\0").as_bytes(), "{mode}");
        let (code, cut) = x_get_last_error(&s, 12);
        assert_eq!((code, cut.as_slice()), (ffi::SQLITE_FULL, b"txftl: the \0".as_slice()), "{mode}");
        let (code, untouched) = x_get_last_error(&s, 0);
        assert_eq!(
            (code, untouched.as_slice()),
            (ffi::SQLITE_FULL, b"#".as_slice()),
            "{mode}: n = 0 asks for the code only"
        );

        let ok: String = conn.query_row("PRAGMA integrity_check", [], |r| r.get(0)).unwrap();
        assert_eq!(ok, "ok", "{mode}");
        eprintln!("{mode}: {rows} rows, then {why}");
    }
}

/// A refused journal mode says what this VFS runs and what the other VFS
/// (the batch one, or the plain one) runs, apart.
#[test]
fn a_refused_journal_mode_names_what_each_vfs_runs() {
    install_log();
    let refusal = |mode: &str, pragma: &str| {
        let s = mode_stack(mode, 64, &ProtocolOptions::new());
        let conn = s.open("r.db", 4096).unwrap();
        let e = conn.query_row(&format!("PRAGMA journal_mode={pragma}"), [], |r| r.get::<_, String>(0));
        e.unwrap_err().to_string()
    };
    assert_eq!(
        refusal("atomic-write", "DELETE"),
        "txftl: protocol `atomic-write` does not carry journal_mode=DELETE through this VFS (docs/protocols/atomic-write.md): \
         this VFS runs OFF, MEMORY; the batch VFS (`txftl-batch`) runs DELETE (as SQLite's batch atomic writes)"
    );
    assert_eq!(
        refusal("atomic-write", "WAL"),
        "txftl: protocol `atomic-write` does not carry journal_mode=WAL (docs/protocols/atomic-write.md): \
         this VFS runs OFF, MEMORY; the batch VFS (`txftl-batch`) runs DELETE (as SQLite's batch atomic writes)"
    );
    assert_eq!(
        refusal("atomic-write-batch", "OFF"),
        "txftl: protocol `atomic-write` does not carry journal_mode=OFF through the batch VFS (docs/protocols/atomic-write.md): \
         the batch VFS runs DELETE (as SQLite's batch atomic writes); the `txftl` VFS runs OFF, MEMORY"
    );
    assert_eq!(
        refusal("xftl-batch", "MEMORY"),
        "txftl: protocol `xftl` does not carry journal_mode=MEMORY through the batch VFS (docs/protocols/xftl.md): \
         the batch VFS runs DELETE (as SQLite's batch atomic writes), WAL; the `txftl` VFS runs OFF, MEMORY, DELETE, TRUNCATE, PERSIST, WAL"
    );
}
