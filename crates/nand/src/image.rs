//! The file-image backend: a NAND array that survives the process.
//!
//! The in-memory arrays of [`Nand`](crate::Nand) stay authoritative; every
//! mutating operation is written through to the file, and opening an image
//! loads it back. Layout, all integers little-endian:
//!
//! ```text
//! offset 0, 512 bytes: header
//!     0  [u8; 8]  magic "TXFTLIMG"
//!     8  u32      format version (2)
//!    12  u32      header size (512)
//!    16  u32 x 7  channels, dies_per_channel, planes_per_die, blocks_per_plane,
//!                 pages_per_block, page_size, oob_size
//!    44  u8       cell type (1 SLC, 2 MLC, 3 TLC)
//!    45  u8       NOP
//!    46  u16      reserved (0)
//!    48  u32      endurance (erase cycles)
//!    52  u32      reserved (0)
//!    56  u64 x 5  read_ns, program_ns, partial_program_ns, erase_ns, transfer_ns_per_kib
//!    96  ..508    zero
//!   508  u32      CRC-32 (IEEE) of bytes 0..508
//! offset 512: block table, 8 bytes per block
//!     u32 erase count, u8 flags (bit 0: bad), u8 reserved (0),
//!     u16 check: the low 16 bits of CRC-32(bytes 0..6) XOR CRC-32(six zero
//!         bytes), so a never-written record (all zeros) checks out; a flipped
//!         byte in an erase count is a typed error, not a block that looks worn
//!     (version 1 had no check and is refused)
//! then: page-state table, 1 byte per page: programs since the last erase (0 = erased)
//! then, from the next 4 KiB boundary: one record per page, OOB then data,
//!     stored bitwise inverted so that a file hole (zeros) reads as erased flash (0xFF).
//! ```
//!
//! The file length must match the header exactly; anything else is a foreign or
//! truncated image and is refused.
//!
//! Locking: an image is open in one place at a time (see `image/lock.rs`).
//!
//! Durability on the host ([`ImageSync`]): writes go to the host's page cache;
//! when they reach its disk is chosen per open image. A host crash (not a
//! simulated power cut) loses what was not yet synced.

mod lock;

use crate::array::{DataMode, NandConfig, ViolationPolicy};
use crate::error::ImageError;
use crate::geometry::{BlockId, CellType, Geometry, Ppn};
use crate::memory;
use crate::timing::Timing;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// The check of a block record (see the layout): all zeros for a record never written.
fn block_check(rec: &[u8]) -> u16 {
    (crc32fast::hash(&rec[..6]) ^ crc32fast::hash(&[0u8; 6])) as u16
}

pub const IMAGE_MAGIC: &[u8; 8] = b"TXFTLIMG";
pub const IMAGE_VERSION: u32 = 2;
const HEADER_SIZE: u64 = 512;
const BLOCK_RECORD: u64 = 8;

/// When the image file is synced (`fdatasync`) to the host's disk.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ImageSync {
    /// Only when the device is closed cleanly (the FTL's `close`). Fastest; a
    /// host crash can lose everything since the image was opened.
    #[default]
    Close,
    /// Also at every device flush and commit: whoever issues them calls
    /// [`Nand::flush_image`](crate::Nand::flush_image).
    Flush,
    /// After every program, partial program and erase: the file always holds
    /// every completed flash operation.
    Always,
}

