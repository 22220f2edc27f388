//! The device as a Network Block Device export (`txftl nbd serve`): the
//! NBD protocol's server on the standard library, one thread per
//! connection, so fio, qemu, nbdcopy, nbdfuse and a real file system run
//! on any protocol; power cuts on command and on a seeded schedule, each
//! followed by recovery from the NAND alone; transactions between flushes.
//!
//! - [`wire`]: the protocol's messages and values, byte by byte;
//! - [`handshake`] and [`transmission`]: the server's two phases;
//! - [`export`]: the device behind the export (what survives a cut, the
//!   atomic unit, `--flush-is-commit`);
//! - [`schedule`]: the seeded cuts; [`control`]: the control socket;
//! - [`stats`]: the counters printed on SIGINT and by `ctl stats`;
//! - [`server`]: listeners and connection threads;
//! - [`client`]: the client half, which the tests drive the server with.

pub mod client;
pub mod control;
pub mod export;
pub mod handshake;
pub mod schedule;
pub mod server;
pub mod stats;
pub mod transmission;
pub mod wire;

pub use export::{atomic_unit, atomic_unit_text, Export, ExportConfig};
pub use schedule::CutSchedule;
pub use server::{Listen, Server};
