//! The image lock: one open of an image at a time.
//!
//! Two processes writing one image through their own in-memory copies of the
//! array corrupt it (each writes through what it believes the flash holds), and
//! so does a reader that mounts through recovery while another process writes.
//! So every open of an image (`create` and `open`) takes an exclusive `flock(2)`
//! on the image file, without waiting, and holds it as long as the file is open
//! (for the life of the [`Nand`](crate::Nand)).
//!
//! Why `flock` and not `fcntl` record locks: a `flock` belongs to the open file
//! description, so two opens inside one process conflict too (the loadable SQLite
//! extension and a test open images in-process), and closing some other
//! descriptor of the file does not drop it, as it would a POSIX record lock.
//! A `flock` does not tell who holds it, so the holder writes its pid and command
//! line to a sidecar file `<image>.lock` once it has the lock, and removes it
//! before closing the image. A refused opener reads the sidecar to name the
//! holder. The sidecar is informative only: the lock is the truth, so a stale
//! sidecar (a holder killed before removing it) never blocks anyone and is
//! overwritten by the next holder. If the sidecar cannot be written (a read-only
//! directory) the lock still holds and the error says "another process".

use crate::error::{Holder, ImageError};
use std::ffi::OsString;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The sidecar of a held lock; removed when dropped. The lock itself is
/// released when the image file closes, so an `ImageFile` drops this first.
pub(crate) struct HeldLock {
    sidecar: PathBuf,
    wrote_sidecar: bool,
}

fn sidecar_of(image: &Path) -> PathBuf {
    let mut name = OsString::from(image.as_os_str());
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the exclusive lock on `file` (the open image at `path`) or says who has it.
pub(crate) fn lock(file: &File, path: &Path) -> Result<HeldLock, ImageError> {
    // SAFETY: flock on a descriptor this `File` owns; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    let sidecar = sidecar_of(path);
    if rc != 0 {
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(ImageError::InUse {
                path: path.to_path_buf(),
                holder: read_holder(&sidecar),
            });
        }
        return Err(ImageError::Io(err));
    }
    let record = format!("pid {}\ncommand {}\n", std::process::id(), command_line());
    let wrote_sidecar = std::fs::write(&sidecar, record).is_ok();
    Ok(HeldLock { sidecar, wrote_sidecar })
}

impl Drop for HeldLock {
    fn drop(&mut self) {
        if self.wrote_sidecar {
            let _ = std::fs::remove_file(&self.sidecar);
        }
    }
}

/// This process's command line, shortened for an error message.
fn command_line() -> String {
    let line = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join(" ");
    const MAX: usize = 200;
    match line.char_indices().nth(MAX) {
        Some((at, _)) => format!("{} ...", &line[..at]),
        None => line,
    }
}

fn read_holder(sidecar: &Path) -> Option<Holder> {
    let text = std::fs::read_to_string(sidecar).ok()?;
    let mut pid = None;
    let mut command = String::new();
    for line in text.lines() {
        if let Some(p) = line.strip_prefix("pid ") {
            pid = p.trim().parse().ok();
        } else if let Some(c) = line.strip_prefix("command ") {
            command = c.to_string();
        }
    }
    Some(Holder { pid: pid?, command })
}
