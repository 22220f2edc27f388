use crate::geometry::{BlockId, GeometryError, Ppn};
use std::path::PathBuf;

/// A broken rule of the NAND physics. Always an FTL bug: with the default
/// [`ViolationPolicy::Panic`](crate::ViolationPolicy) the model panics on the spot so the
/// bug shows where it happens, not as corrupt data later.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    #[error("program of page {ppn}, which is not erased (programmed {programs} time(s) since erase)")]
    ProgramNotErased { ppn: Ppn, programs: u8 },
    #[error("out-of-order program of page {ppn} on MLC/TLC: the block's next page is index {expected}")]
    OutOfOrder { ppn: Ppn, expected: u32 },
    #[error("partial program of page {ppn} on a cell type without partial programming")]
    PartialOnMultiLevel { ppn: Ppn },
    #[error("partial program of page {ppn} past NOP {nop}")]
    NopExceeded { ppn: Ppn, nop: u8 },
    #[error("partial program of page {ppn} sets a bit from 0 to 1 at byte {byte}")]
    BitSet { ppn: Ppn, byte: usize },
    #[error("page {ppn} is out of range ({page_count} pages)")]
    PageOutOfRange { ppn: Ppn, page_count: u32 },
    #[error("block {block} is out of range ({block_count} blocks)")]
    BlockOutOfRange { block: BlockId, block_count: u32 },
    #[error("buffer of {got} bytes where {want} were expected ({what})")]
    BufferSize { what: &'static str, got: usize, want: usize },
}

/// Why an image file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ImageError {
    #[error("image I/O error: {0}")]
    Io(#[from] std::io::Error),
    #[error("not a txftl image (bad magic)")]
    BadMagic,
    #[error("image format version {0} is not supported (this build reads version {v})", v = crate::image::IMAGE_VERSION)]
    UnsupportedVersion(u32),
    /// A header field with an intact checksum but a value no image has.
    #[error("image header: {0}")]
    Header(String),
    #[error("image header checksum mismatch: the header is corrupted")]
    HeaderChecksum,
    #[error("image geometry is invalid: {0}")]
    Geometry(#[from] GeometryError),
    #[error("image is {actual} bytes but its header describes {expected} bytes: truncated or foreign")]
    Length { expected: u64, actual: u64 },
    #[error("image page-state table is corrupted at page {0}")]
    PageTable(Ppn),
    #[error("image block table is corrupted at block {0} (its record fails its check)")]
    BlockTable(BlockId),
    /// Another open of the image holds its lock (see `image.rs`, "Locking").
    #[error("image {} is in use by {}", path.display(), holder.as_ref().map_or("another process".to_string(), |h| h.to_string()))]
    InUse { path: PathBuf, holder: Option<Holder> },
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

/// Who holds an image open, as recorded beside it when it was opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Holder {
    pub pid: u32,
    /// The holder's command line (may be empty if it could not be read).
    pub command: String,
}

impl std::fmt::Display for Holder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.command.is_empty() {
            write!(f, "process {}", self.pid)
        } else {
            write!(f, "process {} ({})", self.pid, self.command)
        }
    }
}

/// The array of a device does not fit in memory: refused up front from an
/// estimate, or a fallible allocation failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MemoryError {
    #[error(
        "the device needs {} of memory but only {} is available (MemAvailable, or TXFTL_MEMORY_AVAILABLE if lower)",
        gib(*needed),
        gib(*available)
    )]
    TooLarge { needed: u64, available: u64 },
    #[error("allocating {} for the device failed (it needs {} in all)", gib(*failed), gib(*needed))]
    AllocationFailed { failed: u64, needed: u64 },
}

/// Bytes as GiB with two decimals (MiB below 1 GiB), for memory messages.
pub fn gib(bytes: u64) -> String {
    if bytes >= 1 << 30 {
        format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
    } else {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum NandError {
    /// Power was cut: this operation (and every later one) did not complete.
    #[error("power lost")]
    PowerLoss,
    /// Program or erase on a block that has gone bad.
    #[error("block {0} is bad")]
    BadBlock(BlockId),
    /// The erase failed (the block reached its endurance, or the fault model
    /// drew a failure); the block is now bad.
    #[error("erase of block {0} failed: the block is now bad")]
    EraseFailed(BlockId),
    /// The program failed its status (fault model): the page holds garbage.
    /// The block stays usable as far as the chip is concerned; the FTL retires it.
    #[error("program of page {ppn} failed")]
    ProgramFailed { ppn: Ppn, done_ns: u64 },
    /// More bit errors than ECC corrects in the data area and/or the spare
    /// area of the page (fault model). The read took its time (`done_ns`).
    #[error("uncorrectable bit errors reading page {ppn} ({})", match (data, oob) { (true, true) => "data and spare area", (true, false) => "data area", _ => "spare area" })]
    Uncorrectable { ppn: Ppn, data: bool, oob: bool, done_ns: u64 },
    #[error("NAND rule violated: {0}")]
    Violation(#[from] Violation),
    #[error(transparent)]
    Image(#[from] ImageError),
    #[error(transparent)]
    Memory(#[from] MemoryError),
    #[error("invalid geometry: {0}")]
    Geometry(#[from] GeometryError),
}
