//! The host log: what the host's operating system keeps when a process dies.
//!
//! On a real machine the page cache and the file system's in-memory metadata
//! belong to the kernel: a process killed with `kill -9` loses nothing it
//! wrote, only a power loss does. Here the file system runs inside the
//! process that uses it (the SQLite extension), so its page cache and its
//! pending metadata die with that process. The host log keeps them: every
//! operation that changes a file is appended to a file beside the device
//! image (written, not synced: the host's own page cache keeps it across the
//! process's death, as it keeps the image's writes) before the call returns,
//! and the next mount replays it on top of what the device recovered. The
//! log restarts empty whenever nothing is pending (no dirty page, no pending
//! metadata, no open transaction, the device flushed), so it holds only what
//! the device may not have yet; when it outgrows [`WRITEBACK_BYTES`] the file
//! system writes everything back, as an operating system's periodic
//! writeback does.
//!
//! The log models the operating system only: it is never read after a power
//! cut of the model (the crash harness drops the file system's memory and the
//! host log is not attached there), and the device's counters never see it.
//!
//! Format (little-endian): an 8-byte header `TXFTLHL1`, then records, each
//! `len: u32` (of what follows, checksum included), `kind: u8`, the body,
//! `crc32: u32` of kind and body. A record cut short by the process's death
//! (its call never returned) and anything after it are ignored. Bodies:
//!
//! | kind | record | body |
//! |---|---|---|
//! | 1 | create | `class: u8`, path |
//! | 2 | delete | path |
//! | 3 | mkdir | path |
//! | 4 | rmdir | path |
//! | 5 | write | ctx, `offset: u64`, `path_len: u16`, path, data (the rest) |
//! | 6 | truncate | ctx, `size: u64`, path |
//! | 7 | begin | `tid: u32` |
//! | 8 | commit | `tid: u32` |
//! | 9 | abort | `tid: u32` |
//! | 10 | commit failed | `tid: u32` |
//! | 11 | commit point | `tid: u32` |
//!
//! A ctx is `0: u8` (non-transactional) or `1: u8, tid: u32`; a path is
//! UTF-8 bytes (the rest of the body, or `path_len` bytes in a write).
//!
//! A record is appended when its call has succeeded, except a commit's,
//! which is appended before the device commits (and followed by a "commit
//! failed" record if the commit fails): a commit the process died inside may
//! be durable on the device, and the log must then hold it, in its place
//! among the other changes.
//!
//! Replay applies the records in order through the file system's own calls:
//! a transaction whose last commit, commit-failed or abort record is a
//! commit again as a new transaction; the others (aborted, or open when the
//! process died: its files were closed, which aborts them) not at all. A
//! commit point (`Fs::commit_point`: SQLite's commit inside a device
//! transaction that stays open, grouped under `synchronous=NORMAL`) makes
//! what came before it committed to the host: a transaction open when the
//! process died replays up to its last commit point, then commits. Every
//! record is an absolute change (bytes at an offset, a size, a name), so
//! replaying the log on any state the device recovered from it reaches the
//! state the process left. The call the process died inside may have taken
//! effect on the device without its record (a delete, a create, a truncate:
//! durable when they return): a change to a file the device no longer has
//! is skipped (and counted), and creating a file that exists, or deleting
//! one that does not, changes nothing.

mod replay;

use crate::{FileClass, FsError, Result};
use serde::Serialize;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use txftl_ftl::Tid;

const MAGIC: &[u8; 8] = b"TXFTLHL1";

/// The log's size at which the file system writes everything back.
pub const WRITEBACK_BYTES: u64 = 64 << 20;

/// The host log of the device image at `image`: `<image>.host`.
pub fn host_log_path(image: &Path) -> PathBuf {
    let mut p = image.as_os_str().to_owned();
    p.push(".host");
    PathBuf::from(p)
}

/// Bytes of changes the host log beside the image at `image` holds (a
/// process using the image ended or died with changes the device may not
/// have; the next mount that attaches the log replays them), if any.
pub fn pending_host_log(image: &Path) -> Option<u64> {
    let len = std::fs::metadata(host_log_path(image)).ok()?.len();
    (len > MAGIC.len() as u64).then(|| len - MAGIC.len() as u64)
}

/// One change to the file system, as logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Record {
    Create {
        path: String,
        class: FileClass,
    },
    Delete {
        path: String,
    },
    Mkdir {
        path: String,
    },
    Rmdir {
        path: String,
    },
    Write {
        ctx: Option<Tid>,
        path: String,
        offset: u64,
        data: Vec<u8>,
    },
    Truncate {
        ctx: Option<Tid>,
        path: String,
        size: u64,
    },
    Begin {
        tid: Tid,
    },
    Commit {
        tid: Tid,
    },
    Abort {
        tid: Tid,
    },
    CommitFailed {
        tid: Tid,
    },
    CommitPoint {
        tid: Tid,
    },
}