impl ImageSync {
    pub const NAMES: [&'static str; 3] = ["close", "flush", "always"];

    pub fn parse(s: &str) -> Option<ImageSync> {
        match s {
            "close" => Some(ImageSync::Close),
            "flush" => Some(ImageSync::Flush),
            "always" => Some(ImageSync::Always),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ImageSync::Close => "close",
            ImageSync::Flush => "flush",
            ImageSync::Always => "always",
        }
    }
}

pub(crate) struct ImageFile {
    // Dropped before `file`: the sidecar naming the holder goes before the
    // lock is released by closing the file.
    _lock: lock::HeldLock,
    file: File,
    geo: Geometry,
    page_table_at: u64,
    pages_at: u64,
    scratch: Vec<u8>,
    sync: ImageSync,
    syncs: AtomicU64,
}

/// What an image holds, loaded into memory.
pub(crate) struct Loaded {
    pub geometry: Geometry,
    pub timing: Timing,
    pub endurance: u32,
    pub erase_counts: Vec<u32>,
    pub bad: Vec<bool>,
    pub programs: Vec<u8>,
    pub oob: Vec<u8>,
    pub data: Vec<u8>,
}

fn layout(geo: &Geometry) -> (u64, u64, u64) {
    let page_table_at = HEADER_SIZE + geo.block_count() as u64 * BLOCK_RECORD;
    let pages_at = (page_table_at + geo.page_count() as u64).div_ceil(4096) * 4096;
    let total = pages_at + geo.page_count() as u64 * (geo.oob_size + geo.page_size) as u64;
    (page_table_at, pages_at, total)
}

fn encode_header(geo: &Geometry, timing: &Timing, endurance: u32) -> [u8; HEADER_SIZE as usize] {
    let mut h = [0u8; HEADER_SIZE as usize];
    h[0..8].copy_from_slice(IMAGE_MAGIC);
    h[8..12].copy_from_slice(&IMAGE_VERSION.to_le_bytes());
    h[12..16].copy_from_slice(&(HEADER_SIZE as u32).to_le_bytes());
    let fields = [
        geo.channels,
        geo.dies_per_channel,
        geo.planes_per_die,
        geo.blocks_per_plane,
        geo.pages_per_block,
        geo.page_size,
        geo.oob_size,
    ];
    for (i, v) in fields.iter().enumerate() {
        h[16 + 4 * i..20 + 4 * i].copy_from_slice(&v.to_le_bytes());
    }
    h[44] = geo.cell.code();
    h[45] = geo.nop;
    h[48..52].copy_from_slice(&endurance.to_le_bytes());
    let times = [
        timing.read_ns,
        timing.program_ns,
        timing.partial_program_ns,
        timing.erase_ns,
        timing.transfer_ns_per_kib,
    ];
    for (i, v) in times.iter().enumerate() {
        h[56 + 8 * i..64 + 8 * i].copy_from_slice(&v.to_le_bytes());
    }
    let crc = crc32fast::hash(&h[..508]);
    h[508..512].copy_from_slice(&crc.to_le_bytes());
    h
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn decode_header(h: &[u8]) -> Result<(Geometry, Timing, u32), ImageError> {
    if &h[0..8] != IMAGE_MAGIC {
        return Err(ImageError::BadMagic);
    }
    let version = u32_at(h, 8);
    if version != IMAGE_VERSION {
        return Err(ImageError::UnsupportedVersion(version));
    }
    if crc32fast::hash(&h[..508]) != u32_at(h, 508) {
        return Err(ImageError::HeaderChecksum);
    }
    let cell = CellType::from_code(h[44]).ok_or_else(|| ImageError::Header(format!("unknown cell type code {}", h[44])))?;
    let geo = Geometry {
        channels: u32_at(h, 16),
        dies_per_channel: u32_at(h, 20),
        planes_per_die: u32_at(h, 24),
        blocks_per_plane: u32_at(h, 28),
        pages_per_block: u32_at(h, 32),
        page_size: u32_at(h, 36),
        oob_size: u32_at(h, 40),
        cell,
        nop: h[45],
    };
    geo.validate()?;
    let timing = Timing {
        read_ns: u64_at(h, 56),
        program_ns: u64_at(h, 64),
        partial_program_ns: u64_at(h, 72),
        erase_ns: u64_at(h, 80),
        transfer_ns_per_kib: u64_at(h, 88),
    };
    if let Some(why) = timing.out_of_range() {
        return Err(ImageError::Header(format!("timing: {why}")));
    }
    Ok((geo, timing, u32_at(h, 48)))
}

fn invert(buf: &mut [u8]) {
    buf.iter_mut().for_each(|b| *b = !*b);
}

impl ImageFile {
    /// Creates a new image of an erased array. Refuses to overwrite an existing file.
    pub(crate) fn create(path: &Path, geo: &Geometry, timing: &Timing, endurance: u32) -> Result<ImageFile, ImageError> {
        let file = OpenOptions::new().read(true).write(true).create_new(true).open(path)?;
        let lock = lock::lock(&file, path)?;
        let (page_table_at, pages_at, total) = layout(geo);
        let written = file
            .write_all_at(&encode_header(geo, timing, endurance), 0)
            // Everything after the header starts as zeros: erase count 0, not bad,
            // page state 0 (erased), and inverted 0xFF (erased) page contents.
            .and_then(|()| file.set_len(total));
        if let Err(e) = written {
            // A half-created image would only be refused later as truncated.
            let _ = std::fs::remove_file(path);
            return Err(e.into());
        }
        Ok(ImageFile::new(lock, file, *geo, page_table_at, pages_at))
    }

    fn new(lock: lock::HeldLock, file: File, geo: Geometry, page_table_at: u64, pages_at: u64) -> ImageFile {
        ImageFile {
            _lock: lock,
            file,
            geo,
            page_table_at,
            pages_at,
            scratch: Vec::new(),
            sync: ImageSync::default(),
            syncs: AtomicU64::new(0),
        }
    }

    /// Opens an existing image and loads it.
    pub(crate) fn open(path: &Path) -> Result<(ImageFile, Loaded), ImageError> {
        let file = OpenOptions::new().read(true).write(true).open(path)?;
        let lock = lock::lock(&file, path)?;
        let actual = file.metadata()?.len();
        if actual < HEADER_SIZE {
            return Err(ImageError::BadMagic);
        }
        let mut h = [0u8; HEADER_SIZE as usize];
        file.read_exact_at(&mut h, 0)?;
        let (geo, timing, endurance) = decode_header(&h)?;
        let (page_table_at, pages_at, total) = layout(&geo);
        if actual != total {
            return Err(ImageError::Length { expected: total, actual });
        }
        let blocks = geo.block_count() as usize;
        let pages = geo.page_count() as usize;
        let (oob_size, page_size) = (geo.oob_size as usize, geo.page_size as usize);
        // Read in chunks of whole pages to bound the temporary buffer.
        let record = oob_size + page_size;
        let chunk_pages = (8 << 20) / record + 1;
        let cfg = NandConfig {
            geometry: geo,
            timing,
            endurance,
            data_mode: DataMode::Full,
            violation_policy: ViolationPolicy::Error,
        };
        let need = memory::needed(&cfg) + (chunk_pages * record + blocks * BLOCK_RECORD as usize) as u64;
        memory::check(need)?;
        let mut table = memory::filled(blocks * BLOCK_RECORD as usize, 0u8, need)?;
        file.read_exact_at(&mut table, HEADER_SIZE)?;
        if let Some(b) = table
            .chunks_exact(8)
            .position(|r| u16::from_le_bytes([r[6], r[7]]) != block_check(r))
        {
            return Err(ImageError::BlockTable(b as BlockId));
        }
        let erase_counts = table.chunks_exact(8).map(|r| u32_at(r, 0)).collect();
        let bad = table.chunks_exact(8).map(|r| r[4] & 1 == 1).collect();
        let mut programs = memory::filled(pages, 0u8, need)?;
        file.read_exact_at(&mut programs, page_table_at)?;
        if let Some(p) = programs.iter().position(|&n| n > geo.nop.max(1)) {
            return Err(ImageError::PageTable(p as Ppn));
        }
        let mut oob = memory::filled(pages * oob_size, 0u8, need)?;
        let mut data = memory::filled(pages * page_size, 0u8, need)?;
        let mut buf = memory::filled(chunk_pages * record, 0u8, need)?;
        let mut first = 0usize;
        while first < pages {
            let n = chunk_pages.min(pages - first);
            let bytes = &mut buf[..n * record];
            file.read_exact_at(bytes, pages_at + (first * record) as u64)?;
            invert(bytes);
            for (i, rec) in bytes.chunks_exact(record).enumerate() {
                let p = first + i;
                oob[p * oob_size..(p + 1) * oob_size].copy_from_slice(&rec[..oob_size]);
                data[p * page_size..(p + 1) * page_size].copy_from_slice(&rec[oob_size..]);
            }
            first += n;
        }
        let loaded = Loaded {
            geometry: geo,
            timing,
            endurance,
            erase_counts,
            bad,
            programs,
            oob,
            data,
        };
        Ok((ImageFile::new(lock, file, geo, page_table_at, pages_at), loaded))
    }

    fn record_at(&self, ppn: Ppn) -> u64 {
        self.pages_at + ppn as u64 * (self.geo.oob_size + self.geo.page_size) as u64
    }

    /// Writes one page's state, OOB and data through to the file.
    pub(crate) fn write_page(&mut self, ppn: Ppn, programs: u8, oob: &[u8], data: &[u8]) -> Result<(), ImageError> {
        self.file.write_all_at(&[programs], self.page_table_at + ppn as u64)?;
        self.scratch.clear();
        self.scratch.extend_from_slice(oob);
        self.scratch.extend_from_slice(data);
        invert(&mut self.scratch);
        self.file.write_all_at(&self.scratch, self.record_at(ppn))?;
        Ok(())
    }

    pub(crate) fn write_block(&mut self, block: BlockId, erase_count: u32, bad: bool) -> Result<(), ImageError> {
        let mut rec = [0u8; BLOCK_RECORD as usize];
        rec[0..4].copy_from_slice(&erase_count.to_le_bytes());
        rec[4] = bad as u8;
        let check = block_check(&rec);
        rec[6..8].copy_from_slice(&check.to_le_bytes());
        self.file.write_all_at(&rec, HEADER_SIZE + block as u64 * BLOCK_RECORD)?;
        Ok(())
    }

    /// Syncs the file to the host's disk, whatever the mode (a clean close).
    pub(crate) fn sync(&self) -> Result<(), ImageError> {
        self.file.sync_data()?;
        self.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub(crate) fn set_sync(&mut self, mode: ImageSync) {
        self.sync = mode;
    }

    pub(crate) fn sync_mode(&self) -> ImageSync {
        self.sync
    }

    /// Syncs done so far (for tests and reports).
    pub(crate) fn syncs(&self) -> u64 {
        self.syncs.load(Ordering::Relaxed)
    }

    /// A program or erase has been written through: sync it in `Always` mode.
    pub(crate) fn op_done(&self) -> Result<(), ImageError> {
        match self.sync {
            ImageSync::Always => self.sync(),
            ImageSync::Close | ImageSync::Flush => Ok(()),
        }
    }

    /// The device flushed or committed: sync in `Flush` mode (in `Always` mode
    /// every operation is on disk already).
    pub(crate) fn flush_point(&self) -> Result<(), ImageError> {
        match self.sync {
            ImageSync::Flush => self.sync(),
            ImageSync::Close | ImageSync::Always => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trips_and_detects_corruption() {
        let p = crate::preset("tiny").unwrap();
        let mut h = encode_header(&p.geometry, &p.timing, p.endurance);
        let (g, t, e) = decode_header(&h).unwrap();
        assert_eq!((g, t, e), (p.geometry, p.timing, p.endurance));
        h[20] ^= 1;
        assert!(matches!(decode_header(&h), Err(ImageError::HeaderChecksum)));
        h[0] = b'X';
        assert!(matches!(decode_header(&h), Err(ImageError::BadMagic)));
    }

    /// A header whose checksum is intact but whose values no image has (a
    /// hand-edited or foreign file) is refused, naming the field.
    #[test]
    fn header_values_out_of_range_are_refused_by_name() {
        let p = crate::preset("tiny").unwrap();
        let reseal = |h: &mut [u8]| {
            let crc = crc32fast::hash(&h[..508]);
            h[508..512].copy_from_slice(&crc.to_le_bytes());
        };
        let mut h = encode_header(&p.geometry, &p.timing, p.endurance);
        h[44] = 0xEE;
        reseal(&mut h);
        let e = decode_header(&h).unwrap_err();
        assert!(matches!(&e, ImageError::Header(m) if m.contains("cell type code 238")), "{e}");
        let mut h = encode_header(&p.geometry, &p.timing, p.endurance);
        h[80..88].copy_from_slice(&u64::MAX.to_le_bytes()); // erase_ns
        reseal(&mut h);
        let e = decode_header(&h).unwrap_err();
        assert!(matches!(&e, ImageError::Header(m) if m.contains("erase_ns")), "{e}");
        let mut h = encode_header(&p.geometry, &p.timing, p.endurance);
        h[8..12].copy_from_slice(&99u32.to_le_bytes());
        reseal(&mut h);
        let e = decode_header(&h).unwrap_err();
        assert!(
            e.to_string().contains("version 99") && e.to_string().contains(&format!("version {IMAGE_VERSION}")),
            "{e}"
        );
    }

    fn tiny_cfg() -> NandConfig {
        crate::preset("tiny").unwrap().config(DataMode::Full, ViolationPolicy::Error)
    }

    fn page(n: &crate::Nand, fill: u8) -> (Vec<u8>, Vec<u8>) {
        let g = n.geometry();
        (vec![fill; g.page_size as usize], vec![fill; g.oob_size as usize])
    }

    /// A flipped byte in a block's erase count used to make the block look worn
    /// out ("metadata area worn out" later); now the open says what is wrong.
    #[test]
    fn a_flipped_erase_count_in_the_block_table_is_a_typed_error() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let mut n = crate::Nand::create_image(&path, tiny_cfg()).unwrap();
        n.erase(3, 0).unwrap();
        n.erase(3, 0).unwrap();
        drop(n);
        // Untouched records (all zeros) and written ones both check out.
        let n = crate::Nand::open_image(&path, ViolationPolicy::Error).unwrap();
        assert_eq!(n.inspect_erase_count(3), 2);
        drop(n);
        let at = HEADER_SIZE + 3 * BLOCK_RECORD + 3; // the erase count's high byte
        let file = OpenOptions::new().read(true).write(true).open(&path).unwrap();
        let mut b = [0u8; 1];
        file.read_exact_at(&mut b, at).unwrap();
        file.write_all_at(&[b[0] ^ 0x40], at).unwrap();
        drop(file);
        match crate::Nand::open_image(&path, ViolationPolicy::Error) {
            Err(ImageError::BlockTable(3)) => {}
            other => panic!("expected a block-table error at block 3, got {:?}", other.map(|_| ())),
        }
    }

    #[test]
    fn a_second_open_is_refused_naming_the_holder_until_the_first_closes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let first = crate::Nand::create_image(&path, tiny_cfg()).unwrap();
        let e = crate::Nand::open_image(&path, ViolationPolicy::Error)
            .err()
            .expect("refused while held");
        let ImageError::InUse { holder: Some(holder), .. } = &e else {
            panic!("not InUse with a holder: {e}");
        };
        assert_eq!(holder.pid, std::process::id());
        let msg = e.to_string();
        assert!(
            msg.contains(&format!("dev.img is in use by process {}", std::process::id())),
            "{msg}"
        );
        drop(first);
        assert!(!dir.path().join("dev.img.lock").exists(), "the holder record goes with the lock");
        let second = crate::Nand::open_image(&path, ViolationPolicy::Error).unwrap();
        assert!(crate::Nand::open_image(&path, ViolationPolicy::Error).is_err());
        drop(second);
        // A stale record (its holder was killed) never blocks an open.
        std::fs::write(dir.path().join("dev.img.lock"), "pid 1\ncommand gone\n").unwrap();
        crate::Nand::open_image(&path, ViolationPolicy::Error).unwrap();
    }

    #[test]
    fn sync_modes_sync_at_their_points() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.img");
        let mut n = crate::Nand::create_image(&path, tiny_cfg()).unwrap();
        let (d, o) = page(&n, 0x11);
        assert_eq!(n.image_sync(), Some(ImageSync::Close));
        n.program(0, 0, &d, &o).unwrap();
        n.flush_image().unwrap();
        assert_eq!(n.image_syncs(), 0, "close mode: nothing before close");
        n.set_image_sync(ImageSync::Flush);
        n.program(1, 0, &d, &o).unwrap();
        assert_eq!(n.image_syncs(), 0);
        n.flush_image().unwrap();
        assert_eq!(n.image_syncs(), 1, "flush mode: at the flush");
        n.set_image_sync(ImageSync::Always);
        n.program(2, 0, &d, &o).unwrap();
        n.erase(1, 0).unwrap();
        assert_eq!(n.image_syncs(), 3, "always mode: after each program and erase");
        n.sync_image().unwrap();
        assert_eq!(n.image_syncs(), 4, "a close syncs in every mode");
        assert_eq!(ImageSync::parse("flush"), Some(ImageSync::Flush));
        assert_eq!(ImageSync::parse("sometimes"), None);
    }

    #[test]
    fn a_device_too_large_for_memory_is_refused_before_any_file_exists() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("huge.img");
        let mut cfg = tiny_cfg();
        // 2^30 pages of 64 KiB: 64 TiB, beyond any machine this runs on.
        cfg.geometry.page_size = 64 << 10;
        cfg.geometry.blocks_per_plane = 1 << 24;
        cfg.geometry.pages_per_block = 64;
        cfg.geometry.channels = 1;
        cfg.geometry.dies_per_channel = 1;
        cfg.geometry.planes_per_die = 1;
        let e = crate::Nand::create_image(&path, cfg).err().expect("refused");
        assert!(matches!(e, ImageError::Memory(_)), "{e}");
        assert!(e.to_string().contains("GiB"), "{e}");
        assert!(!path.exists());
        let e = crate::Nand::try_new(cfg).err().expect("refused");
        assert!(matches!(e, crate::NandError::Memory(_)), "{e}");
    }
}
