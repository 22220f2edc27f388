use crate::entry::{NandHas, NandNeeds};
use txftl_nand::{GeometryError, MemoryError, NandError};

/// Everything a device operation can refuse or fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// Power was cut during the operation; the device must be remounted.
    #[error("power lost: the device must be remounted")]
    PowerLoss,
    /// No free block is left for this write and garbage collection cannot
    /// free one (the blocks hold live or pinned pages, or too few are free to
    /// copy a victim's live pages into). The device stays usable; trims or
    /// overwrites free space.
    #[error("no space left on the device: no free block, and garbage collection cannot free one")]
    NoSpace,
    #[error("logical page {lpn} is out of range (the device has {logical_pages} logical pages)")]
    OutOfRange { lpn: u64, logical_pages: u32 },
    #[error("buffer of {got} bytes where a page of {want} bytes was expected")]
    BufferSize { got: usize, want: usize },
    #[error("operation not supported by the `{protocol}` protocol: {what}")]
    Unsupported { protocol: &'static str, what: &'static str },
    /// A page or metadata record failed its checksum where it had to be intact.
    #[error("corrupted: {0}")]
    Corrupted(String),
    #[error("no txftl superblock found: the device is not formatted")]
    NotFormatted,
    #[error("invalid FTL configuration: {0}")]
    Config(String),
    /// A protocol called the framework out of the order its contract asks
    /// (a bug of the protocol, reported rather than let corrupt the flash).
    #[error("framework call out of order: {0}")]
    CallOrder(String),
    /// A protocol option (`--protocol-opt`) the protocol does not take, a
    /// value out of its range, or one that conflicts with the FTL's options.
    #[error("protocol option: {0}")]
    ProtocolOption(String),
    #[error(transparent)]
    Geometry(#[from] GeometryError),
    /// The NAND lacks what the protocol needs of it (its entry's `nand`:
    /// cells, partial programs per page, spare area), refused before
    /// anything is written.
    #[error("protocol `{protocol}` needs {needs}; the device has {has}")]
    NandUnsuitable {
        protocol: &'static str,
        needs: NandNeeds,
        has: NandHas,
    },
    /// An earlier failure (power loss, NAND error) left DRAM state unusable.
    #[error("device failed earlier and refuses further operations until remounted")]
    Failed,
    /// The device was mounted read-only.
    #[error("the device is mounted read-only: {0} refused")]
    ReadOnly(&'static str),
    /// So many data blocks wore out that the rest cannot hold the logical
    /// capacity and still let GC work: not a full device, a dead one.
    #[error("the device is worn out: {bad_blocks} blocks have gone bad (it keeps {spares} spares), so GC can no longer free space")]
    DeviceWornOut { bad_blocks: u32, spares: u32 },
    #[error("metadata area worn out: {0}")]
    WornOut(String),
    /// The page's data is lost: the flash returned more bit errors than ECC
    /// corrects at every read-retry level (now or when GC moved it). The
    /// device stays usable; writing the page again replaces it.
    #[error("logical page {lpn} is lost: physical page {ppn} has more bit errors than ECC corrects, after every read retry")]
    DataLost { lpn: u32, ppn: u32 },
    #[error("NAND error: {0}")]
    Nand(NandError),
    /// The device does not fit in memory (an estimate up front, or an
    /// allocation the machine refused); the message says how much it needs.
    #[error(transparent)]
    Memory(MemoryError),
    /// The protocol's transaction table is full of uncommitted entries: commit or
    /// abort a transaction, then retry.
    #[error("transaction table full ({capacity} entries, all uncommitted): commit or abort a transaction")]
    TableFull { capacity: u32 },
    #[error("transaction {0} is not active (never begun, or already committed or aborted)")]
    UnknownTransaction(u32),
    #[error("transaction {0} is already active")]
    TransactionExists(u32),
    #[error("transaction id 0 is reserved for non-transactional writes")]
    InvalidTransactionId,
    /// The protocol cannot offer what the host asked of it (Atomic-Write runs
    /// one transaction at a time; SCC and BPCC have no serializable level).
    #[error("protocol `{protocol}` does not offer {level}")]
    IsolationUnsupported { protocol: &'static str, level: &'static str },
}

impl From<NandError> for DeviceError {
    fn from(e: NandError) -> Self {
        match e {
            NandError::PowerLoss => DeviceError::PowerLoss,
            other => DeviceError::Nand(other),
        }
    }
}

pub type Result<T, E = DeviceError> = std::result::Result<T, E>;