fn put_ctx(out: &mut Vec<u8>, ctx: Option<Tid>) {
    match ctx {
        None => out.push(0),
        Some(t) => {
            out.push(1);
            out.extend_from_slice(&t.to_le_bytes());
        }
    }
}

impl Record {
    /// Kind and body.
    fn encode(&self) -> Vec<u8> {
        let mut b = Vec::new();
        match self {
            Record::Create { path, class } => {
                b.extend([1, *class as u8]);
                b.extend_from_slice(path.as_bytes());
            }
            Record::Delete { path } | Record::Mkdir { path } | Record::Rmdir { path } => {
                b.push(match self {
                    Record::Delete { .. } => 2,
                    Record::Mkdir { .. } => 3,
                    _ => 4,
                });
                b.extend_from_slice(path.as_bytes());
            }
            Record::Write { ctx, path, offset, data } => {
                b.push(5);
                put_ctx(&mut b, *ctx);
                b.extend_from_slice(&offset.to_le_bytes());
                b.extend_from_slice(&(path.len() as u16).to_le_bytes());
                b.extend_from_slice(path.as_bytes());
                b.extend_from_slice(data);
            }
            Record::Truncate { ctx, path, size } => {
                b.push(6);
                put_ctx(&mut b, *ctx);
                b.extend_from_slice(&size.to_le_bytes());
                b.extend_from_slice(path.as_bytes());
            }
            Record::Begin { tid }
            | Record::Commit { tid }
            | Record::Abort { tid }
            | Record::CommitFailed { tid }
            | Record::CommitPoint { tid } => {
                b.push(match self {
                    Record::Begin { .. } => 7,
                    Record::Commit { .. } => 8,
                    Record::Abort { .. } => 9,
                    Record::CommitFailed { .. } => 10,
                    _ => 11,
                });
                b.extend_from_slice(&tid.to_le_bytes());
            }
        }
        b
    }

    /// Kind and body back; `None` if they are not a record.
    fn decode(b: &[u8]) -> Option<Record> {
        let (&kind, body) = b.split_first()?;
        let text = |s: &[u8]| String::from_utf8(s.to_vec()).ok();
        let ctx = |s: &[u8]| -> Option<(Option<Tid>, usize)> {
            match s.first()? {
                0 => Some((None, 1)),
                1 => Some((Some(u32::from_le_bytes(s.get(1..5)?.try_into().ok()?)), 5)),
                _ => None,
            }
        };
        let u64_at = |s: &[u8], at: usize| -> Option<u64> { Some(u64::from_le_bytes(s.get(at..at + 8)?.try_into().ok()?)) };
        let tid = || -> Option<Tid> { Some(u32::from_le_bytes(body.get(0..4)?.try_into().ok()?)) };
        Some(match kind {
            1 => {
                let (&class, path) = body.split_first()?;
                let class = match class {
                    0..=3 => FileClass::from_u8(class),
                    _ => return None,
                };
                Record::Create { path: text(path)?, class }
            }
            2 => Record::Delete { path: text(body)? },
            3 => Record::Mkdir { path: text(body)? },
            4 => Record::Rmdir { path: text(body)? },
            5 => {
                let (ctx, at) = ctx(body)?;
                let offset = u64_at(body, at)?;
                let len = u16::from_le_bytes(body.get(at + 8..at + 10)?.try_into().ok()?) as usize;
                let path = text(body.get(at + 10..at + 10 + len)?)?;
                let data = body.get(at + 10 + len..)?.to_vec();
                Record::Write { ctx, path, offset, data }
            }
            6 => {
                let (ctx, at) = ctx(body)?;
                let size = u64_at(body, at)?;
                Record::Truncate {
                    ctx,
                    path: text(body.get(at + 8..)?)?,
                    size,
                }
            }
            7 => Record::Begin { tid: tid()? },
            8 => Record::Commit { tid: tid()? },
            9 => Record::Abort { tid: tid()? },
            10 => Record::CommitFailed { tid: tid()? },
            11 => Record::CommitPoint { tid: tid()? },
            _ => return None,
        })
    }
}

/// What the host log did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct HostLogStats {
    /// Records appended, and their bytes.
    pub records: u64,
    pub bytes: u64,
    /// Times the log restarted empty (nothing pending).
    pub restarts: u64,
    /// Writebacks the log's size forced.
    pub writebacks: u64,
    /// At attach: records found, transactions among them replayed and
    /// dropped (no commit record last), and changes skipped (their file was
    /// gone: deleted by the call the process died inside).
    pub found: u64,
    pub replayed_transactions: u64,
    pub dropped_transactions: u64,
    pub skipped: u64,
}

/// An open host log, appended to.
pub(crate) struct HostLog {
    file: File,
    path: PathBuf,
    len: u64,
    /// The size at which the next writeback is due, and the growth between two.
    writeback_at: u64,
    writeback_bytes: u64,
    pub stats: HostLogStats,
}

