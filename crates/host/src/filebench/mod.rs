//! Filebench's fileserver and webserver personalities (Filebench 1.4/1.5,
//! `workloads/fileserver.f` and `webserver.f`) run on the txftl file system:
//! the workloads of Möbius's Fig. 9, which ran them on "a revised jbd layer
//! for ext3", one device transaction per journal commit.
//!
//! What is Filebench's and what is ours:
//! - the file sets, their gamma-distributed sizes, directory widths and
//!   preallocation, and each personality's flowop list, are Filebench's
//!   ([`spec`] names every parameter and its default);
//! - one thread runs the flowop list `loops` times (Filebench runs 50 and
//!   100 threads for `$runtime` seconds; the file system is driven by one
//!   caller, and a count keeps the run deterministic from its seed);
//! - neither personality calls fsync; ext3 makes their writes durable at its
//!   periodic journal commits. Here each file the personality wrote is
//!   fsynced before its `closefile` (writewholefile, appendfilerand): one
//!   durability point per written file, so with
//!   [`txftl_fs::FsyncPolicy::OneTransaction`] one device transaction holds
//!   that file's pages and metadata. Creates and deletes are durable when
//!   they return, each in a device transaction of its own on a
//!   transactional file system. These are the paper's "small transactions".
//! - `openfile`, `closefile` and `statfile` do no device I/O here (the file
//!   system keeps its inodes in memory); they are counted as flowops, as
//!   Filebench counts them.

pub mod fileset;
pub mod spec;

pub use fileset::FileSet;
pub use spec::{Personality, Spec};

use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::BTreeMap;
use txftl_fs::{Fs, FsError};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FilebenchError {
    #[error("{0}")]
    Spec(String),
    #[error("file system: {0}")]
    Fs(#[from] FsError),
    /// A file the run created is missing (a file system bug, never expected).
    #[error("file `{0}` of the file set is gone")]
    Lost(String),
}

/// What a run did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    pub personality: String,
    pub loops: u64,
    /// Flowops executed, all kinds, and per kind.
    pub flowops: u64,
    pub by_flowop: BTreeMap<String, u64>,
    /// fsyncs issued (one per written file).
    pub fsyncs: u64,
    pub bytes_written: u64,
    pub bytes_read: u64,
    /// Files of the file set at the end.
    pub files: u64,
}

impl Report {
    fn op(&mut self, name: &str) {
        self.flowops += 1;
        *self.by_flowop.entry(name.to_string()).or_default() += 1;
    }
}

/// A prepared run: the file sets laid out and preallocated, the draws' state.
pub struct Bench {
    spec: Spec,
    rng: ChaCha8Rng,
    /// The bytes every write takes its data from (`iosize` of them).
    data: Vec<u8>,
    set: FileSet,
    /// The webserver's log file set (one entry).
    log: Option<FileSet>,
}

impl Bench {
    /// Lays out and preallocates the personality's file sets on `fs` (what
    /// Filebench does before its run).
    pub fn prepare(fs: &mut Fs, spec: &Spec) -> Result<Bench, FilebenchError> {
        spec.validate().map_err(FilebenchError::Spec)?;
        let mut rng = ChaCha8Rng::seed_from_u64(spec.seed);
        let mut data = vec![0u8; spec.iosize.min(16 << 20) as usize];
        rng.fill_bytes(&mut data);
        let mut set = FileSet::lay_out(fs, "bigfileset", spec, spec.nfiles, &mut rng)?;
        set.preallocate(fs, spec.prealloc_pct, spec.iosize, &data, &mut rng)?;
        let log = match spec.personality {
            Personality::Fileserver => None,
            Personality::Webserver => {
                let mut log = FileSet::lay_out(fs, "logfiles", spec, 1, &mut rng)?;
                log.preallocate(fs, 100, spec.iosize, &data, &mut rng)?;
                Some(log)
            }
        };
        Ok(Bench {
            spec: *spec,
            rng,
            data,
            set,
            log,
        })
    }

