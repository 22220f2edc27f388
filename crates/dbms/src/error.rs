//! What the DBMS refuses or fails with.

use txftl_ftl::{DeviceError, Tid};

/// Everything a DBMS run can refuse or fail with. A configuration that
/// cannot run is refused before anything is written; a device failure stops
/// the run (the DBMS does not guess after a failed write).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DbmsError {
    #[error("invalid DBMS configuration: {0}")]
    Config(String),
    #[error("protocol `{protocol}` has no transactions: the DBMS's recovery manager is the device's shadow paging")]
    NotTransactional { protocol: &'static str },
    /// The DBMS keeps several transactions open at once, on distinct pages
    /// (page locks): a protocol that runs one at a time cannot carry it.
    #[error("protocol `{protocol}` cannot keep several transactions open on distinct pages (its isolation levels: {levels})")]
    NoConcurrentTransactions { protocol: &'static str, levels: String },
    #[error("the database and its cold data need {need} logical pages ({db_pages} DB pages of {per_db_page} flash pages, and cold_fill_pct of the device); the device has {have}")]
    DeviceTooSmall {
        need: u64,
        db_pages: u32,
        per_db_page: u32,
        have: u32,
    },
    #[error("a flash page of {page_size} bytes cannot hold a page value (at least {min} bytes)")]
    PageTooSmall { page_size: u32, min: u32 },
    /// A device call failed; `PowerLoss` is the crash tests' cut.
    #[error("device {call} failed at {at_ns} ns: {source}")]
    Device {
        call: &'static str,
        at_ns: u64,
        #[source]
        source: DeviceError,
    },
    /// The log region is full of pages a restart may still read (a long
    /// transaction, or checkpoints too rare for the region's size).
    #[error("the log region of {pages} pages is full: pages from sequence {keep_from} on are still needed (a larger log_pages, or checkpoints more often)")]
    LogFull { pages: u64, keep_from: u64 },
    /// A DB page's records do not fit the flash pages it has.
    #[error(
        "DB page {page}: {records} records written do not fit {per_flash_page} a flash page (more flash pages a DB page, or a larger page)"
    )]
    PageImageFull { page: u32, records: usize, per_flash_page: usize },
    /// What a restart found on flash is not what the log manager writes.
    #[error("restart: {0}")]
    Corrupt(String),
    /// A read returned a version other than the one the DBMS's model holds:
    /// the device broke isolation or durability. The run stops.
    #[error("DB page {page} (logical page {lpn}) read by transaction {tid} holds {found}; expected version {expected}")]
    WrongRead {
        page: u32,
        lpn: u32,
        tid: Tid,
        expected: u64,
        found: String,
    },
}

impl DbmsError {
    /// Did the run stop at a power cut?
    pub fn is_power_loss(&self) -> bool {
        matches!(
            self,
            DbmsError::Device {
                source: DeviceError::PowerLoss,
                ..
            }
        )
    }
}

pub type Result<T, E = DbmsError> = std::result::Result<T, E>;
