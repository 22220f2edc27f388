//! txftl-dbms: the small DBMS in which Flag Commit (On et
//! al., IEEE TKDE, sec. 5.1) measures commit protocols against TxFlash's SCC
//! and BPCC: no SQL and no B-trees, only what decides the I/O.
//!
//! - [`tpcc`]: TPC-C's nine tables as heap pages, scaled to a budget, and
//!   its five profiles as page reads and writes; [`shape`] measures them;
//! - [`buffer`]: the LRU buffer pool (steal, force at commit), with the
//!   frames a protocol pins per open transaction;
//! - [`locks`]: strict two-phase locking on pages or records, its wait-for graph and the
//!   deadlock search run on every block;
//! - [`run`]: the clients on the device clock, with the device's
//!   transactions (shadow paging) as the recovery manager;
//! - [`records`]: the record-level engine (record locks, steal, no-force)
//!   with ARIES as the recovery manager on a device without transactions,
//!   its log (`wal`) and its restart;
//! - [`report`]: the results, and the commit log the crash tests check.
//!
//! Everything is simulated time and deterministic from the seed.

pub mod buffer;
mod client;
pub mod config;
pub mod error;
mod io;
pub mod locks;
pub mod records;
pub mod report;
pub mod run;
pub mod shape;
mod sim;
pub mod tpcc;
mod wal;

pub use config::{DbmsConfig, Recovery};
pub use error::DbmsError;
pub use io::PAGE_BYTES_MIN;
pub use records::restart::{records_on_flash, restart, RestartReport};
pub use records::RecordDbms;
pub use report::{CommitLog, CommitRecord, DbmsReport};
pub use run::{run_dbms, Dbms, ISOLATION_NEEDED};
pub use shape::{shape, TpccShape};
pub use tpcc::{Layout, Profile, Table};
pub use wal::LogCounts;
