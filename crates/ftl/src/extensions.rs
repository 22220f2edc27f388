//! Device calls beyond the block and X-FTL-style transactional interface,
//! as extension traits a protocol offers and the host discovers through
//! [`crate::Device`]'s `*_calls` methods. A protocol that does not offer one
//! answers `None`, and [`require`] turns that into a typed error the host
//! reports (`DeviceError::Unsupported`), never a silent fallback.
//!
//! - [`StaticTx`]: Möbius's static transactions (`SWRITE(uuid, p1..pm)`,
//!   every page known when it starts) and its serializable read `SREAD`.
//! - [`DynamicTx`]: Möbius's dynamic transaction (`DWRITE(p, HEAD|BODY|REAR)`,
//!   at most one at a time).
//! - [`TxEnd`]: NoLgn's end-flagged write: the host names a transaction's
//!   last page as it writes it, so the commit that follows programs nothing.
//! - [`Remap`]: SW-WAL's (NoLgn's baseline) `remap`: a logical page takes the
//!   physical page another one maps, instead of a copy.
//!
//! Every call returns its latency on the device clock, as the base calls do.

use crate::device::{Lpn, Tid};
use crate::error::{DeviceError, Result};

/// When a static transaction's `swrite` returns (Möbius §IV-B).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwriteAck {
    /// S-SWRITE: once every page is on flash (the transaction is durable).
    AllPages,
    /// A-SWRITE: once the transaction's record (the atom inode) is on flash;
    /// recovery may still abort it if a page did not make it.
    Record,
}

/// Static transactions: the host names every page up front.
pub trait StaticTx {
    /// Writes `pages` (logical page, its data) as one transaction `tid`.
    fn swrite(&mut self, tid: Tid, pages: &[(Lpn, &[u8])], ack: SwriteAck) -> Result<u64>;
    /// Reads `lpn` once every static transaction issued before it is on
    /// flash (Möbius §III-B: "after all the static transactions are
    /// committed"; serializable), where a plain read returns the last
    /// committed copy at once.
    fn sread(&mut self, lpn: Lpn, buf: &mut [u8]) -> Result<u64>;
}

/// Where a page sits in a dynamic transaction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DynamicPos {
    Head,
    Body,
    Rear,
}

/// The one dynamic transaction: pages sent one by one, the first marked
/// `Head`, the last `Rear` (its commit).
pub trait DynamicTx {
    fn dwrite(&mut self, lpn: Lpn, data: &[u8], pos: DynamicPos) -> Result<u64>;
    /// Aborts the open dynamic transaction.
    fn dabort(&mut self) -> Result<u64>;
}

/// A transaction's last page, marked as such when written (NoLgn's end
/// flag, §3.2): the host knows which write is the last (SQLite's VFS holds
/// one dirty page back until the sync), so the device programs it with the
/// flag at once and `commit` programs nothing. After it the transaction
/// takes only `commit`: its end is on flash, and recovery commits it.
pub trait TxEnd {
    fn write_end(&mut self, tid: Tid, lpn: Lpn, data: &[u8]) -> Result<u64>;
}

/// Copy-free moves of data between logical pages.
pub trait Remap {
    /// Writes `lpn`, its spare area naming `target`: the logical page a later
    /// `remap` may move it onto (SW-WAL: a WAL frame's page names its
    /// database page), so the page reads, moves and recovers as `target`'s
    /// once remapped.
    fn write_remappable(&mut self, lpn: Lpn, data: &[u8], target: Lpn) -> Result<u64>;
    /// `to` maps the physical page `from` maps now; `from` is unmapped and
    /// `to`'s old page becomes garbage. `from` must have been written with
    /// `write_remappable` naming `to` (since the mount), else the call is
    /// refused and the host copies instead. Durable at the next flush, as a
    /// trim.
    fn remap(&mut self, from: Lpn, to: Lpn) -> Result<u64>;
}

/// The extension calls by name, as a protocol's registry entry declares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Extension {
    StaticTx,
    DynamicTx,
    TxEnd,
    Remap,
}

impl Extension {
    pub const ALL: [Extension; 4] = [Extension::StaticTx, Extension::DynamicTx, Extension::TxEnd, Extension::Remap];

    /// The calls, as an error or a listing names them.
    pub fn calls(self) -> &'static str {
        match self {
            Extension::StaticTx => "static transactions (swrite, sread)",
            Extension::DynamicTx => "dynamic transactions (dwrite)",
            Extension::TxEnd => "end-flagged transactional writes (write_end)",
            Extension::Remap => "remap",
        }
    }
}

/// `calls`, or the typed error that says protocol `protocol` does not offer them.
pub fn require<'a, T: ?Sized>(calls: Option<&'a mut T>, protocol: &'static str, ext: Extension) -> Result<&'a mut T> {
    calls.ok_or(DeviceError::Unsupported {
        protocol,
        what: ext.calls(),
    })
}