    /// Runs the flowop list `spec.loops` times; `on_loop` is told each loop done.
    pub fn run(&mut self, fs: &mut Fs, on_loop: &mut dyn FnMut(u64)) -> Result<Report, FilebenchError> {
        let mut r = Report {
            personality: self.spec.personality.name().into(),
            ..Report::default()
        };
        for i in 0..self.spec.loops {
            match self.spec.personality {
                Personality::Fileserver => self.fileserver_loop(fs, &mut r)?,
                Personality::Webserver => self.webserver_loop(fs, &mut r)?,
            }
            r.loops += 1;
            on_loop(i + 1);
        }
        r.files = (self.set.existing() + self.log.as_ref().map_or(0, |l| l.existing())) as u64;
        Ok(r)
    }

    /// createfile, writewholefile, closefile, openfile, appendfilerand,
    /// closefile, openfile, readwholefile, closefile, deletefile, statfile.
    /// A flowop with no entry to act on (no absent entry to create, say) is
    /// skipped, as Filebench's flowop fails and the loop goes on.
    fn fileserver_loop(&mut self, fs: &mut Fs, r: &mut Report) -> Result<(), FilebenchError> {
        if let Some(e) = self.set.take_absent(&mut self.rng) {
            self.set.create(fs, e)?;
            r.op("createfile");
            r.bytes_written += self.set.write_whole(fs, e, self.spec.iosize, &self.data)?;
            r.fsyncs += 1;
            r.op("writewholefile");
            r.op("closefile");
        }
        if let Some(e) = self.set.pick_existing(&mut self.rng) {
            r.op("openfile");
            r.bytes_written += append_rand(fs, &self.set, e, &self.spec, &self.data, &mut self.rng)?;
            r.fsyncs += 1;
            r.op("appendfilerand");
            r.op("closefile");
        }
        if let Some(e) = self.set.pick_existing(&mut self.rng) {
            r.op("openfile");
            r.bytes_read += read_whole(fs, &self.set, e, self.spec.iosize)?;
            r.op("readwholefile");
            r.op("closefile");
        }
        if let Some(e) = self.set.take_existing(&mut self.rng) {
            self.set.delete(fs, e)?;
            r.op("deletefile");
        }
        if let Some(e) = self.set.pick_existing(&mut self.rng) {
            let ino = self.set.ino(fs, e)?;
            fs.size(None, ino)?;
            r.op("statfile");
        }
        Ok(())
    }

    /// Ten times openfile, readwholefile, closefile; appendfilerand to the log.
    fn webserver_loop(&mut self, fs: &mut Fs, r: &mut Report) -> Result<(), FilebenchError> {
        for _ in 0..10 {
            if let Some(e) = self.set.pick_existing(&mut self.rng) {
                r.op("openfile");
                r.bytes_read += read_whole(fs, &self.set, e, self.spec.iosize)?;
                r.op("readwholefile");
                r.op("closefile");
            }
        }
        let log = self.log.as_ref().expect("the webserver has its log file set");
        r.bytes_written += append_rand(fs, log, 0, &self.spec, &self.data, &mut self.rng)?;
        r.fsyncs += 1;
        r.op("appendfilerand");
        Ok(())
    }
}

/// appendfilerand: 1 to `meanappendsize` bytes, uniformly, at the end of
/// entry `e`, then its fsync. Returns the bytes appended.
fn append_rand(fs: &mut Fs, set: &FileSet, e: u32, spec: &Spec, data: &[u8], rng: &mut ChaCha8Rng) -> Result<u64, FilebenchError> {
    let ino = set.ino(fs, e)?;
    let n = rng.gen_range(1..=spec.meanappendsize.min(data.len() as u64));
    let end = fs.size(None, ino)?;
    fs.write(None, ino, end, &data[..n as usize])?;
    fs.fsync(None, ino)?;
    Ok(n)
}

/// readwholefile: the file from offset 0 to its end, `iosize` bytes a call.
fn read_whole(fs: &mut Fs, set: &FileSet, e: u32, iosize: u64) -> Result<u64, FilebenchError> {
    let ino = set.ino(fs, e)?;
    let size = fs.size(None, ino)?;
    let mut buf = vec![0u8; iosize.min(size).max(1) as usize];
    let mut off = 0;
    while off < size {
        let n = fs.read(None, ino, off, &mut buf)?;
        if n == 0 {
            break;
        }
        off += n as u64;
    }
    Ok(off)
}
