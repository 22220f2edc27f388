//! The write-ahead log of the record-level engine: its bytes on flash
//! ([`format`]) and the log manager ([`log`]) that buffers, writes, forces
//! and truncates it in a circular region of logical pages.

pub mod format;
pub mod log;

pub use log::{LogCounts, LogManager};
