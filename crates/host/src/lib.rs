//! txftl-host: the host side of the device interface.
//!
//! - [`blocktrace`]: public block traces as users have them (MQSim/DiskSim
//!   ASCII, MSR Cambridge / SNIA CSV, blkparse text), parsed into
//!   [`blocktrace::BlockRequest`]s and mapped onto logical pages.

pub mod blocktrace;