fn io(path: &Path) -> impl Fn(std::io::Error) -> FsError + '_ {
    move |e| FsError::HostLog(format!("{}: {e}", path.display()))
}

impl HostLog {
    /// Reads the records of the log at `path` (none if there is no file).
    pub(crate) fn read(path: &Path) -> Result<Vec<Record>> {
        let mut bytes = Vec::new();
        match File::open(path) {
            Ok(mut f) => {
                f.read_to_end(&mut bytes).map_err(io(path))?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(path)(e)),
        }
        if bytes.is_empty() {
            return Ok(Vec::new());
        }
        if bytes.len() < MAGIC.len() || &bytes[..MAGIC.len()] != MAGIC {
            return Err(FsError::HostLog(format!("{}: not a txftl host log (bad header)", path.display())));
        }
        let mut records = Vec::new();
        let mut at = MAGIC.len();
        // A record cut short, or with a bad checksum, ends the log: its call
        // never returned.
        while let Some(len) = bytes
            .get(at..at + 4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize)
        {
            let Some(rec) = bytes.get(at + 4..at + 4 + len) else { break };
            if len < 5 {
                break;
            }
            let (body, crc) = rec.split_at(len - 4);
            if crc32fast::hash(body).to_le_bytes() != crc {
                break;
            }
            let Some(r) = Record::decode(body) else { break };
            records.push(r);
            at += 4 + len;
        }
        Ok(records)
    }

    /// Starts the log at `path` empty (over whatever was there).
    pub(crate) fn create(path: &Path, writeback_bytes: u64) -> Result<HostLog> {
        let mut file = File::create(path).map_err(io(path))?;
        file.write_all(MAGIC).map_err(io(path))?;
        Ok(HostLog {
            file,
            path: path.to_path_buf(),
            len: MAGIC.len() as u64,
            writeback_at: writeback_bytes,
            writeback_bytes,
            stats: HostLogStats::default(),
        })
    }

    pub(crate) fn append(&mut self, r: &Record) -> Result<()> {
        let body = r.encode();
        let mut rec = Vec::with_capacity(body.len() + 8);
        rec.extend_from_slice(&((body.len() + 4) as u32).to_le_bytes());
        rec.extend_from_slice(&body);
        rec.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        self.file.write_all(&rec).map_err(io(&self.path))?;
        self.len += rec.len() as u64;
        self.stats.records += 1;
        self.stats.bytes += rec.len() as u64;
        Ok(())
    }

    /// Nothing is pending: the log starts over.
    pub(crate) fn restart(&mut self) -> Result<()> {
        if self.len == MAGIC.len() as u64 {
            return Ok(());
        }
        self.file.set_len(MAGIC.len() as u64).map_err(io(&self.path))?;
        self.file.seek(SeekFrom::Start(MAGIC.len() as u64)).map_err(io(&self.path))?;
        self.len = MAGIC.len() as u64;
        self.writeback_at = self.writeback_bytes;
        self.stats.restarts += 1;
        Ok(())
    }

    /// Is a writeback due? (Then the next is due a writeback's size later,
    /// whether or not this one lets the log restart.)
    pub(crate) fn writeback_due(&mut self) -> bool {
        if self.len < self.writeback_at {
            return false;
        }
        self.writeback_at = self.len + self.writeback_bytes;
        self.stats.writebacks += 1;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_and_a_torn_tail_is_dropped() {
        let dir = std::env::temp_dir().join(format!("txftl-hostlog-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("x.host");
        let recs = vec![
            Record::Create {
                path: "a.db".into(),
                class: FileClass::Database,
            },
            Record::Begin { tid: 7 },
            Record::Write {
                ctx: Some(7),
                path: "a.db".into(),
                offset: 4096,
                data: vec![1, 2, 3],
            },
            Record::Truncate {
                ctx: None,
                path: "d/j".into(),
                size: 0,
            },
            Record::Commit { tid: 7 },
            Record::Abort { tid: 8 },
            Record::CommitFailed { tid: 9 },
            Record::CommitPoint { tid: 10 },
            Record::Mkdir { path: "d".into() },
            Record::Rmdir { path: "d".into() },
            Record::Delete { path: "a.db".into() },
        ];
        let mut log = HostLog::create(&path, WRITEBACK_BYTES).unwrap();
        for r in &recs {
            log.append(r).unwrap();
        }
        assert_eq!(HostLog::read(&path).unwrap(), recs);
        // The process died inside the last append: only whole records count.
        let len = std::fs::metadata(&path).unwrap().len();
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len - 3).unwrap();
        assert_eq!(HostLog::read(&path).unwrap(), recs[..recs.len() - 1]);
        // A flipped byte ends the log at that record.
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[8 + 4 + 2] ^= 0xff;
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(HostLog::read(&path).unwrap(), vec![]);
        std::fs::write(&path, b"something else").unwrap();
        assert!(matches!(HostLog::read(&path), Err(FsError::HostLog(_))));
        log.restart().unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
