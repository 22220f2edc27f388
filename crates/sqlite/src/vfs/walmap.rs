//! The WAL file laid out for a device that remaps (SW-WAL): each frame's
//! page data on its own flash page, so a checkpoint can remap it onto the
//! database page instead of copying it.
//!
//! SQLite's WAL is a 32-byte header, then frames of a 24-byte header and a
//! page: with 4 KiB pages a frame's data starts 56 bytes into a flash page
//! and straddles two (the Base-WAL layout every other device keeps). Here
//! the VFS stores the same bytes in another order in the file system's file
//! (SQLite sees its own layout through `xRead`, `xWrite`, `xFileSize` and
//! `xTruncate`). With `P` the file system's page size, `F = 24 + P` SQLite's
//! frame size and `G = (P - 32) / 24` frames per segment, the file is a run
//! of segments of `1 + G` pages:
//!
//! ```text
//! segment s, at file page s * (1 + G):
//!   page 0:      bytes 0..32: the WAL header (segment 0 only; zero in
//!                the others); bytes 32 + 24 j .. +24: frame s*G + j's header
//!   page 1 + j:  frame s*G + j's page data, j = 0 .. G-1
//! ```
//!
//! The headers are written too (SW-WAL "maintains head information", NoLgn
//! §5.2): about one header page per `G` frames, and its rewrites.
//!
//! The layout is `P`'s whatever page size the database has, so a WAL left by
//! a cut reads back the same way before SQLite has said its page size. Only
//! a database of `P`-byte pages has its frames remapped: with any other page
//! size SQLite's frames straddle the layout's (a 4 KiB database on 8 KiB
//! flash pages) and a checkpoint copies them. Its writes then end anywhere,
//! in the middle of a data page or inside a frame header: the file's length
//! must give SQLite back every byte it wrote ([`WalMap::sqlite_len`]).

use txftl_fs::{Fs, FsError, Ino};

/// SQLite WAL header and frame header sizes (wal.c).
const WAL_HDR: u64 = 32;
const FRAME_HDR: u64 = 24;

/// The layout for a file system page of `page` bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct WalMap {
    page: u64,
    frames_per_segment: u64,
}

/// Where a run of SQLite's bytes lies in the file system's file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Run {
    /// File offset of its first byte.
    pub at: u64,
    /// Bytes of SQLite's file, from the offset asked for, that lie here in a row.
    pub len: u64,
    /// The run is page data of this frame (0-based) from its first byte.
    pub frame_data: Option<u64>,
    /// The run is this frame's header from its first byte.
    pub frame_header: Option<u64>,
}

impl WalMap {
    pub(crate) fn new(page: usize) -> WalMap {
        let page = page as u64;
        WalMap {
            page,
            frames_per_segment: (page - WAL_HDR) / FRAME_HDR,
        }
    }

    fn frame_size(self) -> u64 {
        FRAME_HDR + self.page
    }

    fn segment_base(self, frame: u64) -> u64 {
        frame / self.frames_per_segment * (1 + self.frames_per_segment) * self.page
    }

    /// The file offset of frame `frame`'s header.
    pub(crate) fn header_at(self, frame: u64) -> u64 {
        self.segment_base(frame) + WAL_HDR + FRAME_HDR * (frame % self.frames_per_segment)
    }

    /// The file page holding frame `frame`'s data.
    pub(crate) fn data_page(self, frame: u64) -> u64 {
        self.segment_base(frame) / self.page + 1 + frame % self.frames_per_segment
    }

    /// Where SQLite's byte `off` lies, and how many of the bytes from it lie in a row.
    pub(crate) fn run(self, off: u64) -> Run {
        if off < WAL_HDR {
            return Run {
                at: off,
                len: WAL_HDR - off,
                frame_data: None,
                frame_header: None,
            };
        }
        let (frame, r) = ((off - WAL_HDR) / self.frame_size(), (off - WAL_HDR) % self.frame_size());
        if r < FRAME_HDR {
            Run {
                at: self.header_at(frame) + r,
                len: FRAME_HDR - r,
                frame_data: None,
                frame_header: (r == 0).then_some(frame),
            }
        } else {
            let within = r - FRAME_HDR;
            Run {
                at: self.data_page(frame) * self.page + within,
                len: self.page - within,
                frame_data: (within == 0).then_some(frame),
                frame_header: None,
            }
        }
    }

    /// The file's length holding SQLite's first `len` bytes.
    pub(crate) fn file_len(self, len: u64) -> u64 {
        if len <= WAL_HDR {
            return len;
        }
        let last = self.run(len - 1).at + 1;
        let frame = (len - 1 - WAL_HDR) / self.frame_size();
        // A frame header cut short: the frames before it in its segment
        // have their data after its header page.
        let before = match frame % self.frames_per_segment {
            0 => 0,
            _ => (self.data_page(frame - 1) + 1) * self.page,
        };
        last.max(before)
    }

