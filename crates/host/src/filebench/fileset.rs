//! A Filebench file set on the file system: `nfiles` entries, each with a
//! size drawn once from the gamma distribution, in a tree of directories
//! of `meandirwidth` entries; which entries exist now.

use super::spec::Spec;
use super::FilebenchError;
use rand::Rng;
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Gamma};
use txftl_fs::{FileClass, Fs};

/// The file set's entries and which of them exist.
pub struct FileSet {
    /// Where the set lives (a directory under the root).
    pub root: String,
    /// Each entry's path and size in bytes.
    pub entries: Vec<(String, u64)>,
    /// Entries that exist / that do not, for uniform draws of either.
    existing: Vec<u32>,
    absent: Vec<u32>,
}

impl FileSet {
    /// Lays out `nfiles` entries under `/root` (directories made now, no file
    /// yet). Leaf directories hold `meandirwidth` entries; directories above
    /// them as many leaf directories, as deep as needed.
    pub fn lay_out(fs: &mut Fs, root: &str, spec: &Spec, nfiles: u32, rng: &mut ChaCha8Rng) -> Result<FileSet, FilebenchError> {
        let gamma = Gamma::new(spec.filesize_gamma, spec.filesize_mean as f64 / spec.filesize_gamma)
            .map_err(|e| FilebenchError::Spec(format!("file size distribution: {e}")))?;
        let width = spec.meandirwidth;
        let leaves = nfiles.div_ceil(width);
        let mut depth = 1u32;
        while (width as u64).pow(depth) < leaves as u64 {
            depth += 1;
        }
        fs.mkdir(root)?;
        let mut made = std::collections::BTreeSet::new();
        let mut entries = Vec::with_capacity(nfiles as usize);
        for i in 0..nfiles {
            let leaf = i / width;
            // The leaf's path: its index in base `width`, one directory a digit.
            let mut dir = root.to_string();
            for level in (0..depth).rev() {
                let digit = (leaf / width.pow(level)) % width;
                dir = format!("{dir}/d{digit}");
                if made.insert(dir.clone()) {
                    fs.mkdir(&dir)?;
                }
            }
            let size = (gamma.sample(rng).round() as u64).max(1);
            entries.push((format!("{dir}/f{}", i % width), size));
        }
        Ok(FileSet {
            root: root.into(),
            existing: Vec::new(),
            absent: (0..nfiles).collect(),
            entries,
        })
    }

    /// Creates `pct`% of the entries, drawn at random, with their data
    /// (written in `iosize` calls, fsynced): Filebench's `prealloc`.
    pub fn preallocate(&mut self, fs: &mut Fs, pct: u32, iosize: u64, data: &[u8], rng: &mut ChaCha8Rng) -> Result<(), FilebenchError> {
        let n = (self.entries.len() as u64 * pct as u64).div_ceil(100);
        for _ in 0..n {
            let e = self.take_absent(rng).expect("fewer preallocated entries than entries");
            self.create(fs, e)?;
            self.write_whole(fs, e, iosize, data)?;
        }
        Ok(())
    }

    pub fn existing(&self) -> usize {
        self.existing.len()
    }

    fn take(list: &mut Vec<u32>, rng: &mut ChaCha8Rng) -> Option<u32> {
        if list.is_empty() {
            return None;
        }
        let i = rng.gen_range(0..list.len());
        Some(list.swap_remove(i))
    }

    /// An entry that does not exist, taken out of the absent ones (the caller creates it).
    pub fn take_absent(&mut self, rng: &mut ChaCha8Rng) -> Option<u32> {
        FileSet::take(&mut self.absent, rng)
    }

    /// An entry that exists, taken out of the existing ones (the caller deletes it).
    pub fn take_existing(&mut self, rng: &mut ChaCha8Rng) -> Option<u32> {
        FileSet::take(&mut self.existing, rng)
    }

    /// An entry that exists, left in place.
    pub fn pick_existing(&self, rng: &mut ChaCha8Rng) -> Option<u32> {
        (!self.existing.is_empty()).then(|| self.existing[rng.gen_range(0..self.existing.len())])
    }

    /// Creates entry `e` (durable when this returns, as every namespace change).
    pub fn create(&mut self, fs: &mut Fs, e: u32) -> Result<u32, FilebenchError> {
        let ino = fs.create(&self.entries[e as usize].0, FileClass::Other)?;
        self.existing.push(e);
        Ok(ino)
    }

    /// Deletes entry `e` (taken out of the existing ones by [`FileSet::take_existing`]).
    pub fn delete(&mut self, fs: &mut Fs, e: u32) -> Result<(), FilebenchError> {
        fs.delete(&self.entries[e as usize].0)?;
        self.absent.push(e);
        Ok(())
    }

    pub fn ino(&self, fs: &Fs, e: u32) -> Result<u32, FilebenchError> {
        let path = &self.entries[e as usize].0;
        fs.lookup(path).ok_or_else(|| FilebenchError::Lost(path.clone()))
    }

    /// writewholefile: the entry's size from offset 0, `iosize` bytes a call,
    /// then an fsync (this run's one durability point per written file).
    /// Returns the bytes written.
    pub fn write_whole(&self, fs: &mut Fs, e: u32, iosize: u64, data: &[u8]) -> Result<u64, FilebenchError> {
        let ino = self.ino(fs, e)?;
        let size = self.entries[e as usize].1;
        let mut off = 0;
        while off < size {
            let n = iosize.min(size - off).min(data.len() as u64);
            fs.write(None, ino, off, &data[..n as usize])?;
            off += n;
        }
        fs.fsync(None, ino)?;
        Ok(size)
    }
}