    /// SQLite's length of a file of `file_len` bytes: the longest SQLite
    /// length whose [`WalMap::file_len`] fits in it, so every byte SQLite
    /// wrote is inside (SQLite appends to its WAL: the file is at least
    /// `file_len` of what it wrote). A frame header lies in its segment's
    /// header page, below the data page before it: a file ending with a
    /// data page holds the next frame's header too, as far as the lengths
    /// tell, and SQLite is told up to 24 bytes more than it wrote (unwritten
    /// or stale bytes, as past the frames of an older WAL generation, which
    /// SQLite's WAL recovery rejects by their checksums). Whole frames of
    /// `P` bytes would not do: a frame of another page size ends inside a
    /// page, and SQLite reads it back (short: `SQLITE_IOERR_SHORT_READ`).
    pub(crate) fn sqlite_len(self, file_len: u64) -> u64 {
        if file_len <= WAL_HDR {
            return file_len;
        }
        let g = self.frames_per_segment;
        let last_page = (file_len - 1) / self.page;
        let in_page = file_len - last_page * self.page;
        let (segment, idx) = (last_page / (1 + g), last_page % (1 + g));
        let len = if idx == 0 {
            // A header page: the segment's first frame's header, as far as
            // it is there (the WAL header first, in segment 0).
            let frame = segment * g;
            WAL_HDR + frame * self.frame_size() + in_page.saturating_sub(WAL_HDR).min(FRAME_HDR)
        } else {
            let frame = segment * g + idx - 1;
            let end = WAL_HDR + frame * self.frame_size() + FRAME_HDR + in_page;
            let next_header_below = in_page == self.page && !(frame + 1).is_multiple_of(g);
            end + if next_header_below { FRAME_HDR } else { 0 }
        };
        debug_assert!(self.file_len(len) <= file_len && self.file_len(len + 1) > file_len);
        len
    }
}

/// The last frame's page data SQLite read from a remapping WAL: a checkpoint
/// writes it to the database page next (wal.c's `walCheckpoint` reads each
/// frame and writes the same bytes), and the VFS then asks the file system
/// to remap it instead.
pub(crate) struct FrameRead {
    pub wal: Ino,
    pub page: u32,
    pub data: Vec<u8>,
}

/// A remapping WAL as one handle writes it: its layout, its database's
/// inode, and what SQLite last wrote of its headers, so a frame's page
/// finds the database page it names without reading the header back (a
/// device read once the header page is synced).
pub(crate) struct WalFile {
    pub map: WalMap,
    db: Option<Ino>,
    /// The page size the WAL header names, once read (forgotten when
    /// SQLite writes the header: a new WAL generation may change it).
    page_size: Option<u64>,
    /// The last frame header SQLite wrote whole: (frame, its page number).
    header: Option<(u64, u32)>,
}

impl WalFile {
    pub(crate) fn new(page: usize, db: Option<Ino>) -> WalFile {
        WalFile {
            map: WalMap::new(page),
            db,
            page_size: None,
            header: None,
        }
    }

    /// The page size the WAL header names (bytes 8..12, big-endian; 1 is 65536).
    fn page_size(&mut self, fs: &mut Fs, ino: Ino) -> Result<u64, FsError> {
        if let Some(p) = self.page_size {
            return Ok(p);
        }
        let mut b = [0u8; 4];
        fs.read(None, ino, 8, &mut b)?;
        let p = match u32::from_be_bytes(b) {
            1 => 65536,
            v => v as u64,
        };
        self.page_size = Some(p);
        Ok(p)
    }

    /// The database page (0-based) frame `frame`'s header names, if the
    /// WAL's pages are the file system's (else no frame can be remapped).
    fn frame_target(&mut self, fs: &mut Fs, ino: Ino, frame: u64) -> Result<Option<u32>, FsError> {
        if self.page_size(fs, ino)? != self.map.page {
            return Ok(None);
        }
        let pgno = match self.header {
            Some((f, pgno)) if f == frame => pgno,
            // A frame's page rewritten in place: its header is on file.
            _ => {
                let mut b = [0u8; 4];
                fs.read(None, ino, self.map.header_at(frame), &mut b)?;
                u32::from_be_bytes(b)
            }
        };
        Ok(pgno.checked_sub(1))
    }

    /// `xWrite`: a frame's whole page data goes as a page naming the
    /// database page its header names.
    pub(crate) fn write(&mut self, fs: &mut Fs, ino: Ino, off: u64, data: &[u8]) -> Result<(), FsError> {
        let mut done = 0;
        while done < data.len() {
            let r = self.map.run(off + done as u64);
            let take = (r.len as usize).min(data.len() - done);
            let part = &data[done..done + take];
            if off + (done as u64) < WAL_HDR {
                self.page_size = None;
            }
            if let (Some(frame), true) = (r.frame_header, take as u64 == FRAME_HDR) {
                self.header = Some((frame, u32::from_be_bytes(part[0..4].try_into().expect("4"))));
            }
            let target = match (r.frame_data, self.db, take as u64 == self.map.page) {
                (Some(frame), Some(db), true) => self.frame_target(fs, ino, frame)?.map(|t| (frame, db, t)),
                _ => None,
            };
            match target {
                Some((frame, db, t)) => fs.write_for(ino, self.map.data_page(frame) as u32, part, (db, t))?,
                None => fs.write(None, ino, r.at, part)?,
            }
            done += take;
        }
        Ok(())
    }
}

/// `xRead` of a remapping WAL: `out` from SQLite's offset `off`. Returns
/// false for a short read (the rest zeroed).
pub(crate) fn read(
    fs: &mut Fs,
    map: WalMap,
    ino: Ino,
    off: u64,
    out: &mut [u8],
    frames: &std::sync::Mutex<Option<FrameRead>>,
) -> Result<bool, FsError> {
    let size = map.sqlite_len(fs.size(None, ino)?);
    let n = (out.len() as u64).min(size.saturating_sub(off)) as usize;
    let mut done = 0;
    while done < n {
        let r = map.run(off + done as u64);
        let take = (r.len as usize).min(n - done);
        let got = fs.read(None, ino, r.at, &mut out[done..done + take])?;
        out[done + got..done + take].fill(0);
        if let (Some(frame), true) = (r.frame_data, take as u64 == map.page) {
            if let Ok(mut last) = frames.lock() {
                *last = Some(FrameRead {
                    wal: ino,
                    page: map.data_page(frame) as u32,
                    data: out[done..done + take].to_vec(),
                });
            }
        }
        done += take;
    }
    out[n..].fill(0);
    Ok(n == out.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every SQLite byte has one place, no two share one, a frame's data is
    /// one whole page, and the lengths invert at frame boundaries.
    #[test]
    fn the_layout_is_a_bijection_with_page_aligned_frame_data() {
        for page in [512usize, 4096] {
            let m = WalMap::new(page);
            let frames = 2 * m.frames_per_segment + 3;
            let total = WAL_HDR + frames * m.frame_size();
            let mut seen = std::collections::BTreeSet::new();
            let mut off = 0;
            while off < total {
                let r = m.run(off);
                assert!(r.len > 0);
                for b in 0..r.len {
                    assert!(seen.insert(r.at + b), "page {page}: file byte {} twice", r.at + b);
                }
                if let Some(f) = r.frame_data {
                    assert_eq!((r.at % page as u64, r.len), (0, page as u64));
                    assert_eq!(r.at / page as u64, m.data_page(f));
                }
                off += r.len;
            }
            // SQLite's length back from the file's: never short, at most the
            // next frame's header long, at every length (frame boundaries of
            // another page size are anywhere).
            for len in 0..total {
                let back = m.sqlite_len(m.file_len(len));
                assert!(
                    back >= len && back <= len + FRAME_HDR,
                    "page {page}: {len} bytes read back as {back}"
                );
            }
            // Whole frames of the layout's page size: the next frame's header
            // is below the last data page (at a segment's end it is not).
            let boundary = WAL_HDR + 5 * m.frame_size();
            assert_eq!(m.sqlite_len(m.file_len(boundary)), boundary + FRAME_HDR);
            let segment_end = WAL_HDR + m.frames_per_segment * m.frame_size();
            assert_eq!(m.sqlite_len(m.file_len(segment_end)), segment_end);
            assert_eq!(m.sqlite_len(m.file_len(20)), 20);
        }
    }

    /// SQLite's frames of half, the same and twice the layout's page size,
    /// appended one write at a time (a header, then the page): after each,
    /// the file's length reads back every byte written, and the bytes read
    /// back are the bytes written.
    #[test]
    fn frames_of_any_page_size_read_back_whole() {
        let page = 512u64;
        let m = WalMap::new(page as usize);
        for db_page in [page / 2, page, 2 * page] {
            let (mut file, mut sqlite) = (Vec::<u8>::new(), Vec::<u8>::new());
            let writes = std::iter::once(WAL_HDR).chain((0..3 * m.frames_per_segment).flat_map(|_| [FRAME_HDR, db_page]));
            for n in writes {
                let start = sqlite.len() as u64;
                for off in start..start + n {
                    let b = (off % 251) as u8 + 1;
                    let at = m.run(off).at as usize;
                    if at >= file.len() {
                        file.resize(at + 1, 0);
                    }
                    file[at] = b;
                    sqlite.push(b);
                }
                let back = m.sqlite_len(file.len() as u64);
                assert!(
                    back >= sqlite.len() as u64,
                    "{db_page}-byte pages: {} bytes written, {back} read back",
                    sqlite.len()
                );
                let read: Vec<u8> = (0..sqlite.len() as u64).map(|o| file[m.run(o).at as usize]).collect();
                assert_eq!(read, sqlite, "{db_page}-byte pages");
            }
        }
    }
}
